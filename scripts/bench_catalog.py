"""Benchmark the catalog against the file scan on a generated corpus, in one run, and print every figure.

    .venv/bin/python scripts/bench_catalog.py [--workdir /tmp/sessdex-bench] [--sessions 10000] \
        [--projects 60] [--total-size 1GB] [--huge-mb 300] [--runs 15] [--scan-runs 3] [--index-runs 1] \
        [--cli-only | --index-only]

Figures (each with its goal and, where it has one, its ratio to the file-scan baseline):
- the full index (`sessdex index` on an empty catalog) against reading + orjson-parsing the same bytes,
  wall and CPU time (a loaded machine inflates wall time; CPU time shows the work itself);
- the indexer's peak resident memory;
- a freshness check (stat every file, compare with the catalog) over the unchanged corpus, in-process;
- `sessdex resume PREFIX` across all projects, `sessdex recent` and `sessdex list`, each a whole CLI process,
  answered by the file scan (`--catalog off`), by the catalog checking freshness itself, and by the
  catalog while `sessdex watch` keeps it current; the catalog figures through the click-free fast path
  (`sessdex.catalog.cli.fastpath`) and, in alternate runs, through click only (`SESSDEX_NO_FASTPATH=1`);
- how long an appended line takes to show in the catalog under `sessdex watch`.
The corpus (scripts/gen_corpus.py) is generated once into the work dir and reused by later runs.
`--cli-only` measures only the CLI figures (the floor, resume/recent/list) on the catalog already in the
work dir (indexed first when missing), skipping the full index, freshness and append-latency figures.
`--index-only` measures only the full index (`--index-runs` times, each right after its baseline) into
`<workdir>/catalog-index-only.db`, leaving the catalog the CLI figures use untouched.
"""

from __future__ import annotations

import argparse
import os
import signal
import sqlite3
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import orjson

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "scripts"))

from gen_corpus import generate_corpus, parse_size  # noqa: E402

from sessdex.catalog.cli.entry import NO_FASTPATH_ENV  # noqa: E402
from sessdex.catalog.index.reconcile import Scope, catalog_files, diff, read_heartbeat, scan_files  # noqa: E402
from sessdex.catalog.store.db import open_catalog
from sessdex.catalog.store.location import resolve_location
from sessdex.core.paths import AgentPaths  # noqa: E402

SESSDEX = [str(Path(sys.executable).with_name("sessdex"))]
BASELINE_SCRIPT = r"""
import os, sys, orjson
total = 0
for folder, _dirs, names in os.walk(sys.argv[1]):
    for name in names:
        if not name.endswith(".jsonl"):
            continue
        with open(os.path.join(folder, name), "rb") as handle:
            tail = b""
            while True:
                chunk = handle.read(4 << 20)
                if not chunk:
                    break
                total += len(chunk)
                lines = (tail + chunk).split(b"\n")
                tail = lines.pop()
                for line in lines:
                    try:
                        orjson.loads(line)
                    except orjson.JSONDecodeError:
                        pass
            if tail:
                try:
                    orjson.loads(tail)
                except orjson.JSONDecodeError:
                    pass
print(total)
"""


@dataclass
class Run:
    """One finished process: wall time, exit code, output, and (when measured) its CPU time and peak memory."""

    seconds: float
    code: int
    out: bytes
    err: bytes
    max_rss_kb: int = 0
    cpu_seconds: float = 0.0


def run(argv: list[str], cwd: Path, env: dict[str, str] | None = None) -> Run:
    """Run one process to completion and time it."""
    started = time.perf_counter()
    process = subprocess.Popen(argv, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    out, err = process.communicate()
    return Run(time.perf_counter() - started, process.returncode, out, err)


def run_measuring_rss(argv: list[str], cwd: Path) -> Run:
    """Like run(), with the CPU time and peak resident memory of exactly that child (wait4), output discarded."""
    started = time.perf_counter()
    process = subprocess.Popen(argv, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    err = process.stderr.read()
    _pid, status, usage = os.wait4(process.pid, 0)
    seconds = time.perf_counter() - started
    process.returncode = os.waitstatus_to_exitcode(status)
    return Run(seconds, process.returncode, b"", err, usage.ru_maxrss, usage.ru_utime + usage.ru_stime)


def median_ms(argv: list[str], cwd: Path, runs: int, check) -> tuple[float, Run]:
    """The median wall time of `runs` runs of a command, each checked by `check`."""
    times, last = [], None
    for _ in range(runs):
        last = run(argv, cwd)
        check(last)
        times.append(last.seconds)
    return statistics.median(times) * 1000, last


def fast_and_click_medians_ms(argv: list[str], cwd: Path, runs: int, check) -> tuple[float, float]:
    """Median wall times of a command through the fast path and through click only (SESSDEX_NO_FASTPATH=1).

    The two alternate run by run, so that other work on the machine weighs on both alike.
    """
    click_env = {**os.environ, NO_FASTPATH_ENV: "1"}
    fast_times, click_times = [], []
    for _ in range(runs):
        for env, times in ((None, fast_times), (click_env, click_times)):
            result = run(argv, cwd, env)
            check(result)
            times.append(result.seconds)
    return statistics.median(fast_times) * 1000, statistics.median(click_times) * 1000


def verdict(ok: bool) -> str:
    """MET / NOT MET."""
    return "MET" if ok else "NOT MET"


def shortest_unique_prefix(session_id: str, ids: list[str], minimum: int = 8) -> str:
    """The shortest prefix of `session_id` (at least `minimum` chars) that no other id shares."""
    length = minimum
    while length < len(session_id) and sum(1 for other in ids if other.startswith(session_id[:length])) > 1:
        length += 1
    return session_id[:length]


def main(argv: list[str] | None = None) -> int:
    """Generate or reuse the corpus, measure everything, print the figures."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workdir", type=Path, default=Path("/tmp/sessdex-bench"))
    parser.add_argument("--sessions", type=int, default=10_000)
    parser.add_argument("--projects", type=int, default=60)
    parser.add_argument("--total-size", type=parse_size, default=parse_size("1GB"))
    parser.add_argument("--huge-mb", type=float, default=300.0)
    parser.add_argument("--seed", type=int, default=3)
    parser.add_argument("--runs", type=int, default=15, help="runs per catalog-backed command (median reported)")
    parser.add_argument("--scan-runs", type=int, default=3, help="runs per file-scan baseline command")
    parser.add_argument("--index-runs", type=int, default=1, help="runs of the full index (median reported)")
    only = parser.add_mutually_exclusive_group()
    only.add_argument("--cli-only", action="store_true",
                      help="only the CLI figures, on the existing catalog (no full index, freshness, append latency)")
    only.add_argument("--index-only", action="store_true",
                      help="only the full index figures, into <workdir>/catalog-index-only.db")
    args = parser.parse_args(argv)
    print("command:", " ".join([Path(sys.executable).name, *sys.argv]))
    print(f"machine: {os.cpu_count()} CPUs, load average at start {os.getloadavg()[0]:.2f}")

    # An installed sessdex imports cached bytecode; this checkout may run with PYTHONDONTWRITEBYTECODE=1, so
    # compile it once, or every process would pay for compiling sessdex's own modules.
    subprocess.run([sys.executable, "-m", "compileall", "-q", *(str(REPO / name) for name in ("catalog", "core",
                                                                                              "migrations"))],
                   check=True)
    workdir = args.workdir.resolve()
    agent = workdir / "agent"
    home = workdir / "home"
    if not (agent / "sessions").exists():
        manifest = generate_corpus(agent, sessions=args.sessions, projects=args.projects,
                                   total_bytes=args.total_size, seed=args.seed, huge_bytes=int(args.huge_mb * 1e6),
                                   home=home)
        (workdir / "manifest.json").write_bytes(manifest.to_json())
        print(f"corpus: generated in {manifest.seconds:.1f} s")
    manifest = orjson.loads((workdir / "manifest.json").read_bytes())
    sessions = manifest["sessions"]
    total_bytes = sum(s["size"] for s in sessions)
    print(f"corpus: {len(sessions)} files, {total_bytes / 1e6:.1f} MB, {len(manifest['projects'])} projects, "
          f"largest {max(s['size'] for s in sessions) / 1e6:.1f} MB, in {workdir}")

    paths = AgentPaths(agent_dir=agent, home=home, tmp_dir=Path("/tmp"))
    catalog_db = workdir / "catalog.db"
    base = [*SESSDEX, "--agent-dir", str(agent)]
    catalog_cli = [*base, "--catalog", str(catalog_db)]
    scan_cli = [*base, "--catalog", "off"]
    results: list[str] = []

    if args.index_only:
        index_db = workdir / "catalog-index-only.db"
        if not measure_full_index(workdir, agent, index_db, [*base, "--catalog", str(index_db)], args.index_runs,
                                  results):
            return 1
        return print_results(results)
    if args.cli_only:
        if not catalog_db.exists() and run([*catalog_cli, "index"], workdir).code != 0:
            return 1
    elif not measure_index_and_freshness(workdir, paths, catalog_db, catalog_cli, len(sessions), args.runs,
                                         args.index_runs, results):
        return 1

    # -- the CLI commands -----------------------------------------------------------------------------------
    valid = [s for s in sessions if s["kind"] not in ("empty", "no_header", "invalid_header") and s["message_count"]]
    by_project: dict[str, list[dict]] = {}
    for s in valid:
        by_project.setdefault(s["cwd"], []).append(s)
    # `list` and `recent` run in the busiest project under home that does not hold the huge session.
    candidates = [cwd for cwd, items in by_project.items()
                  if cwd.startswith(str(home) + "/") and not any(s["kind"] == "huge" for s in items)]
    list_cwd = max(candidates, key=lambda cwd: len(by_project[cwd]))
    Path(list_cwd).mkdir(parents=True, exist_ok=True)
    outsider = workdir / "not-a-project"
    outsider.mkdir(exist_ok=True)
    target = sorted(valid, key=lambda s: s["size"])[len(valid) // 2]
    prefix = shortest_unique_prefix(target["session_id"], [s["session_id"] for s in sessions])
    commands = {
        f"sessdex resume {prefix} (all projects)": (["resume", "--no-fork", prefix], outsider,
                                                    lambda r: r.code == 1 and b"is in another project" in r.err),
        "sessdex recent": (["recent"], Path(list_cwd), lambda r: r.code == 0 and r.out.count(b"\n") > 1),
        "sessdex list": (["list"], Path(list_cwd), lambda r: r.code == 0 and r.out.count(b"\n") > 1),
    }

    def checked(expectation):
        def check(result: Run) -> None:
            if not expectation(result):
                raise SystemExit(f"unexpected result: code {result.code}\n{result.err.decode()[:500]}")
        return check

    # What any command costs before sessdex does anything: the interpreter, and the CLI with click.
    python_ms, _ = median_ms([sys.executable, "-c", "pass"], workdir, args.runs, lambda r: None)
    help_ms, _ = median_ms([*SESSDEX, "--help"], workdir, args.runs, lambda r: None)
    results.append(f"floor: `python -c pass` median {python_ms:.1f} ms; `sessdex --help` (interpreter + click + "
                   f"the CLI group) median {help_ms:.1f} ms")
    print(results[-1], flush=True)

    scan_ms: dict[str, float] = {}
    for label, (command, cwd, expectation) in commands.items():
        scan_ms[label], _ = median_ms([*scan_cli, *command], cwd, args.scan_runs, checked(expectation))
        print(f"  file scan: {label}: median {scan_ms[label]:.0f} ms", flush=True)

    own_ms: dict[str, tuple[float, float]] = {}
    for label, (command, cwd, expectation) in commands.items():
        own_ms[label] = fast_and_click_medians_ms([*catalog_cli, *command], cwd, args.runs, checked(expectation))

    watcher = subprocess.Popen([*catalog_cli, "watch"], cwd=workdir, stdout=subprocess.DEVNULL,
                               stderr=subprocess.PIPE)
    location = resolve_location(agent, str(catalog_db))
    try:
        deadline = time.monotonic() + 120
        while read_heartbeat(location) is None:
            if watcher.poll() is not None or time.monotonic() > deadline:
                raise SystemExit(f"sessdex watch did not start: {watcher.stderr.read().decode()}")
            time.sleep(0.05)
        watched_ms: dict[str, tuple[float, float]] = {}
        for label, (command, cwd, expectation) in commands.items():
            watched_ms[label] = fast_and_click_medians_ms([*catalog_cli, *command], cwd, args.runs,
                                                          checked(expectation))
        latencies = [] if args.cli_only else append_latencies(catalog_db,
                                                              [s for s in valid if s["kind"] == "normal"][:10])
    finally:
        watcher.send_signal(signal.SIGINT)
        try:
            watcher.wait(timeout=30)
        except subprocess.TimeoutExpired:
            watcher.kill()
            watcher.wait()

    for label in commands:
        for mode, (timing, click_timing), bound, factor in (
                ("while `sessdex watch` keeps the catalog current", watched_ms[label], 60, 100),
                ("checking freshness itself", own_ms[label], 150, 40)):
            speedup = scan_ms[label] / timing
            results.append(f"{label}, {mode}: median {timing:.1f} ms (click only, {NO_FASTPATH_ENV}=1: "
                           f"{click_timing:.1f} ms); file scan {scan_ms[label]:.0f} ms; {speedup:.1f}x faster "
                           f"(goals <= {bound} ms: {verdict(timing <= bound)}; "
                           f">= {factor}x: {verdict(speedup >= factor)})")
    if latencies:
        latency_ms = statistics.median(latencies) * 1000
        results.append(f"appended line visible under `sessdex watch`: median {latency_ms:.0f} ms, max "
                       f"{max(latencies) * 1000:.0f} ms over {len(latencies)} appends (goal <= 250 ms): "
                       f"{verdict(latency_ms <= 250)}")
    return print_results(results)


def print_results(results: list[str]) -> int:
    """Print the collected figures (and the load average, which inflates wall times); the exit code 0."""
    results.append(f"load average at the end: {os.getloadavg()[0]:.2f} (other work on the machine inflates wall times)")
    print("\nresults")
    for line in results:
        print(" ", line)
    return 0


def measure_full_index(workdir: Path, agent: Path, catalog_db: Path, catalog_cli: list[str], runs: int,
                       results: list[str]) -> bool:
    """`runs` full indexes into an emptied `catalog_db`, each right after a read + parse baseline; False on failure.

    Reports the median wall and CPU times and ratios, and the highest peak RSS.
    """
    pairs: list[tuple[Run, Run]] = []
    for number in range(runs):
        baseline = run_measuring_rss([sys.executable, "-c", BASELINE_SCRIPT, str(agent / "sessions")], workdir)
        for suffix in ("", "-wal", "-shm"):
            Path(f"{catalog_db}{suffix}").unlink(missing_ok=True)
        indexed = run_measuring_rss([*catalog_cli, "index"], workdir)
        if indexed.code != 0 or baseline.code != 0:
            print(indexed.err.decode(), baseline.err.decode(), file=sys.stderr)
            return False
        pairs.append((baseline, indexed))
        print(f"  full index run {number + 1}: {indexed.seconds:.2f} s wall, {indexed.cpu_seconds:.2f} s CPU; baseline "
              f"{baseline.seconds:.2f} s wall, {baseline.cpu_seconds:.2f} s CPU", flush=True)
    wall = statistics.median(indexed.seconds for _baseline, indexed in pairs)
    cpu = statistics.median(indexed.cpu_seconds for _baseline, indexed in pairs)
    base_wall = statistics.median(baseline.seconds for baseline, _indexed in pairs)
    base_cpu = statistics.median(baseline.cpu_seconds for baseline, _indexed in pairs)
    ratio = statistics.median(indexed.seconds / baseline.seconds for baseline, indexed in pairs)
    cpu_ratio = statistics.median(indexed.cpu_seconds / baseline.cpu_seconds for baseline, indexed in pairs)
    over = f" (median of {runs})" if runs > 1 else ""
    results.append(f"full index{over}: {wall:.2f} s wall, {cpu:.2f} s CPU; read + orjson-parse baseline "
                   f"{base_wall:.2f} s wall, {base_cpu:.2f} s CPU; ratio {ratio:.2f}x wall, {cpu_ratio:.2f}x CPU "
                   f"(goal <= 1.5x): {verdict(ratio <= 1.5)}")
    rss_mb = max(indexed.max_rss_kb for _baseline, indexed in pairs) / 1024
    results.append(f"indexer peak RSS: {rss_mb:.0f} MB (goal <= 200 MB): {verdict(rss_mb <= 200)}")
    print(results[-2], results[-1], sep="\n", flush=True)
    return True


def measure_index_and_freshness(workdir: Path, paths: AgentPaths, catalog_db: Path, catalog_cli: list[str],
                                session_count: int, runs: int, index_runs: int, results: list[str]) -> bool:
    """The full index (time, ratio to read + parse, peak RSS) and the in-process freshness check; False on failure."""
    agent = paths.agent_dir
    if not measure_full_index(workdir, agent, catalog_db, catalog_cli, index_runs, results):
        return False

    # -- freshness check, in-process ----------------------------------------------------------------------
    db = open_catalog(resolve_location(agent, str(catalog_db)))
    scope = Scope.of(root=paths.sessions_root)
    timings = []
    for _ in range(runs):
        started = time.perf_counter()
        changed, vanished = diff(scan_files(scope), catalog_files(db, scope))
        timings.append(time.perf_counter() - started)
        assert not changed and not vanished, (changed[:3], vanished[:3])
    db.close()
    fresh_ms = statistics.median(timings) * 1000
    results.append(f"freshness check over {session_count} unchanged files: median {fresh_ms:.1f} ms "
                   f"(goal <= 80 ms): {verdict(fresh_ms <= 80)}")
    print(results[-1], flush=True)
    return True


def append_latencies(catalog_db: Path, targets: list[dict]) -> list[float]:
    """Append a user message to each target and time until the catalog shows the new message count."""
    reader = sqlite3.connect(f"file:{catalog_db}?mode=ro", uri=True)
    latencies = []
    try:
        for number, session in enumerate(targets):
            path = session["path"]
            before = reader.execute("SELECT message_count FROM session_files WHERE path = ?", (path,)).fetchone()[0]
            line = orjson.dumps({"type": "message", "id": f"b{number:07x}", "parentId": None,
                                 "timestamp": "2026-01-01T00:00:00.000Z",
                                 "message": {"role": "user", "content": f"benchmark append {number}",
                                             "timestamp": 0}}) + b"\n"
            started = time.perf_counter()
            with open(path, "ab") as handle:
                handle.write(line)
            while True:
                count = reader.execute("SELECT message_count FROM session_files WHERE path = ?", (path,)).fetchone()[0]
                if count == before + 1:
                    break
                if time.perf_counter() - started > 10:
                    raise SystemExit(f"the append to {path} never showed in the catalog")
                time.sleep(0.002)
            latencies.append(time.perf_counter() - started)
            time.sleep(0.3)
    finally:
        reader.close()
    return latencies


if __name__ == "__main__":
    sys.exit(main())

"""Measure the catalog's figures on a generated corpus, each against a baseline measured in the same run.

    .venv/bin/python scripts/bench_catalog.py [--workdir /tmp/sessdex-bench] [--sessions 10000] [--projects 300] \
        [--total-size 1.07GB] [--huge-mb 300] [--runs 15] [--index-runs 1] [--picker-runs 5] \
        [--cli-only | --index-only] [--no-picker] [--with-file-scan]

sessdex is measured as users install it: a wheel built from this work tree, installed (not editable) into a
scratch venv under the work dir (scripts/regular_install.py); the editable development install pays an
import hook at every start-up. Baselines: `python -c pass` of that venv for start-up figures, reading +
orjson-parsing the same session files for indexing figures. Figures, each with its ratio and goal:
- `sessdex resume PREFIX` (another project's id), `list`, `recent`, `continue`: whole processes through the
  console script, while `sessdex watch` keeps the catalog current and while they check freshness
  themselves; goal <= 2.5x `python -c pass`;
- `sessdex search WORD --all` (20 hits, a word in most sessions): wall time (goal <= 4x `python -c pass`) and
  peak RSS (goal <= 60 MB);
- the picker (scripts/bench_picker.py run by the installed interpreter): first paint including imports
  (goal <= 150 ms), keystroke redraw p95 (goal <= 16 ms), content matches after the last key (goal <= 150 ms);
- the full index (`sessdex index` on an empty catalog, as `--rebuild` does) against read + parse, wall and
  CPU (goal <= 2.0x), and its peak RSS (goal <= 200 MB); with each run, where the bulk run spent its time
  ($SESSDEX_INDEX_STATS: the process's CPU time and peak RSS, the time spent executing statements);
- first use: `sessdex resume PREFIX` on an empty catalog (it indexes listings first) against read + parse
  (goal <= 1.5x), and how long `sessdex index` then takes to complete the content (message text, usage facts);
- a freshness check over the unchanged corpus (in-process) and how long an appended line takes to show
  under `sessdex watch`;
- every `sessdex usage` report over the whole corpus (`--all --json`, and `--all` as a table into a pipe), while
  `sessdex watch` keeps the catalog current and while it checks freshness itself (goal <= 2.0x `python -c pass`;
  `usage session --all --json`, one row per session, <= 10x),
  beside the start-up floor (`sessdex list --json` where there is no session), with the file scan's
  answer (`--catalog off`) timed once and checked to give the catalog's rows.
The corpus (scripts/gen_corpus.py) is generated once into the work dir and reused by later runs.
`--cli-only` skips the index figures; `--index-only` measures only them; `--usage-only` measures only the
`sessdex usage` figures (on the catalog in the work dir, indexed first when missing). `--with-file-scan` adds the
file-scan (`--catalog off`) timings of resume/recent/list for comparison.
`--catalog postgresql://...` compares a catalog on that server with a SQLite catalog instead (nothing else is
measured): the full index of the corpus into each (this machine's rows on the server are dropped first), then
`resume PREFIX`, `list --all` and `search WORD`, each a whole CLI process, on each; every figure with its
ratio to SQLite's in the same run.
"""

from __future__ import annotations

import argparse
import os
import resource
import signal
import sqlite3
import statistics
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import orjson

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "scripts"))

from gen_corpus import generate_corpus, parse_size  # noqa: E402
from regular_install import install_regular  # noqa: E402

from sessdex.catalog.index.reconcile import Scope, catalog_files, diff, read_heartbeat, scan_files  # noqa: E402
from sessdex.catalog.store.db import open_catalog  # noqa: E402
from sessdex.catalog.store.fts import BACKLOG_KEY, FILES_BACKLOG_KEY  # noqa: E402
from sessdex.catalog.store.location import resolve_location  # noqa: E402
from sessdex.core.paths import AgentPaths  # noqa: E402

# Goals, as ratios to `python -c pass`: resume PREFIX, list, recent, continue; search WORD --all; the usage reports,
# and `usage session --all --json` (a row per session: thousands of rows to print).
LISTING_GOAL = 2.5
SEARCH_GOAL = 4.0
REPORT_GOAL = 2.0
SESSION_REPORT_GOAL = 10.0

# The installed interpreter and console script (set by main once scripts/regular_install.py built them).
PYTHON = sys.executable
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
    """Run one process to completion and time it (wall, and CPU from the children's resource usage: the only
    child waited for meanwhile is this one)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    process = subprocess.Popen(argv, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    out, err = process.communicate()
    seconds = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)
    return Run(seconds, process.returncode, out, err, cpu_seconds=cpu)


# Starts a command from a small interpreter and reports its peak RSS and CPU time (wait4) on the last line of
# stdout. A child forked from this (large) benchmark process would count this process's resident memory at
# the fork as its own peak: Linux keeps ru_maxrss across fork and exec.
RSS_LAUNCHER = r"""
import os, subprocess, sys
child = subprocess.Popen(sys.argv[1:], stdout=subprocess.DEVNULL)
_pid, status, usage = os.wait4(child.pid, 0)
print(usage.ru_maxrss, usage.ru_utime + usage.ru_stime, os.waitstatus_to_exitcode(status))
"""


def run_measuring_rss(argv: list[str], cwd: Path, env: dict[str, str] | None = None) -> Run:
    """Like run(), with the CPU time and peak resident memory of exactly that child, its stdout discarded.

    The wall time includes starting the small launcher interpreter (about one `python -c pass`). CPU time
    includes the child's own children; peak RSS is the largest of them.
    """
    started = time.perf_counter()
    process = subprocess.run([PYTHON, "-c", RSS_LAUNCHER, *argv], cwd=cwd, env=env, capture_output=True,
                             check=False)
    seconds = time.perf_counter() - started
    max_rss_kb, cpu_seconds, code = process.stdout.split()[-3:]
    return Run(seconds, int(code), b"", process.stderr, int(max_rss_kb), float(cpu_seconds))


def median_ms(argv: list[str], cwd: Path, runs: int, check) -> tuple[float, Run]:
    """The median wall time of `runs` runs of a command, each checked by `check`."""
    times, last = [], None
    for _ in range(runs):
        last = run(argv, cwd)
        check(last)
        times.append(last.seconds)
    return statistics.median(times) * 1000, last


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
    """Generate or reuse the corpus, install sessdex, measure everything, print the figures."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workdir", type=Path, default=Path("/tmp/sessdex-bench"))
    parser.add_argument("--sessions", type=int, default=10_000)
    parser.add_argument("--projects", type=int, default=300)
    parser.add_argument("--total-size", type=parse_size, default=parse_size("1.07GB"))
    parser.add_argument("--huge-mb", type=float, default=300.0)
    parser.add_argument("--seed", type=int, default=3)
    parser.add_argument("--runs", type=int, default=15, help="runs per CLI command (median reported)")
    parser.add_argument("--scan-runs", type=int, default=3, help="runs per file-scan command (--with-file-scan)")
    parser.add_argument("--index-runs", type=int, default=1, help="runs of the full index (median reported)")
    parser.add_argument("--picker-runs", type=int, default=5, help="runs of the picker's first paint")
    parser.add_argument("--no-picker", action="store_true", help="skip the picker figures")
    parser.add_argument("--with-file-scan", action="store_true", help="also time the file scan (--catalog off)")
    only = parser.add_mutually_exclusive_group()
    only.add_argument("--cli-only", action="store_true", help="only the CLI and picker figures, on the existing catalog")
    only.add_argument("--index-only", action="store_true", help="only the index figures")
    only.add_argument("--usage-only", action="store_true",
                      help="only the `sessdex usage` figures, on the existing catalog (indexed first when missing)")
    only.add_argument("--catalog", dest="server_catalog", metavar="URL",
                      help="compare a catalog on this database server (postgresql://...) with SQLite, only that")
    args = parser.parse_args(argv)
    # Every figure names its watcher: none ("checking freshness itself"), `sessdex watch`, or the one a read
    # command starts by itself (the "as installed" mode turns that back on).
    os.environ["SESSDEX_AUTOWATCH"] = "0"
    print("command:", " ".join([Path(sys.executable).name, *sys.argv]))
    print(f"machine: {os.cpu_count()} CPUs, load average at start {os.getloadavg()[0]:.2f}")

    workdir = args.workdir.resolve()
    workdir.mkdir(parents=True, exist_ok=True)
    global PYTHON, SESSDEX
    PYTHON = str(install_regular(workdir / "regular-install"))
    SESSDEX = [str(Path(PYTHON).with_name("sessdex"))]
    print(f"sessdex: a wheel of {REPO} installed (not editable) in {Path(PYTHON).parent.parent}", flush=True)
    agent = workdir / "agent"
    home = workdir / "home"
    if not (agent / "sessions").exists():
        manifest = generate_corpus(agent, sessions=args.sessions, projects=args.projects,
                                   total_bytes=args.total_size, seed=args.seed, huge_bytes=int(args.huge_mb * 1e6),
                                   home=home)
        (workdir / "manifest.json").write_bytes(manifest.to_json())
        print(f"corpus: generated in {manifest.seconds:.1f} s")
    manifest = orjson.loads((workdir / "manifest.json").read_bytes())
    home = Path(manifest["home"])  # the sessions' cwds are under it (a corpus copied from another workdir keeps its own)
    sessions = manifest["sessions"]
    total_bytes = sum(s["size"] for s in sessions)
    print(f"corpus: {len(sessions)} files, {total_bytes / 1e6:.1f} MB, {len(manifest['projects'])} projects, "
          f"largest {max(s['size'] for s in sessions) / 1e6:.1f} MB, in {workdir}")

    if args.server_catalog:
        return print_results(compare_server_catalog(workdir, agent, sessions, args.server_catalog, args.runs))
    paths = AgentPaths(agent_dir=agent, home=home, tmp_dir=Path("/tmp"))
    catalog_db = workdir / "catalog.db"
    base = [*SESSDEX, "--agent-dir", str(agent)]
    catalog_cli = [*base, "--catalog", str(catalog_db)]
    results: list[str] = []

    valid = [s for s in sessions if s["kind"] not in ("empty", "no_header", "invalid_header") and s["message_count"]]
    target = sorted(valid, key=lambda s: s["size"])[len(valid) // 2]
    prefix = shortest_unique_prefix(target["session_id"], [s["session_id"] for s in sessions])
    outsider = workdir / "not-a-project"
    outsider.mkdir(exist_ok=True)
    resume_args = ["resume", "--no-fork", prefix]

    def resumed(result: Run) -> bool:
        return result.code == 1 and b"is in another project" in result.err

    if args.usage_only:
        if not catalog_db.exists() and run([*catalog_cli, "index"], workdir).code != 0:
            return 1
        measure_usage_reports(workdir, agent, catalog_db, catalog_cli, args.runs, results)
        return print_results(results)
    if not args.cli_only:
        if not measure_full_index(workdir, agent, catalog_db, catalog_cli, args.index_runs, results):
            return 1
        if not measure_first_use(workdir, agent, catalog_db, catalog_cli, resume_args, outsider, resumed, results):
            return 1
        measure_freshness(paths, catalog_db, len(sessions), args.runs, results)
        if args.index_only:
            return print_results(results)
    elif not catalog_db.exists() and run([*catalog_cli, "index"], workdir).code != 0:
        return 1

    # -- the CLI commands -----------------------------------------------------------------------------------
    by_project: dict[str, list[dict]] = {}
    for s in valid:
        by_project.setdefault(s["cwd"], []).append(s)
    # `list`, `recent` and `continue` run in the busiest project under home that does not hold the huge session.
    candidates = [cwd for cwd, items in by_project.items()
                  if cwd.startswith(str(home) + "/") and not any(s["kind"] == "huge" for s in items)]
    list_cwd = Path(max(candidates, key=lambda cwd: len(by_project[cwd])))
    list_cwd.mkdir(parents=True, exist_ok=True)
    word = common_word(catalog_db)
    commands = {
        f"sessdex resume {prefix} (another project's id)": (resume_args, outsider, resumed),
        "sessdex list": (["list"], list_cwd, lambda r: r.code == 0 and r.out.count(b"\n") > 1),
        "sessdex recent": (["recent"], list_cwd, lambda r: r.code == 0 and r.out.count(b"\n") > 1),
        "sessdex continue": (["continue"], list_cwd, lambda r: r.code == 0 and r.out.endswith(b".jsonl\n")),
        # piped: 20 tab-separated lines, one a hit (the row, the field and the matching text)
        f"sessdex search {word} --all": (["search", word, "--all"], outsider,
                                         lambda r: r.code == 0 and r.out.count(b"\n") == 20),
    }

    def checked(expectation):
        def check(result: Run) -> None:
            if not expectation(result):
                raise SystemExit(f"unexpected result: code {result.code}\n{result.err.decode()[:500]}")
        return check

    if args.with_file_scan:
        scan_cli = [*base, "--catalog", "off"]
        for label, (command, cwd, expectation) in list(commands.items())[:3]:
            scan_ms, _ = median_ms([*scan_cli, *command], cwd, args.scan_runs, checked(expectation))
            results.append(f"file scan (--catalog off), {label}: median {scan_ms:.0f} ms")
            print(results[-1], flush=True)

    floor_argv = [PYTHON, "-c", "pass"]
    own = alternating_medians_ms(floor_argv, {label: ([*catalog_cli, *command], cwd, checked(expectation))
                                              for label, (command, cwd, expectation) in commands.items()}, args.runs)
    search_label = next(label for label in commands if label.startswith("sessdex search"))
    search_command, search_cwd, _expectation = commands[search_label]
    search_rss_mb = max(run_measuring_rss([*catalog_cli, *search_command], search_cwd).max_rss_kb
                        for _ in range(3)) / 1024

    with sessdex_watch(catalog_cli, workdir, agent, catalog_db, until_text_indexed=True):
        watched = alternating_medians_ms(floor_argv, {label: ([*catalog_cli, *command], cwd, checked(expectation))
                                                      for label, (command, cwd, expectation) in commands.items()},
                                         args.runs)
        latencies = [] if args.cli_only else append_latencies(catalog_db,
                                                              [s for s in valid if s["kind"] == "normal"][:10])

    with self_started_watcher(catalog_cli, list_cwd, agent, catalog_db):
        installed = alternating_medians_ms(floor_argv, {label: ([*catalog_cli, *command], cwd, checked(expectation))
                                                        for label, (command, cwd, expectation) in commands.items()},
                                           args.runs)

    for mode, figures in (("while `sessdex watch` keeps the catalog current", dict(watched)),
                          ("as installed (the first read command started the watcher)", dict(installed)),
                          ("checking freshness itself (SESSDEX_AUTOWATCH=0)", dict(own))):
        floor_ms, floor_cpu = figures.pop("floor")
        results.append(f"{mode}: `python -c pass` (the installed interpreter) median {floor_ms:.1f} ms, "
                       f"CPU {floor_cpu:.1f} ms")
        for label, (timing, cpu) in figures.items():
            goal = SEARCH_GOAL if label == search_label else LISTING_GOAL
            ratio = timing / floor_ms
            results.append(f"  {label}: median {timing:.1f} ms = {ratio:.2f}x `python -c pass` "
                           f"(goal <= {goal:.1f}x): {verdict(ratio <= goal)}; CPU {cpu:.1f} ms = "
                           f"{cpu / floor_cpu:.2f}x")
    results.append(f"{search_label}: peak RSS {search_rss_mb:.0f} MB (goal <= 60 MB): {verdict(search_rss_mb <= 60)}")
    if latencies:
        latency_ms = statistics.median(latencies) * 1000
        results.append(f"appended line visible under `sessdex watch`: median {latency_ms:.0f} ms, max "
                       f"{max(latencies) * 1000:.0f} ms over {len(latencies)} appends (goal <= 250 ms): "
                       f"{verdict(latency_ms <= 250)}")
    if not args.no_picker:
        measure_picker(agent, catalog_db, args.picker_runs, own["floor"][0], results)
    measure_usage_reports(workdir, agent, catalog_db, catalog_cli, args.runs, results)
    return print_results(results)


USAGE_REPORTS = ("daily", "weekly", "monthly", "session", "project", "model")


@contextmanager
def sessdex_watch(catalog_cli: list[str], workdir: Path, agent: Path, catalog_db: Path, *,
                  until_text_indexed: bool) -> Iterator[None]:
    """`sessdex watch` running on the catalog, from its first heartbeat (and, with `until_text_indexed`, once the
    message-text index is complete) until the block ends; then stopped as Ctrl+C stops it."""
    watcher = subprocess.Popen([*catalog_cli, "watch"], cwd=workdir, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    location = resolve_location(agent, str(catalog_db))
    try:
        deadline = time.monotonic() + 600
        while read_heartbeat(location) is None or (until_text_indexed and content_backlog_left(catalog_db)):
            if watcher.poll() is not None or time.monotonic() > deadline:
                raise SystemExit(f"sessdex watch did not start: {watcher.stderr.read().decode()}")
            time.sleep(0.05)
        yield
    finally:
        watcher.send_signal(signal.SIGINT)
        try:
            watcher.wait(timeout=30)
        except subprocess.TimeoutExpired:
            watcher.kill()
            watcher.wait()


@contextmanager
def self_started_watcher(catalog_cli: list[str], cwd: Path, agent: Path, catalog_db: Path) -> Iterator[None]:
    """The watcher a read command starts by itself (as a user who followed the README gets it), from its first
    heartbeat until the block ends; then stopped."""
    os.environ["SESSDEX_AUTOWATCH"] = "1"
    location = resolve_location(agent, str(catalog_db))
    try:
        run([*catalog_cli, "list"], cwd)
        deadline = time.monotonic() + 600
        while (heartbeat := read_heartbeat(location)) is None:
            if time.monotonic() > deadline:
                raise SystemExit("no read command started a watcher")
            time.sleep(0.05)
        yield
    finally:
        os.environ["SESSDEX_AUTOWATCH"] = "0"
        heartbeat = read_heartbeat(location)
        if heartbeat is not None:
            os.kill(heartbeat.pid, signal.SIGINT)


def measure_usage_reports(workdir: Path, agent: Path, catalog_db: Path, catalog_cli: list[str], runs: int,
                          results: list[str]) -> None:
    """Every `sessdex usage KIND --all --json`, and its table, through the console script against `python -c pass`.

    Measured while the catalog checks freshness itself and while `sessdex watch` keeps it current, beside the
    start-up floor (`sessdex list --json` where there is no session: the same start-up, no rows). The file
    scan (`--catalog off`) answers the daily report once, for comparison, and must print the catalog's bytes
    (the sums are exact).
    """
    empty = workdir / "not-a-project"
    empty.mkdir(exist_ok=True)

    def report(result: Run) -> None:
        if result.code != 0 or not result.out.startswith(b"{"):
            raise SystemExit(f"sessdex usage failed: {result.err.decode()[:500]}")

    def listed(result: Run) -> None:
        if result.code != 0:
            raise SystemExit(f"sessdex list failed: {result.err.decode()[:500]}")

    def table(result: Run) -> None:
        if result.code != 0 or not result.out.rstrip(b"\n").rpartition(b"\n")[2].startswith(b"TOTAL"):
            raise SystemExit(f"sessdex usage (table) failed: {result.err.decode()[:500]}")

    daily = ["usage", "daily", "--all", "--json"]
    scanned = run([*catalog_cli[:-2], "--catalog", "off", *daily], empty)
    from_catalog = run([*catalog_cli, *daily], empty)
    report(scanned)
    report(from_catalog)
    results.append(f"sessdex usage daily --all --json from the files (--catalog off): {scanned.seconds * 1000:.0f} ms; "
                   f"the catalog's bytes: {scanned.out == from_catalog.out}")
    print(results[-1], flush=True)
    commands: dict[str, tuple[list[str], Path, object]] = {
        "start-up floor, `sessdex list --json` where there is no session": ([*catalog_cli, "list", "--json"], empty,
                                                                              listed)}
    for kind in USAGE_REPORTS:
        commands[f"sessdex usage {kind} --all --json"] = ([*catalog_cli, "usage", kind, "--all", "--json"], empty, report)
        commands[f"sessdex usage {kind} --all (table, stdout a pipe)"] = ([*catalog_cli, "usage", kind, "--all"], empty,
                                                                         table)
    own = alternating_medians_ms([PYTHON, "-c", "pass"], commands, runs)
    with sessdex_watch(catalog_cli, workdir, agent, catalog_db, until_text_indexed=False):
        watched = alternating_medians_ms([PYTHON, "-c", "pass"], commands, runs)
    for mode, figures in (("while `sessdex watch` keeps the catalog current", dict(watched)),
                          ("checking freshness itself", dict(own))):
        floor_ms, floor_cpu = figures.pop("floor")
        results.append(f"usage reports {mode}: `python -c pass` (the installed interpreter) median {floor_ms:.1f} ms, "
                       f"CPU {floor_cpu:.1f} ms")
        for label, (timing, cpu) in figures.items():
            ratio = timing / floor_ms
            limit = SESSION_REPORT_GOAL if label.startswith("sessdex usage session --all --json") else REPORT_GOAL
            goal = "" if label.startswith("start-up floor") else f" (goal <= {limit:.1f}x): {verdict(ratio <= limit)}"
            results.append(f"  {label}: median {timing:.1f} ms = {ratio:.2f}x `python -c pass`{goal}; CPU {cpu:.1f} ms "
                           f"= {cpu / floor_cpu:.2f}x")


def alternating_medians_ms(floor: list[str], commands: dict[str, tuple[list[str], Path, object]],
                           runs: int) -> dict[str, tuple[float, float]]:
    """Median wall and CPU times (ms) of the floor command ("floor") and of every command, run in turns.

    Taking turns run by run spreads the load of other work on the machine over all of them alike; CPU time
    is less inflated by that load than wall time.
    """
    runs_by_label: dict[str, list[Run]] = {"floor": [], **{label: [] for label in commands}}
    for _ in range(runs):
        runs_by_label["floor"].append(run(floor, Path("/")))
        for label, (argv, cwd, check) in commands.items():
            result = run(argv, cwd)
            check(result)  # type: ignore[operator]
            runs_by_label[label].append(result)
    return {label: (statistics.median(r.seconds for r in done) * 1000,
                    statistics.median(r.cpu_seconds for r in done) * 1000)
            for label, done in runs_by_label.items()}


def common_word(catalog_db: Path) -> str:
    """A word of the message text of most sessions (so that `search` has far more than 20 hits to rank)."""
    connection = sqlite3.connect(f"file:{catalog_db}?mode=ro", uri=True)
    try:
        connection.execute("CREATE VIRTUAL TABLE temp.terms USING fts5vocab(main, 'message_fts', 'row')")
        rows = connection.execute("SELECT term FROM temp.terms WHERE length(term) >= 5 AND term GLOB '[a-z]*' "
                                  "ORDER BY doc DESC LIMIT 1").fetchall()
    finally:
        connection.close()
    return rows[0][0] if rows else "the"


def content_backlog_left(catalog_db: Path) -> bool:
    """True while the catalog's content (message rows, text index, usage facts) is incomplete (see
    sessdex.catalog.store.fts.BACKLOG_KEY and FILES_BACKLOG_KEY)."""
    connection = sqlite3.connect(f"file:{catalog_db}?mode=ro", uri=True)
    try:
        return connection.execute("SELECT 1 FROM catalog_meta WHERE key IN (?, ?)",
                                  (BACKLOG_KEY, FILES_BACKLOG_KEY)).fetchone() is not None
    finally:
        connection.close()


def measure_first_use(workdir: Path, agent: Path, catalog_db: Path, catalog_cli: list[str], resume_args: list[str],
                      cwd: Path, expectation, results: list[str]) -> bool:
    """`resume PREFIX` on an empty catalog (it indexes the listings first) against read + parse; then `index`
    completing the message-text index. The catalog left behind is complete, for the CLI figures."""
    warm_page_cache(agent / "sessions")
    baseline = run_measuring_rss([PYTHON, "-c", BASELINE_SCRIPT, str(agent / "sessions")], workdir)
    for suffix in ("", "-wal", "-shm"):
        Path(f"{catalog_db}{suffix}").unlink(missing_ok=True)
    first, figures = indexing_with_figures([*catalog_cli, *resume_args], cwd, workdir)
    first.out = b""
    if not expectation(first):
        print(first.err.decode(), file=sys.stderr)
        return False
    backlog = content_backlog_left(catalog_db)
    completed = run_measuring_rss([*catalog_cli, "index"], workdir)
    if completed.code != 0:
        print(completed.err.decode(), file=sys.stderr)
        return False
    ratio = first.seconds / baseline.seconds
    cpu_ratio = first.cpu_seconds / baseline.cpu_seconds
    results.append(f"first use: `sessdex {' '.join(resume_args)}` on an empty catalog {first.seconds:.2f} s wall, "
                   f"{first.cpu_seconds:.2f} s CPU, peak RSS {first.max_rss_kb / 1024:.0f} MB; read + parse baseline "
                   f"{baseline.seconds:.2f} s wall, {baseline.cpu_seconds:.2f} s CPU; ratio {ratio:.2f}x wall, "
                   f"{cpu_ratio:.2f}x CPU (goal <= 1.5x): {verdict(ratio <= 1.5)}; "
                   f"message text and usage facts {'left for later' if backlog else 'complete'}, completed by `sessdex index` "
                   f"in {completed.seconds:.2f} s more ({(first.seconds + completed.seconds) / baseline.seconds:.2f}x "
                   f"in all)")
    results.append(f"  first use: {describe_index_figures(figures, first)}; load {os.getloadavg()[0]:.2f}")
    print(results[-2], results[-1], sep="\n", flush=True)
    return True


def measure_picker(agent: Path, catalog_db: Path, runs: int, floor_ms: float, results: list[str]) -> None:
    """Run scripts/bench_picker.py with the installed interpreter and report its figures against their goals."""
    out = catalog_db.with_name("picker.json")
    env = {**os.environ, "SESSDEX_CATALOG": str(catalog_db)}
    process = subprocess.run([PYTHON, str(REPO / "scripts" / "bench_picker.py"), "--agent-dir", str(agent),
                              "--runs", str(runs), "--pty", "--json", str(out)], env=env, capture_output=True,
                             text=True)
    if process.returncode != 0:
        results.append(f"picker: bench_picker.py failed: {process.stderr[-500:]}")
        return
    figures = orjson.loads(out.read_bytes())
    for key, label, goal in (("first_paint_ms", "picker first paint incl. imports (median)", 150.0),
                             ("keystroke_p95_ms", "picker keystroke redraw p95", 16.0),
                             ("content_median_ms", "picker content matches after the last key (median)", 150.0)):
        value = figures.get(key)
        if value is None:
            results.append(f"{label}: not measured")
            continue
        ratio = f"; {value / floor_ms:.1f}x `python -c pass`" if floor_ms else ""
        results.append(f"{label}: {value:.1f} ms{ratio} (goal <= {goal:.0f} ms): {verdict(value <= goal)}")
    end_to_end = figures.get("end_to_end_median_ms")
    if end_to_end is not None:
        results.append(f"  `sessdex pick --all` in a pseudo-terminal, spawn to first frame: median {end_to_end:.0f} ms")
    results.append(f"  picker details: {figures.get('details', '')}")


# -- a catalog on a database server against SQLite ------------------------------------------------------------

def _timed_index(cli: list[str], workdir: Path) -> float:
    """Seconds of one `sessdex index` (full, into an empty catalog or an emptied machine) as a whole process."""
    result = run([*cli, "index", "--rebuild"], workdir)
    if result.code != 0:
        raise SystemExit(f"sessdex index failed: {result.err.decode()[:500]}")
    return result.seconds


SEARCH_WORD = "the"  # in every generated corpus's messages (gen_corpus writes English prose)


def compare_server_catalog(workdir: Path, agent: Path, sessions: list[dict], url: str, runs: int) -> list[str]:
    """Index throughput and resume / list / search latency of the catalog at `url` against a SQLite catalog,
    measured alternately in this run; returns the result lines."""
    results: list[str] = []
    sqlite_db = workdir / "catalog-server-compare.db"
    clis = {"sqlite": [*SESSDEX, "--agent-dir", str(agent), "--catalog", str(sqlite_db)],
            "server": [*SESSDEX, "--agent-dir", str(agent), "--catalog", url]}
    total_mb = sum(s["size"] for s in sessions) / 1e6
    index_seconds = {name: _timed_index(cli, workdir) for name, cli in clis.items()}
    for name, seconds in index_seconds.items():
        results.append(f"full index, {name}: {seconds:.1f} s, {total_mb / seconds:.1f} MB/s, "
                       f"{len(sessions) / seconds:.0f} files/s"
                       + ("" if name == "sqlite" else f" ({seconds / index_seconds['sqlite']:.2f}x SQLite's time)"))
        print(results[-1], flush=True)
    valid = [s for s in sessions if s["kind"] not in ("empty", "no_header", "invalid_header") and s["message_count"]]
    target = sorted(valid, key=lambda s: s["size"])[len(valid) // 2]
    prefix = shortest_unique_prefix(target["session_id"], [s["session_id"] for s in sessions])
    outsider = workdir / "not-a-project"
    outsider.mkdir(exist_ok=True)
    commands = {
        f"resume {prefix} (all projects)": ["resume", "--no-fork", prefix],
        "list --all": ["list", "--all"],
        f"search --all {SEARCH_WORD}": ["search", "--all", SEARCH_WORD],
    }
    for label, command in commands.items():
        times: dict[str, list[float]] = {name: [] for name in clis}
        for _ in range(runs):
            for name, cli in clis.items():  # alternating: other work on the machine weighs on both alike
                result = run([*cli, *command], outsider)
                if result.code not in (0, 1) or (command[0] != "resume" and not result.out):
                    raise SystemExit(f"{label} on {name} failed: {result.err.decode()[:500]}")
                times[name].append(result.seconds)
        medians = {name: statistics.median(values) * 1000 for name, values in times.items()}
        results.append(f"sessdex {label}: server median {medians['server']:.1f} ms, SQLite median "
                       f"{medians['sqlite']:.1f} ms ({medians['server'] / medians['sqlite']:.2f}x)")
        print(results[-1], flush=True)
    return results


def print_results(results: list[str]) -> int:
    """Print the collected figures (and the load average, which inflates wall times); the exit code 0."""
    results.append(f"load average at the end: {os.getloadavg()[0]:.2f} (other work on the machine inflates wall times)")
    print("\nresults")
    for line in results:
        print(" ", line)
    return 0


def warm_page_cache(folder: Path) -> None:
    """Read every file below `folder` once, so that the first timed reader does not pay for the disk alone."""
    for path in folder.rglob("*"):
        if path.is_file():
            with open(path, "rb") as handle:
                while handle.read(16 << 20):
                    pass


def indexing_with_figures(argv: list[str], cwd: Path, workdir: Path) -> tuple[Run, dict | None]:
    """run_measuring_rss(argv) with $SESSDEX_INDEX_STATS set: the run, and the figures its bulk run reported
    (the statements' CPU time, the process's CPU time and peak RSS), if any."""
    stats = workdir / "index-stats.jsonl"
    stats.unlink(missing_ok=True)
    result = run_measuring_rss(argv, cwd, env={**os.environ, "SESSDEX_INDEX_STATS": str(stats)})
    lines = stats.read_text().splitlines() if stats.exists() else []
    return result, (orjson.loads(lines[-1]) if lines else None)


def describe_index_figures(figures: dict | None, total: Run) -> str:
    """One line: where a bulk run spent its time (statements, usage refresh) and its memory."""
    if figures is None:
        return "no bulk run reported figures"
    main_rss = figures["main_peak_rss_kb"] / 1024
    return (f"{figures['main_cpu_seconds']:.2f} s CPU to the end of the usage refresh, of which "
            f"{figures['writer_cpu_seconds']:.2f} s executing statements and {figures['usage_refresh_cpu_seconds']:.2f} s "
            f"refreshing usage (refresh_all_usage), peak RSS {main_rss:.0f} MB; whole run "
            f"{total.cpu_seconds:.2f} s CPU")


def measure_full_index(workdir: Path, agent: Path, catalog_db: Path, catalog_cli: list[str], runs: int,
                       results: list[str]) -> bool:
    """`runs` full indexes into an emptied `catalog_db`, each right after a read + parse baseline; False on failure.

    Reports the median wall and CPU times and ratios, and the highest peak RSS.
    """
    pairs: list[tuple[Run, Run]] = []
    warm_page_cache(agent / "sessions")
    for number in range(runs):
        baseline = run_measuring_rss([PYTHON, "-c", BASELINE_SCRIPT, str(agent / "sessions")], workdir)
        for suffix in ("", "-wal", "-shm"):
            Path(f"{catalog_db}{suffix}").unlink(missing_ok=True)
        indexed, figures = indexing_with_figures([*catalog_cli, "index"], workdir, workdir)
        if indexed.code != 0 or baseline.code != 0:
            print(indexed.err.decode(), baseline.err.decode(), file=sys.stderr)
            return False
        pairs.append((baseline, indexed))
        print(f"  full index run {number + 1}: {indexed.seconds:.2f} s wall, {indexed.cpu_seconds:.2f} s CPU; baseline "
              f"{baseline.seconds:.2f} s wall, {baseline.cpu_seconds:.2f} s CPU; load {os.getloadavg()[0]:.2f}\n"
              f"    {describe_index_figures(figures, indexed)}", flush=True)
    wall = statistics.median(indexed.seconds for _baseline, indexed in pairs)
    cpu = statistics.median(indexed.cpu_seconds for _baseline, indexed in pairs)
    base_wall = statistics.median(baseline.seconds for baseline, _indexed in pairs)
    base_cpu = statistics.median(baseline.cpu_seconds for baseline, _indexed in pairs)
    ratio = statistics.median(indexed.seconds / baseline.seconds for baseline, indexed in pairs)
    cpu_ratio = statistics.median(indexed.cpu_seconds / baseline.cpu_seconds for baseline, indexed in pairs)
    over = f" (median of {runs})" if runs > 1 else ""
    results.append(f"full index{over}: {wall:.2f} s wall, {cpu:.2f} s CPU; read + orjson-parse baseline "
                   f"{base_wall:.2f} s wall, {base_cpu:.2f} s CPU; ratio {ratio:.2f}x wall, {cpu_ratio:.2f}x CPU "
                   f"(goal <= 2.0x): {verdict(ratio <= 2.0)}")
    rss_mb = max(indexed.max_rss_kb for _baseline, indexed in pairs) / 1024
    results.append(f"indexer peak RSS: {rss_mb:.0f} MB (goal <= 200 MB): {verdict(rss_mb <= 200)}")
    print(results[-2], results[-1], sep="\n", flush=True)
    return True


def measure_freshness(paths: AgentPaths, catalog_db: Path, session_count: int, runs: int,
                      results: list[str]) -> None:
    """The in-process freshness check (stat every file, compare with the catalog) over the unchanged corpus."""
    db = open_catalog(resolve_location(paths.agent_dir, str(catalog_db)))
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

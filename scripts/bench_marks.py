"""Measure `sessdex list --tag X` (and --pinned, --all) at 10,000 sessions against `list` and `python -c pass`.

Marks are read on every listing (one stat of the marks file, and the marks rows when it changed), so a filtered
listing should cost what the plain `list` costs: the figures are printed as ratios to `python -c pass` and to
`list` measured in the same run, the commands taking turns run by run (a shared machine's load falls on all of
them alike). sessdex runs from a regular (non-editable) install (scripts/regular_install.py), as a user's.

`--prune-check` also runs `prune --older-than AGE` on the corpus and checks that it moves exactly the sessions
a reference computed here says (valid header per the generator's manifest, no mark, not changed in the last 10
minutes, mtime from os.stat), then `trash restore`s them all and checks every file is back byte for byte.

    .venv/bin/python scripts/bench_marks.py [--workdir /tmp/sessdex-bench-marks] [--sessions 10000] \
        [--projects 300] [--total-size 150MB] [--tagged 300] [--runs 11] [--prune-check]
"""

from __future__ import annotations

import argparse
import hashlib
import os
import sys
import time
from pathlib import Path

import orjson

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "scripts"))

from bench_catalog import alternating_medians_ms, run  # noqa: E402
from gen_corpus import generate_corpus, parse_size  # noqa: E402
from regular_install import install_regular  # noqa: E402

from sessdex.core.marks import append_events, make_event  # noqa: E402
from sessdex.core.paths import AgentPaths  # noqa: E402

TAG = "bench"
NO_HEADER = {"empty", "no_header", "invalid_header"}  # generated files that hold no session
LIVE_SECONDS = 10 * 60


def mark_sessions(paths: AgentPaths, sessions: list[dict], tagged: int) -> dict[str, str]:
    """Tag every (len / tagged)-th session TAG; pin and star a few of them. Session id -> its mark."""
    valid = [s for s in sessions if s["kind"] not in NO_HEADER]
    step = max(1, len(valid) // max(1, tagged))
    chosen = valid[::step][:tagged]
    events, kinds = [], {}
    for index, session in enumerate(chosen):
        events.append(make_event(session["session_id"], "bench", "tag", add=[TAG], remove=[]))
        kinds[session["session_id"]] = "tag"
        if index % 15 == 0:
            events.append(make_event(session["session_id"], "bench", "pin"))
        if index % 15 == 7:
            events.append(make_event(session["session_id"], "bench", "star"))
    append_events(paths, events)
    return kinds


def listed_lines(minimum: int):  # type: ignore[no-untyped-def]
    def check(result) -> None:  # type: ignore[no-untyped-def]
        if result.code != 0 or result.out.count(b"\n") < minimum:
            raise SystemExit(f"a listing failed: {result.err.decode()[:500]}")
    return check


def digest(root: Path) -> dict[str, str]:
    return {str(path.relative_to(root)): hashlib.sha256(path.read_bytes()).hexdigest() for path in root.rglob("*.jsonl")}


def prune_check(cli: list[str], home: Path, agent: Path, sessions: list[dict], marked: set[str], age_days: int) -> bool:
    """`prune --older-than AGE_DAYS d` moves exactly the reference set, and `trash restore` brings it all back."""
    root = agent / "sessions"
    now = time.time()
    expected = set()
    for session in sessions:
        if session["kind"] in NO_HEADER or session["session_id"] in marked:
            continue
        mtime = os.stat(session["path"]).st_mtime
        if now - mtime >= max(LIVE_SECONDS, age_days * 86400):
            expected.add(session["session_id"])
    before = digest(root)
    started = time.perf_counter()
    done = run([*cli, "prune", "--older-than", f"{age_days}d", "--yes", "--json"], home)
    seconds = time.perf_counter() - started
    moved = {row["id"] for row in orjson.loads(done.out)} if done.code == 0 else set()
    print(f"prune --older-than {age_days}d: moved {len(moved)} sessions in {seconds:.2f} s; reference "
          f"{len(expected)}: {'EXACTLY the reference' if moved == expected else 'DIFFERENT from the reference'}")
    if moved != expected:
        print(f"  moved but not expected: {sorted(moved - expected)[:5]}; expected, not moved: "
              f"{sorted(expected - moved)[:5]}; {done.err.decode()[-300:]}")
    started = time.perf_counter()
    restored = run([*cli, "trash", "restore", *sorted(moved)], home) if moved else None
    seconds = time.perf_counter() - started
    same = digest(root) == before
    print(f"trash restore of the {len(moved)}: {seconds:.2f} s; every file back byte for byte: {same}"
          + ("" if restored is None or restored.code == 0 else f" ({restored.err.decode()[-300:]})"))
    return moved == expected and same


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workdir", type=Path, default=Path("/tmp/sessdex-bench-marks"))
    parser.add_argument("--sessions", type=int, default=10_000)
    parser.add_argument("--projects", type=int, default=300)
    parser.add_argument("--total-size", type=parse_size, default=parse_size("150MB"))
    parser.add_argument("--seed", type=int, default=26)
    parser.add_argument("--tagged", type=int, default=300, help="sessions tagged `bench` (a few pinned, starred)")
    parser.add_argument("--runs", type=int, default=11, help="runs per command (median reported)")
    parser.add_argument("--prune-check", action="store_true", help="also check prune against a reference")
    parser.add_argument("--prune-age", type=int, default=90, help="--older-than of the prune check, in days")
    args = parser.parse_args(argv)
    print("command:", " ".join([Path(sys.executable).name, *sys.argv]))
    print(f"machine: {os.cpu_count()} CPUs, load average at start {os.getloadavg()[0]:.2f}")

    workdir = args.workdir.resolve()
    workdir.mkdir(parents=True, exist_ok=True)
    python = str(install_regular(workdir / "regular-install"))
    sessdex = str(Path(python).with_name("sessdex"))
    agent, home = workdir / "agent", workdir / "home"
    if not (agent / "sessions").exists():
        manifest = generate_corpus(agent, sessions=args.sessions, projects=args.projects,
                                   total_bytes=args.total_size, seed=args.seed, home=home)
        (workdir / "manifest.json").write_bytes(manifest.to_json())
        print(f"corpus: generated in {manifest.seconds:.1f} s")
    manifest = orjson.loads((workdir / "manifest.json").read_bytes())
    home = Path(manifest["home"])
    home.mkdir(parents=True, exist_ok=True)
    sessions = manifest["sessions"]
    paths = AgentPaths(agent_dir=agent, home=home, tmp_dir=Path("/tmp"))
    marks_file = agent / "sessdex" / "marks.jsonl"
    if not marks_file.exists():
        mark_sessions(paths, sessions, args.tagged)
    marked = {orjson.loads(line)["session"] for line in marks_file.read_bytes().splitlines() if line}
    print(f"corpus: {len(sessions)} files, {sum(s['size'] for s in sessions) / 1e6:.1f} MB, "
          f"{len(manifest['projects'])} projects; {len(marked)} sessions marked ({marks_file.stat().st_size:,} "
          f"bytes of marks)")

    cli = [sessdex, "--agent-dir", str(agent), "--catalog", str(workdir / "catalog.db")]
    started = time.perf_counter()
    indexed = run([*cli, "index"], home)
    print(f"index: {time.perf_counter() - started:.1f} s (status {indexed.code})", flush=True)

    by_project: dict[str, int] = {}
    for session in sessions:
        by_project[session["cwd"]] = by_project.get(session["cwd"], 0) + 1
    busiest = Path(max(by_project, key=lambda cwd: by_project[cwd]))
    busiest.mkdir(parents=True, exist_ok=True)
    in_busiest = sum(1 for s in sessions if s["cwd"] == str(busiest) and s["session_id"] in marked)
    commands = {
        "list": ([*cli, "list"], busiest, listed_lines(2)),
        f"list --tag {TAG}": ([*cli, "list", "--tag", TAG], busiest, listed_lines(min(2, in_busiest))),
        "list --all": ([*cli, "list", "--all"], busiest, listed_lines(2)),
        f"list --all --tag {TAG}": ([*cli, "list", "--all", "--tag", TAG], busiest, listed_lines(2)),
        "list --all --pinned": ([*cli, "list", "--all", "--pinned"], busiest, listed_lines(2)),
        f"list --all --tag {TAG} --json": ([*cli, "list", "--all", "--tag", TAG, "--json"], busiest, listed_lines(2)),
    }
    for _argv, cwd, check in commands.values():  # warm the page cache and the catalog once
        check(run(_argv, cwd))
    medians = alternating_medians_ms([python, "-c", "pass"], commands, args.runs)
    floor_wall, floor_cpu = medians["floor"]
    print(f"\n{args.runs} runs each, taking turns; medians (wall / CPU ms); ratios to `python -c pass` "
          f"({floor_wall:.1f} / {floor_cpu:.1f} ms) and to the same listing without marks filter")
    plain = {"list": "list", f"list --tag {TAG}": "list", "list --all": "list --all",
             f"list --all --tag {TAG}": "list --all", "list --all --pinned": "list --all",
             f"list --all --tag {TAG} --json": "list --all"}
    for label in commands:
        wall, cpu = medians[label]
        base_wall, base_cpu = medians[plain[label]]
        print(f"  sessdex {label:<30} {wall:7.1f} / {cpu:7.1f} ms   {wall / floor_wall:5.2f}x / "
              f"{cpu / floor_cpu:5.2f}x python -c pass   {wall / base_wall:5.2f}x / {cpu / base_cpu:5.2f}x "
              f"`{plain[label]}`")
    print(f"(this project: {by_project[str(busiest)]} sessions, {in_busiest} marked; load average at end "
          f"{os.getloadavg()[0]:.2f})")
    if args.prune_check:
        return 0 if prune_check(cli, home, agent, sessions, marked, args.prune_age) else 1
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Measure the file-scan path: wall time of `sessdex list --all` (and friends) on a generated corpus.

The figures are the baseline the catalog is compared against later. Files are freshly written, so they
sit in the page cache: these are warm-cache timings.

    .venv/bin/python scripts/bench_filescan.py [--sessions 1000] [--projects 20] [--total-size 200MB] \
        [--runs 5] [--seed 0] [--keep DIR]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(REPO), str(REPO / "scripts")]

from gen_corpus import generate_corpus, parse_size  # noqa: E402

from sessdex.core.discovery import list_all_sessions, list_sessions  # noqa: E402
from sessdex.core.paths import AgentPaths  # noqa: E402


def _time_command(args: list[str], env: dict[str, str], cwd: Path, runs: int) -> list[float]:
    """Wall-clock seconds of `runs` runs of the sessdex CLI with `args` (a fresh interpreter each time)."""
    command = [sys.executable, "-c", "from sessdex.catalog.cli.entry import main; main()", *args]
    seconds = []
    for _ in range(runs):
        started = time.perf_counter()
        subprocess.run(command, env=env, cwd=cwd, stdout=subprocess.DEVNULL, check=True)
        seconds.append(time.perf_counter() - started)
    return seconds


def _time_call(function, runs: int) -> tuple[list[float], int]:
    seconds, count = [], 0
    for _ in range(runs):
        started = time.perf_counter()
        count = len(function())
        seconds.append(time.perf_counter() - started)
    return seconds, count


def _row(label: str, seconds: list[float], extra: str = "") -> None:
    print(f"{label:<38} median {statistics.median(seconds) * 1000:8.1f} ms   min {min(seconds) * 1000:8.1f} ms"
          f"   ({len(seconds)} runs){extra}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sessions", type=int, default=1000)
    parser.add_argument("--projects", type=int, default=20)
    parser.add_argument("--total-size", default="200MB", help="JSONL bytes across all sessions (e.g. 200MB)")
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--keep", type=Path, help="write the corpus here and keep it (default: a temp dir)")
    options = parser.parse_args(argv)

    with tempfile.TemporaryDirectory(prefix="sessdex-bench-") as scratch:
        root = options.keep or Path(scratch)
        home = root / "home"
        agent_dir = home / ".xcsh" / "agent"
        started = time.perf_counter()
        manifest = generate_corpus(agent_dir, sessions=options.sessions, projects=options.projects,
                                   total_bytes=parse_size(options.total_size), seed=options.seed, home=home)
        print(f"corpus: {len(manifest.sessions)} files, {manifest.session_bytes / 1e6:.1f} MB of JSONL, "
              f"{len(manifest.project_dirs())} folders, written in {time.perf_counter() - started:.1f} s")

        paths = AgentPaths(agent_dir=agent_dir, home=home, tmp_dir=root / "tmp")
        busiest = max(manifest.projects, key=lambda p: sum(s.cwd == p.cwd for s in manifest.sessions))
        cwd = Path(busiest.cwd) if Path(busiest.cwd).is_dir() else home
        env = {**os.environ, "HOME": str(home), "PI_CODING_AGENT_DIR": str(agent_dir),
               "PYTHONPATH": str(REPO), "COLUMNS": "160"}

        in_process, listed = _time_call(lambda: list_all_sessions(paths=paths), options.runs)
        _row("list_all_sessions() in-process", in_process,
             f"   {listed} sessions listed, {manifest.session_bytes / 1e6 / statistics.median(in_process):.0f} MB/s")
        project, project_count = _time_call(lambda: list_sessions(busiest.cwd, paths=paths), options.runs)
        _row("list_sessions(busiest project)", project, f"   {project_count} sessions")
        cli_all = _time_command(["list", "--all"], env, cwd, options.runs)
        _row("sessdex list --all (wall)", cli_all)
        _row("sessdex list --all --json (wall)", _time_command(["list", "--all", "--json"], env, cwd, options.runs))
        _row("sessdex list (busiest project, wall)", _time_command(["list"], env, cwd, options.runs))
        _row("sessdex recent -n 10 (wall)", _time_command(["recent", "-n", "10"], env, cwd, options.runs))
        startup = _time_command(["list", "--help"], env, cwd, options.runs)
        _row("sessdex list --help (startup floor)", startup)
        print(f"list --all per session: {statistics.median(cli_all) / max(listed, 1) * 1e6:.0f} us "
              f"(startup {statistics.median(startup) / statistics.median(cli_all):.0%} of the wall time)")
    return 0


if __name__ == "__main__":
    sys.exit(main())

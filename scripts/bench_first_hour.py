"""The first hour on a corpus: each figure against `python -c pass` and raw read + parse, measured in the same run.

    python scripts/bench_first_hour.py --agent-dir DIR [--agent-dir DIR2 ...] [--runs 3] [--skip-concurrent] [--picker]
        [--index-only [--index-runs 3]]

e.g. item 5's table at 10,000 and 100,000 sessions (mean 8 KB, 100 sessions per project), on a regular install:
    python scripts/gen_corpus.py --agent-dir /tmp/b/k10 --sessions 10000 --projects 100 --total-size 80MB \
        --shape small-messages
    python scripts/gen_corpus.py --agent-dir /tmp/b/k100 --sessions 100000 --projects 1000 --total-size 800MB \
        --shape small-messages
    python scripts/regular_install.py /tmp/b/ri     # prints /tmp/b/ri/venv/bin/python
    /tmp/b/ri/venv/bin/python scripts/bench_first_hour.py --agent-dir /tmp/b/k10 --agent-dir /tmp/b/k100 \
        --skip-concurrent --picker

DIR is a generated corpus (scripts/gen_corpus.py; e.g. 10,000 sessions, or 100,000 in 1,000 projects with
--shape small-messages). The catalog is `DIR/catalog.db`, deleted before each first-index scenario. Figures:
- baselines: `python -c pass` and reading + orjson-parsing every line of every session file (medians of --runs);
- first index alone (`sessdex index` on an empty catalog): wall and CPU time, ratios to read + parse's, peak RSS;
  and when its rows were committed (listings, resume and usage complete; the full-text entries follow);
- `resume PREFIX` issued 1 s after a first `index`, and 1 s after a first `watch`, starts on an empty catalog;
- `list --all` issued 1 s after a first `index` starts: wall time, ratio to the index alone, and whether it lists
  the same sessions as `--catalog off`;
- on the complete catalog, without a watcher and with one: resume, list, recent, continue, search WORD --all,
  usage daily --all, each against `python -c pass`.
- with --picker, scripts/bench_picker.py --pty on the complete catalog: `pick --all`'s first frame from spawn (wall,
  and the CPU time of the process until then), the application's first frame, keystroke p95 (wall and CPU).
The run ends with one table: a line per figure, a column per corpus, and with two corpora or more the last's figure
over the first's (of the CPU time where a cell holds both).
`--skip-concurrent` leaves out the scenarios with a writer running beside (each is one more first index: at
100,000 sessions the run is then about a third as long). `--index-only` measures the baselines and the first index
alone (its median by CPU time over `--index-runs` runs) and nothing else. Run it niced on a quiet machine; wall times on a
shared machine vary, so the first index also prints its CPU time (user + system) beside read + parse's.
"""

from __future__ import annotations

import argparse
import os
import signal
import statistics
import subprocess
import sys
import time
from pathlib import Path

import orjson

SESSDEX = str(Path(sys.executable).parent / "sessdex")


LAST_CPU_SECONDS = [0.0]  # user + system CPU time of the last `timed` child
READ_PARSE_CPU_SECONDS = [0.0]  # CPU time of the last read_and_parse
FLOOR_CPU_SECONDS = [0.0]  # median CPU time of `python -c pass`


def timed(argv: list[str], env: dict[str, str], cwd: str) -> tuple[float, int, str]:
    """(seconds, peak RSS in MB of the child, stdout) of one run."""
    started = time.perf_counter()
    process = subprocess.Popen(argv, env=env, cwd=cwd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                               stderr=subprocess.DEVNULL)
    out = process.stdout.read() if process.stdout else b""
    _pid, _status, usage = os.wait4(process.pid, 0)
    process.returncode = 0
    LAST_CPU_SECONDS[0] = usage.ru_utime + usage.ru_stime
    return time.perf_counter() - started, usage.ru_maxrss // 1024, out.decode(errors="replace")


def median_time(argv: list[str], env: dict[str, str], cwd: str, runs: int) -> float:
    return median_times(argv, env, cwd, runs)[0]


def median_times(argv: list[str], env: dict[str, str], cwd: str, runs: int) -> tuple[float, float]:
    """(median wall seconds, median CPU seconds of the child) over `runs` runs."""
    walls, cpus = [], []
    for _ in range(runs):
        walls.append(timed(argv, env, cwd)[0])
        cpus.append(LAST_CPU_SECONDS[0])
    return statistics.median(walls), statistics.median(cpus)


# Run in a child of its own: a parent that had read the corpus would pass its peak RSS on to every child it forks
# (Linux keeps the high-water mark across exec), and the children's peak RSS is a figure of this benchmark.
READ_AND_PARSE = """
import sys
from pathlib import Path
import orjson
files = 0
for path in Path(sys.argv[1]).rglob("*.jsonl"):
    files += 1
    for line in path.read_bytes().splitlines():
        try:
            orjson.loads(line)
        except orjson.JSONDecodeError:
            pass
print(files)
"""


def read_and_parse(root: Path, runs: int = 1) -> tuple[float, int]:
    """Seconds to read and orjson-parse every line of every session file, the median of `runs` (its CPU time, the
    median too, in READ_PARSE_CPU_SECONDS); the number of files."""
    walls, cpus = [], []
    for _ in range(max(1, runs)):
        seconds, _rss, out = timed([sys.executable, "-c", READ_AND_PARSE, str(root)], dict(os.environ), str(root))
        walls.append(seconds)
        cpus.append(LAST_CPU_SECONDS[0])
    READ_PARSE_CPU_SECONDS[0] = statistics.median(cpus)
    return statistics.median(walls), int(out)


def first_index(cli: list[str], env: dict[str, str], cwd: str, agent: Path) -> tuple[float, int, dict | None]:
    """A first index on an empty catalog: (seconds, peak RSS in MB, the figures of its bulk run or None).

    The bulk run's figures (SESSDEX_INDEX_STATS) say when its rows were committed: from then on listings, resume
    and usage are complete, and only the full-text entries of the message rows are still being written."""
    remove_catalog(agent)
    stats = agent / "bench-index-stats.json"
    stats.unlink(missing_ok=True)
    started = time.time()
    seconds, rss, _ = timed([*cli, "index"], {**env, "SESSDEX_INDEX_STATS": str(stats)}, cwd)
    figures = None
    if stats.exists():
        figures = orjson.loads(stats.read_bytes().splitlines()[0])
        figures["rows_seconds"] = figures["ended_at"] - started
        stats.unlink()
    return seconds, rss, figures


def remove_catalog(agent: Path) -> None:
    for suffix in ("", "-wal", "-shm"):
        Path(f"{agent}/catalog.db{suffix}").unlink(missing_ok=True)


def one_session(root: Path) -> tuple[str, str]:
    """(id prefix of 8 characters, the project cwd's session folder) of a session in the middle of the corpus."""
    files = sorted(root.rglob("*.jsonl"))
    path = files[len(files) // 2]
    return path.name.rsplit("_", 1)[-1][:8], str(path.parent)


def concurrent_scenarios(cli: list[str], env: dict[str, str], cwd: str, agent: Path, prefix: str, floor: float,
                         index_alone: float) -> None:
    """resume 1 s after a first index / watch starts; list --all 1 s after a first index starts (vs --catalog off)."""
    for writer in ("index", "watch"):
        remove_catalog(agent)
        background = subprocess.Popen([*cli, writer], env=env, cwd=cwd, stdin=subprocess.DEVNULL,
                                      stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
        time.sleep(1.0)
        seconds, _rss, out = timed([*cli, "resume", prefix, "--own-dir"], env, cwd)
        cpu = LAST_CPU_SECONDS[0]
        print(f"resume {prefix} 1 s after a first `{writer}`: {seconds * 1000:.0f} ms = {seconds / floor:.1f}x "
              f"python -c pass; CPU {cpu * 1000:.0f} ms = {cpu / FLOOR_CPU_SECONDS[0]:.1f}x python -c pass's "
              f"({'found' if out.strip() else 'NOT FOUND'})", flush=True)
        if writer == "index":
            background.wait()
        else:
            os.killpg(background.pid, signal.SIGTERM)
            background.wait()

    remove_catalog(agent)
    reference = timed([*cli, "--catalog", "off", "list", "--all", "--json"], env, cwd)[2]
    remove_catalog(agent)
    background = subprocess.Popen([*cli, "index"], env=env, cwd=cwd, stdin=subprocess.DEVNULL,
                                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    time.sleep(1.0)
    seconds, _rss, listed = timed([*cli, "list", "--all", "--json"], env, cwd)
    background.wait()
    same = orjson.loads(listed) == orjson.loads(reference)
    print(f"list --all 1 s after a first `index`: {seconds:.2f} s = {seconds / index_alone:.2f}x the index alone; "
          f"same sessions as --catalog off: {same}", flush=True)


def wait_for_heartbeat(agent: Path, pid: int, timeout: float = 600.0) -> None:
    """Wait until the watcher `pid` published its heartbeat (its initial scan is done: reads may trust it)."""
    heartbeat = agent / "catalog.db.watcher"
    started = time.monotonic()
    while time.monotonic() - started < timeout:
        try:
            if heartbeat.read_text(encoding="utf-8").split("\n", 1)[0] == str(pid):
                print(f"watcher ready after {time.monotonic() - started:.1f} s", flush=True)
                return
        except OSError:
            pass
        time.sleep(0.2)
    print("the watcher published no heartbeat: the figures with it are without one", flush=True)


Figures = dict[str, str]  # figure name -> its cell in the final table, for one corpus


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--agent-dir", type=Path, required=True, action="append",
                        help="a corpus; given twice or more (e.g. 10,000 then 100,000 sessions), the table ends with "
                             "the ratio of the last corpus's figures to the first's")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--word", default="parser")
    parser.add_argument("--skip-concurrent", action="store_true",
                        help="leave out resume/list --all while a first index or watch runs")
    parser.add_argument("--commands-only", action="store_true",
                        help="keep the catalog (it must be complete) and measure only the commands without and with "
                             "a watcher")
    parser.add_argument("--index-only", action="store_true",
                        help="measure only the baselines and the first index alone (no concurrent scenarios, no "
                             "commands): the figure of the index's speed work")
    parser.add_argument("--index-runs", type=int, default=1,
                        help="first indexes to run (each on an empty catalog); the median by CPU time is reported")
    parser.add_argument("--picker", action="store_true",
                        help="also measure the picker (scripts/bench_picker.py --pty): first paint, keystroke p95")
    args = parser.parse_args()
    tables = [(agent.resolve(), measure_corpus(agent.resolve(), args)) for agent in args.agent_dir]
    print_table(tables)
    return 0


def measure_corpus(agent: Path, args: argparse.Namespace) -> dict[str, tuple[str, float]]:
    """Every figure of one corpus, printed as it is measured; returned as name -> (cell, value to compare)."""
    root = agent / "sessions"
    env = {**os.environ, "PI_CODING_AGENT_DIR": str(agent), "SESSDEX_AUTOWATCH": "0"}
    env.pop("SESSDEX_CATALOG", None)
    cwd = str(Path.home())
    cli = [SESSDEX]
    prefix, _folder = one_session(root)
    floor_cpu = []
    for _ in range(max(5, args.runs)):
        timed([sys.executable, "-c", "pass"], env, cwd)
        floor_cpu.append(LAST_CPU_SECONDS[0])
    FLOOR_CPU_SECONDS[0] = statistics.median(floor_cpu)
    floor = median_time([sys.executable, "-c", "pass"], env, cwd, max(5, args.runs))
    raw, files = read_and_parse(root, args.runs)
    raw_cpu = READ_PARSE_CPU_SECONDS[0]
    print(f"corpus {agent}: {files} files; python -c pass {floor * 1000:.1f} ms (CPU {FLOOR_CPU_SECONDS[0] * 1000:.1f} "
          f"ms); read + parse {raw:.2f} s (CPU {raw_cpu:.2f} s); load average {os.getloadavg()[0]:.2f}", flush=True)
    figures: dict[str, tuple[str, float]] = {
        "sessions": (str(files), files),
        "python -c pass (CPU)": (f"{floor * 1000:.0f} ms ({FLOOR_CPU_SECONDS[0] * 1000:.0f})", FLOOR_CPU_SECONDS[0]),
        "read + parse (CPU)": (f"{raw:.2f} s ({raw_cpu:.2f})", raw_cpu),
        "load average at start": (f"{os.getloadavg()[0]:.1f}", os.getloadavg()[0]),
    }
    if not args.commands_only:
        figures.update(measure_first_index(cli, env, cwd, agent, raw, raw_cpu, prefix, floor,
                                           args.skip_concurrent or args.index_only, args.index_runs))
    if not args.index_only:
        figures.update(measure_commands(cli, env, cwd, agent, prefix, floor, args))
    if args.picker:
        figures.update(measure_picker(agent, args.runs))
    figures["load average at end"] = (f"{os.getloadavg()[0]:.1f}", os.getloadavg()[0])
    return figures


def measure_first_index(cli: list[str], env: dict[str, str], cwd: str, agent: Path, raw: float, raw_cpu: float,
                        prefix: str, floor: float, skip_concurrent: bool, runs: int = 1
                        ) -> dict[str, tuple[str, float]]:
    measured = []
    for _ in range(max(1, runs)):
        index_alone, index_rss, figures = first_index(cli, env, cwd, agent)
        measured.append((LAST_CPU_SECONDS[0], index_alone, index_rss, figures))
        if runs > 1:
            print(f"  a first index: {index_alone:.2f} s, CPU {LAST_CPU_SECONDS[0]:.2f} s, load average "
                  f"{os.getloadavg()[0]:.2f}", flush=True)
    index_cpu, index_alone, index_rss, figures = sorted(measured, key=lambda run: run[0])[len(measured) // 2]
    print(f"first index alone: {index_alone:.2f} s = {index_alone / raw:.2f}x read + parse; peak RSS {index_rss} MB; "
          f"CPU {index_cpu:.2f} s = {index_cpu / raw_cpu:.2f}x read + parse's", flush=True)
    if figures is not None:
        rows, rows_cpu = figures["rows_seconds"], figures["main_cpu_seconds"]
        print(f"  of which its rows (listings, resume, usage complete): {rows:.2f} s = {rows / raw:.2f}x read + parse, "
              f"CPU {rows_cpu:.2f} s = {rows_cpu / raw_cpu:.2f}x; then the full-text entries: "
              f"{index_alone - rows:.2f} s, CPU {index_cpu - rows_cpu:.2f} s", flush=True)

    if not skip_concurrent:  # each ends with a complete catalog, as the index alone left it
        concurrent_scenarios(cli, env, cwd, agent, prefix, floor, index_alone)
    return {"first index: wall, x read + parse": (f"{index_alone:.1f} s = {index_alone / raw:.1f}x", index_alone),
            "first index: CPU, x read + parse's": (f"{index_cpu:.1f} s = {index_cpu / raw_cpu:.1f}x", index_cpu),
            "first index: peak RSS": (f"{index_rss} MB", index_rss)}


def measure_commands(cli: list[str], env: dict[str, str], cwd: str, agent: Path, prefix: str, floor: float,
                     args: argparse.Namespace) -> dict[str, tuple[str, float]]:
    """Each command without a watcher, then with one: wall and CPU medians, against `python -c pass`'s."""
    commands = {"resume": ["resume", prefix, "--own-dir"], "list": ["list"], "recent": ["recent"],
                "continue": ["continue"], "search --all": ["search", args.word, "--all"],
                "usage daily --all": ["usage", "daily", "--all"]}
    without = {name: median_times([*cli, *argv], env, cwd, args.runs) for name, argv in commands.items()}
    watcher = subprocess.Popen([*cli, "watch"], env=env, cwd=cwd, stdin=subprocess.DEVNULL,
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        wait_for_heartbeat(agent, watcher.pid)
        with_watcher = {name: median_times([*cli, *argv], env, cwd, args.runs) for name, argv in commands.items()}
    finally:
        os.killpg(watcher.pid, signal.SIGTERM)
        watcher.wait()
    figures: dict[str, tuple[str, float]] = {}
    floor_cpu = FLOOR_CPU_SECONDS[0]
    for name, argv in commands.items():
        print(f"{name}: without a watcher {without[name][0] * 1000:.0f} ms = {without[name][0] / floor:.1f}x, with one "
              f"{with_watcher[name][0] * 1000:.0f} ms = {with_watcher[name][0] / floor:.1f}x python -c pass; CPU "
              f"{without[name][1] * 1000:.0f} / {with_watcher[name][1] * 1000:.0f} ms = "
              f"{without[name][1] / floor_cpu:.1f}x / {with_watcher[name][1] / floor_cpu:.1f}x python -c pass's",
              flush=True)
        label = " ".join(argv).replace(prefix, "PREFIX")
        for kind, (wall, cpu) in (("no watcher", without[name]), ("watcher", with_watcher[name])):
            figures[f"{label} ({kind}): ms, x pass (CPU)"] = (
                f"{wall * 1000:.0f} = {wall / floor:.1f}x ({cpu * 1000:.0f} = {cpu / floor_cpu:.1f}x)", cpu)
    print(f"load average {os.getloadavg()[0]:.2f}", flush=True)
    return figures


def measure_picker(agent: Path, runs: int) -> dict[str, tuple[str, float]]:
    """scripts/bench_picker.py on the corpus's catalog (its --pty first frame from spawn, keystrokes in process)."""
    import tempfile

    with tempfile.TemporaryDirectory(prefix="bench-first-hour-") as scratch:
        out = Path(scratch) / "picker.json"
        subprocess.run([sys.executable, str(Path(__file__).with_name("bench_picker.py")), "--agent-dir", str(agent),
                        "--pty", "--runs", str(runs), "--json", str(out)], check=True)
        picker = orjson.loads(out.read_bytes())
    return {"picker first paint (pick --all, from spawn)": (f"{picker['first_paint_ms']:.0f} ms",
                                                            picker["first_paint_ms"]),
            "picker first paint (CPU of the process)": (f"{picker['first_paint_cpu_ms']:.0f} ms",
                                                        picker["first_paint_cpu_ms"]),
            "picker application's first frame": (f"{picker['end_to_end_median_ms']:.0f} ms",
                                                 picker["end_to_end_median_ms"]),
            "picker keystroke p95 (CPU p95)": (f"{picker['keystroke_p95_ms']:.1f} ms ({picker['keystroke_cpu_p95_ms']:.1f})",
                                               picker["keystroke_cpu_p95_ms"])}


def print_table(tables: list[tuple[Path, dict[str, tuple[str, float]]]]) -> None:
    """One line per figure, one column per corpus; with two corpora or more, the last's over the first's (of the
    CPU figure where a cell holds both)."""
    names = list(dict.fromkeys(name for _agent, figures in tables for name in figures))
    width = max(len(name) for name in names)
    cells = [[figures.get(name, ("-", 0.0))[0] for _agent, figures in tables] for name in names]
    column = max(len(cell) for row in cells for cell in row)
    print()
    print(f"{'':<{width}}  " + "  ".join(f"{agent.name:<{column}}" for agent, _ in tables)
          + ("  last / first" if len(tables) > 1 else ""))
    for name, row in zip(names, cells, strict=True):
        line = f"{name:<{width}}  " + "  ".join(f"{cell:<{column}}" for cell in row)
        first, last = tables[0][1].get(name), tables[-1][1].get(name)
        if len(tables) > 1 and first and last and first[1]:
            line += f"  {last[1] / first[1]:.2f}"
        print(line, flush=True)


if __name__ == "__main__":
    sys.exit(main())

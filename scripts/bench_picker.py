"""Measure the session picker at 10,000 sessions: first paint, and the redraw after each keystroke.

Budgets: first paint <= 150 ms from the process start, each keystroke's filter + redraw <= 16 ms.

- end to end (--pty, the figure the first-paint budget is about): `sessdex pick --all` in a pseudo-terminal, from
  spawn to its first frame (drawn before prompt_toolkit is imported), and to the picker application's own
  first frame (which takes the screen over), beside `python -c pass` spawned the same way;
- import: a fresh interpreter imports the picker application (prompt_toolkit and sessdex's picker modules);
- application first paint (in-process, after the import): open the source, load every session's row, build
  the picker and draw its first frame into a VT100 terminal sink of 120 (--columns) x 40 cells (all escape sequences generated);
- keystrokes: the picker runs on its event loop; each typed character goes in through a pipe, and the
  time is taken from writing the byte to the end of the first redraw that shows the new query;
- CPU lines: the same spans in CPU time of the picker's thread, which other processes' load does not
  inflate (a 2-core machine shared with other jobs can stretch wall times several-fold: see the
  calibration line);
- content search: from the last keystroke of a query to the redraw that merges the message-text hits;
- --profile FILE: cProfile of the keystrokes (from each key's arrival to its redraw), saved for pstats.

The corpus is generated (scripts/gen_corpus.py) unless --agent-dir names one; with the catalog source
it is indexed first (not timed). Figures are warm-cache, wall-clock, on this machine.

    .venv/bin/python scripts/bench_picker.py [--sessions 10000] [--projects 40] [--total-size 100MB] \
        [--agent-dir DIR | --keep DIR] [--source catalog|filescan] [--runs 5] [--pause 0.12] [--pty] \
        [--profile FILE] [--columns 120]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import cProfile
import errno
import fcntl
import json
import os
import pty
import select
import statistics
import struct
import subprocess
import sys
import tempfile
import termios
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(REPO), str(REPO / "scripts")]

from gen_corpus import generate_corpus, parse_size

from sessdex.core.paths import AgentPaths

FIRST_PAINT_BUDGET_MS = 150
KEYSTROKE_BUDGET_MS = 16
SLOWEST_KEYS = 6  # a p95 over the 78 keys of the default queries is about the 5th slowest
QUERIES = ("parser", "deploy api", "fsync", "15e1a", "fix the cache")
SCREEN_COLUMNS, SCREEN_ROWS = 120, 40


class TerminalSink:
    """A stand-in terminal for prompt_toolkit's VT100 output: counts the bytes it is sent."""

    encoding = "utf-8"

    def __init__(self) -> None:
        self.written = 0

    def write(self, data: str) -> int:
        self.written += len(data)
        return len(data)

    def flush(self) -> None:
        pass

    def isatty(self) -> bool:
        return True


def open_source(kind: str, paths: AgentPaths, cwd: str) -> Any:
    from sessdex.catalog.queries.file_scan import FileScan
    from sessdex.catalog.queries.picker_source import PickerSource
    from sessdex.catalog.queries.sessions import Catalog

    return PickerSource(Catalog(paths) if kind == "catalog" else FileScan(paths), cwd)


def make_output() -> Any:
    from prompt_toolkit.data_structures import Size
    from prompt_toolkit.output.vt100 import Vt100_Output

    return Vt100_Output(TerminalSink(), lambda: Size(rows=SCREEN_ROWS, columns=SCREEN_COLUMNS),  # type: ignore[arg-type]
                        term="xterm-256color", enable_cpr=False)


def cold_import_ms(runs: int) -> tuple[list[float], list[float]]:
    """Wall and CPU milliseconds a fresh interpreter takes to import the picker (prompt_toolkit included)."""
    code = ("import time; wall, cpu = time.perf_counter(), time.process_time(); import sessdex.catalog.tui.picker; "
            "print((time.perf_counter() - wall) * 1000, (time.process_time() - cpu) * 1000)")
    walls, cpus = [], []
    for _ in range(runs):
        wall, cpu = subprocess.run([sys.executable, "-c", code], cwd=REPO, check=True, capture_output=True,
                                   text=True).stdout.split()
        walls.append(float(wall))
        cpus.append(float(cpu))
    return walls, cpus


def calibration_ms() -> float:
    """How long this machine takes, right now, for a fixed pure-Python loop (about 8 ms on an idle modern core)."""
    best = float("inf")
    for _ in range(5):
        started = time.perf_counter()
        sum(range(1_000_000))
        best = min(best, (time.perf_counter() - started) * 1000)
    return best


async def first_paint(kind: str, paths: AgentPaths, cwd: str) -> dict[str, float]:
    """One in-process start of the picker over all projects; the phases in wall milliseconds, plus CPU."""
    from prompt_toolkit.input import create_pipe_input

    from sessdex.catalog.tui.picker import PickerResult, SessionPicker

    started, started_cpu = time.perf_counter(), time.thread_time()
    source = open_source(kind, paths, cwd)
    rows = source.rows("all")
    loaded = time.perf_counter()
    with create_pipe_input() as pipe:
        picker = SessionPicker(source, "all", rows=rows, input=pipe, output=make_output())
        built = time.perf_counter()
        painted = asyncio.get_running_loop().create_future()
        picker.app.after_render += lambda _app: painted.done() or painted.set_result(
            (time.perf_counter(), time.thread_time()))
        task = asyncio.ensure_future(picker.run_async())
        painted_at, painted_cpu = await painted
        picker.app.exit(result=PickerResult("cancelled"))
        await task
    source.close()
    return {"rows": (loaded - started) * 1000, "build": (built - loaded) * 1000,
            "render": (painted_at - built) * 1000, "total": (painted_at - started) * 1000,
            "total_cpu": (painted_cpu - started_cpu) * 1000}


async def typing(kind: str, paths: AgentPaths, cwd: str, queries: list[str], pause: float,
                 profile: Any = None) -> tuple[dict[str, list[float]], list[tuple[str, float, float]]]:
    """Type each query (then erase it) in a running picker: per-keystroke wall and CPU latency, content delay;
    and each key's query (Backspace marked ⌫) with its wall and CPU milliseconds.

    CPU is the picker thread's own time from the key's arrival to the end of its redraw (the thread idles
    in select() until then), so it does not count other processes competing for the cores.
    """
    from prompt_toolkit.input import create_pipe_input

    from sessdex.catalog.tui.picker import PickerResult, SessionPicker

    loop = asyncio.get_running_loop()
    source = open_source(kind, paths, cwd)
    latencies: dict[str, list[float]] = {"type": [], "type_cpu": [], "erase": [], "erase_cpu": [], "content": []}
    keys: list[tuple[str, float, float]] = []  # (the query the key made, wall ms, CPU ms), in typing order
    with create_pipe_input() as pipe:
        picker = SessionPicker(source, "all", input=pipe, output=make_output())
        model = picker.model
        waiting: list[tuple[Callable[[], bool], asyncio.Future[tuple[float, float]]]] = []

        merged_at: dict[Any, float] = {}  # content key -> when a frame first showed its content matches
        last_sent = [0.0]

        def after_render(_app: Any) -> None:
            content_key = model.content_key
            if content_key is not None and not model.content_pending and content_key not in merged_at:
                merged_at[content_key] = time.perf_counter()
            for condition, future in list(waiting):
                if not future.done() and condition():
                    if profile is not None:
                        profile.disable()
                    future.set_result((time.perf_counter(), time.thread_time()))
                    waiting.remove((condition, future))

        async def rendered(condition: Callable[[], bool]) -> tuple[float, float]:
            future: asyncio.Future[tuple[float, float]] = loop.create_future()
            waiting.append((condition, future))
            return await asyncio.wait_for(future, 60)

        picker.app.after_render += after_render
        task = asyncio.ensure_future(picker.run_async())
        await rendered(lambda: True)
        await asyncio.sleep(0.5)  # the search strings are built right after the first paint

        async def key(data: str, expected_query: str, kind: str) -> None:
            done = rendered(lambda: model.query == expected_query)
            sent, sent_cpu = time.perf_counter(), time.thread_time()
            last_sent[0] = sent
            if profile is not None:
                profile.enable()
            pipe.send_text(data)
            done_at, done_cpu = await done
            latencies[kind].append((done_at - sent) * 1000)
            latencies[kind + "_cpu"].append((done_cpu - sent_cpu) * 1000)
            keys.append((("⌫ " if kind == "erase" else "") + repr(expected_query), latencies[kind][-1],
                         latencies[kind + "_cpu"][-1]))
            await asyncio.sleep(pause)

        for query in queries:
            merged_at.clear()  # a needle typed for an earlier query must not count for this one
            for length in range(1, len(query) + 1):
                await key(query[length - 1], query[:length], "type")
            content_key = model.content_key
            if content_key is not None:  # the matches may have arrived during the pause already
                if content_key not in merged_at:
                    await rendered(lambda key=content_key: key in merged_at)
                latencies["content"].append((merged_at[content_key] - last_sent[0]) * 1000)
            for length in range(len(query) - 1, -1, -1):
                await key("\x7f", query[:length], "erase")
        picker.app.exit(result=PickerResult("cancelled"))
        await task
    source.close()
    return latencies, keys


def _read_terminal(leader: int) -> bytes:
    """What the child wrote to the pseudo-terminal, b"" once it has closed it.

    Linux reports a pseudo-terminal whose last child-side descriptor closed as EIO, not as end of file.
    """
    try:
        return os.read(leader, 65536)
    except OSError as exc:
        if exc.errno == errno.EIO:
            return b""
        raise


def _read_until(leader: int, marker: bytes, shown: bytearray) -> None:
    """Read the pseudo-terminal into `shown` until it holds `marker`."""
    while marker not in shown:
        ready, _, _ = select.select([leader], [], [], 30)
        chunk = _read_terminal(leader) if ready else b""
        if not chunk:
            raise RuntimeError(f"never showed {marker!r}; the terminal showed {bytes(shown[-400:])!r}")
        shown += chunk


def _spawn(command: list[str], environment: dict[str, str], cwd: str) -> tuple[int, int]:
    pid, leader = pty.fork()  # the child gets the pseudo-terminal as its controlling terminal
    if pid == 0:
        fcntl.ioctl(0, termios.TIOCSWINSZ, struct.pack("HHHH", SCREEN_ROWS, SCREEN_COLUMNS, 0, 0))
        os.chdir(cwd)
        os.execve(command[0], command, environment)
    return pid, leader


def end_to_end_ms(agent_dir: Path, cwd: str, runs: int) -> dict[str, list[float]]:
    """Start `sessdex pick --all` on a new pseudo-terminal: milliseconds until its first frame shows the count,
    and until the application's first frame (its first render turns bracketed paste on); and `python -c pass`
    spawned the same way, as the baseline."""
    # No watcher started behind the benchmark's back: it would index beside the runs measured.
    environment = {**os.environ, "PI_CODING_AGENT_DIR": str(agent_dir), "TERM": "xterm-256color",
                   "SESSDEX_AUTOWATCH": "0"}
    # The console script of the interpreter running this benchmark (the development venv's, or an installed one).
    command = [str(Path(sys.executable).with_name("sessdex")), "pick", "--all"]
    results: dict[str, list[float]] = {"first_frame": [], "first_frame_cpu": [], "application": [], "python": []}
    for _ in range(runs):
        started = time.perf_counter()
        pid, leader = _spawn([sys.executable, "-c", "pass"], environment, cwd)
        try:
            while select.select([leader], [], [], 10)[0] and _read_terminal(leader):
                pass
        finally:
            os.close(leader)
            os.waitpid(pid, 0)
        results["python"].append((time.perf_counter() - started) * 1000)
        started = time.perf_counter()
        pid, leader = _spawn(command, environment, cwd)
        shown = bytearray()
        try:
            _read_until(leader, b" of ", shown)
            results["first_frame"].append((time.perf_counter() - started) * 1000)
            results["first_frame_cpu"].append(process_cpu_ms(pid))
            _read_until(leader, b"\x1b[?2004h", shown)
            results["application"].append((time.perf_counter() - started) * 1000)
            with contextlib.suppress(OSError):  # the child may have left already
                os.write(leader, b"\x03")
            while select.select([leader], [], [], 10)[0] and _read_terminal(leader):
                pass  # drain what it draws while leaving, until it closes the terminal
        finally:
            os.close(leader)
            os.waitpid(pid, 0)
    return results


def process_cpu_ms(pid: int) -> float:
    """The CPU time (user + system) a running process has used so far, in milliseconds (Linux's /proc)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) * 1000 / os.sysconf("SC_CLK_TCK")


def summary(label: str, values: list[float], budget: float | None = None) -> str:
    ordered = sorted(values)
    p95 = ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]
    verdict = "" if budget is None else (f"   budget {budget:.0f} ms: "
                                         f"{'OK' if p95 <= budget else 'OVER'} (p95/budget {p95 / budget:.2f})")
    return (f"{label:<34} median {statistics.median(values):7.1f} ms   p95 {p95:7.1f} ms   max {ordered[-1]:7.1f} ms"
            f"   n={len(values)}{verdict}")


def main(argv: list[str] | None = None) -> int:
    global SCREEN_COLUMNS
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sessions", type=int, default=10_000)
    parser.add_argument("--projects", type=int, default=40)
    parser.add_argument("--total-size", default="100MB", help="JSONL bytes of the generated corpus")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--agent-dir", type=Path, help="use this existing agent dir instead of generating one")
    parser.add_argument("--keep", type=Path, help="generate the corpus here and keep it")
    parser.add_argument("--source", choices=("catalog", "filescan"), default="catalog")
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--pause", type=float, default=0.12, help="seconds between keystrokes")
    parser.add_argument("--queries", default=",".join(QUERIES), help="comma-separated queries to type")
    parser.add_argument("--pty", action="store_true", help="also time `sessdex pick --all` end to end")
    parser.add_argument("--profile", type=Path, help="save a cProfile of the keystrokes here (read it with pstats)")
    parser.add_argument("--json", type=Path, help="also write the headline figures to this file as JSON")
    parser.add_argument("--columns", type=int, default=SCREEN_COLUMNS,
                        help="terminal width (the preview pane opens from 140 columns)")
    options = parser.parse_args(argv)
    SCREEN_COLUMNS = options.columns

    with tempfile.TemporaryDirectory(prefix="sessdex-bench-picker-") as scratch:
        agent_dir = options.agent_dir or options.keep or Path(scratch) / "agent"
        if options.agent_dir is None:
            print(f"generating {options.sessions} sessions ({options.total_size}) in {agent_dir} ...", flush=True)
            generate_corpus(agent_dir, sessions=options.sessions, projects=options.projects,
                            total_bytes=parse_size(options.total_size), seed=options.seed)
        paths = AgentPaths.from_env(agent_dir)
        cwd = str(Path(scratch))
        prepared = time.perf_counter()
        warm = open_source(options.source, paths, cwd)
        row_count = len(warm.rows("all"))
        warm.close()
        print(f"{options.source} source ready for {row_count} sessions in {time.perf_counter() - prepared:.1f} s "
              "(indexing / first read, not timed below)")

        calibration = calibration_ms()
        imports, imports_cpu = cold_import_ms(options.runs)
        paints = [asyncio.run(first_paint(options.source, paths, cwd)) for _ in range(options.runs)]
        profile = cProfile.Profile() if options.profile else None
        latencies, keys = asyncio.run(typing(options.source, paths, cwd, options.queries.split(","), options.pause,
                                             profile))
        if profile is not None:
            profile.dump_stats(options.profile)
        print()
        print(f"machine: load average {os.getloadavg()[0]:.2f} on {os.cpu_count()} cores; calibration loop "
              f"{calibration:.1f} ms before, {calibration_ms():.1f} ms after (about 8 ms on an idle modern core)")
        end_to_end = end_to_end_ms(agent_dir, cwd, options.runs) if options.pty else {}
        if end_to_end:
            baseline = statistics.median(end_to_end["python"])
            print(summary("`python -c pass` in a pseudo-terminal", end_to_end["python"]))
            print(summary("sessdex pick --all: first frame", end_to_end["first_frame"], FIRST_PAINT_BUDGET_MS))
            print(summary("  CPU of the process until then", end_to_end["first_frame_cpu"]))
            print(f"{'':<34} = {statistics.median(end_to_end['first_frame']) / baseline:.2f}x `python -c pass`")
            print(summary("  the application's first frame", end_to_end["application"]))
        print(summary("import picker (fresh interpreter)", imports))
        print(summary("  CPU", imports_cpu))
        for phase, label in (("rows", f"load {row_count} rows from source"), ("build", "build picker"),
                             ("render", "first render"), ("total", "first paint after import"),
                             ("total_cpu", "  CPU")):
            print(summary(label, [paint[phase] for paint in paints]))
        print(summary("application first paint incl. import",
                      [statistics.median(imports) + paint["total"] for paint in paints]))
        print(summary("  CPU", [statistics.median(imports_cpu) + paint["total_cpu"] for paint in paints]))
        print(summary("keystroke: type a character", latencies["type"], KEYSTROKE_BUDGET_MS))
        print(summary("  CPU", latencies["type_cpu"], KEYSTROKE_BUDGET_MS))
        print(summary("keystroke: backspace", latencies["erase"], KEYSTROKE_BUDGET_MS))
        print(summary("  CPU", latencies["erase_cpu"], KEYSTROKE_BUDGET_MS))
        keystrokes = sorted(latencies["type"] + latencies["erase"])
        keystrokes_cpu = sorted(latencies["type_cpu"] + latencies["erase_cpu"])
        print(summary("keystroke: all", keystrokes, KEYSTROKE_BUDGET_MS))
        print(summary("  CPU", latencies["type_cpu"] + latencies["erase_cpu"], KEYSTROKE_BUDGET_MS))
        slowest = sorted(keys, key=lambda key: -key[2])[:SLOWEST_KEYS]
        print("slowest keys by CPU (query after the key: wall / CPU ms): "
              + ", ".join(f"{query} {wall:.1f}/{cpu:.1f}" for query, wall, cpu in slowest))
        if latencies["content"]:
            print(summary("content matches after last key", latencies["content"]))
        if options.json is not None:
            in_process = statistics.median(statistics.median(imports) + paint["total"] for paint in paints)
            figures = {
                "rows": row_count,
                # From the process start when measured in a pseudo-terminal, else the application's in-process figure.
                "first_paint_ms": statistics.median(end_to_end["first_frame"]) if end_to_end else in_process,
                "keystroke_p95_ms": keystrokes[min(len(keystrokes) - 1, round(0.95 * (len(keystrokes) - 1)))],
                "first_paint_cpu_ms": statistics.median(end_to_end["first_frame_cpu"]) if end_to_end else None,
                "keystroke_cpu_p95_ms": keystrokes_cpu[min(len(keystrokes_cpu) - 1,
                                                           round(0.95 * (len(keystrokes_cpu) - 1)))],
                "keystroke_median_ms": statistics.median(keystrokes),
                "content_median_ms": statistics.median(latencies["content"]) if latencies["content"] else None,
                "end_to_end_median_ms": statistics.median(end_to_end["application"]) if end_to_end else None,
                "details": f"{row_count} rows; first frame from spawn "
                           + (f"{statistics.median(end_to_end['first_frame']):.0f} ms (`python -c pass` "
                              f"{statistics.median(end_to_end['python']):.0f} ms), application's first frame "
                              f"{statistics.median(end_to_end['application']):.0f} ms; " if end_to_end else "")
                           + f"in process: import {statistics.median(imports):.0f} ms + paint "
                           f"{statistics.median(paint['total'] for paint in paints):.0f} ms; keystroke median "
                           f"{statistics.median(keystrokes):.1f} ms over {len(keystrokes)}; calibration loop "
                           f"{calibration:.1f} ms (about 8 ms on an idle modern core)",
            }
            options.json.write_text(json.dumps(figures, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())

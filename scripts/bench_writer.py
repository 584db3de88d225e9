"""Measure what the session writer's safety costs: locked appends and adopting rewrites, against raw writes.

Each append takes the session's flock, checks the path still names the open file and ends a torn line;
each full rewrite (a rename) re-reads the file under the lock to adopt entries other processes appended.
The baselines are the bare system calls measured in the same run: `os.write` (+ `os.fsync`) on a plain
file, and writing + renaming the same bytes.

    .venv/bin/python scripts/bench_writer.py [--appends 2000] [--entries 5000] [--renames 20]
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(REPO)]

from sessdex.core.paths import AgentPaths  # noqa: E402
from sessdex.core.runtime import SessionRuntime  # noqa: E402
from sessdex.core.session_manager import SessionManager  # noqa: E402

ASSISTANT = {"role": "assistant", "content": [{"type": "text", "text": "ok"}], "provider": "p", "model": "m"}


def _manager(root: Path) -> SessionManager:
    runtime = SessionRuntime(paths=AgentPaths(agent_dir=root / "agent", home=root), environ={}, tty_path=lambda: None)
    manager = SessionManager.create(str(root), runtime=runtime)
    manager.append_message({"role": "user", "content": "start"})
    manager.append_message(ASSISTANT)
    return manager


def _message(n: int) -> dict[str, object]:
    return {"role": "user", "content": f"message {n} " + "x" * 200, "timestamp": n}


def bench_appends(root: Path, count: int, fsync_each: bool) -> tuple[float, float]:
    """Seconds for `count` session appends, and for `count` raw os.write calls of the same lines."""
    manager = _manager(root / ("fsync" if fsync_each else "plain"))
    started = time.perf_counter()
    for n in range(count):
        manager.append_message(_message(n))
        if fsync_each:
            manager.flush()
    manager.flush()
    session_seconds = time.perf_counter() - started
    manager.close()
    line = manager.get_session_file().read_bytes().splitlines()[-1] + b"\n"
    fd = os.open(root / f"raw-{fsync_each}", os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    started = time.perf_counter()
    for _ in range(count):
        os.write(fd, line)
        if fsync_each:
            os.fsync(fd)
    os.fsync(fd)
    raw_seconds = time.perf_counter() - started
    os.close(fd)
    return session_seconds, raw_seconds


def bench_renames(root: Path, entries: int, renames: int) -> tuple[float, float]:
    """Seconds for `renames` full rewrites of an `entries`-entry session, and for writing + renaming its bytes."""
    manager = _manager(root / "renames")
    for n in range(entries):
        manager.append_message(_message(n))
    manager.flush()
    started = time.perf_counter()
    for n in range(renames):
        manager.set_session_name(f"title {n}")
    session_seconds = time.perf_counter() - started
    manager.close()
    data = manager.get_session_file().read_bytes()
    temporary, target = root / "raw.tmp", root / "raw.jsonl"
    started = time.perf_counter()
    for _ in range(renames):
        with open(temporary, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(temporary, target)
    raw_seconds = time.perf_counter() - started
    return session_seconds, raw_seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--appends", type=int, default=2000)
    parser.add_argument("--entries", type=int, default=5000)
    parser.add_argument("--renames", type=int, default=20)
    options = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        for fsync_each in (False, True):
            count = options.appends if not fsync_each else max(options.appends // 10, 1)
            ours, raw = bench_appends(root, count, fsync_each)
            label = "appends, fsync each" if fsync_each else "appends, one fsync"
            print(f"{count:>6} {label:<22} {ours * 1e6 / count:8.1f} us each   raw os.write "
                  f"{raw * 1e6 / count:8.1f} us   ratio {ours / raw:6.1f}")
        ours, raw = bench_renames(root, options.entries, options.renames)
        print(f"{options.renames:>6} renames of {options.entries} entries {ours * 1e3 / options.renames:8.1f} ms each"
              f"   raw write+rename {raw * 1e3 / options.renames:6.1f} ms   ratio {ours / raw:6.1f}")


if __name__ == "__main__":
    main()

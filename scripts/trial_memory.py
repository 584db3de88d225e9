"""Memory trials: the peak resident memory of `sessdex index` and `sessdex list --catalog off` on huge sessions.

Two sessions, each in an agent dir of its own:
  * a 2 GiB sparse file (a header, a message, then 2 GiB of zeros without a newline, then a message): it costs no
    disk, and its zeros are one endless "line" that must be skipped (counted as a bad line), never held;
  * a session of 1,000,000 message entries (about 264 MB), written for real.

Each command runs as a child process; its peak resident set (ru_maxrss, which includes the worker processes it
waited for) and its CPU time (user + sys) come from `os.wait4`. A command is killed after --timeout seconds.
The limit is 300 MB peak; the script exits 1 when a command exceeds it, fails or times out. The machine may be
shared: the load average is printed next to the figures.

    .venv/bin/python scripts/trial_memory.py [--regular] [--entries 1000000] [--sparse-gib 2] [--timeout 300]
        [--keep DIR]

`--regular` runs the commands from a regular (non-editable) install made by scripts/regular_install.py.
"""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import orjson

REPO = Path(__file__).resolve().parent.parent
LIMIT_MB = 300
LIST_OFF = ["list", "--all", "--json", "--catalog", "off"]
CLI = "from sessdex.catalog.cli.entry import main; main()"
HEADER = {"type": "session", "version": 3, "id": "{id}", "timestamp": "2025-01-01T00:00:00.000Z", "cwd": "/p"}


def _message(n: int) -> bytes:
    entry = {"type": "message", "id": f"e{n:07d}", "parentId": f"e{n - 1:07d}" if n else None,
             "timestamp": "2025-01-01T00:00:01.000Z",
             "message": {"role": "user" if n % 2 == 0 else "assistant",
                         "content": f"entry number {n} of a long session, with a few words of text to read",
                         "timestamp": 1735689601000 + n}}
    return orjson.dumps(entry) + b"\n"


def _session_file(agent_dir: Path, session_id: str) -> Path:
    folder = agent_dir / "sessions" / "--p--"
    folder.mkdir(parents=True, mode=0o700)
    header = {**HEADER, "id": session_id}
    path = folder / f"2025-01-01T00-00-00-000Z_{session_id}.jsonl"
    path.write_bytes(orjson.dumps(header) + b"\n")
    return path


def make_sparse(agent_dir: Path, gib: float) -> Path:
    """A session whose middle is `gib` GiB of zeros without a newline, made by a seek (no disk used)."""
    path = _session_file(agent_dir, "sparse")
    with open(path, "r+b") as handle:
        handle.seek(0, os.SEEK_END)
        handle.write(_message(0))
        handle.seek(int(gib * (1 << 30)), os.SEEK_CUR)
        handle.write(b"\n" + _message(1))
    return path


def make_long(agent_dir: Path, entries: int) -> Path:
    """A session of `entries` message entries."""
    path = _session_file(agent_dir, "long")
    with open(path, "ab") as handle:
        batch = []
        for n in range(entries):
            batch.append(_message(n))
            if len(batch) == 10_000:
                handle.write(b"".join(batch))
                batch = []
        handle.write(b"".join(batch))
    return path


def measure(python: str, args: list[str], timeout: float) -> tuple[int | None, float, float, float]:
    """(exit status or None when killed, peak RSS in MB, CPU seconds user+sys, wall seconds) of one child."""
    env = {**os.environ, "SESSDEX_AUTOWATCH": "0", "NO_COLOR": "1"}
    started = time.monotonic()
    process = subprocess.Popen([python, "-c", CLI, *args], env=env, stdout=subprocess.DEVNULL,
                               stderr=subprocess.PIPE, start_new_session=True)
    killed = False
    while True:
        pid, status, usage = os.wait4(process.pid, os.WNOHANG)
        if pid:
            break
        if time.monotonic() - started > timeout:
            os.killpg(process.pid, signal.SIGKILL)
            killed = True
        time.sleep(0.05)
    wall = time.monotonic() - started
    process.returncode = os.waitstatus_to_exitcode(status)  # reaped here, not by Popen
    err = process.stderr.read().decode(errors="replace").strip() if process.stderr else ""
    if process.returncode != 0 and err:
        print(f"    stderr: {err.splitlines()[-1][:200]}")
    return (None if killed else process.returncode), usage.ru_maxrss / 1024, usage.ru_utime + usage.ru_stime, wall


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--regular", action="store_true", help="run a regular (non-editable) install")
    parser.add_argument("--entries", type=int, default=1_000_000)
    parser.add_argument("--sparse-gib", type=float, default=2.0)
    parser.add_argument("--timeout", type=float, default=300.0)
    parser.add_argument("--keep", type=Path, help="build the trial's files here and keep them")
    options = parser.parse_args()

    work = options.keep or Path(tempfile.mkdtemp(prefix="sessdex-memory-"))
    work.mkdir(parents=True, exist_ok=True)
    python = sys.executable
    if options.regular:
        sys.path.insert(0, str(REPO / "scripts"))
        from regular_install import install_regular

        python = str(install_regular(work / "regular"))
    failed = False
    try:
        sparse_dir, long_dir = work / "sparse" / "agent", work / "long" / "agent"
        for folder in (sparse_dir, long_dir):
            if folder.exists():
                shutil.rmtree(folder)
        sparse = make_sparse(sparse_dir, options.sparse_gib)
        long = make_long(long_dir, options.entries)
        print(f"sparse session: {sparse.stat().st_size / 1e9:.2f} GB apparent, "
              f"{sparse.stat().st_blocks * 512 / 1e6:.1f} MB on disk")
        print(f"long session: {options.entries:,} entries, {long.stat().st_size / 1e6:.0f} MB")
        baseline = measure(python, ["--version"], options.timeout)
        print(f"baseline `sessdex --version`: peak {baseline[1]:.0f} MB, cpu {baseline[2]:.2f} s")
        sparse_label, long_label = f"{options.sparse_gib:g} GiB sparse", f"{options.entries:,} entries"
        trials = [(sparse_label, sparse_dir, ["index"]), (sparse_label, sparse_dir, LIST_OFF),
                  (long_label, long_dir, ["index"]), (long_label, long_dir, LIST_OFF)]
        for label, agent_dir, command in trials:
            load = os.getloadavg()[0]
            status, peak, cpu, wall = measure(python, ["--agent-dir", str(agent_dir), *command], options.timeout)
            verdict = "ok" if status == 0 and peak < LIMIT_MB else "OVER" if status == 0 else \
                "KILLED (timeout)" if status is None else f"FAILED (exit {status})"
            failed |= verdict != "ok"
            print(f"{label:17} sessdex {' '.join(command):34} peak {peak:6.0f} MB  cpu {cpu:6.2f} s  "
                  f"wall {wall:6.2f} s  load {load:.2f}  {verdict}")
    finally:
        if options.keep is None:
            shutil.rmtree(work, ignore_errors=True)
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())

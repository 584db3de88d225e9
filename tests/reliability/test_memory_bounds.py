"""Bounded memory on huge session files, measured on real `sessdex` processes: the peak resident set of the
child (ru_maxrss from os.wait4, worker processes included) stays far below what reading the file whole takes."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import orjson
import pytest

pytestmark = pytest.mark.reliability

REPO = Path(__file__).resolve().parents[2]
LIMIT_KIB = 300 * 1024
ZEROS = 768 << 20  # sparse: no disk used; read whole, it alone would pass the limit


def line(value: dict) -> bytes:
    return orjson.dumps(value) + b"\n"


def message(entry_id: str, text: str) -> dict:
    return {"type": "message", "id": entry_id, "parentId": None, "timestamp": "2025-01-01T00:00:01.000Z",
            "message": {"role": "user", "content": text, "timestamp": 1}}


def sparse_session(agent_dir: Path) -> Path:
    """A session whose middle is ZEROS bytes of zeros without a newline, between two messages."""
    folder = agent_dir / "sessions" / "--p--"
    folder.mkdir(parents=True)
    path = folder / "2025-01-01T00-00-00-000Z_sparse.jsonl"
    header = {"type": "session", "version": 3, "id": "sparse", "timestamp": "2025-01-01T00:00:00.000Z", "cwd": "/p"}
    with open(path, "wb") as handle:
        handle.write(line(header) + line(message("m0000001", "before the zeros")))
        handle.seek(ZEROS, os.SEEK_CUR)
        handle.write(b"\n" + line(message("m0000002", "after the zeros")))
    return path


def run_measured(*args: str) -> tuple[int, str, int]:
    """(exit status, stdout, peak RSS in KiB) of one `sessdex` child."""
    env = {**os.environ, "SESSDEX_AUTOWATCH": "0", "NO_COLOR": "1"}
    # Measured by a small parent of its own: a child forked from this (large) test process would report this
    # process's peak as its own, since Linux keeps the peak across fork and exec.
    probe = ("import resource, subprocess, sys; "
             "status = subprocess.call([sys.executable, '-c', 'from sessdex.catalog.cli.entry import main; main()', "
             "*sys.argv[1:]], stderr=subprocess.DEVNULL); "
             "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss, file=sys.stderr); sys.exit(status)")
    run = subprocess.run([sys.executable, "-c", probe, *args], env=env, capture_output=True)
    return run.returncode, run.stdout.decode(), int(run.stderr.decode().split()[-1])


def test_listing_from_the_files_reads_a_huge_sparse_session_in_bounded_memory(tmp_path: Path) -> None:
    agent_dir = tmp_path / "agent"
    sparse_session(agent_dir)
    status, out, peak_kib = run_measured("--agent-dir", str(agent_dir), "list", "--all", "--json", "--catalog", "off")
    assert status == 0
    (listed,) = orjson.loads(out)
    assert listed["id"] == "sparse" and listed["messageCount"] == 2
    assert peak_kib < LIMIT_KIB, f"list --catalog off peaked at {peak_kib // 1024} MiB"


def test_indexing_a_huge_sparse_session_stays_in_bounded_memory(tmp_path: Path) -> None:
    agent_dir = tmp_path / "agent"
    sparse_session(agent_dir)
    status, _out, peak_kib = run_measured("--agent-dir", str(agent_dir), "index")
    assert status == 0
    assert peak_kib < LIMIT_KIB, f"index peaked at {peak_kib // 1024} MiB"
    status, out, _peak = run_measured("--agent-dir", str(agent_dir), "list", "--all", "--json")
    assert status == 0 and orjson.loads(out)[0]["messageCount"] == 2

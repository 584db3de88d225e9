"""Crash safety: a writer killed with SIGKILL at random moments never loses a flushed entry."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from sessdex.core.blobs import BlobStore
from sessdex.core.session_manager import load_session_file
from sessdex.core.storage import FileSessionStorage

REPO = Path(__file__).resolve().parents[2]


@pytest.mark.slow
@pytest.mark.parametrize("seed", range(6))
def test_sigkill_never_loses_a_flushed_entry(tmp_path: Path, seed: int) -> None:
    rng = random.Random(seed)
    child = subprocess.Popen([sys.executable, "-m", "tests.core.crash_child", str(tmp_path)], cwd=REPO,
                             stdout=subprocess.PIPE, text=True, env={**os.environ, "PYTHONPATH": str(REPO)})
    assert child.stdout is not None
    session_file = None
    flushed: list[str] = []
    deadline = None
    try:
        while deadline is None or time.monotonic() < deadline:
            line = child.stdout.readline()
            if not line:
                break
            if line.startswith("FILE "):
                session_file = Path(line[5:].strip())
                # The kill comes at a random moment once the child is writing.
                deadline = time.monotonic() + rng.uniform(0.05, 0.8)
            elif line.startswith("FLUSHED "):
                flushed.append(line.split()[1])
    finally:
        child.send_signal(signal.SIGKILL)
        child.wait()
        child.stdout.close()
    assert session_file is not None, "the child never reported its session file"
    loaded = load_session_file(session_file, FileSessionStorage(), BlobStore(tmp_path / "blobs"), lambda: "0")
    assert loaded.header is not None
    ids = {entry.get("id") for entry in loaded.entries if isinstance(entry, dict)}
    missing = [entry_id for entry_id in flushed if entry_id not in ids]
    assert not missing, f"{len(missing)} flushed entries lost (of {len(flushed)})"
    assert flushed, "the child flushed nothing before it was killed"

"""SIGTERM to a real `sessdex index` in the middle of reading a huge file: it stops, and no process of it reads on."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from pathlib import Path

import pytest

from tests.reliability.catalog_support import SESSDEX, make_tree, trial_env

pytestmark = pytest.mark.reliability

SPARSE_BYTES = 2 << 30  # a sparse file: no disk used, minutes of reading


def _children(pid: int) -> list[int]:
    found = []
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                fields = Path(f"/proc/{name}/stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[1]) == pid:
                found.append(int(name))
    return found


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def test_sigterm_to_index_stops_it_and_leaves_no_process(tmp_path: Path) -> None:
    tree = make_tree(tmp_path)
    project = tree.project("proj")
    folder = tree.paths.project_session_dir(project)
    folder.mkdir(parents=True, exist_ok=True)
    for number in range(4):
        path = folder / f"2026-01-0{number + 1}T00-00-00-000Z_ab1200000000000{number}.jsonl"
        head = json.dumps({"type": "session", "version": 3, "id": f"ab1200000000000{number}",
                           "timestamp": "2026-01-01T00:00:00.000Z", "cwd": str(project)}) + "\n"
        with open(path, "wb") as handle:
            handle.write(head.encode())
            handle.truncate(SPARSE_BYTES)
    index = subprocess.Popen([str(SESSDEX), "--agent-dir", str(tree.paths.agent_dir), "index"],
                             env=trial_env(tree, {}), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        time.sleep(1.5)  # the index is reading the first file
        assert index.poll() is None, "the index ended before it was signalled"
        children = _children(index.pid)
        index.send_signal(signal.SIGTERM)
        index.wait(timeout=30)
        deadline = time.monotonic() + 5
        while any(_alive(pid) for pid in children) and time.monotonic() < deadline:
            time.sleep(0.05)
        left = [pid for pid in children if _alive(pid)]
    finally:
        if index.poll() is None:
            index.kill()
            index.wait()
    for pid in left:
        os.kill(pid, signal.SIGKILL)
    assert index.returncode != 0
    assert left == []

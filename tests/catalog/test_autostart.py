"""The watcher is always there: a read command that finds none starts one, detached; it exits once idle.

Real processes throughout: the console script, and the detached watcher it starts (found by its heartbeat).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from sessdex.catalog.index.autostart import MARKER_SUFFIX, autostart_wanted
from sessdex.catalog.index.reconcile import read_heartbeat
from sessdex.catalog.store.location import resolve_location
from tests.core.sessiontree import BASE_MS, Tree, assistant, make_tree, user

SESSDEX = Path(sys.executable).parent / "sessdex"
UNSET = ("PI_CODING_AGENT_DIR", "SESSDEX_CATALOG", "SESSDEX_AUTOWATCH", "SESSDEX_AUTOWATCH_IDLE", "CI",
         "PYTEST_CURRENT_TEST")


@pytest.fixture
def tree(tmp_path: Path) -> Tree:
    tree = make_tree(tmp_path)
    tree.session(tree.project("proj"), "ab12000000000001", [user("fix the parser"), assistant("done")],
                 mtime_ms=BASE_MS)
    return tree


def environment(tree: Tree, **extra: str) -> dict[str, str]:
    env = {name: value for name, value in os.environ.items() if name not in UNSET}
    return {**env, "HOME": str(tree.home), "TMPDIR": str(tree.root / "tmp"), **extra}


def sessdex(tree: Tree, *args: str, **extra: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(SESSDEX), "--agent-dir", str(tree.paths.agent_dir), *args], cwd=tree.project("proj"),
                          env=environment(tree, **extra), stdin=subprocess.DEVNULL, capture_output=True, text=True,
                          timeout=60, check=False)


def wait_for(condition, seconds: float = 20.0) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.05)
    return condition()


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


@pytest.fixture
def started(tree: Tree) -> Iterator[list[int]]:
    """The pids of the watchers a test started: whatever is left is stopped at the end."""
    pids: list[int] = []
    yield pids
    location = resolve_location(tree.paths.agent_dir)
    marker = Path(location.sidecar_file(MARKER_SUFFIX))
    if marker.exists():
        pids.append(int(marker.read_text()))
    for pid in pids:
        if alive(pid):
            os.kill(pid, signal.SIGTERM)
            assert wait_for(lambda pid=pid: not alive(pid), 10)


def test_a_read_command_starts_one_detached_watcher_that_keeps_the_catalog_and_exits_when_idle(
        tree: Tree, started: list[int]) -> None:
    location = resolve_location(tree.paths.agent_dir)
    first = sessdex(tree, "list", SESSDEX_AUTOWATCH="1", SESSDEX_AUTOWATCH_IDLE="3")
    assert first.returncode == 0, first.stderr
    assert "ab12" in first.stdout
    assert wait_for(lambda: read_heartbeat(location) is not None)
    heartbeat = read_heartbeat(location)
    assert heartbeat is not None
    started.append(heartbeat.pid)
    assert heartbeat.root == str(tree.paths.sessions_root)
    # Detached: its own session, not this test's process group, and no terminal.
    assert os.getsid(heartbeat.pid) == heartbeat.pid
    # A second command finds it and starts no other.
    again = sessdex(tree, "list", SESSDEX_AUTOWATCH="1", SESSDEX_AUTOWATCH_IDLE="3")
    assert again.returncode == 0
    assert read_heartbeat(location).pid == heartbeat.pid
    # It keeps the catalog current: a new session shows without the reader's own freshness pass.
    new = tree.session(tree.project("proj"), "cd34000000000002", [user("a new one"), assistant("yes")])
    assert wait_for(lambda: "cd34" in sessdex(tree, "list", SESSDEX_AUTOWATCH="0").stdout)
    assert new.exists()
    # Idle for 3 s: it exits by itself, its heartbeat gone.
    assert wait_for(lambda: not alive(heartbeat.pid), 30)
    assert read_heartbeat(location) is None
    log = Path(location.sidecar_file(".autowatch.log"))
    assert log.stat().st_mode & 0o777 == 0o600


@pytest.mark.parametrize(("args", "env"), [
    (["list"], {"SESSDEX_AUTOWATCH": "0"}),
    (["--catalog", "off", "list"], {"SESSDEX_AUTOWATCH": "1"}),
    (["list"], {"CI": "true"}),
    (["list"], {"PYTEST_CURRENT_TEST": "a test"}),
])
def test_no_watcher_is_started_when_opted_out_without_a_catalog_or_under_ci(tree: Tree, started: list[int],
                                                                            args: list[str], env: dict[str, str]) -> None:
    location = resolve_location(tree.paths.agent_dir)
    answer = sessdex(tree, *args, **env)
    assert answer.returncode == 0, answer.stderr
    time.sleep(0.5)
    assert read_heartbeat(location) is None
    assert not Path(location.sidecar_file(MARKER_SUFFIX)).exists()


def test_the_choice_reads_the_environment() -> None:
    assert autostart_wanted({})
    assert not autostart_wanted({"SESSDEX_AUTOWATCH": "0"})
    assert not autostart_wanted({"CI": "1"})
    assert not autostart_wanted({"PYTEST_CURRENT_TEST": "x"})
    assert autostart_wanted({"CI": "1", "SESSDEX_AUTOWATCH": "1"})

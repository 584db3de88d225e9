"""doctor repairs what it reports, leftover temp files of killed rewrites are swept, and no command creates a
missing agent dir: `sessdex` run as a real process on real files."""

from __future__ import annotations

import fcntl
import os
import sqlite3
import time
from pathlib import Path

import pytest

from tests.core.sessiontree import BASE_MS, assistant, user
from tests.reliability.catalog_support import Tree, make_tree, run_sessdex

pytestmark = pytest.mark.reliability


@pytest.fixture
def tree(tmp_path: Path) -> Tree:
    tree = make_tree(tmp_path)
    project = tree.project("proj")
    for number in range(3):
        tree.session(project, f"ab1200000000000{number}", [user(f"task {number}"), assistant("ok")],
                     mtime_ms=BASE_MS + number)
    return tree


def _damage_an_index(catalog: Path) -> None:
    """Overwrite the cells of one b-tree index page: the catalog still opens but fails integrity_check."""
    connection = sqlite3.connect(catalog)
    root = connection.execute("SELECT rootpage FROM sqlite_master WHERE name = 'ix_session_files_machine_path'"
                              ).fetchone()[0]
    page_size = connection.execute("PRAGMA page_size").fetchone()[0]
    connection.close()
    with open(catalog, "r+b") as handle:
        handle.seek((root - 1) * page_size + 8)
        handle.write(b"\xff" * 40)


def test_an_integrity_failure_is_rebuilt_and_the_counts_are_stable(tree: Tree) -> None:
    assert run_sessdex(tree, "index").code == 0
    catalog = tree.paths.agent_dir / "catalog.db"
    _damage_an_index(catalog)
    assert "integrity" in run_sessdex(tree, "doctor", "--check").out
    repaired = run_sessdex(tree, "doctor")
    assert repaired.code == 0, repaired.err
    assert "rebuilt the catalog" in repaired.out
    for _ in range(2):
        check = run_sessdex(tree, "doctor", "--check")
        assert check.code == 0, check.out
        assert "session files: 3" in check.out and "not in the catalog: 0" in check.out
    with sqlite3.connect(catalog) as connection:
        assert connection.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
    assert "task 1" in run_sessdex(tree, "list", cwd=tree.project("proj")).out


def _temporary(folder: Path, session: Path, age_seconds: float) -> Path:
    path = folder / f".{session.name}.{os.urandom(4).hex()}.tmp"
    path.write_bytes(b'{"type":"session"}\n')
    then = time.time() - age_seconds
    os.utime(path, (then, then))
    return path


@pytest.mark.parametrize("command", [("index",), ("doctor",)])
def test_a_killed_rewrites_temp_file_is_swept_and_a_live_ones_kept(tree: Tree, command) -> None:
    session = next(tree.paths.sessions_root.rglob("*.jsonl"))
    stale = _temporary(session.parent, session, 3600)
    young = _temporary(session.parent, session, 0)
    locked = _temporary(session.parent, session, 3600)
    fd = os.open(locked, os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)  # as a rewrite in progress holds it
        result = run_sessdex(tree, *command)
        assert result.code == 0, result.err
        assert not stale.exists()
        assert young.exists() and locked.exists()
        assert session.exists()
    finally:
        os.close(fd)


@pytest.mark.parametrize("command", [("doctor", "--check"), ("doctor",), ("index",), ("watch",)])
def test_no_command_creates_a_missing_agent_dir(tmp_path: Path, command) -> None:
    tree = make_tree(tmp_path)
    missing = tmp_path / "nowhere" / "agent"
    result = run_sessdex(tree, "--agent-dir", str(missing), *command, timeout=30)
    assert result.code == 2 and result.one_line_error, result.err
    assert "does not exist" in result.err
    assert not (tmp_path / "nowhere").exists()

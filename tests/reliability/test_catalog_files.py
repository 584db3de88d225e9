"""Trials: what sessdex creates is private, and a `--catalog` that is not a catalog is refused, never replaced.

With session files 0600 and the usual umask 022, every file sessdex creates beside them (catalog.db,
history.db, their -wal/-shm, lock files, the watcher's heartbeat) must be 0600: the catalog holds every
conversation. `--catalog PATH` names sessdex's own database only when PATH is absent or a SQLite
database; anything else (notes, a session file, a directory, /dev/null, in-memory or unusable URLs) is
one line on stderr and exit 2, and the file is left exactly as it was.
"""

from __future__ import annotations

import hashlib
import os
import signal
import stat
import subprocess
import time
from pathlib import Path

import pytest

from tests.core.sessiontree import BASE_MS, assistant, user
from tests.reliability.catalog_support import SESSDEX, Tree, make_tree, run_sessdex, trial_env

pytestmark = pytest.mark.reliability


@pytest.fixture
def tree(tmp_path: Path) -> Tree:
    tree = make_tree(tmp_path)
    project = tree.project("proj")
    for number in range(3):
        path = tree.session(project, f"ab1200000000000{number}", [user(f"parser task {number}"), assistant("ok")],
                            mtime_ms=BASE_MS + number)
        path.chmod(0o600)
    return tree


def _modes(folder: Path) -> dict[str, int]:
    """Permission bits of every file directly in `folder` (not the sessions tree)."""
    return {entry.name: stat.S_IMODE(entry.stat(follow_symlinks=False).st_mode)
            for entry in os.scandir(folder) if entry.is_file(follow_symlinks=False)}


def _wider_than_private(modes: dict[str, int]) -> dict[str, str]:
    return {name: oct(mode) for name, mode in modes.items() if mode & 0o077}


def test_everything_sessdex_creates_is_0600_under_umask_022(tree: Tree) -> None:
    agent_dir = tree.paths.agent_dir
    project = tree.project("proj")
    for args in (("index",), ("list",), ("search", "parser"), ("history", "add", "a private prompt"),
                 ("doctor",)):
        result = run_sessdex(tree, *args, cwd=project, umask=0o022)
        assert result.code == 0, (args, result.err)
    watch = subprocess.Popen([str(SESSDEX), "--agent-dir", str(agent_dir), "watch"], cwd=project,
                             env=trial_env(tree), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                             preexec_fn=lambda: os.umask(0o022))
    try:
        deadline = time.monotonic() + 30
        while not (agent_dir / "catalog.db.watcher").exists():
            assert time.monotonic() < deadline and watch.poll() is None, "watch did not start"
            time.sleep(0.05)
        # While the watcher holds the catalog open, its -wal and -shm exist; history's too while it is read.
        assert run_sessdex(tree, "history", "search", "private", umask=0o022).code == 0
        modes = _modes(agent_dir)
    finally:
        watch.send_signal(signal.SIGTERM)
        watch.communicate(timeout=30)
    assert {"catalog.db", "catalog.db-wal", "catalog.db-shm", "catalog.db.watcher", "catalog.db.watch.lock",
            "catalog.db.migrate.lock", "history.db"} <= set(modes), modes
    assert _wider_than_private(modes) == {}


def test_a_catalog_named_elsewhere_and_its_folder_are_private(tree: Tree, tmp_path: Path) -> None:
    chosen = tmp_path / "new-folder" / "mine.db"
    assert run_sessdex(tree, "--catalog", str(chosen), "index", umask=0o022).code == 0
    assert _wider_than_private(_modes(chosen.parent)) == {}
    assert stat.S_IMODE(chosen.parent.stat().st_mode) & 0o077 == 0


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.mark.parametrize("command", [("index", "--rebuild"), ("doctor",), ("list",), ("search", "parser"), ("watch",)])
@pytest.mark.parametrize("victim", ["notes", "session"])
def test_a_catalog_option_naming_another_file_is_refused_and_the_file_kept(tree: Tree, command, victim) -> None:
    project = tree.project("proj")
    if victim == "notes":
        target = tree.root / "notes.txt"
        target.write_text("my notes\n" * 100)
    else:
        target = next(tree.paths.sessions_root.rglob("*.jsonl"))
    before = _digest(target)
    result = run_sessdex(tree, "--catalog", str(target), *command, cwd=project, timeout=30)
    assert result.code == 2 and result.one_line_error, (command, result.err)
    assert "SQLite" in result.err
    assert _digest(target) == before
    assert [path.name for path in target.parent.iterdir() if path.name.startswith(target.name)] == [target.name]


@pytest.mark.parametrize("catalog", ["DIRECTORY", "/dev/null", "sqlite://", "sqlite:///:memory:", "nosuchdb://x/y",
                                     "postgresql://sessdex:secret@127.0.0.1:1/none"])
def test_an_unusable_catalog_setting_is_one_line_and_exit_2(tree: Tree, catalog: str) -> None:
    if catalog == "DIRECTORY":
        catalog = str(tree.root / "a-folder")
        os.mkdir(catalog)
    for command, env in ((("--catalog", catalog, "index"), {}), (("doctor",), {"SESSDEX_CATALOG": catalog}),
                         (("--catalog", catalog, "search", "parser"), {})):
        result = run_sessdex(tree, *command, cwd=tree.project("proj"), env=env, timeout=30)
        assert result.code == 2 and result.one_line_error, (catalog, command, result.err)
        assert "secret" not in result.err

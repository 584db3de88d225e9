"""`sessdex rename` and `sessdex trash ID | list | restore ID`, through the real executable."""

from __future__ import annotations

import json
import os
import stat
import subprocess
from pathlib import Path

import pytest

from sessdex.core.runtime import SessionRuntime
from sessdex.core.session_manager import SessionManager
from tests.core.sessiontree import BASE_MS, Tree, assistant, header, make_tree, user

SESSDEX = Path(__file__).resolve().parents[2] / ".venv" / "bin" / "sessdex"


@pytest.fixture
def tree(tmp_path: Path) -> Tree:
    tree = make_tree(tmp_path)
    proj = tree.project("proj")
    tree.session(proj, "ab12000000000001", [user("fix the parser"), assistant("done")], mtime_ms=BASE_MS)
    tree.session(proj, "ab34000000000002", [user("ship it"), assistant("ok")], mtime_ms=BASE_MS + 1,
                 head=header("ab34000000000002", proj, title="Old title", titleSource="auto"))
    return tree


def sessdex(tree: Tree, *args: str) -> subprocess.CompletedProcess[str]:
    # TMUX_PANE names a terminal: a command that resumed a session would leave a breadcrumb for it.
    environment = {**os.environ, "HOME": str(tree.home), "PI_CODING_AGENT_DIR": str(tree.paths.agent_dir),
                   "TMUX_PANE": "%9"}
    return subprocess.run([str(SESSDEX), *args], cwd=tree.home / "proj", env=environment, capture_output=True,
                          text=True, timeout=60)


def session_path(tree: Tree, session_id: str) -> Path:
    return tree.paths.project_session_dir(tree.home / "proj") / f"2025-01-01T00-00-00-000Z_{session_id}.jsonl"


def test_rename_writes_the_title_as_the_agent_does(tree: Tree) -> None:
    done = sessdex(tree, "rename", "ab34", "  New\tname  ")
    assert done.returncode == 0 and "New name" in done.stderr
    path = session_path(tree, "ab34000000000002")
    first_line = json.loads(path.read_bytes().splitlines()[0])
    assert (first_line["title"], first_line["titleSource"]) == ("New name", "user")
    # The agent's own reading of the file (SessionManager) shows the new title, and the entries are all kept.
    manager = SessionManager.open(path, runtime=SessionRuntime(paths=tree.paths, environ={}, tty_path=lambda: None))
    try:
        assert manager.get_session_name() == "New name" and len(manager.get_entries()) == 2
    finally:
        manager.close()
    listed = json.loads(sessdex(tree, "list", "--json").stdout)
    assert next(row for row in listed if row["id"] == "ab34000000000002")["name"] == "New name"
    breadcrumbs = tree.paths.terminal_sessions_dir
    assert not breadcrumbs.exists() or not list(breadcrumbs.iterdir())  # renaming is not resuming: no breadcrumb


def test_rename_refusals(tree: Tree) -> None:
    assert sessdex(tree, "rename", "ab", "x").returncode == 1  # ambiguous
    assert sessdex(tree, "rename", "ffff", "x").returncode == 1
    blank = sessdex(tree, "rename", "ab12", " \t ")
    assert blank.returncode == 2 and "visible character" in blank.stderr
    before = session_path(tree, "ab12000000000001").read_bytes()
    assert sessdex(tree, "rename", str(tree.home / "nothing.jsonl"), "x").returncode == 2
    assert session_path(tree, "ab12000000000001").read_bytes() == before and not (tree.home / "nothing.jsonl").exists()


def test_trash_moves_lists_and_restores_never_deleting(tree: Tree) -> None:
    original = session_path(tree, "ab12000000000001")
    content = original.read_bytes()
    moved = sessdex(tree, "trash", "ab12")
    assert moved.returncode == 0 and "trash restore ab120000" in moved.stderr
    assert not original.exists()
    in_trash = tree.paths.agent_dir / "trash" / original.relative_to(tree.paths.sessions_root)
    assert in_trash.read_bytes() == content
    assert stat.S_IMODE((tree.paths.agent_dir / "trash").stat().st_mode) == 0o700
    assert [row["id"] for row in json.loads(sessdex(tree, "list", "--json").stdout)] == ["ab34000000000002"]
    listed = json.loads(sessdex(tree, "trash", "list", "--json").stdout)
    assert [(row["id"], row["restoreTo"]) for row in listed] == [("ab12000000000001", str(original))]
    assert "ab120000" in sessdex(tree, "trash", "list").stdout

    original.write_bytes(b"a new file at the same place\n")  # restoring must not overwrite it
    refused = sessdex(tree, "trash", "restore", "ab12")
    assert refused.returncode == 1 and "already exists" in refused.stderr and in_trash.exists()
    original.unlink()
    restored = sessdex(tree, "trash", "restore", "ab12")
    assert restored.returncode == 0 and original.read_bytes() == content and not in_trash.exists()
    assert sessdex(tree, "trash", "restore", "ab12").returncode == 1  # no longer in the trash

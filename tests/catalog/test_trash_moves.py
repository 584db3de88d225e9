"""Trash and rename where the file system is not one plain tree: a symlink planted as a project folder,
sessions/ on another file system, a session file that is a symlink. `sessdex` runs as a real process."""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from pathlib import Path

import pytest

from tests.catalog.test_cli_manage import sessdex, session_path, tree  # noqa: F401 - the fixture is used by name
from tests.core.sessiontree import Tree

SHARED_MEMORY = Path("/dev/shm")


def test_restore_refuses_a_symlink_planted_as_the_project_folder(tree: Tree, tmp_path: Path) -> None:  # noqa: F811
    original = session_path(tree, "ab12000000000001")
    content = original.read_bytes()
    assert sessdex(tree, "trash", "ab12").returncode == 0
    in_trash = tree.paths.agent_dir / "trash" / original.relative_to(tree.paths.sessions_root)
    project_folder = original.parent
    outside = tmp_path / "outside"
    outside.mkdir()
    shutil.rmtree(project_folder)
    project_folder.symlink_to(outside)
    refused = sessdex(tree, "trash", "restore", "ab12")
    assert refused.returncode == 1 and "symlink" in refused.stderr and refused.stderr.count("\n") == 1
    assert list(outside.iterdir()) == []
    assert in_trash.read_bytes() == content


def test_trash_and_restore_across_file_systems_copy_then_unlink(tree: Tree) -> None:  # noqa: F811
    if not SHARED_MEMORY.is_dir() or os.stat(SHARED_MEMORY).st_dev == os.stat(tree.paths.agent_dir).st_dev:
        pytest.skip("no tmpfs on another device than the test's folder")
    elsewhere = Path(tempfile.mkdtemp(dir=SHARED_MEMORY))
    try:
        sessions = tree.paths.sessions_root
        shutil.copytree(sessions, elsewhere / "sessions")
        shutil.rmtree(sessions)
        sessions.symlink_to(elsewhere / "sessions")
        original = session_path(tree, "ab12000000000001")
        content = original.read_bytes()
        moved = sessdex(tree, "trash", "ab12")
        assert moved.returncode == 0, moved.stderr
        assert not original.exists()
        in_trash = tree.paths.agent_dir / "trash" / original.relative_to(sessions)
        assert in_trash.read_bytes() == content and (in_trash.stat().st_mode & 0o077) == 0
        restored = sessdex(tree, "trash", "restore", "ab12")
        assert restored.returncode == 0, restored.stderr
        assert original.read_bytes() == content and not in_trash.exists()
        assert sorted(row["id"] for row in json.loads(sessdex(tree, "list", "--json").stdout)) == [
            "ab12000000000001", "ab34000000000002"]
    finally:
        shutil.rmtree(elsewhere, ignore_errors=True)


def test_rename_of_a_symlinked_session_goes_through_to_its_target(tree: Tree, tmp_path: Path) -> None:  # noqa: F811
    link = session_path(tree, "ab34000000000002")
    real = tmp_path / "kept-elsewhere.jsonl"
    shutil.move(link, real)
    link.symlink_to(real)
    done = sessdex(tree, "rename", "ab34", "Through the link")
    assert done.returncode == 0, done.stderr
    assert link.is_symlink() and link.resolve() == real
    assert json.loads(real.read_bytes().splitlines()[0])["title"] == "Through the link"

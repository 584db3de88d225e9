"""`sessdex trash empty`: the only command that deletes, through the real executable, on a terminal and without."""

from __future__ import annotations

import json
import os
import pty
import subprocess
import time
from pathlib import Path

import pytest

from tests.catalog.test_marks_cli import SESSDEX, sessdex
from tests.core.sessiontree import BASE_MS, Tree, assistant, make_tree, user


@pytest.fixture
def tree(tmp_path: Path) -> Tree:
    tree = make_tree(tmp_path)
    proj = tree.project("proj")
    other = tree.project("other")
    tree.session(proj, "ab12000000000001", [user("one"), assistant("done")], mtime_ms=BASE_MS)
    tree.session(proj, "ab34000000000002", [user("two"), assistant("ok")], mtime_ms=BASE_MS + 1)
    tree.session(other, "cd56000000000003", [user("three"), assistant("ok")], mtime_ms=BASE_MS + 2)
    return tree


def trash_files(tree: Tree) -> dict[str, int]:
    root = tree.paths.agent_dir / "trash"
    return {str(path.relative_to(root)): path.lstat().st_size for path in root.rglob("*") if not path.is_dir()} \
        if root.exists() else {}


def trash(tree: Tree, *ids: str) -> None:
    for session_id in ids:
        assert sessdex(tree, "trash", session_id).returncode == 0


def test_without_a_terminal_it_needs_yes_and_deletes_nothing_else(tree: Tree) -> None:
    trash(tree, "ab12", "cd56")
    before = trash_files(tree)
    assert len(before) == 2
    refused = sessdex(tree, "trash", "empty")
    assert refused.returncode == 2 and len(refused.stderr.splitlines()) == 1 and "--yes" in refused.stderr
    assert f"2 session file(s), {sum(before.values()):,} bytes" in refused.stderr
    assert trash_files(tree) == before
    done = sessdex(tree, "trash", "empty", "--yes", "--json")
    assert done.returncode == 0, done.stderr
    answer = json.loads(done.stdout)
    assert answer["deleted"] == 2 and answer["bytes"] == sum(before.values())
    assert len(done.stderr.splitlines()) == 1
    assert done.stderr.startswith(f"Deleted 2 session file(s), {sum(before.values()):,} bytes (")
    assert trash_files(tree) == {} and list((tree.paths.agent_dir / "trash").iterdir()) == []
    # The sessions not in the trash are all there.
    assert [row["id"] for row in json.loads(sessdex(tree, "list", "--all", "--json").stdout)] == ["ab34000000000002"]
    again = sessdex(tree, "trash", "empty", "--yes")
    assert again.returncode == 0 and again.stderr.startswith("Nothing to delete")


def test_older_than_deletes_only_what_was_trashed_that_long_ago(tree: Tree) -> None:
    trash(tree, "ab12")
    time.sleep(1.2)
    trash(tree, "cd56")
    done = sessdex(tree, "trash", "empty", "--older-than", "1s", "--yes", "--json")
    assert done.returncode == 0, done.stderr
    assert ["ab12" in Path(path).name for path in json.loads(done.stdout)["paths"]] == [True]
    left = trash_files(tree)
    assert len(left) == 1 and "cd56" in next(iter(left))
    assert sessdex(tree, "trash", "empty", "--older-than", "30d", "--yes").stderr.startswith("Nothing to delete")
    assert trash_files(tree) == left
    assert sessdex(tree, "trash", "list", "--older-than", "1d").returncode == 2  # an option of `empty` only


def test_a_symlink_in_the_trash_is_never_followed_nor_removed(tree: Tree, tmp_path: Path) -> None:
    trash(tree, "ab12")
    outside = tmp_path / "precious.jsonl"
    outside.write_bytes(b"keep me\n")
    link = tree.paths.agent_dir / "trash" / "planted.jsonl"
    link.symlink_to(outside)
    done = sessdex(tree, "trash", "empty", "--yes")
    assert done.returncode == 0 and "Deleted 1 session file(s)" in done.stderr
    assert link.is_symlink() and outside.read_bytes() == b"keep me\n"


def on_terminal(tree: Tree, answer: bytes, *args: str) -> tuple[int, str]:
    """Run sessdex with a pseudo-terminal as stdin, answering its question with `answer`."""
    controller, terminal = pty.openpty()
    environment = {**os.environ, "HOME": str(tree.home), "PI_CODING_AGENT_DIR": str(tree.paths.agent_dir),
                   "SESSDEX_MACHINE": "here"}
    try:
        process = subprocess.Popen([str(SESSDEX), *args], cwd=tree.home / "proj", env=environment, stdin=terminal,
                                   stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        os.write(controller, answer)
        _stdout, stderr = process.communicate(timeout=60)
    finally:
        os.close(terminal)
        os.close(controller)
    return process.returncode, stderr.decode()


def test_on_a_terminal_it_asks_first(tree: Tree) -> None:
    trash(tree, "ab12", "ab34")
    before = trash_files(tree)
    status, stderr = on_terminal(tree, b"n\n", "trash", "empty")
    assert status == 0 and "for good? [y/N]" in stderr and "Nothing was deleted" in stderr
    assert trash_files(tree) == before
    status, stderr = on_terminal(tree, b"y\n", "trash", "empty")
    assert status == 0 and f"Deleted 2 session file(s), {sum(before.values()):,} bytes" in stderr
    assert trash_files(tree) == {}

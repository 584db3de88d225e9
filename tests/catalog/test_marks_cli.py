"""Pins, stars, tags, notes and prune through the real `sessdex` executable, on real files and a real catalog."""

from __future__ import annotations

import json
import os
import subprocess
import time
from pathlib import Path

import pytest

from tests.core.sessiontree import BASE_MS, Tree, assistant, make_tree, user

SESSDEX = Path(__file__).resolve().parents[2] / ".venv" / "bin" / "sessdex"


@pytest.fixture
def tree(tmp_path: Path) -> Tree:
    tree = make_tree(tmp_path)
    proj = tree.project("proj")
    tree.session(proj, "ab12000000000001", [user("fix the parser"), assistant("done")], mtime_ms=BASE_MS)
    tree.session(proj, "ab34000000000002", [user("ship it"), assistant("ok")], mtime_ms=BASE_MS + 1)
    tree.session(proj, "cd56000000000003", [user("old chat"), assistant("ok")], mtime_ms=BASE_MS + 2)
    return tree


def sessdex(tree: Tree, *args: str, catalog: str | None = None) -> subprocess.CompletedProcess[str]:
    environment = {**os.environ, "HOME": str(tree.home), "PI_CODING_AGENT_DIR": str(tree.paths.agent_dir),
                   "SESSDEX_MACHINE": "here"}
    if catalog is not None:
        environment["SESSDEX_CATALOG"] = catalog
    return subprocess.run([str(SESSDEX), *args], cwd=tree.home / "proj", env=environment, capture_output=True,
                          text=True, timeout=60)


def listed(tree: Tree, *args: str, catalog: str | None = None) -> list[dict[str, object]]:
    done = sessdex(tree, "list", "--json", *args, catalog=catalog)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


@pytest.mark.parametrize("catalog", [None, "off"])
def test_marks_show_filter_and_sort_pinned_first(tree: Tree, catalog: str | None) -> None:
    assert [row["id"] for row in listed(tree, catalog=catalog)][0] == "cd56000000000003"
    assert sessdex(tree, "pin", "ab12", catalog=catalog).returncode == 0
    assert sessdex(tree, "star", "ab34", catalog=catalog).returncode == 0
    assert sessdex(tree, "tag", "ab34", "+bug", "ui", catalog=catalog).returncode == 0
    assert sessdex(tree, "tag", "ab12", "+bug", catalog=catalog).returncode == 0
    assert sessdex(tree, "tag", "ab34", "-ui", catalog=catalog).returncode == 0
    assert sessdex(tree, "note", "ab34", "look", "here", catalog=catalog).returncode == 0
    rows = listed(tree, catalog=catalog)
    assert rows[0]["id"] == "ab12000000000001"  # pinned first
    by_id = {row["id"]: row["marks"] for row in rows}
    assert by_id["ab34000000000002"] == {"pinned": False, "starred": True, "tags": ["bug"], "note": "look here"}
    assert by_id["cd56000000000003"] == {"pinned": False, "starred": False, "tags": [], "note": None}
    assert [row["id"] for row in listed(tree, "--pinned", catalog=catalog)] == ["ab12000000000001"]
    assert [row["id"] for row in listed(tree, "--starred", catalog=catalog)] == ["ab34000000000002"]
    assert {row["id"] for row in listed(tree, "--tag", "bug", catalog=catalog)} == {"ab12000000000001",
                                                                                   "ab34000000000002"}
    assert [row["id"] for row in listed(tree, "--tag", "bug", "--starred", catalog=catalog)] == ["ab34000000000002"]
    recent = json.loads(sessdex(tree, "recent", "--json", "--tag", "bug", "-n", "1", catalog=catalog).stdout)
    assert [row["id"] for row in recent] == ["ab34000000000002"]
    table = sessdex(tree, "list", "--table", catalog=catalog).stdout
    assert "MARKS" in table and "star note #bug" in table
    tags = json.loads(sessdex(tree, "tags", "--json", catalog=catalog).stdout)
    assert tags == [{"tag": "bug", "sessions": 2}]
    assert sessdex(tree, "note", "ab34", "--clear", catalog=catalog).returncode == 0
    assert sessdex(tree, "unstar", "ab34", catalog=catalog).returncode == 0
    assert sessdex(tree, "unpin", "ab12", catalog=catalog).returncode == 0
    assert listed(tree, "--pinned", catalog=catalog) == [] and listed(tree, "--starred", catalog=catalog) == []


def test_search_filters_by_marks(tree: Tree) -> None:
    sessdex(tree, "star", "ab34")
    hits = json.loads(sessdex(tree, "search", "ship", "--json", "--starred").stdout)
    assert [hit["id"] for hit in hits] == ["ab34000000000002"] and hits[0]["marks"]["starred"]
    assert json.loads(sessdex(tree, "search", "parser", "--json", "--starred").stdout) == []


def test_marks_survive_rename_trash_restore_and_rebuild(tree: Tree) -> None:
    sessdex(tree, "pin", "ab12")
    sessdex(tree, "tag", "ab12", "+keep")
    assert sessdex(tree, "rename", "ab12", "New name").returncode == 0
    assert sessdex(tree, "trash", "ab12").returncode == 0
    marks = json.loads(sessdex(tree, "marks", "--json").stdout)
    assert [(row["id"], row["marks"]["pinned"]) for row in marks] == [("ab12000000000001", True)]
    assert sessdex(tree, "trash", "restore", "ab12").returncode == 0
    assert sessdex(tree, "index", "--rebuild").returncode == 0
    rows = listed(tree, "--tag", "keep")
    assert [(row["id"], row["name"], row["marks"]["pinned"]) for row in rows] == [
        ("ab12000000000001", "New name", True)]


def test_doctor_repairs_marks_rows(tree: Tree) -> None:
    import sqlite3

    sessdex(tree, "star", "ab34")
    listed(tree)
    connection = sqlite3.connect(tree.paths.agent_dir / "catalog.db")
    with connection:
        connection.execute("DELETE FROM session_marks")
    connection.close()
    check = json.loads(sessdex(tree, "doctor", "--check", "--json").stdout)
    assert check["marks_stale"] is True
    assert sessdex(tree, "doctor").returncode == 0
    assert json.loads(sessdex(tree, "doctor", "--check", "--json").stdout)["marks_stale"] is False


def test_bad_input_is_one_line(tree: Tree) -> None:
    for args in (["tag", "ab12"], ["tag", "ab12", "+two words"], ["note", "ab12"], ["pin", "ffff"],
                 ["note", "ab12", "x", "--clear"], ["prune"], ["prune", "--older-than", "soon"], ["list", "--tag", "-x"]):
        done = sessdex(tree, *args)
        assert done.returncode in (1, 2) and "Traceback" not in done.stderr and len(done.stderr.splitlines()) == 1, \
            (args, done.stderr)


def test_prune_moves_only_unmarked_old_sessions_and_restore_brings_them_back(tree: Tree) -> None:
    sessdex(tree, "star", "ab34")
    proj_dir = tree.paths.project_session_dir(tree.home / "proj")
    before = {path.name: path.read_bytes() for path in proj_dir.iterdir()}
    live = tree.session(tree.home / "proj", "ef78000000000004", [user("live"), assistant("ok")])
    os.utime(live, (time.time(), time.time()))
    dry = sessdex(tree, "prune", "--older-than", "30d")  # no terminal, no --yes: only listed
    assert dry.returncode == 0 and "Would move 2 session(s)" in dry.stderr
    assert {path.name for path in proj_dir.iterdir()} == {*before, live.name}
    done = sessdex(tree, "prune", "--older-than", "30d", "--yes", "--json")
    moved = json.loads(done.stdout)
    assert sorted(row["id"] for row in moved) == ["ab12000000000001", "cd56000000000003"]
    assert "Moved 2 session(s)" in done.stderr
    assert {path.name for path in proj_dir.iterdir()} == {name for name in before if "ab34" in name} | {live.name}
    for session_id in ("ab12", "cd56"):
        assert sessdex(tree, "trash", "restore", session_id).returncode == 0
    assert {path.name: path.read_bytes() for path in proj_dir.iterdir() if path != live} == before

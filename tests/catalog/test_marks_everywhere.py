"""Marks in every JSON session object, through forks and a catalog rebuilt from nothing (the real executable)."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from tests.catalog.test_marks_cli import sessdex
from tests.core.sessiontree import BASE_MS, Tree, assistant, make_tree, user

USAGE = {"input": 10, "output": 5, "cacheRead": 0, "cacheWrite": 0, "cost": {"total": 0.001}}
PINNED_BUG = {"pinned": True, "starred": False, "tags": ["bug"], "note": "the parser"}
UNMARKED = {"pinned": False, "starred": False, "tags": [], "note": None}


@pytest.fixture
def tree(tmp_path: Path) -> Tree:
    tree = make_tree(tmp_path)
    proj = tree.project("proj")
    other = tree.project("other")
    tree.session(proj, "ab12000000000001", [user("fix the parser"), assistant("done", usage=USAGE)], mtime_ms=BASE_MS)
    tree.session(proj, "ab34000000000002", [user("ship it"), assistant("ok", usage=USAGE)], mtime_ms=BASE_MS + 1)
    tree.session(other, "ef90000000000009", [user("elsewhere"), assistant("ok", usage=USAGE)], mtime_ms=BASE_MS + 2)
    return tree


def json_of(tree: Tree, *args: str, catalog: str | None = None) -> Any:
    done = sessdex(tree, *args, catalog=catalog)
    assert done.returncode == 0, (args, done.stderr)
    return json.loads(done.stdout)


def mark_ab12(tree: Tree, catalog: str | None = None) -> None:
    for args in (["pin", "ab12"], ["tag", "ab12", "+bug"], ["note", "ab12", "the", "parser"]):
        assert sessdex(tree, *args, catalog=catalog).returncode == 0


@pytest.mark.parametrize("catalog", [None, "off"])
def test_every_json_session_object_says_its_marks(tree: Tree, catalog: str | None) -> None:
    mark_ab12(tree, catalog)
    session = tree.paths.project_session_dir(tree.home / "proj")
    ab12 = next(str(path) for path in session.iterdir() if "ab12" in path.name)

    def marks_by_id(rows: list[dict[str, Any]]) -> dict[str, Any]:
        return {row["id"]: row["marks"] for row in rows}

    assert marks_by_id(json_of(tree, "list", "--json", catalog=catalog))["ab12000000000001"] == PINNED_BUG
    assert marks_by_id(json_of(tree, "recent", "--json", catalog=catalog))["ab34000000000002"] == UNMARKED
    if catalog is None:  # search needs the catalog
        assert marks_by_id(json_of(tree, "search", "parser", "--json")) == {"ab12000000000001": PINNED_BUG}
    assert json_of(tree, "resume", "ab12", "--json", catalog=catalog)["marks"] == PINNED_BUG
    assert json_of(tree, "resume", ab12, "--json", catalog=catalog)["marks"] == PINNED_BUG
    assert json_of(tree, "list", "--json", "id,marks", catalog=catalog)[0] == {
        "id": "ab12000000000001", "marks": PINNED_BUG}
    assert json_of(tree, "pin", "ab12", "--json", catalog=catalog)["marks"] == PINNED_BUG
    assert json_of(tree, "marks", "ab12", "--json", catalog=catalog)["marks"] == PINNED_BUG
    assert marks_by_id(json_of(tree, "marks", "--json", catalog=catalog)) == {"ab12000000000001": PINNED_BUG}
    assert json_of(tree, "rename", "ab12", "Parser fix", "--json", catalog=catalog)["marks"] == PINNED_BUG
    os.utime(ab12, (BASE_MS / 1000 + 5, BASE_MS / 1000 + 5))  # the newest here: what continue picks
    assert json_of(tree, "continue", "--json", catalog=catalog)["marks"] == PINNED_BUG
    rows = json_of(tree, "usage", "session", "--json", catalog=catalog)["rows"]
    assert {row["session"]: row["marks"] for row in rows} == {"ab12000000000001": PINNED_BUG,
                                                              "ab34000000000002": UNMARKED}
    tagged = json_of(tree, "usage", "session", "--tag", "bug", "--json", catalog=catalog)
    assert [row["session"] for row in tagged["rows"]] == ["ab12000000000001"] and tagged["totals"]["messages"] == 1
    daily = json_of(tree, "usage", "--pinned", "--json", catalog=catalog)
    assert daily["totals"]["sessions"] == 1 and daily["totals"]["output"] == 5
    assert json_of(tree, "usage", "--starred", "--json", catalog=catalog)["rows"] == []
    assert json_of(tree, "trash", "ab12", "--json", catalog=catalog)["marks"] == PINNED_BUG
    assert marks_by_id(json_of(tree, "trash", "list", "--json", catalog=catalog)) == {
        "ab12000000000001": PINNED_BUG}
    table = sessdex(tree, "trash", "list", catalog=catalog).stdout
    assert "MARKS" in table.splitlines()[0] and "pin note #bug" in table
    assert json_of(tree, "trash", "restore", "ab12", "--json", catalog=catalog)["marks"] == PINNED_BUG
    dry = json_of(tree, "prune", "--older-than", "1d", "--dry-run", "--json", catalog=catalog)
    assert marks_by_id(dry) == {"ab34000000000002": UNMARKED, "ef90000000000009": UNMARKED}


@pytest.mark.parametrize("keep", [False, True])
def test_a_fork_starts_unmarked_unless_it_keeps_the_marks(tree: Tree, keep: bool) -> None:
    for args in (["star", "ef90"], ["tag", "ef90", "+far"], ["note", "ef90", "from", "afar"]):
        assert sessdex(tree, *args).returncode == 0
    source_marks = {"pinned": False, "starred": True, "tags": ["far"], "note": "from afar"}
    answer = json_of(tree, "resume", "ef90", "--yes", "--json", *(["--keep-marks"] if keep else []))
    assert answer["action"] == "fork" and answer["id"] != "ef90000000000009"
    assert answer["source"]["marks"] == source_marks
    assert answer["marks"] == (source_marks if keep else UNMARKED)
    listed = {row["id"]: row["marks"] for row in json_of(tree, "list", "--all", "--json")}
    assert listed[answer["id"]] == (source_marks if keep else UNMARKED)
    assert listed["ef90000000000009"] == source_marks  # the source keeps its own


def test_a_catalog_rebuilt_from_nothing_shows_the_same_marks(tree: Tree) -> None:
    mark_ab12(tree)
    assert sessdex(tree, "star", "ef90").returncode == 0
    assert sessdex(tree, "tag", "ab34", "+wip", "+ui").returncode == 0
    assert sessdex(tree, "tag", "ab34", "-wip").returncode == 0
    before = json_of(tree, "marks", "--json")
    tags_before = json_of(tree, "tags", "--json")
    for name in os.listdir(tree.paths.agent_dir):
        if name.startswith("catalog.db"):
            os.unlink(tree.paths.agent_dir / name)
    assert not any(name.startswith("catalog.db") for name in os.listdir(tree.paths.agent_dir))
    assert sessdex(tree, "index", "--rebuild").returncode == 0
    assert json_of(tree, "marks", "--json") == before
    assert json_of(tree, "tags", "--json") == tags_before
    assert json_of(tree, "marks", "--json", catalog="off") == before
    assert [row["id"] for row in json_of(tree, "list", "--all", "--tag", "ui", "--json")] == ["ab34000000000002"]


def test_the_candidates_of_a_refusal_say_their_marks(tree: Tree) -> None:
    mark_ab12(tree)
    for args in (["resume", "ab", "--json"], ["pin", "ab", "--json"], ["rename", "ab", "x", "--json"]):
        done = sessdex(tree, *args)
        assert done.returncode != 0 and "Traceback" not in done.stderr, args
        refusal = json.loads(done.stdout)
        assert {row["id"]: row["marks"] for row in refusal["candidates"]} == {
            "ab12000000000001": PINNED_BUG, "ab34000000000002": UNMARKED}, args
    assert sessdex(tree, "star", "ef90").returncode == 0
    done = sessdex(tree, "resume", "ef90", "--no-fork", "--json")
    assert done.returncode != 0
    assert [row["marks"]["starred"] for row in json.loads(done.stdout)["candidates"]] == [True]

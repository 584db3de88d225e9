"""The picker's space-separated terms (an unordered AND, highlighted in every row) and the selection after a trash,
driven headlessly through the real key bindings (pipe input) on real session files."""

from __future__ import annotations

from pathlib import Path

import pytest

from sessdex.catalog.queries.picker_source import PickerRow
from sessdex.catalog.tui.picker import SessionActions
from sessdex.catalog.tui.picker_search import SearchIndex
from tests.catalog.test_picker import DOWN, ESC, SCREEN_WIDTH, Driver, drive, file_source
from tests.core.sessiontree import BASE_MS, Tree, assistant, header, make_tree, user

ROOT = "/agent/sessions"
CTRL_D = "\x04"


@pytest.fixture
def tree(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Tree:
    tree = make_tree(tmp_path)
    monkeypatch.setenv("HOME", str(tree.home))
    monkeypatch.delenv("PI_CODING_AGENT_DIR", raising=False)
    monkeypatch.delenv("SESSDEX_CATALOG", raising=False)
    return tree


def row(session_id: str, title: str | None, first: str, cwd: str) -> PickerRow:
    return PickerRow(path=f"{ROOT}/--x--/2025-01-01T00-00-00-000Z_{session_id}.jsonl", session_id=session_id, cwd=cwd,
                     title=title, first_message=first, message_count=2, modified_ms=0)


def ranked_ids(rows: list[PickerRow], query: str) -> list[str]:
    index = SearchIndex(rows, ROOT)
    search = index.search(query)
    while not search.advance(3):
        pass
    return [rows[position].session_id for position in search.ranked()]


ROWS = [
    row("a1000000", "Docker event parent handler", "wire the events", "/home/u/game"),
    row("b2000000", "Inline sha256 of the blobs", "hash them", "/home/u/store"),
    row("c3000000", "Game loop", "docker please", "/home/u/engine"),
    row("d4000000", "sha256 check", "make it inline", "/home/u/store"),
]


@pytest.mark.parametrize(("query", "reordered"), [("docker event game", "game docker event"),
                                                  ("inline sha256", "sha256 inline"),
                                                  ("dckr evnt", "evnt dckr")])
def test_terms_match_in_any_order_and_rank_the_same(query: str, reordered: str) -> None:
    found = ranked_ids(ROWS, query)
    assert found and found == ranked_ids(ROWS, reordered)


def test_each_term_may_match_a_different_field_and_every_term_is_required() -> None:
    assert ranked_ids(ROWS, "game docker event") == ["a1000000"]  # title words and the cwd
    assert ranked_ids(ROWS, "game docker") == ["a1000000", "c3000000"]  # title + cwd; title + first message
    assert ranked_ids(ROWS, "inline sha256") == ["b2000000", "d4000000"]  # both in the title first
    assert ranked_ids(ROWS, "inline sha256 nowhere") == []


def test_every_row_highlights_each_term_where_it_matches(tree: Tree) -> None:
    proj = tree.project("proj")
    tree.session(proj, "aa11000000000001", [user("wire the events"), assistant("done")],
                 head=header("aa11000000000001", proj, title="Docker event parent"), mtime_ms=BASE_MS)
    tree.session(proj, "bb22000000000002", [user("docker please"), assistant("ok")],
                 head=header("bb22000000000002", proj, title="Event of docker"),
                 mtime_ms=BASE_MS + 1000)

    async def script(d: Driver) -> None:
        await d.press("event docker")
        assert sorted(d.shown_ids()) == ["aa11000000000001", "bb22000000000002"]
        for position in range(2):
            marked = [text.lower() for style, text in d.picker.screen.row(position, SCREEN_WIDTH)
                      if "class:match" in style]
            assert "docker" in marked and "event" in marked, marked
        await d.press(ESC)

    drive(file_source(tree), script)


def test_after_a_trash_the_selection_moves_to_the_next_row(tree: Tree) -> None:
    proj = tree.project("proj")
    for number in range(4):
        tree.session(proj, f"{number:02d}00000000000000", [user(f"task {number}"), assistant("ok")],
                     mtime_ms=BASE_MS + number * 1000)
    newest_first = ["0300000000000000", "0200000000000000", "0100000000000000", "0000000000000000"]

    def selected(d: Driver) -> str:
        row = d.model.selected_row()
        assert row is not None
        return row.session_id

    async def script(d: Driver) -> None:
        assert d.shown_ids() == newest_first
        await d.press(DOWN, CTRL_D, "y")  # the second row goes; the third takes its place, selected
        await d.until(lambda: "Moved to the trash" in d.picker.screen.notice)
        assert d.shown_ids() == [newest_first[0], *newest_first[2:]] and selected(d) == newest_first[2]
        await d.press(CTRL_D, "y")  # a second Ctrl+D trashes that next row, not the newest
        await d.until(lambda: len(d.shown_ids()) == 2)
        assert d.shown_ids() == [newest_first[0], newest_first[3]] and selected(d) == newest_first[3]
        await d.press(CTRL_D, "y")  # the last row: the one before it is selected
        await d.until(lambda: len(d.shown_ids()) == 1)
        assert selected(d) == newest_first[0]
        await d.press(ESC)

    drive(file_source(tree), script, actions=SessionActions(tree.paths))


def test_the_preview_wraps_at_word_boundaries() -> None:
    from sessdex.catalog.tui.picker_paint import wrapped_lines

    lines = wrapped_lines([("", " you: the quick brown fox jumps abcdefghijklmnopq\n next")], 12, 20)
    assert ["".join(cell[1] for cell in line) for line in lines] == [
        " you: the ", "quick brown ", "fox jumps ", "abcdefghijkl", "mnopq", " next"]


def test_while_idle_the_picker_finds_each_typed_terms_rows_for_the_next_term(tree: Tree) -> None:
    proj = tree.project("proj")
    tree.session(proj, "aa11000000000001", [user("wire the events"), assistant("done")],
                 head=header("aa11000000000001", proj, title="Docker event parent"), mtime_ms=BASE_MS)

    async def script(d: Driver) -> None:
        index = d.model._scopes[d.model.scope].index
        await d.press("dock")
        await d.until(lambda: index.knows_term("dock"))  # the earlier term of `dock e`: known before the space
        assert d.model.terms_to_warm() == []
        await d.press("er ev")
        await d.until(lambda: index.knows_term("docker") and index.knows_term("ev"))
        assert d.shown_ids() == ["aa11000000000001"]
        await d.press(ESC)

    drive(file_source(tree), script)

"""Marks in the picker: Alt+P, Alt+S, Alt+T (with tag completion) and Alt+N through the real key bindings on real
session files and the real marks file; pinned sessions first; the Pinned and Starred scopes; `is:` and `tag:`
terms; `pick --tag/--pinned/--starred`."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from sessdex.catalog.queries.file_scan import FileScan
from sessdex.catalog.queries.picker_source import PickerSource
from sessdex.catalog.queries.sessions import Catalog
from sessdex.catalog.tui.picker import SessionActions
from sessdex.catalog.tui.picker_marks import completions, split_mark_terms, tag_changes
from sessdex.core.errors import UsageError
from sessdex.core.marks import append_events, current_marks, make_event, marks_path
from tests.catalog.test_picker import (
    CTRL_U,
    ENTER,
    ESC,
    TAB,
    Driver,
    drive,
    keyboard,
    populate,
    run_cli,
    text_of,
)
from tests.core.sessiontree import Tree, make_tree

ALT_P, ALT_S, ALT_T, ALT_N = "\x1bp", "\x1bs", "\x1bt", "\x1bn"
NEWEST_FIRST = ["cc33000000000003", "bb22000000000002", "aa11000000000001"]


@pytest.fixture
def tree(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Tree:
    tree = make_tree(tmp_path)
    monkeypatch.setenv("HOME", str(tree.home))
    monkeypatch.setenv("TMPDIR", str(tree.root / "tmp"))
    monkeypatch.delenv("PI_CODING_AGENT_DIR", raising=False)
    monkeypatch.delenv("SESSDEX_CATALOG", raising=False)
    return tree


def source_of(tree: Tree, kind: str) -> PickerSource:
    proj = tree.project("proj")
    return PickerSource(FileScan(tree.paths) if kind == "file-scan" else Catalog(tree.paths), proj)


def actions(tree: Tree) -> SessionActions:
    return SessionActions(tree.paths, "laptop")


@pytest.mark.parametrize("kind", ["file-scan", "catalog"])
def test_alt_p_pins_the_selected_session_first_and_opens_the_pinned_scope(tree: Tree, kind: str) -> None:
    populate(tree)

    async def script(d: Driver) -> None:
        assert d.shown_ids() == NEWEST_FIRST and d.model.scopes == ("project", "all")
        await d.press("\x1b[B", ALT_P)  # Down to Deploy the API, pin it
        await d.until(lambda: "Pinned" in d.picker.screen.notice)
        assert d.shown_ids() == ["bb22000000000002", "cc33000000000003", "aa11000000000001"]
        assert d.model.selected_row().session_id == "bb22000000000002"  # the selection followed it to the top
        assert d.line(0).startswith("❯ ⚑ Deploy the API") and "⚑ pinned" in text_of(d.picker.screen.detail(80))
        assert d.model.scopes == ("project", "all", "pinned")
        await d.press(TAB, TAB)
        await d.until(lambda: not d.model.loading)
        assert d.model.scope == "pinned" and d.shown_ids() == ["bb22000000000002"] and "◉ Pinned" in d.screen()
        await d.press(ALT_P)  # unpin, in the Pinned scope: it leaves the list
        await d.until(lambda: "Unpinned" in d.picker.screen.notice)
        assert d.shown_ids() == [] and "No pinned session" in d.screen()
        await d.press(ESC)

    drive(source_of(tree, kind), script, actions=actions(tree))
    events = [line for line in marks_path(tree.paths).read_text().splitlines()]
    assert len(events) == 2 and '"op":"pin"' in events[0].replace(" ", "") and '"machine":"laptop"' in \
        events[0].replace(" ", "")
    assert "bb22000000000002" not in current_marks(tree.paths) or not current_marks(tree.paths)[
        "bb22000000000002"].pinned


@pytest.mark.parametrize("kind", ["file-scan", "catalog"])
def test_marks_set_beforehand_order_rows_and_filter_with_is_and_tag_terms(tree: Tree, kind: str) -> None:
    populate(tree)
    append_events(tree.paths, [make_event("aa11000000000001", "laptop", "pin"),
                               make_event("dd44000000000004", "laptop", "star"),
                               make_event("bb22000000000002", "laptop", "star"),
                               make_event("bb22000000000002", "laptop", "tag", add=["bug", "ui"], remove=[]),
                               make_event("aa11000000000001", "laptop", "tag", add=["bug"], remove=[])])

    async def script(d: Driver) -> None:
        assert d.shown_ids() == ["aa11000000000001", "cc33000000000003", "bb22000000000002"]  # the pinned one first
        assert d.model.scopes == ("project", "all", "pinned", "starred")
        await d.press("is:starred")
        assert d.shown_ids() == ["bb22000000000002"]
        await d.press(CTRL_U, "tag:bug")
        assert d.shown_ids() == ["aa11000000000001", "bb22000000000002"]
        await d.press(" deploy")  # a text term with a mark term, in any order
        assert d.shown_ids() == ["bb22000000000002"] and "class:match" in str(d.picker.screen.row(0, 80))
        await d.press(CTRL_U, "tag:ui is:pin")
        assert d.shown_ids() == []
        await d.press(CTRL_U, "is:nothing")
        assert d.shown_ids() == []
        await d.press(CTRL_U, TAB, TAB, TAB)  # all -> pinned -> starred
        await d.until(lambda: d.model.scope == "starred" and not d.model.loading)
        assert set(d.shown_ids()) == {"bb22000000000002", "dd44000000000004"}
        await d.press(ESC)

    drive(source_of(tree, kind), script, actions=actions(tree))


def test_alt_t_tags_with_completion_of_existing_tags_and_removes_with_a_minus(tree: Tree) -> None:
    populate(tree)
    append_events(tree.paths, [make_event("dd44000000000004", "laptop", "tag", add=["bugfix", "backend"], remove=[])])

    async def script(d: Driver) -> None:
        await d.press(ALT_T)
        assert d.picker.mode == "tag" and "no tags yet" in d.picker.screen.question
        assert "backend bugfix" in d.picker.screen.question  # the tags Tab completes to
        await d.press("bu", TAB)
        assert d.picker.rename_buffer.text == "bugfix "
        await d.press("+ba", TAB, "urgent", ENTER)
        await d.until(lambda: "Tagged" in d.picker.screen.notice)
        assert d.picker.mode == "search"
        assert current_marks(tree.paths)["cc33000000000003"].tags == ("backend", "bugfix", "urgent")
        assert "#backend #bugfix #urgent" in text_of(d.picker.screen.detail(80))
        await d.press(ALT_T, "-urgent -nope", ENTER)
        await d.until(lambda: current_marks(tree.paths)["cc33000000000003"].tags == ("backend", "bugfix"))
        await d.press(ALT_T, "+bad+tag? -", ENTER)  # "-" alone is no tag: said, nothing written
        await d.until(lambda: "is not a tag" in d.picker.screen.notice)
        await d.press(ALT_T, "wip", ESC)  # Esc leaves the prompt, writes nothing
        await d.idle()
        assert d.picker.mode == "search" and not d.task.done()
        await d.press(ESC)

    drive(source_of(tree, "file-scan"), script, actions=actions(tree))
    assert current_marks(tree.paths)["cc33000000000003"].tags == ("backend", "bugfix")


def test_alt_n_sets_edits_and_clears_a_note_and_alt_s_stars(tree: Tree) -> None:
    populate(tree)

    async def script(d: Driver) -> None:
        await d.press(ALT_N)
        assert d.picker.mode == "note" and d.picker.rename_buffer.text == ""
        await d.press("look at the \x1b[200~lexer\x1b[201~", ENTER)
        await d.until(lambda: "Noted" in d.picker.screen.notice)
        assert "note: look at the lexer" in text_of(d.picker.screen.detail(80))
        await d.press(ALT_N)
        assert d.picker.rename_buffer.text == "look at the lexer"  # the prompt holds the note to edit
        await d.press(CTRL_U, ENTER)
        await d.until(lambda: "Removed the note" in d.picker.screen.notice)
        await d.press(ALT_S)
        await d.until(lambda: "Starred" in d.picker.screen.notice)
        assert d.line(0).startswith("❯ ★ Parser rewrite") and d.model.scopes == ("project", "all", "starred")
        await d.press(ESC)

    drive(source_of(tree, "file-scan"), script, actions=actions(tree))
    marks = current_marks(tree.paths)["cc33000000000003"]
    assert marks.note is None and marks.starred and not marks.pinned


def test_without_actions_the_mark_keys_only_say_so(tree: Tree) -> None:
    populate(tree)

    async def script(d: Driver) -> None:
        for key in (ALT_P, ALT_S, ALT_T, ALT_N):
            d.picker.screen.notice = ""
            await d.press(key)
            assert d.picker.screen.notice == "Marks are not available here" and d.picker.mode == "search"
        await d.press(ESC)

    drive(source_of(tree, "file-scan"), script)
    assert not marks_path(tree.paths).exists()


def test_pick_tag_pinned_and_starred_filter_as_query_terms(tree: Tree, monkeypatch, capsys) -> None:
    paths = populate(tree)
    append_events(tree.paths, [make_event("dd44000000000004", "laptop", "tag", add=["bug"], remove=[]),
                               make_event("bb22000000000002", "laptop", "star")])
    code, out, err = run_cli(tree, monkeypatch, capsys, tree.home / "proj", "pick", "--all", "--tag", "BUG", "-1")
    assert (code, out) == (0, f"{paths['other']}\n")
    code, out, err = run_cli(tree, monkeypatch, capsys, tree.home / "proj", "pick", "--pinned", "-0")
    assert (code, out) == (1, "") and "is:pinned" in err
    code, out, _ = run_cli(tree, monkeypatch, capsys, tree.home / "proj", "pick", "--starred", "-q", "api", "-1")
    assert (code, out) == (0, f"{paths['deploy']}\n")
    code, out, _ = run_cli(tree, monkeypatch, capsys, tree.home / "proj", "pick", "--starred", "-1", "--json")
    assert code == 0 and json.loads(out)["marks"] == {"pinned": False, "starred": True, "tags": [], "note": None}
    with keyboard(monkeypatch, ENTER):  # the picker opens on the terms (two bug-tagged sessions in all projects)
        append_events(tree.paths, [make_event("aa11000000000001", "laptop", "tag", add=["bug"], remove=[])])
        code, out, _ = run_cli(tree, monkeypatch, capsys, tree.home / "proj", "pick", "--all", "--tag", "bug")
    assert (code, out) == (0, f"{paths['other']}\n")  # the newer of the two
    code, _, err = run_cli(tree, monkeypatch, capsys, tree.home / "proj", "pick", "--tag=a b", "-1")
    assert code == 2 and "not a tag" in err and "Traceback" not in err


def test_mark_terms_tag_changes_and_completion() -> None:
    text, terms = split_mark_terms("deploy IS:pin tag:Bug  api")
    assert text == "deploy api" and terms is not None and terms.pinned and terms.tags == ["bug"]
    assert split_mark_terms("no terms: here") == ("no terms: here", None)
    assert tag_changes("bug +ui -wip -gone ui", ["wip", "old"]) == (["bug", "ui"], ["wip"])
    with pytest.raises(UsageError):
        tag_changes("-", [])
    assert completions("bug +ba", ["backend", "bad", "bugfix"]) == ("bug +ba", ["backend", "bad"])
    assert completions("bug +bac", ["backend", "bad"]) == ("bug +backend ", ["backend"])
    assert completions("x", ["backend"]) == ("x", [])

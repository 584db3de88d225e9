"""Trials: session, catalog and history text never reaches the terminal with its control characters.

A session title, cwd or prompt holding `ESC ] 52` (clipboard write), `ESC ] 0` (window title), `ESC [2J`
(clear screen), a C1 CSI or DEL is written by whoever wrote the file; every command that shows it must
print it defanged (U+FFFD), on both CLI paths, in tables, snippets, error messages and the viewer.
"""

from __future__ import annotations

import json
import time

import pytest

from tests.core.sessiontree import BASE_MS, assistant, header, message, user
from tests.reliability.catalog_support import (
    HOSTILE,
    OSC_CLIPBOARD,
    Tree,
    control_characters,
    make_tree,
    run_sessdex,
)

pytestmark = pytest.mark.reliability


@pytest.fixture
def hostile_tree(tmp_path) -> Tree:
    """A project whose sessions carry hostile text in the title, the cwd and the prompts."""
    tree = make_tree(tmp_path)
    project = tree.project("proj")
    hostile_cwd = f"{project}/sub{HOSTILE}"
    tree.session(project, "ab12000000000001", [user(f"fix the parser {HOSTILE}"), assistant(f"done {HOSTILE}")],
                 head=header("ab12000000000001", project, title=f"title {HOSTILE}"), mtime_ms=BASE_MS)
    tree.session(project, "ab12000000000002", [user(f"parser again {HOSTILE}"), assistant("ok")],
                 mtime_ms=BASE_MS + 1000)
    # A session whose header cwd is hostile, filed under the project's folder (the listing shows its cwd).
    tree.session(project, "ab12000000000003", [user("parser third"), assistant("ok")],
                 head=header("ab12000000000003", hostile_cwd), mtime_ms=BASE_MS + 2000)
    return tree


def assert_clean(text: str) -> None:
    assert control_characters(text) == [], repr(text)


@pytest.mark.parametrize("args", [("list",), ("list", "--all"), ("recent",), ("list", "--json"), ("recent", "--json"),
                                  ("--catalog", "off", "list", "--all")])
def test_listings_print_no_control_character(hostile_tree: Tree, args) -> None:
    result = run_sessdex(hostile_tree, *args, cwd=hostile_tree.project("proj"))
    assert result.code == 0, result.err
    assert "evil" in result.out
    assert_clean(result.out)
    assert_clean(result.err)
    if "--json" in args:
        json.loads(result.out)  # still valid JSON: the characters are escaped, not dropped


def test_a_line_break_in_a_cwd_does_not_break_the_table(hostile_tree: Tree) -> None:
    project = hostile_tree.project("proj")
    hostile_tree.session(project, "ef56000000000004", [user("broken rows"), assistant("ok")],
                         head=header("ef56000000000004", f"{project}/line\nbreak\rand\ttab"), mtime_ms=BASE_MS + 3000)
    result = run_sessdex(hostile_tree, "list", "--table", cwd=project)
    assert result.code == 0, result.err
    rows = result.out.splitlines()
    assert len(rows) == 1 + 4, rows  # the heading and one line per session
    assert any("line break" in row for row in rows), rows
    piped = run_sessdex(hostile_tree, "list", cwd=project).out.splitlines()  # tab-separated, no heading
    assert len(piped) == 4 and len({row.count("\t") for row in piped}) == 1, piped


def test_json_keeps_the_exact_text_as_escapes(hostile_tree: Tree) -> None:
    result = run_sessdex(hostile_tree, "list", "--json", cwd=hostile_tree.project("proj"))
    titles = [item["title"] for item in json.loads(result.out)]
    assert f"title {HOSTILE}" in titles


@pytest.mark.parametrize("extra", [(), ("--json",), ("--all",)])
def test_search_and_its_snippets_print_no_control_character(hostile_tree: Tree, extra) -> None:
    result = run_sessdex(hostile_tree, "search", "parser", *extra, cwd=hostile_tree.project("proj"))
    assert result.code == 0, result.err
    assert "evil" in result.out and "parser" in result.out
    assert_clean(result.out)


def test_the_ambiguity_list_prints_no_control_character(hostile_tree: Tree) -> None:
    result = run_sessdex(hostile_tree, "resume", "ab12", cwd=hostile_tree.project("proj"))
    assert result.code == 1 and "ambiguous" in result.err, result.err
    assert "evil" in result.err
    assert_clean(result.err)


def test_an_error_quoting_user_text_prints_no_control_character(hostile_tree: Tree) -> None:
    result = run_sessdex(hostile_tree, "resume", f"zz{OSC_CLIPBOARD}", cwd=hostile_tree.project("proj"))
    assert result.code != 0 and result.one_line_error, result.err
    assert_clean(result.err)
    result = run_sessdex(hostile_tree, f"no-such-command{OSC_CLIPBOARD}")
    assert result.code == 2 and result.one_line_error
    assert_clean(result.err)


def test_history_recent_and_search_print_no_control_character(hostile_tree: Tree) -> None:
    added = run_sessdex(hostile_tree, "history", "add", f"deploy the parser {HOSTILE}",
                        "--cwd", str(hostile_tree.project("proj")))
    assert added.code == 0, added.err
    for args in (("history", "recent"), ("history", "search", "parser"), ("history", "search", "deploy", "--json"),
                 ("history", "recent", "--json"), ("history", "search", "vil")):
        result = run_sessdex(hostile_tree, *args)
        assert result.code == 0, (args, result.err)
        assert "evil" in result.out or "vil" in result.out, args
        assert_clean(result.out)


def test_the_viewer_prints_no_control_character(hostile_tree: Tree) -> None:
    result = run_sessdex(hostile_tree, "view", "ab12000000000001", "--print", cwd=hostile_tree.project("proj"))
    assert result.code == 0, result.err
    assert "evil" in result.out
    assert_clean(result.out)


@pytest.mark.parametrize("command", [("entries", "--json"), ("context",), ("context", "--json")])
def test_inspecting_a_session_file_prints_no_control_character(hostile_tree: Tree, command) -> None:
    path = next(hostile_tree.paths.sessions_root.rglob("*ab12000000000001.jsonl"))
    result = run_sessdex(hostile_tree, *command, str(path))
    assert result.code == 0, result.err
    assert "evil" in result.out
    assert_clean(result.out)


def test_the_pickers_screen_holds_no_control_character(hostile_tree: Tree) -> None:
    """The picker's renderer (rows, and the detail line of each selected row), as prompt_toolkit would paint it."""
    from sessdex.catalog.queries.file_scan import FileScan
    from sessdex.catalog.queries.picker_source import PickerSource
    from sessdex.catalog.tui.picker import PickerScreen
    from sessdex.catalog.tui.picker_model import PickerModel

    source = PickerSource(FileScan(hostile_tree.paths), hostile_tree.project("proj"))
    try:
        model = PickerModel("project", source.rows("project"), sessions_root=source.sessions_root)
    finally:
        source.close()
    screen = PickerScreen(model, heading="Resume a session", cwd=source.cwd, now_ms=time.time() * 1000)
    assert len(model.results) == 3
    painted = []
    for position in range(len(model.results)):
        model.selected = position
        painted.append("".join(text for _, text, *_ in screen.body(200, 10) + screen.detail(200)))
    assert any("evil" in text for text in painted)
    for text in painted:
        assert_clean(text.replace("\n", ""))


@pytest.mark.parametrize("extra", [(), ("--json",), ("model",), ("model", "--json"), ("session", "--breakdown")])
def test_usage_reports_print_no_control_character(hostile_tree: Tree, extra) -> None:
    project = hostile_tree.project("proj")
    hostile_tree.session(project, "ef56000000000005", [
        user("costly"),
        message("assistant", [{"type": "text", "text": "ok"}], "a0000001", "u0000001", provider=f"prov{HOSTILE}",
                model=f"model{HOSTILE}",
                usage={"input": 10, "output": 5, "cacheRead": 0, "cacheWrite": 0, "cost": {"total": 0.25}})],
        mtime_ms=BASE_MS + 4000)
    result = run_sessdex(hostile_tree, "usage", *extra, "--all", cwd=project)
    assert result.code == 0, result.err
    if "model" in extra or "--breakdown" in extra:
        assert "evil" in result.out  # the hostile model name is shown, defanged
    assert_clean(result.out)
    assert_clean(result.err)

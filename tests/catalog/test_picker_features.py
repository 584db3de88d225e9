"""The picker's line editing, preview pane, rename, trash, git-repository scope and narrow header, driven headlessly
through the real key bindings (pipe input) on real session files."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from sessdex.catalog.queries.file_scan import FileScan
from sessdex.catalog.queries.git_repo import repository_dirs
from sessdex.catalog.queries.picker_source import PickerSource
from sessdex.catalog.queries.sessions import Catalog
from sessdex.catalog.tui.picker import SessionActions
from tests.catalog.test_picker import (
    DOWN,
    ENTER,
    ESC,
    TAB,
    Driver,
    drive,
    file_source,
    populate,
    text_of,
)
from tests.core.sessiontree import BASE_MS, Tree, assistant, make_tree, user


@pytest.fixture
def tree(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Tree:
    tree = make_tree(tmp_path)
    monkeypatch.setenv("HOME", str(tree.home))
    monkeypatch.delenv("PI_CODING_AGENT_DIR", raising=False)
    monkeypatch.delenv("SESSDEX_CATALOG", raising=False)
    return tree


LEFT, HOME, END = "\x1b[D", "\x1b[H", "\x1b[F"
CTRL_A, CTRL_E, CTRL_K, CTRL_U, CTRL_W = "\x01", "\x05", "\x0b", "\x15", "\x17"
ALT_B, ALT_F, CTRL_SLASH, CTRL_R, CTRL_D = "\x1bb", "\x1bf", "\x1f", "\x12", "\x04"


def test_the_query_line_edits_like_a_shell(tree: Tree) -> None:
    populate(tree)

    async def script(d: Driver) -> None:
        async def typed(keys: str, expected: str) -> None:
            await d.press(keys)
            assert d.picker.query_buffer.text == expected and d.model.query == expected, (keys, expected)

        await typed("fix pa", "fix pa")
        await typed(LEFT + LEFT + "X", "fix Xpa")
        await typed(HOME + "A", "Afix Xpa")
        await typed(END + "Z", "Afix XpaZ")
        await typed(CTRL_A + "[", "[Afix XpaZ")
        await typed(CTRL_E + "]", "[Afix XpaZ]")
        await typed(ALT_B + ALT_B + "<", "[Afix <XpaZ]")
        await typed(ALT_F + ">", "[Afix <XpaZ>]")
        await typed(CTRL_A + ALT_F + CTRL_K, "[Afix")
        await typed(" one two" + CTRL_W, "[Afix one ")
        await typed(CTRL_U, "")
        await typed("\x13\x18\x05x", "x")  # Ctrl+S (no search mode), Ctrl+X Ctrl+E (no editor): nothing happens
        await typed(CTRL_U, "")
        await typed("\x1b[200~fix the\nparser\x1b[201~", "fix the parser")
        assert d.shown_ids() == ["aa11000000000001"]
        await d.press(ESC)

    assert drive(file_source(tree), script).outcome == "cancelled"


def test_preview_shows_matching_lines_and_last_messages_and_toggles(tree: Tree) -> None:
    populate(tree)

    async def script(d: Driver) -> None:
        assert d.picker.preview.visible
        await d.press("zebra")
        await d.until(lambda: d.shown_ids() == ["bb22000000000002"])
        await d.until(lambda: "last messages" in text_of(d.picker.preview.fragments(40, 30)))
        pane = text_of(d.picker.preview.fragments(40, 30))
        assert "Deploy the API" in pane and "matching lines" in pane and "zebra crossing" in pane
        assert pane.index("you: and mention the zebra") < pane.index("xcsh: ok") < pane.index("you: ship it")
        marked = [text for style, text in d.picker.preview.fragments(40, 30) if "class:match" in style]
        assert marked == ["zebra"]
        await d.press(CTRL_SLASH)
        assert not d.picker.preview.visible
        await d.press(CTRL_SLASH)
        assert d.picker.preview.visible
        await d.press(ESC)

    drive(file_source(tree), script, preview=True)


def test_preview_is_off_on_a_narrow_terminal_and_never_read_while_hidden(tree: Tree) -> None:
    populate(tree)

    async def script(d: Driver) -> None:
        assert not d.picker.preview.visible  # DummyOutput is 80 columns wide
        await d.press(DOWN, DOWN)
        assert d.picker.preview._messages == {}
        await d.press(ESC)

    drive(file_source(tree), script)


def test_rename_from_the_picker_writes_the_title(tree: Tree) -> None:
    paths = populate(tree)

    async def script(d: Driver) -> None:
        await d.press(DOWN, CTRL_R)  # Deploy the API
        assert d.picker.mode == "rename" and d.picker.rename_buffer.text == "Deploy the API"
        await d.press(CTRL_U, "Ship the API v2", ENTER)
        await d.until(lambda: "Renamed" in d.picker.screen.notice)
        assert d.picker.mode == "search" and d.model.query == ""
        assert any(row.title == "Ship the API v2" for row in d.model.rows)
        await d.press(CTRL_R)
        assert d.picker.mode == "rename"
        await d.press(ESC)  # Esc leaves the rename, not the picker
        await d.idle()
        assert d.picker.mode == "search" and not d.task.done()
        await d.press(ESC)

    drive(file_source(tree), script, actions=SessionActions(tree.paths))
    head = json.loads(paths["deploy"].read_bytes().splitlines()[0])
    assert (head["title"], head["titleSource"]) == ("Ship the API v2", "user")


def test_trash_from_the_picker_asks_first_and_moves_the_file(tree: Tree) -> None:
    paths = populate(tree)
    trashed = tree.paths.agent_dir / "trash" / paths["parser"].relative_to(tree.paths.sessions_root)

    async def script(d: Driver) -> None:
        await d.press(CTRL_D)
        assert "to the trash? y/n" in d.picker.screen.question
        await d.press("x", "n")  # another key waits; n declines
        assert paths["parser"].exists() and d.picker.mode == "search" and d.model.query == ""
        await d.press(CTRL_D, "y")
        await d.until(lambda: "trash restore cc330000" in d.picker.screen.notice)
        assert "cc33000000000003" not in d.shown_ids() and len(d.shown_ids()) == 2
        await d.press(ESC)

    drive(file_source(tree), script, actions=SessionActions(tree.paths))
    assert not paths["parser"].exists() and trashed.is_file()


def test_without_actions_rename_and_trash_only_say_so(tree: Tree) -> None:
    paths = populate(tree)

    async def script(d: Driver) -> None:
        await d.press(CTRL_D)
        assert "not available" in d.picker.screen.notice and d.picker.mode == "search"
        await d.press(ESC)

    drive(file_source(tree), script)
    assert all(path.exists() for path in paths.values())


def make_repository(tree: Tree) -> tuple[Path, Path]:
    """~/repo (a git repository with a subfolder) and ~/repo-feature (a linked worktree of it)."""
    main, linked = tree.project("repo"), tree.project("repo-feature")
    (main / ".git" / "worktrees" / "feature").mkdir(parents=True)
    (main / ".git" / "worktrees" / "feature" / "gitdir").write_text(f"{linked}/.git\n")
    (main / ".git" / "worktrees" / "feature" / "commondir").write_text("../..\n")
    (linked / ".git").write_text(f"gitdir: {main}/.git/worktrees/feature\n")
    return main, linked


def test_repository_dirs_finds_every_worktree(tree: Tree) -> None:
    main, linked = make_repository(tree)
    (main / "src" / "deep").mkdir(parents=True)
    assert repository_dirs(main / "src" / "deep") == [str(main), str(linked)]
    assert repository_dirs(linked) == [str(main), str(linked)]
    assert repository_dirs(tree.project("plain")) is None


def test_tab_cycles_through_this_repository(tree: Tree) -> None:
    populate(tree)
    main, linked = make_repository(tree)
    sub = tree.project("repo/src")
    tree.session(main, "ee55000000000005", [user("main tree work"), assistant("ok")], mtime_ms=BASE_MS + 5)
    tree.session(sub, "ff66000000000006", [user("subfolder work"), assistant("ok")], mtime_ms=BASE_MS + 6)
    tree.session(linked, "ab77000000000007", [user("worktree work"), assistant("ok")], mtime_ms=BASE_MS + 7)

    for source in (PickerSource(FileScan(tree.paths), sub), PickerSource(Catalog(tree.paths), sub)):
        async def script(d: Driver) -> None:
            assert d.model.scopes == ("project", "repo", "all") and d.shown_ids() == ["ff66000000000006"]
            await d.press(TAB)
            await d.until(lambda: not d.model.loading)
            assert d.model.scope == "repo" and "◉ This repo (repo)" in d.screen()
            assert sorted(d.shown_ids()) == ["ab77000000000007", "ee55000000000005", "ff66000000000006"]
            await d.press("work")
            await d.until(lambda: not d.model.content_pending)
            assert "dd44000000000004" not in d.shown_ids()  # "elsewhere parser work" is in another project
            await d.press(TAB)
            await d.until(lambda: not d.model.loading)
            assert d.model.scope == "all" and "dd44000000000004" in d.shown_ids()
            await d.press(TAB)
            assert d.model.scope == "project"
            await d.press(ESC)

        drive(source, script)


def test_sixty_columns_keep_the_count_and_the_scope(tree: Tree) -> None:
    populate(tree)

    async def script(d: Driver) -> None:
        for width in (60, 40):
            header = text_of(d.picker.screen.header(width))
            assert len(header) <= width and header.rstrip().endswith("3 of 3") and "◉" in header, header
            assert "project" in header
        await d.press(TAB)
        await d.until(lambda: not d.model.loading)
        assert "◉ All projects" in text_of(d.picker.screen.header(60))
        await d.press(ESC)

    drive(file_source(tree), script)


def test_pick_repo_starts_in_the_repository_scope(tree: Tree, monkeypatch, capsys) -> None:
    from tests.catalog.test_picker import keyboard, run_cli

    populate(tree)
    main, linked = make_repository(tree)
    tree.session(linked, "ab77000000000007", [user("worktree work"), assistant("ok")], mtime_ms=BASE_MS + 7)
    with keyboard(monkeypatch, ENTER):
        code, out, _err = run_cli(tree, monkeypatch, capsys, main, "pick", "--repo")
    assert code == 0 and out.strip().endswith("_ab77000000000007.jsonl")
    with keyboard(monkeypatch, ENTER):
        code, _out, err = run_cli(tree, monkeypatch, capsys, tree.project("proj"), "pick", "--repo")
    assert code == 2 and "not inside a git repository" in err


def test_the_bindings_of_query_keys_are_looked_up_before_the_first_key(tree: Tree, monkeypatch: pytest.MonkeyPatch) -> None:
    # prompt_toolkit merges every binding into one table on its first lookup; the picker has that done while idle.
    from prompt_toolkit.key_binding import key_bindings

    populate(tree)
    merges: list[object] = []
    merge = key_bindings._MergedKeyBindings._update_cache

    def counted(self: key_bindings._MergedKeyBindings) -> None:
        version = self._last_version
        merge(self)
        if self._last_version != version:  # the table was built (every lookup checks it is current)
            merges.append(self)

    async def script(d: Driver) -> None:
        await d.until(lambda: d.picker.app.is_running)
        await d.idle()
        monkeypatch.setattr(key_bindings._MergedKeyBindings, "_update_cache", counted)
        await d.press("p", "\x7f")
        assert merges == [] and d.model.query == ""
        await d.press(ESC)

    drive(file_source(tree), script)

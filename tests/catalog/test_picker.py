"""The session picker driven headlessly through its real key bindings (pipe input, no screen), and its CLI flows.

Keys are written as the terminal bytes a user's keyboard sends; the picker's state and the lines its
screen would draw are checked after each step. The real-terminal behaviour is in test_picker_tmux.py.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import sqlite3
import sys
import threading
import time
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

import gen_corpus
import pytest
from prompt_toolkit.input import PipeInput, create_pipe_input
from prompt_toolkit.output import DummyOutput

from sessdex.catalog.cli import pick_commands as cli_pick
from sessdex.catalog.cli.entry import main
from sessdex.catalog.queries.file_scan import FileScan
from sessdex.catalog.queries.picker_source import PickerSource
from sessdex.catalog.queries.sessions import Catalog
from sessdex.catalog.tui.picker import PickerResult, SessionPicker
from sessdex.core.paths import AgentPaths
from tests.core.sessiontree import (
    BASE_MS,
    Tree,
    assistant,
    header,
    make_tree,
    message,
    user,
)

UP, DOWN, PAGE_UP, PAGE_DOWN, HOME, END = "\x1b[A", "\x1b[B", "\x1b[5~", "\x1b[6~", "\x1b[H", "\x1b[F"
FIRST, LAST = "\x1b[1;5H", "\x1b[1;5F"  # Ctrl+Home, Ctrl+End: the list's first and last row
ENTER, ESC, CTRL_C, TAB, BACKSPACE = "\r", "\x1b", "\x03", "\t", "\x7f"
CTRL_P, CTRL_N, CTRL_U, CTRL_W = "\x10", "\x0e", "\x15", "\x17"
NOW_MS = BASE_MS + 3 * 86_400_000
SCREEN_WIDTH = 80  # DummyOutput is 80 x 40
BODY_HEIGHT = 35  # 40 rows minus header, query, column titles, detail and help


@pytest.fixture
def tree(tmp_path: Path, monkeypatch) -> Tree:
    tree = make_tree(tmp_path)
    monkeypatch.setenv("HOME", str(tree.home))
    monkeypatch.setenv("TMPDIR", str(tree.root / "tmp"))
    monkeypatch.delenv("PI_CODING_AGENT_DIR", raising=False)
    monkeypatch.delenv("SESSDEX_CATALOG", raising=False)
    return tree


def populate(tree: Tree) -> dict[str, Path]:
    """proj: three sessions (newest first: parser, deploy, untitled); other: one."""
    proj, other = tree.project("proj"), tree.project("other")
    return {
        "untitled": tree.session(proj, "aa11000000000001", [user("fix the parser please"), assistant("done")],
                                 mtime_ms=BASE_MS),
        "deploy": tree.session(proj, "bb22000000000002",
                               [user("ship it"), assistant("ok"),
                                message("user", "and mention the zebra crossing", "u0000002", "a0000001")],
                               head=header("bb22000000000002", proj, title="Deploy the API"),
                               mtime_ms=BASE_MS + 60_000),
        "parser": tree.session(proj, "cc33000000000003", [user("rewrite"), assistant("sure")],
                               head=header("cc33000000000003", proj, title="Parser rewrite"),
                               mtime_ms=BASE_MS + 120_000),
        "other": tree.session(other, "dd44000000000004", [user("elsewhere parser work"), assistant("fine")],
                              mtime_ms=BASE_MS + 30_000),
    }


def many_sessions(tree: Tree, count: int) -> list[Path]:
    proj = tree.project("proj")
    return [tree.session(proj, f"{n:04x}000000000000", [user(f"task number {n}"), assistant("ok")],
                         mtime_ms=BASE_MS + n * 1000) for n in range(count)]


class Driver:
    """Sends key bytes to a running picker and waits for it to react."""

    def __init__(self, picker: SessionPicker, pipe: PipeInput, task: asyncio.Task[PickerResult]) -> None:
        self.picker = picker
        self.model = picker.model
        self.pipe = pipe
        self.task = task

    async def press(self, *keys: str) -> None:
        for key in keys:
            self.pipe.send_text(key)
            await self.idle()

    async def idle(self) -> None:
        """Let the picker read and handle what was sent (a lone Esc waits for its 50 ms timeout)."""
        for _ in range(3):
            await asyncio.sleep(0.03)

    async def until(self, condition: Callable[[], bool], timeout: float = 5.0) -> None:
        deadline = time.monotonic() + timeout
        while not condition():
            assert time.monotonic() < deadline, "the picker did not get there in time"
            await asyncio.sleep(0.01)

    def line(self, position: int) -> str:
        return text_of(self.picker.screen.row(position, SCREEN_WIDTH))

    def screen(self) -> str:
        screen = self.picker.screen
        query = [("", "> " + self.picker.query_buffer.text)]
        parts = [screen.header(SCREEN_WIDTH), query, screen.column_titles(SCREEN_WIDTH),
                 screen.body(SCREEN_WIDTH, BODY_HEIGHT), screen.detail(SCREEN_WIDTH), screen.help_line(SCREEN_WIDTH)]
        return "\n".join(text_of(fragments) for fragments in parts)

    def shown_ids(self) -> list[str]:
        return [self.model.rows[index].session_id for index in self.model.results]


def text_of(fragments: list) -> str:
    return "".join(text for style, text, *_ in fragments if "[SetCursorPosition]" not in style)


def drive(source: PickerSource, script: Callable[[Driver], Awaitable[None]], scope: str = "project",
          **options: Any) -> PickerResult:
    """Run a picker on `source` with pipe input, play `script`, and return the picker's result."""
    async def run() -> PickerResult:
        with create_pipe_input() as pipe:
            picker = SessionPicker(source, scope, now_ms=NOW_MS, input=pipe, output=DummyOutput(),  # type: ignore[arg-type]
                                   content_debounce_s=0, **options)
            task = asyncio.ensure_future(picker.run_async())
            try:
                await Driver(picker, pipe, task).idle()
                await script(Driver(picker, pipe, task))
                return await asyncio.wait_for(task, 5)
            finally:
                if not task.done():
                    picker.app.exit(result=PickerResult("cancelled"))
                    await task
    try:
        return asyncio.run(run())
    finally:
        source.close()


def file_source(tree: Tree, project: str = "proj") -> PickerSource:
    return PickerSource(FileScan(tree.paths), tree.project(project))


# -- rows and navigation ----------------------------------------------------------------------------------

def test_rows_show_title_or_first_message_id_time_count_and_cost(tree: Tree) -> None:
    populate(tree)

    async def script(d: Driver) -> None:
        assert d.shown_ids() == ["cc33000000000003", "bb22000000000002", "aa11000000000001"]
        screen = d.screen()
        assert "◉ This project (~/proj)" in screen and "○ All projects" in screen and "3 of 3" in screen
        first, third = d.line(0), d.line(2)
        assert first.startswith("❯ Parser rewrite") and "cc330000" in first and "2d ago" in first
        # Cost is shown; the CWD column is not in This project scope (every row has the project's cwd).
        assert "2 msgs" in first and first.rstrip().endswith("$0.00") and "~/proj" not in first
        assert "CWD" not in text_of(d.picker.screen.column_titles(100))
        assert third.startswith("  fix the parser please") and "aa110000" in third
        await d.press(TAB)
        await d.until(lambda: len(d.shown_ids()) == 4)
        assert "CWD" in text_of(d.picker.screen.column_titles(100))
        assert text_of(d.picker.screen.row(0, 100)).rstrip().endswith("~/proj")
        await d.press(ESC)

    assert drive(file_source(tree), script).outcome == "cancelled"


def test_up_down_and_their_emacs_keys_move_and_stop_at_the_ends(tree: Tree) -> None:
    populate(tree)

    async def script(d: Driver) -> None:
        await d.press(UP)
        assert d.model.selected == 0
        await d.press(DOWN, CTRL_N)
        assert d.model.selected == 2 and d.line(2).startswith("❯ ")
        await d.press(DOWN)
        assert d.model.selected == 2
        await d.press(CTRL_P)
        assert d.model.selected == 1
        await d.press(ENTER)

    result = drive(file_source(tree), script)
    assert result.outcome == "selected" and result.row is not None and result.row.session_id == "bb22000000000002"


def test_page_keys_and_home_end(tree: Tree) -> None:
    many_sessions(tree, 80)

    async def script(d: Driver) -> None:
        await d.press(PAGE_DOWN)
        assert d.model.selected == BODY_HEIGHT
        await d.press(PAGE_DOWN, PAGE_DOWN)
        assert d.model.selected == 79
        await d.press(PAGE_UP)
        assert d.model.selected == 79 - BODY_HEIGHT
        await d.press(FIRST)
        assert d.model.selected == 0
        await d.press(LAST)
        assert d.model.selected == 79
        assert "task number 0" in d.screen()  # the oldest session, now in view
        await d.press(ENTER)

    result = drive(file_source(tree), script)
    assert result.row is not None and result.row.first_message == "task number 0"


def test_enter_returns_the_selected_sessions_path(tree: Tree) -> None:
    paths = populate(tree)

    async def script(d: Driver) -> None:
        await d.press(DOWN, DOWN)
        assert "aa11000000000001.jsonl" in d.screen().splitlines()[-2]  # the detail line shows the path
        await d.press(ENTER)

    result = drive(file_source(tree), script)
    assert result == PickerResult("selected", result.row) and result.row is not None
    assert result.row.path == str(paths["untitled"])


def test_escape_cancels_and_ctrl_c_is_the_hard_exit(tree: Tree) -> None:
    populate(tree)

    async def escape(d: Driver) -> None:
        await d.press("par", ESC)

    async def ctrl_c(d: Driver) -> None:
        await d.press(DOWN, CTRL_C)

    assert drive(file_source(tree), escape) == PickerResult("cancelled")
    assert drive(file_source(tree), ctrl_c) == PickerResult("exit")


# -- the query ---------------------------------------------------------------------------------------------

def test_typing_filters_ranks_title_hits_first_and_highlights_matches(tree: Tree) -> None:
    populate(tree)

    async def script(d: Driver) -> None:
        await d.press("pars")
        assert d.shown_ids()[:2] == ["cc33000000000003", "aa11000000000001"]  # title hit, then first message
        assert "> pars" in d.screen()
        fragments = d.picker.screen.row(0, SCREEN_WIDTH)
        assert [text for style, text in fragments if "class:match" in style] == ["Pars"]
        await d.press(ENTER)

    result = drive(file_source(tree), script)
    assert result.row is not None and result.row.title == "Parser rewrite"


def test_backspace_ctrl_w_ctrl_u_and_paste_edit_the_query(tree: Tree) -> None:
    populate(tree)

    async def script(d: Driver) -> None:
        await d.press("deploy api")
        assert d.shown_ids() == ["bb22000000000002"]
        await d.press(CTRL_W)
        assert d.model.query == "deploy "
        await d.press(BACKSPACE, BACKSPACE)
        assert d.model.query == "deplo"
        await d.press(CTRL_U)
        assert d.model.query == "" and len(d.shown_ids()) == 3
        await d.press("\x1b[200~fix the\nparser\x1b[201~")
        assert d.model.query == "fix the parser" and d.shown_ids() == ["aa11000000000001"]
        await d.press(ESC)

    drive(file_source(tree), script)


def test_no_match_shows_a_message_and_enter_does_nothing(tree: Tree) -> None:
    populate(tree)

    async def script(d: Driver) -> None:
        await d.press("qqqq")
        await d.until(lambda: not d.model.content_pending)
        assert d.shown_ids() == [] and "No sessions match “qqqq”." in d.screen()
        await d.press(ENTER)
        assert not d.task.done()
        await d.press(BACKSPACE * 4, ENTER)

    assert drive(file_source(tree), script).outcome == "selected"


# -- scope -----------------------------------------------------------------------------------------------

@pytest.mark.parametrize("source_kind", ["file-scan", "catalog"])
def test_tab_switches_between_this_project_and_all_projects(tree: Tree, source_kind: str) -> None:
    populate(tree)
    proj = tree.project("proj")
    source = (PickerSource(FileScan(tree.paths), proj) if source_kind == "file-scan"
              else PickerSource(Catalog(tree.paths), proj))

    async def script(d: Driver) -> None:
        await d.press("parser")
        assert "dd44000000000004" not in d.shown_ids()
        await d.press(TAB)
        await d.until(lambda: not d.model.loading)
        assert d.model.scope == "all" and "◉ All projects" in d.screen() and "○ This project" in d.screen()
        assert d.model.query == "parser" and "dd44000000000004" in d.shown_ids()
        assert "~/other" in d.line(d.shown_ids().index("dd44000000000004"))
        await d.press(TAB)
        assert d.model.scope == "project" and "dd44000000000004" not in d.shown_ids()
        await d.press(TAB, CTRL_U, LAST)
        await d.press(ENTER)

    result = drive(source, script)
    assert result.row is not None and result.row.session_id == "aa11000000000001"  # the oldest of all four


def test_pick_can_start_in_all_projects(tree: Tree) -> None:
    populate(tree)

    async def script(d: Driver) -> None:
        assert d.model.scope == "all" and len(d.shown_ids()) == 4
        await d.press(ESC)

    drive(file_source(tree), script, scope="all")


# -- the empty list ------------------------------------------------------------------------------------

@pytest.mark.parametrize("leave", [ESC, CTRL_C])
def test_empty_list_renders_a_message_enter_does_nothing_and_esc_or_ctrl_c_still_work(tree: Tree,
                                                                                        leave: str) -> None:
    tree.project("empty")

    async def script(d: Driver) -> None:
        screen = d.screen()
        assert "No sessions in this project. Press Tab for more scopes." in screen
        assert d.model.results == [] and "0 of 0" in screen
        await d.press(ENTER, DOWN, PAGE_DOWN, LAST, ENTER)
        assert not d.task.done()
        await d.press(TAB)
        await d.until(lambda: not d.model.loading)
        assert "No sessions found." in d.screen()
        await d.press(ENTER)
        assert not d.task.done()
        await d.press(leave)

    assert drive(file_source(tree, "empty"), script).outcome == ("cancelled" if leave == ESC else "exit")


# -- freshness of the catalog source ------------------------------------------------------------------------

def test_the_catalog_snapshot_paints_at_once_and_catches_up_with_the_files(tree: Tree) -> None:
    populate(tree)
    proj = tree.project("proj")
    warm = PickerSource(Catalog(tree.paths), proj)
    assert len(warm.rows("project")) == 3  # indexes the project
    warm.close()
    late = tree.session(proj, "ee55000000000005", [user("a brand new one"), assistant("ok")],
                        mtime_ms=BASE_MS + 180_000)
    source = PickerSource(Catalog(tree.paths), proj)
    assert "ee55000000000005" not in [row.session_id for row in source.rows("project")]  # the snapshot

    async def script(d: Driver) -> None:
        await d.until(lambda: "ee55000000000005" in d.shown_ids())  # the picker's freshness pass found it
        assert d.shown_ids()[0] == "ee55000000000005"
        await d.press(ENTER)

    result = drive(source, script)
    assert result.row is not None and result.row.path == str(late)


def test_catalog_rows_are_the_file_scan_rows(tmp_path: Path) -> None:
    home = tmp_path / "home"
    agent_dir = home / ".xcsh" / "agent"
    manifest = gen_corpus.generate_corpus(agent_dir, sessions=40, projects=3, total_bytes=300_000, seed=3,
                                          home=home, now=NOW_MS / 1000)
    paths = AgentPaths(agent_dir=agent_dir, home=home, tmp_dir=tmp_path / "tmp")

    def essentials(rows: list) -> list[tuple]:
        return [(*row[:6], int(row.modified_ms)) for row in rows]

    for project in manifest.projects:
        catalog, scan = PickerSource(Catalog(paths), project.cwd), PickerSource(FileScan(paths), project.cwd)
        try:
            for scope in ("project", "all"):
                catalog.refresh(scope)
                assert essentials(catalog.rows(scope)) == essentials(scan.rows(scope)) != []
        finally:
            catalog.close()


def test_an_empty_catalog_snapshot_is_refreshed_before_answering(tree: Tree) -> None:
    populate(tree)
    source = PickerSource(Catalog(tree.paths), tree.project("proj"))
    try:
        assert len(source.rows("project")) == 3
        assert not source.refresh("project")  # already done for this scope
    finally:
        source.close()


# -- content search -------------------------------------------------------------------------------------------

@pytest.mark.parametrize("source_kind", ["file-scan", "catalog"])
def test_words_only_in_later_messages_are_found_through_the_content_search(tree: Tree, source_kind: str) -> None:
    populate(tree)
    proj = tree.project("proj")
    source = (PickerSource(FileScan(tree.paths), proj) if source_kind == "file-scan"
              else PickerSource(Catalog(tree.paths), proj))

    async def script(d: Driver) -> None:
        await d.press("zebra")
        await d.until(lambda: not d.model.content_pending)
        assert d.shown_ids() == ["bb22000000000002"]
        assert d.picker.screen.header(SCREEN_WIDTH)
        detail = d.screen().splitlines()[-2]
        assert detail.startswith("in messages:") and "zebra" in detail
        await d.press(ENTER)

    result = drive(source, script)
    assert result.row is not None and result.row.title == "Deploy the API"


class FailingContentSearch(FileScan):
    """Real rows; the message-text search breaks (as a catalog on a failing disk would)."""

    def content_matches(self, query: str, cwd: str, session_dir: object, *, all_projects: bool) -> dict[str, str]:
        raise OSError("disk I/O error")


def test_a_failing_content_search_is_reported_and_the_picker_stays_usable(tree: Tree) -> None:
    populate(tree)

    async def script(d: Driver) -> None:
        await d.press("zebra")
        await d.until(lambda: not d.model.content_pending)
        assert "searching message text failed: disk I/O error" in d.screen()
        assert d.shown_ids() == []
        await d.press(CTRL_U, ENTER)

    result = drive(PickerSource(FailingContentSearch(tree.paths), tree.project("proj")), script)
    assert result.row is not None and result.row.session_id == "cc33000000000003"


class EndlessContentSearch(Catalog):
    """Real rows; the message-text search is one SQLite statement that only an interrupt ends (as a search over a
    huge catalog on a slow disk would run long). Each search records how it ended."""

    def __init__(self, paths: AgentPaths) -> None:
        super().__init__(paths)
        self.running = threading.Event()  # set from inside the running statement
        self.ended: list[str] = []

    def content_matches(self, query: str, cwd: str, session_dir: object, *, all_projects: bool) -> dict[str, str]:
        reader = self._database().sqlite_reader()
        assert reader is not None
        self.running.clear()
        reader.create_function("mark_running", 1, lambda value: self.running.set() or value)
        try:
            reader.execute("WITH RECURSIVE n(x) AS (SELECT mark_running(1) UNION ALL SELECT x + 1 FROM n) "
                           "SELECT count(*) FROM n").fetchall()
        except sqlite3.OperationalError as error:
            self.ended.append(str(error))
            raise
        return {}


def test_a_content_search_left_behind_by_typing_or_leaving_is_interrupted(tree: Tree) -> None:
    populate(tree)
    catalog = EndlessContentSearch(tree.paths)

    async def script(d: Driver) -> None:
        await d.press("zeb")
        await d.until(catalog.running.is_set, timeout=30)
        await d.press("r")  # the search for "zeb" is stopped; the one for "zebr" starts
        await d.until(lambda: catalog.ended == ["interrupted"] and catalog.running.is_set(), timeout=30)
        assert "failed" not in d.screen()
        await d.press(ESC)  # leaving stops the search for "zebr" (else the picker would wait for it)

    def rescue() -> None:  # a broken interrupt fails this test instead of hanging it: stop every search after a while
        deadline = time.monotonic() + 60
        while not stopped.wait(0.5):
            if time.monotonic() > deadline and catalog.db is not None:
                catalog.db.sqlite_reader().interrupt()

    stopped = threading.Event()
    rescuer = threading.Thread(target=rescue)
    rescuer.start()
    try:
        assert drive(PickerSource(catalog, tree.project("proj")), script).outcome == "cancelled"
    finally:
        stopped.set()
        rescuer.join()
    assert catalog.ended == ["interrupted", "interrupted"]


# -- the CLI flows ----------------------------------------------------------------------------------------

@contextlib.contextmanager
def keyboard(monkeypatch, keys: str) -> Iterator[None]:
    """Make the CLI believe it runs on a terminal whose user types `keys` (drawing goes nowhere)."""
    with create_pipe_input() as pipe:
        pipe.send_text(keys)
        monkeypatch.setattr(cli_pick, "terminal_available", lambda: True)
        monkeypatch.setattr(sys.stdin, "isatty", lambda: True)
        monkeypatch.setattr(cli_pick, "picker_terminal", lambda: contextlib.nullcontext((pipe, DummyOutput())))
        yield


def run_cli(tree: Tree, monkeypatch, capsys, cwd: Path, *args: str) -> tuple[int, str, str]:
    monkeypatch.chdir(cwd)
    with pytest.raises(SystemExit) as exit_info:
        main(["--agent-dir", str(tree.paths.agent_dir), *args])
    out, err = capsys.readouterr()
    return exit_info.value.code, out, err


def test_resume_without_value_prints_only_the_chosen_path(tree: Tree, monkeypatch, capsys) -> None:
    paths = populate(tree)
    with keyboard(monkeypatch, DOWN + ENTER):
        code, out, err = run_cli(tree, monkeypatch, capsys, tree.home / "proj", "resume")
    assert (code, out) == (0, f"{paths['deploy']}\n")
    assert str(paths["deploy"]) not in err


def test_resume_without_value_cancelled(tree: Tree, monkeypatch, capsys) -> None:
    populate(tree)
    with keyboard(monkeypatch, ESC):
        assert run_cli(tree, monkeypatch, capsys, tree.home / "proj", "resume") == (130, "", "No session selected\n")


def test_resume_without_value_ctrl_c_is_a_cancel(tree: Tree, monkeypatch, capsys) -> None:
    populate(tree)
    with keyboard(monkeypatch, CTRL_C):
        assert run_cli(tree, monkeypatch, capsys, tree.home / "proj", "resume") == (130, "", "No session selected\n")


def test_resume_without_value_and_no_sessions_does_not_open_the_picker(tree: Tree, monkeypatch, capsys) -> None:
    populate(tree)
    monkeypatch.setattr(cli_pick, "terminal_available", lambda: True)
    monkeypatch.setattr(sys.stdin, "isatty", lambda: True)
    monkeypatch.setattr(cli_pick, "picker_terminal", None)  # opening the picker would fail loudly
    result = run_cli(tree, monkeypatch, capsys, tree.project("nothing-here"), "resume")
    assert result == (1, "", "No sessions found\n")


def test_pick_all_selects_from_every_project(tree: Tree, monkeypatch, capsys) -> None:
    paths = populate(tree)
    with keyboard(monkeypatch, "elsewhere" + ENTER):
        code, out, _err = run_cli(tree, monkeypatch, capsys, tree.project("proj"), "pick", "--all")
    assert (code, out) == (0, f"{paths['other']}\n")


def test_pick_on_an_empty_project_still_cancels(tree: Tree, monkeypatch, capsys) -> None:
    tree.paths.agent_dir.mkdir(parents=True)
    with keyboard(monkeypatch, ENTER + ESC):
        assert run_cli(tree, monkeypatch, capsys, tree.project("empty"), "pick") == (130, "", "No session selected\n")


def test_pick_needs_a_terminal(tree: Tree, monkeypatch, capsys) -> None:
    code, out, err = run_cli(tree, monkeypatch, capsys, tree.project("proj"), "pick")
    assert (code, out) == (2, "") and "needs a terminal" in err


@pytest.mark.parametrize("source_kind", ["files", "catalog"])
def test_ctrl_o_orders_the_rows_by_cost_and_back(tree: Tree, source_kind: str) -> None:
    proj = tree.project("proj")
    for number, (session_id, answers) in enumerate([("aa11000000000001", 3), ("bb22000000000002", 1),
                                                     ("cc33000000000003", 2)]):
        priced = [{"type": "message", "id": f"a000000{n}", "parentId": None, "timestamp": "2025-01-01T00:00:00.000Z",
                   "message": {"role": "assistant", "content": "ok", "provider": "p", "model": "m",
                               "usage": {"input": 10, "output": 5, "cost": {"total": 0.25}}}} for n in range(answers)]
        tree.session(proj, session_id, [user(f"task {number}"), *priced], mtime_ms=BASE_MS + number * 60_000)
    source = file_source(tree) if source_kind == "files" else PickerSource(Catalog(tree.paths), proj)

    async def script(d: Driver) -> None:
        assert d.shown_ids() == ["cc33000000000003", "bb22000000000002", "aa11000000000001"]
        assert "COST" in d.screen() and "$0.50" in d.line(0)  # shown at 80 columns before any Ctrl+O
        await d.press("\x0f")  # Ctrl+O
        assert d.shown_ids() == ["aa11000000000001", "cc33000000000003", "bb22000000000002"]
        assert "COST ▼" in d.screen() and "$0.75" in d.line(0) and "$0.25" in d.line(2)
        await d.press("t", "a")  # a query ranks matches; equal ranks keep the cost order
        assert d.shown_ids() == ["aa11000000000001", "cc33000000000003", "bb22000000000002"]
        await d.press(CTRL_U, "\x0f")
        assert d.shown_ids() == ["cc33000000000003", "bb22000000000002", "aa11000000000001"]
        await d.press(ESC)

    assert drive(source, script).outcome == "cancelled"


def test_pick_json_and_shell_print_the_chosen_session(tree: Tree, monkeypatch, capsys) -> None:
    paths = populate(tree)
    with keyboard(monkeypatch, "elsewhere" + ENTER):
        code, out, _err = run_cli(tree, monkeypatch, capsys, tree.project("proj"), "pick", "--all", "--json")
    chosen = json.loads(out)
    assert code == 0 and chosen["path"] == str(paths["other"]) and chosen["cwd"] == str(tree.home / "other")
    assert chosen["name"] == "elsewhere parser work" and chosen["messageCount"] == 2
    with keyboard(monkeypatch, "elsewhere" + ENTER):
        code, out, _err = run_cli(tree, monkeypatch, capsys, tree.project("proj"), "pick", "--all", "--shell")
    assert (code, out) == (0, f"{tree.home / 'other'}\n{paths['other']}\n")  # the directory to run in, the file
    with keyboard(monkeypatch, ESC):
        assert run_cli(tree, monkeypatch, capsys, tree.project("proj"), "pick", "--json")[:2] == (130, "")

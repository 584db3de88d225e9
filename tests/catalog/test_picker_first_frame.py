"""The picker's first frame (drawn before prompt_toolkit is imported) against the application's own first frame.

Both are terminal bytes played into the same VT100 emulator (pyte); every cell's character and attributes and
the cursor must agree. The application's bytes are what prompt_toolkit's real VT100 output writes, plus the
lines the picker paints itself.
"""

from __future__ import annotations

import asyncio
import fcntl
import os
import select
import struct
import termios
import threading
from pathlib import Path
from typing import Any

import pyte
import pytest
from prompt_toolkit.data_structures import Size
from prompt_toolkit.input import create_input, create_pipe_input
from prompt_toolkit.output import create_output
from prompt_toolkit.output.color_depth import ColorDepth
from prompt_toolkit.output.vt100 import Vt100_Output

from sessdex.catalog.cli.output import current_directory
from sessdex.catalog.queries.picker_source import PickerSource
from sessdex.catalog.queries.sessions import Catalog
from sessdex.catalog.tui import picker_first_frame as frame
from sessdex.catalog.tui.picker import PickerResult, SessionPicker
from sessdex.catalog.tui.picker_first_frame import first_frame_text, first_screen
from sessdex.catalog.tui.picker_paint import LinePainter, StyleCodes, line_text
from sessdex.catalog.tui.picker_screen import body_height
from sessdex.core.discovery import id_prefix_length
from tests.catalog.test_picker import NOW_MS, Tree, populate
from tests.core.sessiontree import BASE_MS, assistant, header, make_tree, user

HEADING = "Pick a session"


class Capture:
    """A terminal stand-in for prompt_toolkit's VT100 output: keeps what it is sent."""

    encoding = "utf-8"

    def __init__(self) -> None:
        self.data: list[str] = []

    def write(self, data: str) -> int:
        self.data.append(data)
        return len(data)

    def flush(self) -> None:
        pass

    def isatty(self) -> bool:
        return True

    def fileno(self) -> int:
        raise OSError("no descriptor")


@pytest.fixture
def tree(tmp_path: Path, monkeypatch) -> Tree:
    tree = make_tree(tmp_path)
    monkeypatch.setenv("HOME", str(tree.home))
    monkeypatch.setenv("TERM", "xterm-256color")
    for name in ("NO_COLOR", "PROMPT_TOOLKIT_COLOR_DEPTH", "PI_CODING_AGENT_DIR", "SESSDEX_CATALOG"):
        monkeypatch.delenv(name, raising=False)
    return tree


def many(tree: Tree, count: int) -> None:
    proj = tree.project("proj")
    for number in range(count):
        tree.session(proj, f"{number:04x}{'0' * 12}", [user(f"task number {number} of the parser work"),
                                                       assistant("ok")], mtime_ms=BASE_MS + number * 60_000)


def hostile(tree: Tree) -> None:
    """Titles with a control character, a no-break space, wide characters and a combining mark."""
    proj = tree.project("proj")
    for number, title in enumerate(["evil\x1b]0;owned\x07 title", "no\xa0break space", "全角の題名 🎉 emoji",
                                    "cafe\u0301 combining"]):
        session_id = f"ee{number:02d}{'0' * 12}"
        tree.session(proj, session_id, [user("hello"), assistant("ok")], head=header(session_id, proj, title=title),
                     mtime_ms=BASE_MS + 500_000 + number)


def emulated(data: str, columns: int, rows: int) -> pyte.Screen:
    screen = pyte.Screen(columns, rows)
    pyte.Stream(screen).feed(data)
    return screen


def cells(screen: pyte.Screen) -> list[list[tuple[Any, ...]]]:
    return [[(char.data, char.fg, char.bg, char.bold, char.italics, char.underscore, char.reverse)
             for char in (screen.buffer[row][column] for column in range(screen.columns))]
            for row in range(screen.lines)]


def application_first_frame(source: PickerSource, scope: str, columns: int, rows: int, heading: str) -> str:
    """The bytes the picker application writes up to the end of its first frame."""
    capture = Capture()

    async def run() -> None:
        with create_pipe_input() as pipe:
            output = Vt100_Output(capture, lambda: Size(rows=rows, columns=columns),  # type: ignore[arg-type]
                                  term="xterm-256color", enable_cpr=False,
                                  default_color_depth=ColorDepth.from_env())  # as create_output() does
            picker = SessionPicker(source, scope, heading=heading, now_ms=NOW_MS, input=pipe, output=output)  # type: ignore[arg-type]
            painted = asyncio.get_running_loop().create_future()
            frames: list[str] = []

            def after_first_render(_app: object) -> None:
                if not painted.done():
                    frames.append("".join(capture.data))
                    painted.set_result(None)
            picker.app.after_render += after_first_render
            task = asyncio.ensure_future(picker.run_async())
            await painted
            picker.app.exit(result=PickerResult("cancelled"))
            await task
            capture.data[:] = frames
    asyncio.run(run())
    return "".join(capture.data)


def early_first_frame(source: PickerSource, scope: str, columns: int, rows: int, heading: str) -> str:
    """The first frame as the CLI draws it before the application: from a screenful of rows only."""
    every_row = source.rows(scope)  # type: ignore[arg-type]
    repo_dirs = source.repo_dirs
    screen = first_screen(scope, every_row[:body_height(rows)], total=len(every_row),  # type: ignore[arg-type]
                          id_length=id_prefix_length([row.session_id for row in every_row]),
                          scopes=("project", "repo", "all") if repo_dirs else ("project", "all"), heading=heading,
                          cwd=source.cwd, repo_root=repo_dirs[0] if repo_dirs else None, now_ms=NOW_MS,
                          screen_rows=rows, marks=source.marks())
    return first_frame_text(screen, columns, rows)


@pytest.mark.parametrize(("columns", "rows", "sessions", "scope"), [
    (80, 24, 3, "project"),  # fewer rows than the list holds
    (120, 30, 60, "project"),  # more rows than fit: the cost column, a full page
    (150, 30, 60, "project"),  # wide: the preview pane beside the list
    (100, 20, 3, "all"),
])
def test_the_first_frame_is_the_applications_first_frame(tree: Tree, columns: int, rows: int, sessions: int,
                                                         scope: str) -> None:
    populate(tree)
    many(tree, sessions)
    source = PickerSource(Catalog(tree.paths), tree.project("proj"))
    try:
        early = emulated(early_first_frame(source, scope, columns, rows, HEADING), columns, rows)
        application = emulated(application_first_frame(source, scope, columns, rows, HEADING), columns, rows)
    finally:
        source.close()
    assert early.display == application.display
    assert cells(early) == cells(application)
    assert (early.cursor.x, early.cursor.y) == (application.cursor.x, application.cursor.y) == (2, 1)
    assert not early.cursor.hidden and not application.cursor.hidden
    assert HEADING in early.display[0] and "task number" in "".join(early.display)


@pytest.mark.parametrize("no_color", [False, True])
def test_hostile_titles_and_no_color_look_the_same_in_both_frames(tree: Tree, monkeypatch, no_color: bool) -> None:
    populate(tree)
    hostile(tree)
    if no_color:
        monkeypatch.setenv("NO_COLOR", "1")
    source = PickerSource(Catalog(tree.paths), tree.project("proj"))
    try:
        early = emulated(early_first_frame(source, "project", 150, 20, HEADING), 150, 20)
        application = emulated(application_first_frame(source, "project", 150, 20, HEADING), 150, 20)
    finally:
        source.close()
    for number, (mine, theirs) in enumerate(zip(cells(early), cells(application))):
        assert mine == theirs, (number, [(a, b) for a, b in zip(mine, theirs) if a != b][:5])
    shown = "\n".join(early.display)
    assert "owned" in shown and "\x1b" not in shown and "\x07" not in shown
    colours = {cell[1] for row in cells(early) for cell in row}
    assert colours == {"default"} if no_color else "yellow" in colours or "cyan" in colours


def test_a_folder_name_with_a_control_sequence_and_bytes_that_are_not_utf8_reaches_the_terminal_safely(
        tree: Tree, monkeypatch) -> None:
    populate(tree)
    odd = tree.home / "bad\udcff\x1b]0;owned\x07dir"  # (a name of bytes that are not UTF-8 decodes to a surrogate)
    odd.mkdir()
    monkeypatch.chdir(odd)
    source = PickerSource(Catalog(tree.paths), Path(current_directory()))  # as `sessdex pick` starts it
    try:
        text = early_first_frame(source, "project", 150, 20, HEADING)
    finally:
        source.close()
    text.encode("utf-8")  # strictly, as the picker opens the terminal (cli/pick_commands.py)
    assert "owned" in text and "\x1b]0;owned" not in text and "\x07" not in text


def test_a_git_repository_adds_its_scope_to_both_frames(tree: Tree) -> None:
    populate(tree)
    (tree.home / "proj" / ".git").mkdir()
    source = PickerSource(Catalog(tree.paths), tree.project("proj"))
    try:
        early = emulated(early_first_frame(source, "project", 120, 24, HEADING), 120, 24)
        application = emulated(application_first_frame(source, "project", 120, 24, HEADING), 120, 24)
    finally:
        source.close()
    assert "This repo (proj)" in early.display[0]
    assert cells(early) == cells(application)


def test_the_catalogs_first_screen_is_the_start_of_its_rows(tree: Tree) -> None:
    populate(tree)
    many(tree, 40)
    catalog = Catalog(tree.paths)
    try:
        source = PickerSource(catalog, tree.project("proj"))
        assert len(source.rows("all")) == 44  # an empty snapshot is brought up to date first
        for all_projects in (False, True):
            every_row = catalog.picker_rows(str(tree.project("proj")), None, all_projects=all_projects)
            found = catalog.picker_first_screen(str(tree.project("proj")), None, all_projects=all_projects, limit=7)
            assert found == (every_row[:7], len(every_row), id_prefix_length(row.session_id for row in every_row))
    finally:
        catalog.close()


def test_keys_typed_between_the_first_frame_and_the_application_reach_the_query_line(tree: Tree) -> None:
    """On a real pseudo-terminal: the first frame puts the terminal in raw mode, keys are typed before the
    application exists, and the application (taking the screen over without switching screens again) finds them."""
    populate(tree)
    source = PickerSource(Catalog(tree.paths), tree.project("proj"))
    leader, follower = os.openpty()
    fcntl.ioctl(follower, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 100, 0, 0))
    shown = bytearray()
    stop = threading.Event()

    def drain() -> None:  # the terminal's screen side: read everything drawn
        while not stop.is_set():
            if select.select([leader], [], [], 0.02)[0]:
                try:
                    shown.extend(os.read(leader, 65536))
                except OSError:
                    return

    reader = threading.Thread(target=drain)
    reader.start()
    terminal = os.fdopen(os.dup(follower), "w", encoding="utf-8")
    keyboard = os.fdopen(os.dup(follower), "r")
    before = termios.tcgetattr(follower)
    previous = frame.raw_input(follower)
    try:
        raw = termios.tcgetattr(follower)[3]
        assert not raw & (termios.ECHO | termios.ICANON | termios.ISIG)  # typed keys are neither shown nor signals
        rows = source.rows("project")
        screen = first_screen("project", rows[:body_height(24)], total=len(rows),
                              id_length=id_prefix_length([row.session_id for row in rows]), scopes=("project", "all"),
                              heading=HEADING, cwd=source.cwd, repo_root=None, now_ms=NOW_MS, screen_rows=24)
        terminal.write(first_frame_text(screen, 100, 24))
        terminal.flush()
        os.write(leader, b"deploy")  # typed while no application reads the terminal yet
        picker_input, picker_output = create_input(keyboard), create_output(terminal)
        frame.adopt_alternate_screen(picker_output)
        picker = SessionPicker(source, "project", heading=HEADING, rows=rows, now_ms=NOW_MS, input=picker_input,
                               output=picker_output)

        async def run() -> PickerResult:
            task = asyncio.ensure_future(picker.run_async())
            for _ in range(1000):  # wait (up to 10 s) for the typed query to arrive
                if picker.query_buffer.text == "deploy":
                    break
                await asyncio.sleep(0.01)
            assert picker.query_buffer.text == "deploy"
            os.write(leader, b"\r")
            return await asyncio.wait_for(task, 10)

        result = asyncio.run(run())
    finally:
        frame.restore_input(follower, previous)
        restored = termios.tcgetattr(follower)
        stop.set()
        reader.join()
        terminal.close()
        keyboard.close()
        os.close(follower)
        os.close(leader)
        source.close()
    assert result.outcome == "selected" and result.row is not None and result.row.title == "Deploy the API"
    assert restored == before
    # One switch to the alternate screen (the first frame's) and one back (the application's, on leaving).
    assert shown.count(b"\x1b[?1049h") == 1 and shown.count(b"\x1b[?1049l") == 1


def test_the_painter_writes_only_the_lines_that_changed() -> None:
    painter = LinePainter(StyleCodes(colours=True))
    lines = [(0, 0, 10, [("class:header", "head")]), (3, 0, 10, [("", "row one")]), (4, 0, 10, [("", "row two")])]
    first = painter.paint(lines, 24)
    assert first.count("\x1b[") >= 3 and "\x1b[1;1H" in first and "\x1b[5;1H" in first
    assert painter.paint(lines, 24) == ""  # nothing changed: nothing written
    changed = painter.paint([lines[0], (3, 0, 10, [("", "row ONE")]), lines[2]], 24)
    assert "\x1b[4;1H" in changed and "\x1b[1;1H" not in changed and "\x1b[5;1H" not in changed
    painter.forget()  # the screen was cleared: everything again
    assert "\x1b[1;1H" in painter.paint(lines, 24)
    assert painter.paint([(30, 0, 10, [("", "below")])], 24) == ""  # off the screen


def test_painted_lines_are_cut_padded_and_shown_as_prompt_toolkit_shows_them() -> None:
    codes = StyleCodes(colours=True)
    reset = "\x1b[0m"  # every line starts from plain attributes
    assert line_text(codes, [("", "abcdef")], 4) == reset + "abcd"
    assert line_text(codes, [("", "ab")], 4) == reset + "ab  "
    assert line_text(codes, [("", "全角x")], 4) == reset + "全角"  # wide characters count twice
    assert line_text(codes, [("class:match", "hit")], 5) == "\x1b[0;1;33mhit\x1b[0m  "
    assert line_text(StyleCodes(colours=False), [("class:match", "hit")], 3) == "\x1b[0;1mhit\x1b[0m"
    assert "^[" in line_text(codes, [("", "a\x1bb")], 6)  # a control character as prompt_toolkit draws it


def test_the_preview_pane_is_painted_as_lines_and_left_alone_while_it_shows_the_same(tree: Tree) -> None:
    # prompt_toolkit compared the pane cell by cell on every redraw; the picker paints its lines, only when changed.
    populate(tree)
    columns, rows = 150, 24
    source = PickerSource(Catalog(tree.paths), tree.project("proj"))
    capture = Capture()
    written: list[str] = []

    async def run() -> None:
        with create_pipe_input() as pipe:
            output = Vt100_Output(capture, lambda: Size(rows=rows, columns=columns),  # type: ignore[arg-type]
                                  term="xterm-256color", enable_cpr=False)
            picker = SessionPicker(source, "project", heading=HEADING, now_ms=NOW_MS, input=pipe, output=output)  # type: ignore[arg-type]
            task = asyncio.ensure_future(picker.run_async())
            for _ in range(500):  # until the selected session's messages are read and shown
                await asyncio.sleep(0.01)
                if "last messages" in "".join(capture.data):
                    break
            await asyncio.sleep(0.05)
            screen = picker.app.renderer.last_rendered_screen
            assert screen is not None
            left = columns - columns * 2 // 5 - 1  # where the separator is
            assert not any(column >= left for line, row in screen.data_buffer.items() if line >= 3 for column in row)
            written.append("".join(capture.data))
            capture.data.clear()
            picker.app.invalidate()  # a redraw with nothing changed: the pane's lines are not written again
            await asyncio.sleep(0.05)
            written.append("".join(capture.data))
            picker.app.exit(result=PickerResult("cancelled"))
            await task
    try:
        asyncio.run(run())
    finally:
        source.close()
    shown = emulated(written[0], columns, rows).display
    left = columns - columns * 2 // 5 - 1
    assert all(line[left] == "│" for line in shown[3:rows - 2])
    assert "last messages, newest first" in "".join(line[left + 1:] for line in shown)
    assert "│" not in written[1] and "last messages" not in written[1]


def test_starred_and_tagged_sessions_look_the_same_in_both_frames(tree: Tree) -> None:
    from sessdex.core.marks import append_events, make_event

    populate(tree)
    append_events(tree.paths, [make_event("bb22000000000002", "desk", "star"),
                               make_event("cc33000000000003", "desk", "tag", add=["bug"], remove=[])])
    source = PickerSource(Catalog(tree.paths), tree.project("proj"))
    try:
        early = emulated(early_first_frame(source, "project", 100, 20, HEADING), 100, 20)
        application = emulated(application_first_frame(source, "project", 100, 20, HEADING), 100, 20)
    finally:
        source.close()
    assert early.display == application.display and cells(early) == cells(application)
    assert "○ Starred" in early.display[0] and any("★ Deploy the API" in line for line in early.display)
    assert "#bug" in early.display[18]  # the selected (newest) row's tag on the detail line


def first_screen_plans(catalog: Catalog, cwd: str, *, all_projects: bool) -> dict[str, str]:
    """Each SELECT on session_files that `picker_first_screen` runs -> its query plan."""
    reader = catalog._database().sqlite_reader()
    assert reader is not None
    statements: list[str] = []
    reader.set_trace_callback(statements.append)
    try:
        assert catalog.picker_first_screen(cwd, None, all_projects=all_projects, limit=7)
    finally:
        reader.set_trace_callback(None)
    return {statement: " | ".join(row[3] for row in reader.execute("EXPLAIN QUERY PLAN " + statement))
            for statement in statements
            if statement.lstrip().upper().startswith("SELECT") and "session_files" in statement}


def store_every_project_figures(catalog: Catalog, value: str | None = None) -> None:
    """Store the every-project figures in the catalog as the watcher stores them (`value`: this one instead)."""
    from sessdex.catalog.index import id_width

    database = catalog._database()
    reader = database.sqlite_reader()
    assert reader is not None
    count, width = id_width.every_project_figures(reader, catalog.machine, catalog.sessions_root)
    key = id_width.PICKER_FIGURES_KEY + catalog.machine
    with database.write():
        database.execute("meta_delete", {"key": key})
        database.execute("meta_insert", {"key": key, "value": value or id_width.picker_figures_value(
            count, width, id_width.picker_stamp(reader, catalog.machine))})


def test_the_first_screen_of_every_project_reads_the_newest_rows_and_the_ids_from_indexes(tree: Tree) -> None:
    """At 100,000 sessions reading every (several KB) row of the root took about a second: the newest rows come
    from the mtime index up to the screen's last row, the ids and the count from an index alone; and once the
    watcher keeps the count and the id width, no id is read at all."""
    populate(tree)
    many(tree, 40)
    catalog = Catalog(tree.paths)
    cwd = str(tree.project("proj"))
    try:
        every_row = PickerSource(catalog, tree.project("proj")).rows("all")  # brought up to date first
        expected = (every_row[:7], len(every_row), id_prefix_length(row.session_id for row in every_row))
        plans = first_screen_plans(catalog, cwd, all_projects=True)
        store_every_project_figures(catalog)
        kept = first_screen_plans(catalog, cwd, all_projects=True)
        assert catalog.picker_first_screen(cwd, None, all_projects=True, limit=7) == expected
        project = first_screen_plans(catalog, cwd, all_projects=False)
    finally:
        catalog.close()
    newest = [plan for statement, plan in plans.items() if "LIMIT" in statement]
    ids = [plan for statement, plan in plans.items() if "group_concat" in statement]
    assert len(newest) == 1 and len(ids) == 1, plans
    assert "ix_session_files_machine_mtime_ns" in newest[0]
    assert "COVERING INDEX ix_session_files_machine_path_listable" in ids[0]
    assert not any("group_concat" in statement for statement in kept), kept
    for plan in [*plans.values(), *kept.values(), *project.values()]:
        assert "TEMP B-TREE" not in plan and "SCAN session_files" not in plan, plan


def test_stored_figures_are_used_only_while_nothing_was_indexed_or_appended_to_since(tree: Tree) -> None:
    from sessdex.catalog.index import id_width

    populate(tree)
    catalog = Catalog(tree.paths)
    cwd = str(tree.project("proj"))
    try:
        every_row = PickerSource(catalog, tree.project("proj")).rows("all")
        store_every_project_figures(catalog)
        reader = catalog._database().sqlite_reader()
        assert reader is not None
        figures = (len(every_row), id_prefix_length(row.session_id for row in every_row))
        assert id_width.stored_every_project_figures(reader, catalog.machine) == figures
        store_every_project_figures(catalog, f"1 20 {id_width.picker_stamp(reader, catalog.machine)}")
        assert catalog.picker_first_screen(cwd, None, all_projects=True, limit=7)[1:] == (1, 20)  # type: ignore[index]
        tree.session(tree.project("proj"), "ff00000000000009", [user("a new one"), assistant("ok")],
                     mtime_ms=BASE_MS + 9_000_000)
        PickerSource(catalog, tree.project("proj")).refresh("all")  # indexed: the stored figures are out of date
        assert id_width.stored_every_project_figures(reader, catalog.machine) is None
        assert catalog.picker_first_screen(cwd, None, all_projects=True, limit=7)[1:] == (figures[0] + 1,  # type: ignore[index]
                                                                                          figures[1])
    finally:
        catalog.close()


def test_the_first_screen_orders_sessions_of_the_same_mtime_by_path_across_its_last_row(tree: Tree) -> None:
    proj = tree.project("proj")
    for number in range(12):  # the same mtime for all, written in an order that is not the paths' order
        tree.session(proj, f"{(number * 7) % 12:04x}{'0' * 12}", [user(f"same time {number}"), assistant("ok")],
                     mtime_ms=BASE_MS)
    tree.session(proj, f"ffff{'0' * 12}", [user("newest"), assistant("ok")], mtime_ms=BASE_MS + 1000)
    catalog = Catalog(tree.paths)
    try:
        PickerSource(catalog, proj).rows("all")
        for all_projects in (False, True):
            every_row = catalog.picker_rows(str(proj), None, all_projects=all_projects)
            for limit in (1, 5, 13, 20):
                found = catalog.picker_first_screen(str(proj), None, all_projects=all_projects, limit=limit)
                assert found is not None and found[0] == every_row[:limit]
    finally:
        catalog.close()

"""The session picker: a full-screen prompt_toolkit list of sessions, filtered as you type.

prompt_toolkit rather than textual: it starts in tens of milliseconds instead of hundreds, and its pipe
input plus `DummyOutput` drive the real key bindings headlessly in tests. This module is only imported
when a picker opens; the CLI's hot paths never load prompt_toolkit.

The screen: a header (scope, counts), the query line, column titles, the rows, a detail line for the
selected row (its path, or the matching message text) and a key help line. Keys:
Up/Down (Ctrl+P/Ctrl+N), PageUp/PageDown, Home/End move; Enter selects (nothing on an empty list), Alt+Enter
too, and a fork made of the choice (another project's session, resumed here) keeps its marks;
Esc cancels; Ctrl+C is the hard exit (the caller exits with status 0); Tab switches between this
project and all projects; Ctrl+O orders the rows by cost (and back to newest first); typing,
Backspace, Ctrl+W and Ctrl+U edit the query.

prompt_toolkit draws the query line and the preview pane; every other line is drawn by `picker_paint` as one
ANSI string per line, written only when it changed, right after prompt_toolkit's own drawing and in the same
write (prompt_toolkit's cell-by-cell screen diff was most of a keystroke's time). The lines themselves come from
`picker_screen`, which the first frame (`picker_first_frame`, drawn before this module is imported) shares.

Work that does not fit in a keystroke runs in the background on the picker's event loop: the rest of
the ranking (`picker_search`'s passes, in chunks between keystrokes), the content search (debounced, in a
worker thread, interrupted when the query moves on) and loading another scope's rows (in a worker thread).
Work every keystroke would otherwise repeat or trip over is done once while idle after the first paint: the
search strings and prompt_toolkit's key-binding table.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, Literal

from prompt_toolkit.application import Application
from prompt_toolkit.buffer import Buffer
from prompt_toolkit.data_structures import Size
from prompt_toolkit.document import Document
from prompt_toolkit.filters import Condition
from prompt_toolkit.input import Input
from prompt_toolkit.key_binding import KeyBindings, KeyPressEvent, merge_key_bindings
from prompt_toolkit.key_binding.bindings.basic import load_basic_bindings
from prompt_toolkit.key_binding.bindings.emacs import load_emacs_bindings
from prompt_toolkit.keys import Keys
from prompt_toolkit.layout import ConditionalContainer, Dimension, HSplit, Layout, VSplit, Window
from prompt_toolkit.layout.containers import Container
from prompt_toolkit.layout.controls import BufferControl
from prompt_toolkit.layout.mouse_handlers import MouseHandlers
from prompt_toolkit.layout.processors import AfterInput, BeforeInput, ConditionalProcessor
from prompt_toolkit.layout.screen import Screen, WritePosition
from prompt_toolkit.output import Output
from prompt_toolkit.styles import Style

from sessdex.catalog.queries.naming import row_name
from sessdex.catalog.queries.picker_source import PickerSource
from sessdex.catalog.queries.source import PickerRow, Scope
from sessdex.catalog.tui.picker_marks import (
    TAG_COMPLETIONS_SHOWN,
    completions,
    cycle_with_mark_scopes,
    known_tags,
    rows_scope,
    tag_changes,
)
from sessdex.catalog.tui.picker_model import PickerModel
from sessdex.catalog.tui.picker_paint import RESTORE_CURSOR, SAVE_CURSOR, LinePainter, StyleCodes, wrapped_lines
from sessdex.catalog.tui.picker_preview import PreviewPane
from sessdex.catalog.tui.picker_screen import (
    FIXED_LINES,
    PREVIEW_MIN_COLUMNS,
    STYLE_RULES,
    PickerScreen,
    body_height,
    list_width,
    painted_lines,
    preview_width,
)
from sessdex.catalog.tui.prompt_toolkit_adapter import (
    erase_screen,
    flush_replaced,
    look_up_key_bindings,
    screen_was_erased,
)
from sessdex.core.discovery import sanitize_display_name
from sessdex.core.paths import AgentPaths

ESCAPE_TIMEOUT_S = 0.05  # how long a lone Esc waits for the rest of an escape sequence
# Typing pauses this long before the message text is searched: short enough for matches to arrive within
# 150 ms of the last key, long enough not to search for every character of a word typed at speed.
CONTENT_DEBOUNCE_S = 0.06
RANKING_CHUNK_ROWS = 256
WARM_TERM_ROWS = 8_192  # rows a step of looking for a typed term takes (C-level substring tests: under a ms)
# The keys whose bindings are looked up before the first key press (see SessionPicker._warm_up): the printable ASCII
# characters and Backspace; a few per step of the event loop, so that a key typed meanwhile waits little.
QUERY_KEYS = (*(chr(code) for code in range(0x20, 0x7f)), Keys.Backspace.value)
WARM_UP_KEYS_PER_STEP = 8

STYLE = Style.from_dict(STYLE_RULES)
EDIT_PROMPTS = {"rename": "Rename to: ", "tag": "Tags: ", "note": "Note: "}  # the edit line's modes


def inline_rows(height: tuple[int, bool], terminal_rows: int) -> int:
    """The rows of an inline picker: `height` (rows, or a percentage of `terminal_rows`), at least the picker's
    fixed lines and one row of the list."""
    rows, percent = height
    return max(terminal_rows * rows // 100 if percent else rows, FIXED_LINES + 1)


def _read_marks(source: PickerSource) -> dict[str, Any]:
    """Every session's marks from the picker's source ({} from a source without marks)."""
    marks = getattr(source, "marks", None)
    return marks() if marks is not None else {}


class SessionActions:
    """What Ctrl+R and Ctrl+D do to a session file (the agent's rename, a move to `<agent dir>/trash/`), and the
    marks Alt+P, Alt+S, Alt+T and Alt+N set (events appended to the marks file as `machine`)."""

    def __init__(self, paths: AgentPaths, machine: str = "") -> None:
        self.paths = paths
        self.machine = machine

    def rename(self, path: str, title: str) -> str:
        """Set the session's title as a user rename; the title as stored."""
        from sessdex.core.rename import rename_session

        return rename_session(path, title, self.paths)

    def trash(self, path: str) -> str:
        """Move the session file to the trash; where it went."""
        from sessdex.core.trash import trash_session

        return str(trash_session(path, self.paths))

    def mark(self, session_id: str, op: str, **fields: Any) -> None:
        """Append one marks event (`op`: pin, unpin, star, unstar, tag, note) for the session, durably."""
        import socket

        from sessdex.core.marks import append_events, make_event

        machine = self.machine or socket.gethostname()
        append_events(self.paths, [make_event(session_id, machine, op, **fields)])


@dataclass(frozen=True)
class PickerResult:
    """How the picker ended: a session was chosen, the user cancelled (Esc), or asked for the hard exit (Ctrl+C);
    `keep_marks`: chosen with Alt+Enter, so that a fork made of it keeps its marks (as `resume --keep-marks`)."""

    outcome: Literal["selected", "cancelled", "exit"]
    row: PickerRow | None = None
    keep_marks: bool = False


class _Blank(Container):
    """Space the picker paints itself (picker_paint): laid out like a window of this exact size, but nothing is
    drawn there, not even the styles and mouse handlers a Window sets cell by cell on every redraw."""

    def __init__(self, height: Callable[[], int], width: Callable[[], int] | None = None,
                 reserve: Callable[[], bool] | None = None) -> None:
        self.height = height
        self.width = width
        self.reserve = reserve

    def reset(self) -> None:
        """Nothing to reset."""

    def preferred_width(self, max_available_width: int) -> Dimension:
        return Dimension() if self.width is None else Dimension.exact(self.width())

    def preferred_height(self, width: int, max_available_height: int) -> Dimension:
        return Dimension.exact(self.height())

    def write_to_screen(self, screen: Screen, mouse_handlers: MouseHandlers, write_position: WritePosition,
                        parent_style: str, erase_bg: bool, z_index: int | None) -> None:
        """Draws nothing; when `reserve` says so, counts its rows in the screen's height (an inline picker's last
        lines: prompt_toolkit makes room, scrolling the terminal up, only for the rows it thinks are written)."""
        if self.reserve is not None and self.reserve():
            screen.height = max(screen.height, write_position.ypos + write_position.height)

    def get_children(self) -> list[Container]:
        return []


# -- the application --------------------------------------------------------------------------------------

class SessionPicker:
    """One picker run over a PickerSource: build it, then `run()` (or `await run_async()`) for a PickerResult.

    `actions` (rename, trash) enables Ctrl+R and Ctrl+D; without it those keys only say they are unavailable.
    """

    def __init__(self, source: PickerSource, scope: Scope, *, heading: str = "Resume a session",
                 rows: list[PickerRow] | None = None, now_ms: float | None = None,
                 input: Input | None = None, output: Output | None = None,
                 content_debounce_s: float = CONTENT_DEBOUNCE_S, actions: SessionActions | None = None,
                 preview: bool | None = None, query: str = "", scopes: tuple[Scope, ...] | None = None,
                 height: tuple[int, bool] | None = None) -> None:
        self.source = source
        # `height`: (rows, True when a percentage of the terminal's) of an inline picker drawn below the prompt,
        # as fzf's --height; None, or as tall as the terminal: the full screen.
        self.height = height
        self.content_debounce_s = content_debounce_s
        self.actions = actions
        repo_dirs = getattr(source, "repo_dirs", None)
        cycled: tuple[Scope, ...] = scopes or (("project", "repo", "all") if repo_dirs else ("project", "all"))
        self._fixed_scopes = scopes is not None  # the caller's scopes only (the candidates of a prefix)
        self.model = PickerModel(scope, rows if rows is not None else source.rows(rows_scope(scope)),
                                 sessions_root=source.sessions_root, scopes=cycled)
        self._set_marks(_read_marks(source))
        self.screen = PickerScreen(self.model, heading=heading, cwd=source.cwd,
                                   now_ms=time.time() * 1000 if now_ms is None else now_ms,
                                   repo_root=repo_dirs[0] if repo_dirs else None)
        self.mode: Literal["search", "rename", "tag", "note", "confirm_trash"] = "search"
        query = "".join(char if char.isprintable() else " " for char in query)
        self.model.set_query(query)
        self.query_buffer = Buffer(multiline=False, on_text_changed=self._query_changed, name="query",
                                   document=Document(query, len(query)))
        self.rename_buffer = Buffer(multiline=False, name="rename")
        self._content_task: asyncio.Task[None] | None = None
        self._ranking_task: asyncio.Task[None] | None = None
        self._loading: set[Scope] = set()
        self._verified: set[Scope] = set()
        self.app: Application[PickerResult] = Application(
            layout=self._layout(),
            key_bindings=merge_key_bindings([load_basic_bindings(), load_emacs_bindings(), self._key_bindings()]),
            style=STYLE, full_screen=not self._inline(output), erase_when_done=True, mouse_support=False,
            input=input, output=output,
            max_render_postpone_time=0)  # draw right after each key, even while background work is queued
        # A lone Esc cancels at once: wait this little both for the rest of an escape sequence (ttimeoutlen) and
        # for a longer binding it may start (timeoutlen: Alt+B, Alt+F of the line editor begin with Esc).
        self.app.ttimeoutlen = self.app.timeoutlen = ESCAPE_TIMEOUT_S
        self.preview = PreviewPane(self.app, self.model, self.screen)
        self.preview.visible = preview if preview is not None else self._size().columns >= PREVIEW_MIN_COLUMNS
        self.painter = LinePainter(StyleCodes(colours=self.app.color_depth.value != "DEPTH_1_BIT"))
        self._painted_size: Size | None = None
        self._preview_drawn: tuple[object, list[list[tuple[str, str]]]] | None = None  # (what it shows, its lines)
        self._holding_flush = False
        self._flush = self.app.output.flush
        self.app.before_render += self._before_render
        self.app.after_render += self._paint

    # -- layout ---------------------------------------------------------------------------------------

    def _inline(self, output: Output | None) -> bool:
        """True when the picker takes only part of the terminal (`height` less than its rows)."""
        if self.height is None:
            return False
        rows = output.get_size().rows if output is not None else 24
        return inline_rows(self.height, rows) < rows

    def _size(self) -> Size:
        """The picker's area: the terminal, or its inline part (as wide, `height` rows tall)."""
        size = self.app.output.get_size()
        if self.app.full_screen or self.height is None:
            return size
        return Size(rows=min(inline_rows(self.height, size.rows), size.rows), columns=size.columns)

    def _layout(self) -> Layout:
        """The query line (prompt_toolkit's own line editor) and the optional preview pane; every other line
        (header, column titles, the list, the detail line, the key help) is blank space of its exact size, drawn
        by `_paint` after prompt_toolkit's own drawing."""
        searching = Condition(lambda: self.mode not in EDIT_PROMPTS)
        placeholder = ConditionalProcessor(AfterInput(lambda: self.screen.placeholder(), style="class:dim"),
                                           filter=Condition(lambda: not self.query_buffer.text))
        query_line = Window(BufferControl(self.query_buffer,
                                          input_processors=[BeforeInput("> ", style="class:prompt"), placeholder]),
                            height=1)
        rename_line = Window(BufferControl(self.rename_buffer,
                                           input_processors=[BeforeInput(lambda: EDIT_PROMPTS.get(self.mode, ""),
                                                                         style="class:prompt")]),
                             height=1)
        body = VSplit([
            _Blank(height=self._body_height, width=self._list_width),
            ConditionalContainer(_Blank(height=self._body_height, width=lambda: self._preview_width() + 1),
                                 filter=Condition(lambda: self.preview.visible)),  # its separator and the pane
        ], height=lambda: self._body_height())
        root = HSplit([
            _Blank(height=lambda: 1),  # the header
            ConditionalContainer(query_line, filter=searching),
            ConditionalContainer(rename_line, filter=~searching),
            _Blank(height=lambda: 1),  # the column titles
            body,
            _Blank(height=lambda: 2, reserve=lambda: not self.app.full_screen),  # the detail line and the key help
        ])
        return Layout(root, focused_element=self.query_buffer)

    def painted_lines(self) -> list[tuple[int, int, int, list[tuple[str, str]]]]:
        """The lines `_paint` draws: (screen row, column, width, fragments); with the preview pane, its lines too
        (its separator and text, wrapped as a prompt_toolkit window wraps them, as the first frame draws them)."""
        size = self._size()
        lines = painted_lines(self.screen, size.columns, size.rows, self.preview.visible)
        if self.preview.visible:
            left, width = list_width(size.columns, True), preview_width(size.columns)
            lines += [(3 + number, left, width + 1, line)
                      for number, line in enumerate(self._preview_lines(width, body_height(size.rows)))]
        return lines

    def _preview_lines(self, width: int, height: int) -> list[list[tuple[str, str]]]:
        """The preview pane's `height` lines, each with the separator in front; the same list objects while the
        pane's text is the same (the painter then skips them)."""
        fragments = self.preview.fragments(width, height)
        if self._preview_drawn is None or self._preview_drawn[0] != (fragments, width, height):
            pane = wrapped_lines(fragments, width, height)
            lines = [[("class:dim", "│"), *(pane[number] if number < len(pane) else [])] for number in range(height)]
            self._preview_drawn = ((fragments, width, height), lines)
        return self._preview_drawn[1]

    def _before_render(self, _app: object) -> None:
        """Hold prompt_toolkit's flush until `_paint` has added its lines (one write: a full redraw, which erases
        the screen first, never shows half a frame), and note when it will redraw everything."""
        size = self._size()
        if screen_was_erased(self.app) or size != self._painted_size:
            # Erased or resized: prompt_toolkit draws its whole frame on a cleared screen.
            self.painter.forget()
            self._painted_size = size
        self._holding_flush = True

    def _paint(self, _app: object) -> None:
        """Draw the picker's own lines that changed, then flush them with prompt_toolkit's output."""
        self._holding_flush = False
        output = self.app.output
        if self.app.is_done:  # the last frame: prompt_toolkit is leaving the alternate screen
            self._flush()
            return
        size = self._size()
        if size.rows >= FIXED_LINES + 1:  # else prompt_toolkit says the window is too small
            if self.painter.codes.colours != (self.app.color_depth.value != "DEPTH_1_BIT"):
                self.painter = LinePainter(StyleCodes(colours=not self.painter.codes.colours))
            # Full screen: lines at absolute positions; inline: from the cursor, which prompt_toolkit leaves on the
            # query line (row 1) and `_paint` saved there.
            text = self.painter.paint(self.painted_lines(), size.rows, None if self.app.full_screen else 1)
            if text:
                output.write_raw(SAVE_CURSOR + text + RESTORE_CURSOR)
        self._flush()

    def _flush_when_painted(self) -> None:
        if not self._holding_flush:
            self._flush()

    def _body_height(self) -> int:
        return body_height(self._size().rows)

    def _preview_width(self) -> int:
        return preview_width(self._size().columns)

    def _list_width(self) -> int:
        return list_width(self._size().columns, self.preview.visible)

    # -- keys -------------------------------------------------------------------------------------------

    def _key_bindings(self) -> KeyBindings:
        """The picker's own keys; the query line's editing keys (Left/Right, Home/End, Ctrl+A/E/W/U/K,
        Alt+B/F, Ctrl+Left/Right) are prompt_toolkit's basic and emacs bindings, loaded before these (not its
        search, vi or open-in-editor ones: nothing for a one-line query)."""
        bindings = KeyBindings()
        model = self.model
        searching = Condition(lambda: self.mode == "search")
        renaming = Condition(lambda: self.mode == "rename")
        tagging = Condition(lambda: self.mode == "tag")
        noting = Condition(lambda: self.mode == "note")
        editing = Condition(lambda: self.mode in EDIT_PROMPTS)
        confirming = Condition(lambda: self.mode == "confirm_trash")

        def on(*keys: str | Keys, when: Condition = searching) -> Callable[[Callable[[], object]], None]:
            """Bind each of `keys` to the action; `("escape", x)` is the one sequence Alt+x."""
            sequences: list[tuple[str | Keys, ...]] = (
                [tuple(keys)] if len(keys) == 2 and keys[0] == "escape" and len(keys[1]) == 1
                else [(key,) for key in keys])

            def register(action: Callable[[], object]) -> None:
                for sequence in sequences:
                    bindings.add(*sequence, filter=when)(lambda _event, act=action: act())
            return register

        on("up", "c-p")(lambda: self._move(lambda: model.move(-1)))
        on("down", "c-n")(lambda: self._move(lambda: model.move(1)))
        on("pageup")(lambda: self._move(lambda: model.page(-1)))
        on("pagedown")(lambda: self._move(lambda: model.page(1)))
        on("c-home")(lambda: self._move(model.first))
        on("c-end")(lambda: self._move(model.last))
        on("enter")(self._select)
        # Alt+Enter (Esc then Enter): choose, and a fork of the choice keeps its pins, stars, tags and note.
        bindings.add("escape", "enter", filter=searching)(lambda _event: self._select(keep_marks=True))
        on("escape")(lambda: self.app.exit(result=PickerResult("cancelled")))
        on("tab")(self._toggle_scope)
        on("c-o")(self._toggle_cost_order)
        on("c-_")(self._toggle_preview)  # Ctrl+/ (the terminal sends it as Ctrl+_), as fzf's preview toggle
        on("c-r")(self._start_rename)
        on("c-d")(self._ask_trash)
        on("escape", "p")(lambda: self._toggle_mark("pin", "unpin", "pinned"))  # Alt+P
        on("escape", "s")(lambda: self._toggle_mark("star", "unstar", "starred"))  # Alt+S
        on("escape", "t")(self._start_tag)  # Alt+T
        on("escape", "n")(self._start_note)  # Alt+N
        on("enter", when=renaming)(self._finish_rename)
        on("enter", when=tagging)(self._finish_tag)
        on("tab", when=tagging)(self._complete_tag)
        on("enter", when=noting)(self._finish_note)
        on("escape", when=editing)(self._back_to_search)
        on("y", "Y", when=confirming)(self._trash_selected)
        on("escape", "n", "N", when=confirming)(self._back_to_search)

        @bindings.add(Keys.Any, filter=confirming)
        def _ignore(_event: KeyPressEvent) -> None:
            """Any other key leaves the question open (nothing reaches the query)."""

        bindings.add("c-c")(lambda _event: self.app.exit(result=PickerResult("exit")))
        return bindings

    def _query_changed(self, buffer: Buffer) -> None:
        """The query line changed (typed, pasted, edited): filter again. Pasted line breaks and other control
        characters become spaces."""
        text = buffer.text
        if not text.isprintable():
            buffer.text = "".join(char if char.isprintable() else " " for char in text)
            return  # setting the text calls back with the clean one
        self.model.set_query(text)
        self._schedule_background_work()

    def _toggle_preview(self) -> None:
        """Show or hide the preview. The list changes width, so the whole screen is drawn anew: prompt_toolkit,
        comparing with its own last frame, would leave the old list's text where the pane has blank cells. The
        erase waits for the next frame's flush: erased and redrawn in one write, no blank frame."""
        self.preview.toggle()
        self._holding_flush = True
        erase_screen(self.app)

    def _toggle_cost_order(self) -> None:
        self.model.toggle_cost_order()
        self._schedule_background_work()

    def _move(self, move: Callable[[], None]) -> None:
        move()
        self.screen.notice = ""

    def _select(self, keep_marks: bool = False) -> None:
        row = self.model.selected_row()
        if row is not None:  # Enter on an empty list does nothing
            self.app.exit(result=PickerResult("selected", row, keep_marks))

    def _toggle_scope(self) -> None:
        scope = self.model.toggle_scope()
        if self.model.loading and scope not in self._loading:
            self._loading.add(scope)
            self.app.create_background_task(self._load_scope(scope))
        self._schedule_background_work()

    # -- rename and trash -----------------------------------------------------------------------------------

    def _back_to_search(self) -> None:
        self.mode = "search"
        self.screen.question = ""
        self.app.layout.focus(self.query_buffer)

    def _start_rename(self) -> None:
        row = self.model.selected_row()
        if row is None:
            return
        if self.actions is None:
            self.screen.notice = "Renaming is not available here"
            return
        self._start_edit("rename", sanitize_display_name(row.title or ""))

    def _start_edit(self, mode: Literal["rename", "tag", "note"], text: str) -> None:
        """Open the edit line (in place of the query line) for a rename, tags or a note, holding `text`."""
        self.mode = mode
        self.rename_buffer.text = text
        self.rename_buffer.cursor_position = len(text)
        self.app.layout.focus(self.rename_buffer)

    def _finish_rename(self) -> None:
        row = self.model.selected_row()
        title = self.rename_buffer.text
        self._back_to_search()
        if row is not None and self.actions is not None:
            self.app.create_background_task(self._rename(row, title))

    async def _rename(self, row: PickerRow, title: str) -> None:
        assert self.actions is not None
        stored = await self._in_worker("renaming", self.actions.rename, row.path, title)
        if stored is None:
            return
        self.model.replace_rows(lambda rows: [item._replace(title=stored) if item.path == row.path else item
                                              for item in rows])
        self.screen.notice = f"Renamed {row.session_id[:self.model.id_length]} to “{stored}”"
        self.app.invalidate()

    def _ask_trash(self) -> None:
        row = self.model.selected_row()
        if row is None:
            return
        if self.actions is None:
            self.screen.notice = "The trash is not available here"
            return
        self.mode = "confirm_trash"
        name = row_name(row)
        self.screen.question = f"Move “{name}” ({row.session_id[:self.model.id_length]}) to the trash? y/n"

    def _trash_selected(self) -> None:
        row = self.model.selected_row()
        self._back_to_search()
        if row is not None and self.actions is not None:
            self.app.create_background_task(self._trash(row))

    async def _trash(self, row: PickerRow) -> None:
        assert self.actions is not None
        moved = await self._in_worker("moving to the trash", self.actions.trash, row.path)
        if moved is None:
            return
        self.model.replace_rows(lambda rows: [item for item in rows if item.path != row.path])
        self.screen.notice = (f"Moved to the trash; `sessdex trash restore {row.session_id[:self.model.id_length]}` "
                              "brings it back")
        self.app.invalidate()

    # -- marks -----------------------------------------------------------------------------------------------

    def _set_marks(self, marks: dict[str, Any]) -> None:
        """Show `marks`; the Pinned and Starred scopes join the Tab cycle once some session is pinned (starred)."""
        self.model.set_marks(marks)
        if self._fixed_scopes:
            return
        self.model.scopes = cycle_with_mark_scopes(self.model.scopes, self.model.scope, marks)

    def _marks_of(self, row: PickerRow) -> Any:
        from sessdex.core.marks import NO_MARKS

        return self.model.marks.get(row.session_id, NO_MARKS)

    def _mark_target(self) -> PickerRow | None:
        """The selected row, when marks can be written (else a notice, and None)."""
        row = self.model.selected_row()
        if row is None:
            return None
        if self.actions is None:
            self.screen.notice = "Marks are not available here"
            return None
        return row

    def _toggle_mark(self, on: str, off: str, attribute: str) -> None:
        row = self._mark_target()
        if row is not None:
            op = off if getattr(self._marks_of(row), attribute) else on
            done = {"pin": "Pinned", "unpin": "Unpinned", "star": "Starred", "unstar": "Unstarred"}[op]
            self.app.create_background_task(self._write_mark(row, op, done))

    def _start_tag(self) -> None:
        row = self._mark_target()
        if row is None:
            return
        self._start_edit("tag", "")
        self._show_tag_help(row)

    def _show_tag_help(self, row: PickerRow, matching: list[str] | None = None) -> None:
        """The question line under the tag prompt: the session's tags, then the tags Tab completes to."""
        tags = self._marks_of(row).tags
        have = f"tags: {' '.join('#' + tag for tag in tags)}" if tags else "no tags yet"
        known = matching if matching is not None else known_tags(self.model.marks.values())
        offer = " ".join(known[:TAG_COMPLETIONS_SHOWN]) + (" …" if len(known) > TAG_COMPLETIONS_SHOWN else "")
        self.screen.question = (f"{have}  ·  bug adds, -bug removes, Tab completes"
                                + (f": {offer}" if offer else "") + "  ·  Enter applies, Esc cancels")

    def _complete_tag(self) -> None:
        row = self.model.selected_row()
        text, matching = completions(self.rename_buffer.text, known_tags(self.model.marks.values()))
        self.rename_buffer.text = text
        self.rename_buffer.cursor_position = len(text)
        if row is not None:
            self._show_tag_help(row, matching)

    def _finish_tag(self) -> None:
        from sessdex.core.errors import UsageError

        row = self.model.selected_row()
        text = self.rename_buffer.text
        self._back_to_search()
        if row is None or self.actions is None:
            return
        try:
            add, remove = tag_changes(text, self._marks_of(row).tags)
        except UsageError as error:
            self.screen.notice = str(error)
            return
        if add or remove:
            self.app.create_background_task(self._write_mark(row, "tag", "Tagged", add=add, remove=remove))

    def _start_note(self) -> None:
        row = self._mark_target()
        if row is not None:
            self._start_edit("note", self._marks_of(row).note or "")
            self.screen.question = "Enter saves the note (empty: removes it), Esc cancels"

    def _finish_note(self) -> None:
        from sessdex.core.errors import UsageError
        from sessdex.core.marks import valid_note

        row = self.model.selected_row()
        text = self.rename_buffer.text
        self._back_to_search()
        if row is None or self.actions is None:
            return
        if not text.strip():
            if self._marks_of(row).note is not None:
                self.app.create_background_task(self._write_mark(row, "note", "Removed the note of", text=None))
            return
        try:
            note = valid_note(text)
        except UsageError as error:
            self.screen.notice = str(error)
            return
        self.app.create_background_task(self._write_mark(row, "note", "Noted", text=note))

    async def _write_mark(self, row: PickerRow, op: str, done: str, **fields: Any) -> None:
        """Append the event in a worker thread (it fsyncs), then show every session's marks as the source has them."""
        assert self.actions is not None
        if await self._in_worker("saving the mark", self._marked, row.session_id, op, fields) is None:
            return
        marks = await self._in_worker("reading the marks", _read_marks, self.source)
        if marks is not None:
            self._set_marks(marks)
        self.screen.notice = f"{done} {row.session_id[:self.model.id_length]}"
        self.app.invalidate()

    def _marked(self, session_id: str, op: str, fields: dict[str, Any]) -> bool:
        assert self.actions is not None
        self.actions.mark(session_id, op, **fields)
        return True

    # -- background work ------------------------------------------------------------------------------------

    def _schedule_background_work(self) -> None:
        """After the query or scope changed: finish ranking between keystrokes, fetch content matches."""
        for task in (self._ranking_task, self._content_task):
            if task is not None:
                task.cancel()
        if self._content_task is not None and not self._content_task.done():
            self.source.interrupt_content_search()  # the worker thread would finish it for nothing
        self._ranking_task = self._content_task = None
        if not self.model.search_complete or self.model.terms_to_warm():
            self._ranking_task = self.app.create_background_task(self._finish_ranking())
        key = self.model.content_key
        if key is not None:
            self._content_task = self.app.create_background_task(self._fetch_content(key))

    async def _finish_ranking(self) -> None:
        # Rank-4 rows only ever go below what is shown, so redraw for them only while the page is not full.
        await asyncio.sleep(0)  # the keystroke's own redraw (scheduled after this task) goes first
        if not self.model.search_complete:
            while not self.model.advance_search(RANKING_CHUNK_ROWS):
                if len(self.model.results) < self.model.top + self._body_height():
                    self.app.invalidate()
                await asyncio.sleep(0)  # let keystrokes in between chunks
            self.app.invalidate()
        # Then, while idle, find the rows of each term typed so far: once a space follows, the query's earlier
        # terms are looked up over every row, which would otherwise be the next keystroke's work.
        for term in self.model.terms_to_warm():
            await asyncio.sleep(0)
            while not self.model.warm_term(term, WARM_TERM_ROWS):
                await asyncio.sleep(0)

    async def _fetch_content(self, key: tuple[str, Scope]) -> None:
        await asyncio.sleep(self.content_debounce_s)
        needle, scope = key
        matches = await self._in_worker("searching message text", self.source.content_matches, needle, scope)
        self.model.set_content_matches(key, matches or {})
        self.app.invalidate()

    async def _load_scope(self, scope: Scope) -> None:
        rows = await self._in_worker("loading sessions", self.source.rows, rows_scope(scope))
        self._loading.discard(scope)
        self._show_rows(scope, rows or [])
        self._verify(scope)

    def _show_rows(self, scope: Scope, rows: list[PickerRow]) -> None:
        self.model.set_rows(scope, rows)
        if scope == self.model.scope:
            self._schedule_background_work()
        self.app.invalidate()

    def _verify(self, scope: Scope) -> None:
        """Have the source bring `scope` up to date in the background (once), and show its rows again if changed."""
        if scope not in self._verified:
            self._verified.add(scope)
            self.app.create_background_task(self._verify_scope(scope))

    async def _verify_scope(self, scope: Scope) -> None:
        self.screen.updating.add(scope)
        try:
            if await self._in_worker("checking for changed sessions", self.source.refresh, rows_scope(scope)):
                rows = await self._in_worker("loading sessions", self.source.rows, rows_scope(scope))
                if rows is not None:
                    self._show_rows(scope, rows)
        finally:
            self.screen.updating.discard(scope)
            self.app.invalidate()

    async def _in_worker(self, what: str, function: Callable[..., Any], *args: Any) -> Any:
        """`function(*args)` in a worker thread; on failure, None and a notice on the screen (the picker stays up)."""
        try:
            return await asyncio.get_running_loop().run_in_executor(None, function, *args)
        except Exception as error:  # noqa: BLE001 - any failure of the source must leave the picker usable
            self.screen.notice = f"{what} failed: {error}"
            self.app.invalidate()
            return None

    def _warm_up(self) -> None:
        """Right after the first paint: build the search strings, then check the rows are current, then have
        prompt_toolkit look up the bindings of the keys that edit the query (its first lookup merges every binding
        into one table: over 10 ms that the first typed key would otherwise wait for)."""
        loop = asyncio.get_running_loop()
        if self.model.query:  # started with a query (`pick --query`): finish its ranking, search the messages
            loop.call_soon(self._schedule_background_work)
        loop.call_soon(self.model.build_index)
        loop.call_soon(self._verify, self.model.scope)
        keys = [*QUERY_KEYS]
        for start in range(0, len(keys), WARM_UP_KEYS_PER_STEP):
            loop.call_soon(look_up_key_bindings, self.app, keys[start:start + WARM_UP_KEYS_PER_STEP])

    # -- running ---------------------------------------------------------------------------------------------

    @contextlib.contextmanager
    def _flush_held_while_rendering(self) -> Iterator[None]:
        """Route the output's flush through `_flush_when_painted` while the picker runs (see `_before_render`);
        the output may be shared (the viewer's): it gets its own flush back, and anything held goes out."""
        with flush_replaced(self.app.output, self._flush_when_painted):
            try:
                yield
            finally:
                self._holding_flush = False

    async def run_async(self) -> PickerResult:
        """Show the picker until a session is selected, Esc or Ctrl+C."""
        with self._flush_held_while_rendering():
            try:
                return await self.app.run_async(pre_run=self._warm_up)
            finally:
                self.source.interrupt_content_search()  # nobody waits for its answer any more

    def run(self) -> PickerResult:
        """Show the picker (blocking) until a session is selected, Esc or Ctrl+C."""
        with self._flush_held_while_rendering():
            try:
                return self.app.run(pre_run=self._warm_up)
            finally:
                self.source.interrupt_content_search()

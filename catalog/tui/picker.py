"""The session picker (S14): a full-screen prompt_toolkit list of sessions, filtered as you type.

prompt_toolkit rather than textual: it starts in tens of milliseconds instead of hundreds, and its pipe
input plus `DummyOutput` drive the real key bindings headlessly in tests. This module is only imported
when a picker opens; the CLI's hot paths never load prompt_toolkit.

The screen: a header (scope, counts), the query line, column titles, the rows, a detail line for the
selected row (its path, or the matching message text) and a key help line. Keys:
Up/Down (Ctrl+P/Ctrl+N), PageUp/PageDown, Home/End move; Enter selects (nothing on an empty list);
Esc cancels; Ctrl+C is the hard exit (the caller exits with status 0); Tab switches between this
project and all projects; Ctrl+O orders the rows by cost (and back to newest first); typing,
Backspace, Ctrl+W and Ctrl+U edit the query.

Work that does not fit in a keystroke runs in the background on the picker's event loop: the rest of
the weak-fuzzy ranking (in chunks between keystrokes), the content search (debounced, in a worker
thread) and loading another scope's rows (in a worker thread).
"""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

from prompt_toolkit.application import Application
from prompt_toolkit.buffer import Buffer
from prompt_toolkit.data_structures import Size
from prompt_toolkit.filters import Condition
from prompt_toolkit.formatted_text import StyleAndTextTuples
from prompt_toolkit.input import Input
from prompt_toolkit.key_binding import KeyBindings, KeyPressEvent, merge_key_bindings
from prompt_toolkit.key_binding.bindings.basic import load_basic_bindings
from prompt_toolkit.key_binding.bindings.emacs import load_emacs_bindings
from prompt_toolkit.keys import Keys
from prompt_toolkit.layout import ConditionalContainer, HSplit, Layout, VSplit, Window
from prompt_toolkit.layout.controls import BufferControl, FormattedTextControl
from prompt_toolkit.layout.processors import AfterInput, ConditionalProcessor
from prompt_toolkit.output import Output
from prompt_toolkit.styles import Style

from sessdex.catalog.queries.naming import row_name
from sessdex.catalog.queries.picker_source import PickerSource
from sessdex.catalog.queries.source import MATCH_CLOSE, MATCH_OPEN, PickerRow, Scope
from sessdex.catalog.tui.dates import short_date
from sessdex.catalog.tui.fuzzy import fuzzy_match, highlight_runs
from sessdex.catalog.tui.picker_model import PickerModel
from sessdex.catalog.tui.picker_preview import PREVIEW_MIN_COLUMNS, PreviewPane
from sessdex.catalog.tui.terminal_text import terminal_text
from sessdex.catalog.tui.width import char_width, display_width
from sessdex.core.discovery import sanitize_display_name
from sessdex.core.paths import AgentPaths
from sessdex.core.usage import format_cost

ELLIPSIS = "…"
ESCAPE_TIMEOUT_S = 0.05  # how long a lone Esc waits for the rest of an escape sequence
# Typing pauses this long before the message text is searched: short enough for matches to arrive within
# 150 ms of the last key, long enough not to search for every character of a word typed at speed.
CONTENT_DEBOUNCE_S = 0.06
RANKING_CHUNK_ROWS = 1_000
FIXED_LINES = 5  # header, query, column titles, detail, help
AGO_WIDTH = 10  # "2025-12-31"
COUNT_WIDTH = 9  # "9999 msgs"
COST_WIDTH = 9  # "$1,234.56"
COST_COLUMN_MIN_WIDTH = 100
MIN_TITLE_WIDTH = 12
GAP = "  "

STYLE = Style.from_dict({
    "header": "bold",
    "scope.active": "reverse bold",
    "dim": "fg:ansibrightblack",
    "match": "fg:ansiyellow bold",
    "row.selected": "reverse",
    "prompt": "bold fg:ansicyan",
    "columns": "fg:ansibrightblack underline",
    "empty": "italic",
    "notice": "fg:ansired",
    "question": "bold fg:ansiyellow",
})


class SessionActions:
    """What Ctrl+R and Ctrl+D do to a session file: the agent's rename, and a move to `<agent dir>/trash/`."""

    def __init__(self, paths: AgentPaths) -> None:
        self.paths = paths

    def rename(self, path: str, title: str) -> str:
        """Set the session's title as a user rename; the title as stored."""
        from sessdex.core.rename import rename_session

        return rename_session(path, title, self.paths)

    def trash(self, path: str) -> str:
        """Move the session file to the trash; where it went."""
        from sessdex.core.trash import trash_session

        return str(trash_session(path, self.paths))


@dataclass(frozen=True)
class PickerResult:
    """How the picker ended: a session was chosen, the user cancelled (Esc), or asked for the hard exit (Ctrl+C)."""

    outcome: Literal["selected", "cancelled", "exit"]
    row: PickerRow | None = None


# -- text layout helpers ------------------------------------------------------------------------------

def fit_runs(runs: list[tuple[str, bool]], width: int) -> list[tuple[str, bool]]:
    """Highlight runs cut to `width` columns (ending in `…` when cut) and padded with spaces to exactly `width`."""
    total = sum(display_width(text) for text, _ in runs)
    if total > width:
        kept: list[tuple[str, bool]] = []
        room = max(width - 1, 0)
        for text, marked in runs:
            if text.isascii():
                piece = text[:room]
            else:
                characters = []
                used = 0
                for char in text:
                    used += char_width(char)
                    if used > room:
                        break
                    characters.append(char)
                piece = "".join(characters)
            if piece:
                kept.append((piece, marked))
                room -= display_width(piece)
            if len(piece) < len(text):
                break
        runs = kept + [(ELLIPSIS, False)]
        total = sum(display_width(text) for text, _ in runs)
    return runs + [(" " * (width - total), False)] if total < width else runs


def highlighted(text: str, query: str, width: int) -> list[tuple[str, bool]]:
    """`text` fitted to `width` with the characters matching `query` marked."""
    match = fuzzy_match(query, text) if query.strip() else None
    return fit_runs(highlight_runs(text, match.positions if match else ()), width)


def marked_snippet_runs(snippet: str) -> list[tuple[str, bool]]:
    """A source snippet (matches between MATCH_OPEN and MATCH_CLOSE) as highlight runs."""
    runs: list[tuple[str, bool]] = []
    for index, piece in enumerate(snippet.split(MATCH_OPEN)):
        inside, _, after = piece.partition(MATCH_CLOSE) if index else ("", "", piece)
        runs += [(inside, True)] if inside else []
        runs += [(after, False)] if after else []
    return runs


def short_path(path: str, width: int) -> str:
    """`path` with the home folder as `~`, keeping its end (`…` in front) when longer than `width` columns."""
    home = os.path.expanduser("~").rstrip("/")
    if home and (path == home or path.startswith(home + "/")):
        path = "~" + path[len(home):]
    if display_width(path) <= width:
        return path
    start, used = len(path), 0
    while start > 0 and used + display_width(path[start - 1]) <= width - 1:
        start -= 1
        used += display_width(path[start])
    return ELLIPSIS + path[start:]


def message_count_label(count: int) -> str:
    """'1 msg', '12 msgs'."""
    return f"{count} msg" if count == 1 else f"{count} msgs"


@dataclass(frozen=True)
class _Columns:
    title: int
    session_id: int
    cwd: int
    cost: bool

    @classmethod
    def for_width(cls, width: int, id_length: int, *, by_cost: bool = False) -> _Columns:
        """Column widths for `width`; the cost column shows on a wide screen, or whenever rows are ordered by cost."""
        cwd = min(32, width // 4) if width >= 80 else 0
        cost = by_cost or width >= COST_COLUMN_MIN_WIDTH
        fixed = (2 + len(GAP) * (3 + (1 if cost else 0) + (1 if cwd else 0)) + id_length + AGO_WIDTH + COUNT_WIDTH
                 + (COST_WIDTH if cost else 0) + cwd)
        return cls(max(width - fixed, MIN_TITLE_WIDTH), id_length, cwd, cost)


# -- the screen ----------------------------------------------------------------------------------------

class PickerScreen:
    """Turns a PickerModel into the fragments of each screen line (pure: no terminal, no event loop)."""

    def __init__(self, model: PickerModel, *, heading: str, cwd: str, now_ms: float,
                 repo_root: str | None = None) -> None:
        self.model = model
        self.heading = heading
        self.cwd = cwd
        self.repo_root = repo_root
        self.now_ms = now_ms
        self.notice = ""
        self.question = ""  # a yes/no question the next key answers (trash confirmation)
        self.updating: set[Scope] = set()  # scopes whose rows the source is bringing up to date

    def count_text(self) -> str:
        """The result count ("3 of 12", "3+ of 12" while ranking) and what is still running."""
        model = self.model
        count = ("" if model.loading
                 else f"{len(model.results)}{'' if model.search_complete else '+'} of {len(model.rows)}")
        if model.content_pending:
            count = "searching messages…  " + count
        if model.scope in self.updating:
            count = "checking for changes…  " + count
        return count

    def scope_label(self, scope: Scope, width: int) -> str:
        """How the header names a scope: the project's folder, the repository's name, or all projects."""
        if scope == "project":
            return f"This project ({short_path(self.cwd, max(width // 3, 10))})"
        if scope == "repo":
            return f"This repo ({os.path.basename(self.repo_root or '') or '?'})"
        return "All projects"

    def header(self, width: int) -> StyleAndTextTuples:
        """Heading, the scopes with the active one marked (◉, reverse video), and the result count.

        On a narrow terminal the other scopes, then the heading, then the long label go first: the count and
        the active scope always stay visible."""
        model = self.model
        count = self.count_text()
        short = {"project": "project", "repo": "repo", "all": "all"}

        def chip(scope: Scope, label: str) -> StyleAndTextTuples:
            active = scope == model.scope
            return [("class:scope.active" if active else "", f" {'◉' if active else '○'} {label} "), ("", " ")]

        def every_scope(with_heading: bool) -> StyleAndTextTuples:
            fragments: StyleAndTextTuples = [("class:header", f" {self.heading}  ")] if with_heading else []
            for scope in model.scopes:
                fragments += chip(scope, self.scope_label(scope, width))
            return [*fragments, ("class:dim", " Tab switches")]

        active_only = [*chip(model.scope, self.scope_label(model.scope, width)), ("class:dim", "Tab")]
        layouts = [every_scope(True), [*every_scope(True)[:-1]], [("class:header", f" {self.heading}  "), *active_only],
                   active_only, chip(model.scope, short[model.scope])]
        room = width - display_width(count) - 1
        left = next((layout for layout in layouts
                     if sum(display_width(fragment[1]) for fragment in layout) < room), layouts[-1])
        used = sum(display_width(fragment[1]) for fragment in left)
        return [*left, ("", " " * max(width - used - display_width(count) - 1, 1)), ("class:dim", count)]

    def placeholder(self) -> str:
        """What the empty query line says."""
        return "type to filter: id, title, cwd, first message, path, message text"

    def column_titles(self, width: int) -> StyleAndTextTuples:
        """The column headings over the rows."""
        columns = _Columns.for_width(width, self.model.id_length, by_cost=self.model.by_cost)
        cells = ["  " + "TITLE / FIRST MESSAGE".ljust(columns.title), "ID".ljust(columns.session_id),
                 "MODIFIED".rjust(AGO_WIDTH), "MSGS".rjust(COUNT_WIDTH)]
        cells += [("COST ▼" if self.model.by_cost else "COST").rjust(COST_WIDTH)] if columns.cost else []
        cells += ["CWD"] if columns.cwd else []
        return [("class:columns", GAP.join(cells)[:width])]

    def row(self, position: int, width: int) -> StyleAndTextTuples:
        """One result line: marker, title or first message, id prefix, time ago, message count, cwd."""
        model = self.model
        row_index = model.results[position]
        row = model.rows[row_index]
        columns = _Columns.for_width(width, model.id_length, by_cost=model.by_cost)
        query = model.query
        selected = position == model.selected
        base = "class:row.selected" if selected else ""
        cells: list[list[tuple[str, bool]]] = [
            highlighted(row_name(row), query, columns.title),
            highlighted(row.session_id[:columns.session_id], query, columns.session_id),
            [(short_date(row.modified_ms, self.now_ms).rjust(AGO_WIDTH), False)],
            [(message_count_label(row.message_count).rjust(COUNT_WIDTH), False)],
        ]
        if columns.cost:
            cells.append([(format_cost(row.cost).rjust(COST_WIDTH), False)])
        if columns.cwd:
            cells.append(highlighted(short_path(row.cwd, columns.cwd), query, columns.cwd))
        fragments: StyleAndTextTuples = [(base, "❯ " if selected else "  ")]
        for number, cell in enumerate(cells):
            if number:
                fragments.append((base, GAP))
            # Session text made terminal-safe here, after layout: each character keeps its one column.
            fragments += [(f"{base} class:match" if marked else base, terminal_text(text)) for text, marked in cell]
        if not selected:  # unstyled trailing blanks would only be more cells for the terminal diff to compare
            while fragments and not fragments[-1][0] and not fragments[-1][1].strip():
                fragments.pop()
            if fragments and not fragments[-1][0]:
                fragments[-1] = ("", fragments[-1][1].rstrip())
        return fragments

    def empty_message(self) -> str:
        """What the list says when it has no row to show."""
        model = self.model
        if model.loading:
            return {"all": "Loading the sessions of all projects…",
                    "repo": "Loading the sessions of this repository…"}.get(model.scope, "Loading sessions…")
        if not model.rows:
            return {"project": "No sessions in this project. Press Tab for more scopes.",
                    "repo": "No sessions in this repository. Press Tab for all projects."}.get(
                        model.scope, "No sessions found.")
        if model.content_pending:
            return f"No title, id or path matches “{model.query.strip()}”; searching message text…"
        return f"No sessions match “{model.query.strip()}”."

    def body(self, width: int, height: int) -> StyleAndTextTuples:
        """The list area, exactly `height` lines: the rows (or the empty-list message), then blank lines."""
        positions = self.model.window(height)
        fragments: StyleAndTextTuples = []
        if positions:
            for position in positions:
                fragments += self.row(position, width)
                fragments.append(("", "\n"))
        else:
            fragments += [("class:empty", "  " + self.empty_message()), ("", "\n")]
        fragments.append(("", "\n" * (height - max(len(positions), 1) - 1)))
        return fragments

    def detail(self, width: int) -> StyleAndTextTuples:
        """About the selected row: the matching message text when it was found there, else its file path."""
        model = self.model
        index = model.selected_row_index()
        if index is None:
            return []
        snippet = model.snippet(index)
        if snippet is not None:
            runs = fit_runs([("in messages: ", False), *marked_snippet_runs(snippet)], max(width - 1, 1))
        else:
            runs = highlighted(short_path(model.rows[index].path, width - 1), model.query, max(width - 1, 1))
        return [("class:match" if marked else "class:dim", text) for text, marked in runs]

    def help_line(self, width: int) -> StyleAndTextTuples:
        """The keys, or a question being asked, or the latest notice (what an action did, or a failure)."""
        if self.question:
            return [("class:question", self.question[:width])]
        if self.notice:
            return [("class:notice", self.notice[:width])]
        text = ("↑↓ move  Enter open  Tab scope  Ctrl+/ preview  Ctrl+R rename  Ctrl+D trash  Ctrl+O cost order  "
                "Esc cancel  PgUp/PgDn page  Ctrl+Home/End first/last")
        return [("class:dim", text[:width])]


# -- the application --------------------------------------------------------------------------------------

class SessionPicker:
    """One picker run over a PickerSource: build it, then `run()` (or `await run_async()`) for a PickerResult.

    `actions` (rename, trash) enables Ctrl+R and Ctrl+D; without it those keys only say they are unavailable.
    """

    def __init__(self, source: PickerSource, scope: Scope, *, heading: str = "Resume a session",
                 rows: list[PickerRow] | None = None, now_ms: float | None = None,
                 input: Input | None = None, output: Output | None = None,
                 content_debounce_s: float = CONTENT_DEBOUNCE_S, actions: SessionActions | None = None,
                 preview: bool | None = None) -> None:
        self.source = source
        self.content_debounce_s = content_debounce_s
        self.actions = actions
        repo_dirs = getattr(source, "repo_dirs", None)
        scopes: tuple[Scope, ...] = ("project", "repo", "all") if repo_dirs else ("project", "all")
        self.model = PickerModel(scope, rows if rows is not None else source.rows(scope),
                                 sessions_root=source.sessions_root, scopes=scopes)
        self.screen = PickerScreen(self.model, heading=heading, cwd=source.cwd,
                                   now_ms=time.time() * 1000 if now_ms is None else now_ms,
                                   repo_root=repo_dirs[0] if repo_dirs else None)
        self.mode: Literal["search", "rename", "confirm_trash"] = "search"
        self.query_buffer = Buffer(multiline=False, on_text_changed=self._query_changed, name="query")
        self.rename_buffer = Buffer(multiline=False, name="rename")
        self._content_task: asyncio.Task[None] | None = None
        self._ranking_task: asyncio.Task[None] | None = None
        self._loading: set[Scope] = set()
        self._verified: set[Scope] = set()
        self.app: Application[PickerResult] = Application(
            layout=self._layout(),
            key_bindings=merge_key_bindings([load_basic_bindings(), load_emacs_bindings(), self._key_bindings()]),
            style=STYLE, full_screen=True, mouse_support=False, input=input, output=output,
            max_render_postpone_time=0)  # draw right after each key, even while background work is queued
        # A lone Esc cancels at once: wait this little both for the rest of an escape sequence (ttimeoutlen) and
        # for a longer binding it may start (timeoutlen: Alt+B, Alt+F of the line editor begin with Esc).
        self.app.ttimeoutlen = self.app.timeoutlen = ESCAPE_TIMEOUT_S
        self.preview = PreviewPane(self.app, self.model, self.screen)
        self.preview.visible = preview if preview is not None else self._size().columns >= PREVIEW_MIN_COLUMNS

    # -- layout ---------------------------------------------------------------------------------------

    def _size(self) -> Size:
        return self.app.output.get_size()

    def _layout(self) -> Layout:
        """Header, the query line (prompt_toolkit's own line editor), column titles, the list beside the
        optional preview, the detail line and the key help.

        Every window gets its exact size: left to measure, prompt_toolkit would build the list's fragments once
        more per redraw just to learn its preferred width and height."""
        def line(get_fragments: Callable[[], StyleAndTextTuples]) -> Window:
            return Window(FormattedTextControl(get_fragments), height=1, wrap_lines=False)

        def rest_of_line(after: int) -> Callable[[], int]:
            return lambda: max(self._size().columns - after, 1)

        searching = Condition(lambda: self.mode != "rename")
        placeholder = ConditionalProcessor(AfterInput(lambda: self.screen.placeholder(), style="class:dim"),
                                           filter=Condition(lambda: not self.query_buffer.text))
        query_line = VSplit([
            Window(FormattedTextControl([("class:prompt", "> ")]), width=2, height=1),
            Window(BufferControl(self.query_buffer, input_processors=[placeholder]), height=1, width=rest_of_line(2)),
        ])
        rename_line = VSplit([
            Window(FormattedTextControl([("class:prompt", "Rename to: ")]), width=11, height=1),
            Window(BufferControl(self.rename_buffer), height=1, width=rest_of_line(11)),
        ])
        body = VSplit([
            Window(FormattedTextControl(lambda: self.screen.body(self._list_width(), self._body_height())),
                   wrap_lines=False, width=lambda: self._list_width(), height=lambda: self._body_height()),
            ConditionalContainer(VSplit([
                Window(width=1, char="│", style="class:dim", height=lambda: self._body_height()),
                Window(FormattedTextControl(lambda: self.preview.fragments(self._preview_width(),
                                                                           self._body_height())),
                       width=lambda: self._preview_width(), height=lambda: self._body_height(), wrap_lines=True),
            ]), filter=Condition(lambda: self.preview.visible)),
        ], height=lambda: self._body_height())
        root = HSplit([
            line(lambda: self.screen.header(self._size().columns)),
            ConditionalContainer(query_line, filter=searching),
            ConditionalContainer(rename_line, filter=~searching),
            line(lambda: self.screen.column_titles(self._list_width())),
            body,
            line(lambda: self.screen.detail(self._size().columns)),
            line(lambda: self.screen.help_line(self._size().columns)),
        ])
        return Layout(root, focused_element=self.query_buffer)

    def _body_height(self) -> int:
        return max(self._size().rows - FIXED_LINES, 1)

    def _preview_width(self) -> int:
        return max(self._size().columns * 2 // 5, 20)

    def _list_width(self) -> int:
        columns = self._size().columns
        return columns - self._preview_width() - 1 if self.preview.visible else columns

    # -- keys -------------------------------------------------------------------------------------------

    def _key_bindings(self) -> KeyBindings:
        """The picker's own keys; the query line's editing keys (Left/Right, Home/End, Ctrl+A/E/W/U/K,
        Alt+B/F, Ctrl+Left/Right) are prompt_toolkit's basic and emacs bindings, loaded before these (not its
        search, vi or open-in-editor ones: nothing for a one-line query)."""
        bindings = KeyBindings()
        model = self.model
        searching = Condition(lambda: self.mode == "search")
        renaming = Condition(lambda: self.mode == "rename")
        confirming = Condition(lambda: self.mode == "confirm_trash")

        def on(*keys: str | Keys, when: Condition = searching) -> Callable[[Callable[[], object]], None]:
            def register(action: Callable[[], object]) -> None:
                for key in keys:
                    bindings.add(key, filter=when)(lambda _event, act=action: act())
            return register

        on("up", "c-p")(lambda: self._move(lambda: model.move(-1)))
        on("down", "c-n")(lambda: self._move(lambda: model.move(1)))
        on("pageup")(lambda: self._move(lambda: model.page(-1)))
        on("pagedown")(lambda: self._move(lambda: model.page(1)))
        on("c-home")(lambda: self._move(model.first))
        on("c-end")(lambda: self._move(model.last))
        on("enter")(self._select)
        on("escape")(lambda: self.app.exit(result=PickerResult("cancelled")))
        on("tab")(self._toggle_scope)
        on("c-o")(self._toggle_cost_order)
        on("c-_")(lambda: self.preview.toggle())  # Ctrl+/ (the terminal sends it as Ctrl+_), as fzf's preview toggle
        on("c-r")(self._start_rename)
        on("c-d")(self._ask_trash)
        on("enter", when=renaming)(self._finish_rename)
        on("escape", when=renaming)(self._back_to_search)
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

    def _toggle_cost_order(self) -> None:
        self.model.toggle_cost_order()
        self._schedule_background_work()

    def _move(self, move: Callable[[], None]) -> None:
        move()
        self.screen.notice = ""

    def _select(self) -> None:
        row = self.model.selected_row()
        if row is not None:  # Enter on an empty list does nothing (S14)
            self.app.exit(result=PickerResult("selected", row))

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
        self.mode = "rename"
        self.rename_buffer.text = sanitize_display_name(row.title or "")
        self.rename_buffer.cursor_position = len(self.rename_buffer.text)
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

    # -- background work ------------------------------------------------------------------------------------

    def _schedule_background_work(self) -> None:
        """After the query or scope changed: finish ranking between keystrokes, fetch content matches."""
        for task in (self._ranking_task, self._content_task):
            if task is not None:
                task.cancel()
        self._ranking_task = self._content_task = None
        if not self.model.search_complete:
            self._ranking_task = self.app.create_background_task(self._finish_ranking())
        key = self.model.content_key
        if key is not None:
            self._content_task = self.app.create_background_task(self._fetch_content(key))

    async def _finish_ranking(self) -> None:
        # Rank-4 rows only ever go below what is shown, so redraw for them only while the page is not full.
        while not self.model.advance_search(RANKING_CHUNK_ROWS):
            if len(self.model.results) < self.model.top + self._body_height():
                self.app.invalidate()
            await asyncio.sleep(0)  # let keystrokes in between chunks
        self.app.invalidate()

    async def _fetch_content(self, key: tuple[str, Scope]) -> None:
        await asyncio.sleep(self.content_debounce_s)
        needle, scope = key
        matches = await self._in_worker("searching message text", self.source.content_matches, needle, scope)
        self.model.set_content_matches(key, matches or {})
        self.app.invalidate()

    async def _load_scope(self, scope: Scope) -> None:
        rows = await self._in_worker("loading sessions", self.source.rows, scope)
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
            if await self._in_worker("checking for changed sessions", self.source.refresh, scope):
                rows = await self._in_worker("loading sessions", self.source.rows, scope)
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
        """Right after the first paint: build the search strings, then check the rows are current."""
        loop = asyncio.get_running_loop()
        loop.call_soon(self.model.build_index)
        loop.call_soon(self._verify, self.model.scope)

    # -- running ---------------------------------------------------------------------------------------------

    async def run_async(self) -> PickerResult:
        """Show the picker until a session is selected, Esc or Ctrl+C."""
        return await self.app.run_async(pre_run=self._warm_up)

    def run(self) -> PickerResult:
        """Show the picker (blocking) until a session is selected, Esc or Ctrl+C."""
        return self.app.run(pre_run=self._warm_up)

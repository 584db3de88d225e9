"""What the session picker shows, as lines of (style, text) fragments: pure, no terminal, no prompt_toolkit.

The picker's screen is drawn from these lines twice over: by the picker application (`sessdex.catalog.tui.picker`,
through `sessdex.catalog.tui.picker_paint`), and, before prompt_toolkit is even imported, by the first frame
(`sessdex.catalog.tui.picker_first_frame`), which must look exactly like the application's first frame. So
this module imports nothing heavy: no prompt_toolkit, no dataclasses, no typing at run time.

Style strings name classes of `STYLE_RULES` ("class:dim"); several classes may be joined with spaces.
"""

from __future__ import annotations

import os

from sessdex.catalog.queries.naming import row_name
from sessdex.catalog.queries.source import MATCH_CLOSE, MATCH_OPEN
from sessdex.catalog.tui.dates import short_date
from sessdex.catalog.tui.figures import format_cost
from sessdex.catalog.tui.fuzzy import fold, highlight_runs, normalize_query, term_positions
from sessdex.catalog.tui.picker_marks import marks_summary, title_prefix
from sessdex.catalog.tui.terminal_text import terminal_text
from sessdex.catalog.tui.width import char_width, cut, display_width

TYPE_CHECKING = False  # typing stays off the first frame's imports
if TYPE_CHECKING:
    from sessdex.catalog.queries.source import PickerRow, Scope
    from sessdex.catalog.tui.picker_model import PickerModel

Fragments = list[tuple[str, str]]  # prompt_toolkit's StyleAndTextTuples, without importing it

ELLIPSIS = "…"
FIXED_LINES = 5  # header, query, column titles, detail, help
AGO_WIDTH = 10  # "2025-12-31"
COUNT_WIDTH = 9  # "9999 msgs"
COST_WIDTH = 9  # "$1,234.56"
COST_COLUMN_MIN_WIDTH = 60  # below this the title keeps the room (the cost shows when ordered by it)
CWD_COLUMN_MIN_WIDTH = 80
NARROW_CWD_WIDTH = 12  # the CWD column below 100 columns: the end of the path (`…/game`)
MIN_TITLE_WIDTH = 12
GAP = "  "
PREVIEW_MIN_COLUMNS = 140  # the preview pane opens by itself on terminals this wide (the list keeps its CWD column)
ROW_CACHE_LINES = 512  # row lines kept between redraws (a few pages' worth for each recent query)

# The picker's style classes, as prompt_toolkit's Style.from_dict takes them (and picker_paint turns into SGR).
STYLE_RULES = {
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
}


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
    needle = normalize_query(query)
    return fit_runs(highlight_runs(text, term_positions(needle, text, fold(text)) if needle else ()), width)


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
    if path.isascii():
        return ELLIPSIS + (path[-(width - 1):] if width > 1 else "")
    start, used = len(path), 0
    while start > 0 and used + display_width(path[start - 1]) <= width - 1:
        start -= 1
        used += display_width(path[start])
    return ELLIPSIS + path[start:]


def message_count_label(count: int) -> str:
    """'1 msg', '12 msgs'."""
    return f"{count} msg" if count == 1 else f"{count} msgs"


def body_height(screen_rows: int) -> int:
    """How many rows the list shows on a screen `screen_rows` tall."""
    return max(screen_rows - FIXED_LINES, 1)


def preview_width(screen_columns: int) -> int:
    """The preview pane's width on a screen `screen_columns` wide."""
    return max(screen_columns * 2 // 5, 20)


def list_width(screen_columns: int, preview_visible: bool) -> int:
    """The list's width: the screen's, less the preview pane and its separator when shown."""
    return screen_columns - preview_width(screen_columns) - 1 if preview_visible else screen_columns


def painted_lines(screen: PickerScreen, columns: int, rows: int,
                  preview_visible: bool) -> list[tuple[int, int, int, Fragments]]:
    """The lines drawn as whole strings (see picker_paint): (screen row, column, width, fragments) of the header,
    the column titles, the list, the detail line and the key help. The query line (row 1) and the preview pane
    are prompt_toolkit's."""
    width = list_width(columns, preview_visible)
    height = body_height(rows)
    lines = [(0, 0, columns, screen.header(columns)), (2, 0, width, screen.column_titles(width))]
    lines += [(3 + number, 0, width, line) for number, line in enumerate(screen.body_lines(width, height))]
    lines += [(3 + height, 0, columns, screen.detail(columns)), (4 + height, 0, columns, screen.help_line(columns))]
    return lines


def preview_heading(model: PickerModel) -> Fragments | None:
    """The top of the preview pane for the selected row (its name, id, message count, cwd); None with no row."""
    row = model.selected_row()
    if row is None:
        return None
    return [("class:header", f" {row_name(row)}\n"),
            ("class:dim", f" {row.session_id[:model.id_length]} · {row.message_count} msgs · {row.cwd}\n")]


def preview_safe(fragments: Fragments) -> Fragments:
    """Preview fragments made terminal-safe (session text may hold control characters; newlines stay)."""
    return [(style, terminal_text(text, keep_newlines=True)) for style, text in fragments]


def preview_while_loading(model: PickerModel) -> Fragments:
    """The preview pane before the selected session's messages are read (as on the first frame)."""
    heading = preview_heading(model)
    return preview_safe(NOTHING_SELECTED if heading is None else [*heading, LOADING])


NOTHING_SELECTED = [("class:dim", " nothing selected")]
LOADING = ("class:dim", "\n loading…")


class _Columns:
    """The widths of the list's columns for one screen width (the title takes what the others leave)."""

    __slots__ = ("title", "session_id", "cwd", "cost")

    def __init__(self, title: int, session_id: int, cwd: int, cost: bool) -> None:
        self.title = title
        self.session_id = session_id
        self.cwd = cwd
        self.cost = cost

    @classmethod
    def for_width(cls, width: int, id_length: int, *, by_cost: bool = False, scope: Scope = "all") -> _Columns:
        """Column widths for `width`; the cost column shows unless the screen is very narrow (and whenever rows are
        ordered by cost); the CWD column only where rows come from several folders (not in This project) and there
        is room for it."""
        cwd = 0
        if width >= CWD_COLUMN_MIN_WIDTH and scope != "project":
            cwd = min(32, width // 4) if width >= 100 else NARROW_CWD_WIDTH
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
        self._row_lines: dict[tuple[object, ...], Fragments] = {}
        self._cells: dict[tuple[object, ...], tuple[list[tuple[str, str, int]], str]] = {}
        self._headers: dict[tuple[object, ...], list[tuple[Fragments, int]]] = {}

    def count_text(self) -> str:
        """The result count ("3 of 12", "3+ of 12" while ranking) and what is still running."""
        model = self.model
        count = ("" if model.loading
                 else f"{model.result_count}{'' if model.search_complete else '+'} of {model.row_count}")
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
        if scope == "pinned":
            return "Pinned"
        if scope == "starred":
            return "Starred"
        return "All projects"

    def header(self, width: int) -> Fragments:
        """Heading, the scopes with the active one marked (◉, reverse video), and the result count.

        On a narrow terminal the other scopes, then the heading, then the long label go first: the count and
        the active scope always stay visible."""
        count = self.count_text()
        count_width = display_width(count)
        room = width - count_width - 1
        layouts = self._header_layouts(width)
        left, used = next(((layout, used) for layout, used in layouts if used < room), layouts[-1])
        return [*left, ("", " " * max(width - used - count_width - 1, 1)), ("class:dim", count)]

    def _header_layouts(self, width: int) -> list[tuple[Fragments, int]]:
        """The header's left parts, widest first, each with its width: kept per width and scope (only the count
        changes from one keystroke to the next)."""
        model = self.model
        key = (width, model.scope, model.scopes, self.heading)
        found = self._headers.get(key)
        if found is not None:
            return found
        short = {"project": "project", "repo": "repo", "all": "all", "pinned": "pinned", "starred": "starred"}

        def chip(scope: Scope, label: str) -> Fragments:
            active = scope == model.scope
            return [("class:scope.active" if active else "", f" {'◉' if active else '○'} {label} "), ("", " ")]

        def every_scope(with_heading: bool) -> Fragments:
            fragments: Fragments = [("class:header", f" {self.heading}  ")] if with_heading else []
            for scope in model.scopes:
                fragments += chip(scope, self.scope_label(scope, width))
            return [*fragments, ("class:dim", " Tab switches")]

        active_only = [*chip(model.scope, self.scope_label(model.scope, width)), ("class:dim", "Tab")]
        layouts = [every_scope(True), [*every_scope(True)[:-1]], [("class:header", f" {self.heading}  "), *active_only],
                   active_only, chip(model.scope, short[model.scope])]
        found = self._headers[key] = [(layout, sum(display_width(fragment[1]) for fragment in layout))
                                      for layout in layouts]
        return found

    def placeholder(self) -> str:
        """What the empty query line says."""
        return "type to filter: id, title, cwd, first message, path, message text"

    def column_titles(self, width: int) -> Fragments:
        """The column headings over the rows."""
        columns = _Columns.for_width(width, self.model.id_length, by_cost=self.model.by_cost, scope=self.model.scope)
        cells = ["  " + "TITLE / FIRST MESSAGE".ljust(columns.title), "ID".ljust(columns.session_id),
                 "MODIFIED".rjust(AGO_WIDTH), "MSGS".rjust(COUNT_WIDTH)]
        cells += [("COST ▼" if self.model.by_cost else "COST").rjust(COST_WIDTH)] if columns.cost else []
        cells += ["CWD"] if columns.cwd else []
        return [("class:columns", GAP.join(cells)[:width])]

    def row(self, position: int, width: int, needle: str | None = None) -> Fragments:
        """One result line: marker, title or first message, id prefix, time ago, message count, cwd (`needle`: the
        model's, passed by callers drawing many rows).

        Kept between redraws: a redraw that moves the selection or merges background results rebuilds only the
        lines that changed, and the query-independent cells of a row are laid out once per width."""
        model = self.model
        row = model.rows[model.results[position]]
        selected = position == model.selected
        if needle is None:
            needle = model.needle
        key = (row, model.marks.get(row.session_id), selected, needle, width, model.id_length, model.by_cost,
               model.scope)
        fragments = self._row_lines.get(key)
        if fragments is None:
            if len(self._row_lines) >= ROW_CACHE_LINES:
                self._row_lines.clear()
            fragments = self._row_lines[key] = self._layout_row(row, selected, width, needle)
        return fragments

    def _row_cells(self, row: PickerRow, width: int) -> tuple[list[tuple[str, str, int]], str]:
        """A row's query-independent layout: its highlightable cells (terminal-safe text cut to its column, its
        fold, and the blanks that pad it) and the fixed cells between them (time, messages, cost), kept per width."""
        model = self.model
        marks = model.marks.get(row.session_id)
        key = (row, marks, width, model.id_length, model.by_cost, model.scope)
        cells = self._cells.get(key)
        if cells is None:
            if len(self._cells) >= ROW_CACHE_LINES:
                self._cells.clear()
            columns = _Columns.for_width(width, model.id_length, by_cost=model.by_cost, scope=model.scope)
            fixed = [short_date(row.modified_ms, self.now_ms).rjust(AGO_WIDTH),
                     message_count_label(row.message_count).rjust(COUNT_WIDTH)]
            if columns.cost:
                fixed.append(format_cost(row.cost).rjust(COST_WIDTH))
            # Each text is cut to its column first: matches are looked for (and highlighted) in what shows. Made
            # terminal-safe before matching: each character keeps its one column.
            texts = [(cut(title_prefix(marks) + row_name(row), columns.title), columns.title),
                     (row.session_id[:columns.session_id], columns.session_id)]
            if columns.cwd:
                texts.append((short_path(row.cwd, columns.cwd), columns.cwd))
            safe = [(terminal_text(text), column - display_width(text)) for text, column in texts]
            cells = self._cells[key] = ([(text, fold(text), padding) for text, padding in safe], GAP.join(fixed))
        return cells

    def _layout_row(self, row: PickerRow, selected: bool, width: int, needle: str) -> Fragments:
        """A row's fragments, each run of the row's own style as one fragment (fewer pieces to draw)."""
        highlightable, fixed = self._row_cells(row, width)
        base = "class:row.selected" if selected else ""
        match = f"{base} class:match" if base else "class:match"
        fragments: Fragments = []
        plain = ["❯ " if selected else "  "]  # text in the row's style not yet in `fragments`
        for number, (text, folded, padding) in enumerate(highlightable):
            if number:
                plain.append(GAP)
            positions = term_positions(needle, text, folded) if needle else ()
            if positions:
                for piece, marked in highlight_runs(text, positions):
                    if marked:
                        if plain:
                            fragments.append((base, "".join(plain)))
                            plain = []
                        fragments.append((match, piece))
                    else:
                        plain.append(piece)
            else:
                plain.append(text)
            if padding > 0:
                plain.append(" " * padding)
            if number == 1:
                plain += [GAP, fixed]
        ending = "".join(plain)
        if not selected:  # unstyled trailing blanks would only be more cells to draw
            ending = ending.rstrip()
        if ending:
            fragments.append((base, ending))
        return fragments

    def empty_message(self) -> str:
        """What the list says when it has no row to show."""
        model = self.model
        if model.loading:
            return {"all": "Loading the sessions of all projects…",
                    "repo": "Loading the sessions of this repository…"}.get(model.scope, "Loading sessions…")
        if not model.rows:
            return {"project": "No sessions in this project. Press Tab for more scopes.",
                    "repo": "No sessions in this repository. Press Tab for all projects.",
                    "pinned": "No pinned session. Alt+P pins the selected one.",
                    "starred": "No starred session. Alt+S stars the selected one."}.get(
                        model.scope, "No sessions found.")
        if model.content_pending:
            return f"No title, id or path matches “{model.query.strip()}”; searching message text…"
        return f"No sessions match “{model.query.strip()}”."

    def body_lines(self, width: int, height: int) -> list[Fragments]:
        """The list area, exactly `height` lines: the rows (or the empty-list message), then blank lines."""
        positions = self.model.window(height)
        needle = self.model.needle
        lines = ([self.row(position, width, needle) for position in positions] if positions
                 else [[("class:empty", "  " + self.empty_message())]])
        return lines + [[] for _ in range(height - len(lines))]

    def body(self, width: int, height: int) -> Fragments:
        """`body_lines` as one fragment list, lines ended by newlines."""
        fragments: Fragments = []
        for line in self.body_lines(width, height):
            fragments += [*line, ("", "\n")]
        return fragments

    def detail(self, width: int) -> Fragments:
        """About the selected row: the matching message text when it was found there, else its file path."""
        model = self.model
        index = model.selected_row_index()
        if index is None:
            return []
        snippet = model.snippet(index)
        marks = terminal_text(marks_summary(model.marks.get(model.rows[index].session_id)))
        if snippet is not None:
            runs = fit_runs([("in messages: ", False), *marked_snippet_runs(snippet)], max(width - 1, 1))
        else:
            # The marks first (a long path would push them off), then the path.
            room = max(width - 1 - (display_width(marks) + 2 if marks else 0), 1)
            runs = highlighted(short_path(model.rows[index].path, room), model.needle, room)
            if marks:
                runs = [(cut(marks, max(width - 1, 1)), False), ("  ", False), *runs]
        return [("class:match" if marked else "class:dim", text) for text, marked in runs]

    def help_line(self, width: int) -> Fragments:
        """The keys, or a question being asked, or the latest notice (what an action did, or a failure)."""
        if self.question:
            return [("class:question", self.question[:width])]
        if self.notice:
            return [("class:notice", self.notice[:width])]
        text = ("↑↓ move  Enter open  Tab scope  Ctrl+/ preview  Ctrl+R rename  Ctrl+D trash  "
                "Alt+Enter open, a fork keeps marks  Ctrl+O cost order  Alt+P pin  Alt+S star  Alt+T tag  Alt+N note  "
                "Esc cancel  PgUp/PgDn page  Ctrl+Home/End first/last")
        return [("class:dim", text[:width])]



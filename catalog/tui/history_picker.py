"""`sessdex history` on a terminal: an interactive search of the prompt history, as atuin's Ctrl+R.

A query line over the prompts, newest first, drawn inline below the shell's prompt. Two filter modes (every
directory, or only prompts sent from this one: Ctrl+R switches) and two ways of matching (fuzzy, whose
space-separated terms match in any order with the matched characters highlighted, or full-text through the
history's FTS index, each word a phrase: Ctrl+S switches). Enter or Tab chooses: the prompt is returned for the
command to print (a shell binding puts it on the command line); Esc, Ctrl+C or Ctrl+G cancels.

Each prompt repeated in the history shows once, at its newest use. Prompts are session text: each row is one line
made terminal-safe (`terminal_text`) and cut to the width (`width.cut`).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Literal

from prompt_toolkit.application import Application
from prompt_toolkit.buffer import Buffer
from prompt_toolkit.document import Document
from prompt_toolkit.formatted_text import StyleAndTextTuples
from prompt_toolkit.key_binding import KeyBindings, KeyPressEvent, merge_key_bindings
from prompt_toolkit.key_binding.bindings.basic import load_basic_bindings
from prompt_toolkit.key_binding.bindings.emacs import load_emacs_bindings
from prompt_toolkit.layout import HSplit, Layout, Window
from prompt_toolkit.layout.controls import BufferControl, FormattedTextControl
from prompt_toolkit.layout.processors import BeforeInput
from prompt_toolkit.styles import Style

from sessdex.catalog.history.search import HistoryEntry
from sessdex.catalog.tui.fuzzy import fold, needle_match, normalize_query
from sessdex.catalog.tui.terminal_text import terminal_text
from sessdex.catalog.tui.width import cut, display_width

FilterMode = Literal["all", "directory"]
SearchMode = Literal["fuzzy", "full-text"]
# The rows shown at most (inline, below the prompt, as atuin and fzf --height do), and the most prompts loaded.
LIST_HEIGHT = 12
ESCAPE_TIMEOUT_S = 0.05
_ONE_LINE = str.maketrans({char: " " for char in "\t\n\v\f\r\x85\u2028\u2029"})
STYLE = Style.from_dict({"prompt": "bold", "dim": "#888888", "match": "bold underline", "selected": "reverse",
                         "mode": "bold"})


def one_line(prompt: str) -> str:
    """A prompt as a row shows it: line breaks and tabs as spaces (one for one), then terminal-safe."""
    return terminal_text(prompt.translate(_ONE_LINE))


def distinct_newest(entries: Sequence[HistoryEntry]) -> list[HistoryEntry]:
    """Each prompt once, at its newest use (`entries` newest first)."""
    seen: set[str] = set()
    kept = []
    for entry in entries:
        if entry.prompt not in seen:
            seen.add(entry.prompt)
            kept.append(entry)
    return kept


def age(created_at: int, now_ms: float) -> str:
    """How long ago a prompt was sent (`created_at`: epoch seconds), in the unit that fits: 45s, 12m, 3h, 9d, 5w,
    2y."""
    seconds = max(0, now_ms / 1000 - created_at)
    for unit, size in (("y", 365 * 86400), ("w", 7 * 86400), ("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= size:
            return f"{int(seconds // size)}{unit}"
    return f"{int(seconds)}s"


@dataclass(frozen=True, slots=True)
class HistoryRow:
    """A row of the list: the entry, its one-line text, and the positions of that text to highlight."""

    entry: HistoryEntry
    text: str
    positions: tuple[int, ...] = ()


# Full-text search: (query, limit, directory or None) -> the matching prompts, newest first.
FullTextSearch = Callable[[str, int, "str | None"], list[HistoryEntry]]


class HistoryModel:
    """What the list shows: the loaded prompts filtered by mode and query, and the selection."""

    def __init__(self, entries: Sequence[HistoryEntry], cwd: str, full_text: FullTextSearch, *,
                 filter_mode: FilterMode = "all", search_mode: SearchMode = "fuzzy", limit: int = 1000) -> None:
        self.entries = distinct_newest(entries)
        self.texts = [one_line(entry.prompt) for entry in self.entries]
        self.folded = [fold(text) for text in self.texts]
        self.cwd = cwd
        self.full_text = full_text
        self.filter_mode: FilterMode = filter_mode
        self.search_mode: SearchMode = search_mode
        self.limit = limit
        self.query = ""
        self.rows: list[HistoryRow] = []
        self.selected = 0
        self.refresh()

    def set_query(self, query: str) -> None:
        self.query = query
        self.refresh()

    def toggle_filter(self) -> None:
        self.filter_mode = "directory" if self.filter_mode == "all" else "all"
        self.refresh()

    def toggle_search(self) -> None:
        self.search_mode = "full-text" if self.search_mode == "fuzzy" else "fuzzy"
        self.refresh()

    def move(self, step: int) -> None:
        if self.rows:
            self.selected = max(0, min(len(self.rows) - 1, self.selected + step))

    def chosen(self) -> HistoryEntry | None:
        return self.rows[self.selected].entry if self.rows else None

    def _in_scope(self, entry: HistoryEntry) -> bool:
        return self.filter_mode == "all" or entry.cwd == self.cwd

    def refresh(self) -> None:
        """Recompute the rows: fuzzy ranks by score then recency; full-text keeps the index's newest-first order."""
        self.selected = 0
        needle = normalize_query(self.query)
        if not needle:
            self.rows = [HistoryRow(entry, text) for entry, text in zip(self.entries, self.texts)
                         if self._in_scope(entry)][:self.limit]
        elif self.search_mode == "fuzzy":
            scored = []
            for number, (entry, text, folded) in enumerate(zip(self.entries, self.texts, self.folded)):
                if not self._in_scope(entry):
                    continue
                match = needle_match(needle, text, folded)
                if match is not None:
                    scored.append((-match.score, number, HistoryRow(entry, text, match.positions)))
            scored.sort(key=lambda item: (item[0], item[1]))
            self.rows = [row for _score, _number, row in scored[:self.limit]]
        else:
            directory = self.cwd if self.filter_mode == "directory" else None
            hits = distinct_newest(self.full_text(self.query, self.limit, directory))
            self.rows = []
            for entry in hits:
                text = one_line(entry.prompt)
                terms = [term for term in needle.split(" ") if term]
                folded = fold(text)
                positions = tuple(sorted({index for term in terms for start in _starts(folded, term)
                                          for index in range(start, start + len(term))}))
                self.rows.append(HistoryRow(entry, text, positions))


def _starts(folded: str, term: str) -> list[int]:
    """Where `term` occurs in `folded`."""
    starts, index = [], folded.find(term)
    while index >= 0:
        starts.append(index)
        index = folded.find(term, index + 1)
    return starts


def row_fragments(row: HistoryRow, width: int, now_ms: float, selected: bool) -> StyleAndTextTuples:
    """One list line: the age, the prompt with its matches highlighted, cut to `width` columns."""
    head = f"{age(row.entry.created_at, now_ms):>4}  "
    base = "class:selected " if selected else ""
    fragments: StyleAndTextTuples = [(base + "class:dim", head)]
    room = max(0, width - display_width(head))
    shown = cut(row.text, room)
    marked = set(row.positions)
    for index, char in enumerate(shown):
        if index >= len(row.text) or row.text[index] != char:
            fragments.append((base, shown[index:]))  # the ellipsis of a cut text
            break
        fragments.append((base + ("class:match" if index in marked else ""), char))
    used = display_width(head) + display_width(shown)
    if selected and used < width:
        fragments.append((base, " " * (width - used)))
    return fragments


class HistoryPicker:
    """The application: a query line, the list, a status line with the modes and keys."""

    def __init__(self, model: HistoryModel, *, query: str = "", input: object | None = None,
                 output: object | None = None, now_ms: float | None = None) -> None:
        self.model = model
        self.now_ms = time.time() * 1000 if now_ms is None else now_ms
        query = "".join(char if char.isprintable() else " " for char in query)
        self.model.set_query(query)
        self.query_buffer = Buffer(multiline=False, document=Document(query, len(query)),
                                   on_text_changed=lambda buffer: self.model.set_query(buffer.text))
        list_window = Window(FormattedTextControl(self._list_fragments), height=self._list_height)
        status = Window(FormattedTextControl(self._status_fragments), height=1)
        query_line = Window(BufferControl(self.query_buffer, input_processors=[BeforeInput("history> ",
                                                                                            style="class:prompt")]),
                            height=1)
        self.app: Application[HistoryEntry | None] = Application(
            layout=Layout(HSplit([query_line, list_window, status]), focused_element=self.query_buffer),
            key_bindings=merge_key_bindings([load_basic_bindings(), load_emacs_bindings(), self._key_bindings()]),
            style=STYLE, full_screen=False, erase_when_done=True, mouse_support=False,
            input=input, output=output)  # type: ignore[arg-type]
        self.app.ttimeoutlen = self.app.timeoutlen = ESCAPE_TIMEOUT_S

    def _width(self) -> int:
        return self.app.output.get_size().columns

    def _list_height(self) -> int:
        return max(1, min(LIST_HEIGHT, self.app.output.get_size().rows - 2))

    def _list_fragments(self) -> StyleAndTextTuples:
        height, width = self._list_height(), self._width()
        rows = self.model.rows
        top = max(0, self.model.selected - height + 1)
        fragments: StyleAndTextTuples = []
        for number in range(top, min(len(rows), top + height)):
            if fragments:
                fragments.append(("", "\n"))
            fragments += row_fragments(rows[number], width, self.now_ms, number == self.model.selected)
        if not rows:
            fragments.append(("class:dim", "  no matching prompt"))
        return fragments

    def _status_fragments(self) -> StyleAndTextTuples:
        scope = "this directory" if self.model.filter_mode == "directory" else "all directories"
        text = (f" {len(self.model.rows)} · ", f"{scope} · {self.model.search_mode}",
                " · Ctrl+R directory/all · Ctrl+S fuzzy/full-text · Enter insert · Esc cancel")
        line = cut("".join(text), self._width())
        return [("class:dim", line[:len(text[0])]), ("class:mode", line[len(text[0]):len(text[0]) + len(text[1])]),
                ("class:dim", line[len(text[0]) + len(text[1]):])]

    def _key_bindings(self) -> KeyBindings:
        bindings = KeyBindings()

        @bindings.add("enter")
        @bindings.add("tab")
        def _choose(event: KeyPressEvent) -> None:
            event.app.exit(result=self.model.chosen())

        @bindings.add("escape", eager=True)
        @bindings.add("c-c")
        @bindings.add("c-g")
        def _cancel(event: KeyPressEvent) -> None:
            event.app.exit(result=None)

        @bindings.add("up")
        @bindings.add("c-p")
        def _up(_event: KeyPressEvent) -> None:
            self.model.move(-1)

        @bindings.add("down")
        @bindings.add("c-n")
        def _down(_event: KeyPressEvent) -> None:
            self.model.move(1)

        @bindings.add("pageup")
        def _page_up(_event: KeyPressEvent) -> None:
            self.model.move(-self._list_height())

        @bindings.add("pagedown")
        def _page_down(_event: KeyPressEvent) -> None:
            self.model.move(self._list_height())

        @bindings.add("c-r")
        def _filter(_event: KeyPressEvent) -> None:
            self.model.toggle_filter()

        @bindings.add("c-s")
        def _search(_event: KeyPressEvent) -> None:
            self.model.toggle_search()

        return bindings

    def run(self) -> HistoryEntry | None:
        """Run until a choice (the entry) or a cancel (None)."""
        return self.app.run()

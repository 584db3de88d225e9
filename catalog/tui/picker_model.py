"""The session picker's state, without any terminal: rows per scope, the query, the ranked results, the selection.

Every key of the picker maps to one method here, so that behaviour is testable without a screen; the
prompt_toolkit layer (`sessdex.catalog.tui.picker`) only draws this state and schedules the background work it asks
for (`advance_search`, content matches, loading a scope).
"""

from __future__ import annotations

from itertools import filterfalse

from sessdex.catalog.queries.source import should_search_content
from sessdex.catalog.tui.fuzzy import normalize_query
from sessdex.catalog.tui.picker_marks import MARK_SCOPES, MarkTerms, scope_keeps, split_mark_terms
from sessdex.catalog.tui.picker_search import Search, SearchIndex, TermsSearch
from sessdex.core.discovery import MIN_ID_PREFIX, id_prefix_length
from sessdex.core.marks import pinned_first

TYPE_CHECKING = False  # typing stays off the first frame's imports
if TYPE_CHECKING:
    from collections.abc import Callable

    from sessdex.catalog.queries.source import PickerRow, Scope
    from sessdex.core.marks import Marks

# At most this many rows get the slow weak-fuzzy test before a keystroke paints; the rest run in the background.
SYNC_FILL_ROWS = 2_000


class _ScopeData:
    """One scope's rows and what is derived from them. `total` exceeds len(rows) only for a first screen: the
    first rows of a longer list (see PickerModel.first_screen)."""

    __slots__ = ("rows", "index", "position_of_path", "id_length", "total")

    def __init__(self, rows: list[PickerRow], index: SearchIndex, position_of_path: dict[str, int], id_length: int,
                 total: int) -> None:
        self.rows = rows
        self.index = index
        self.position_of_path = position_of_path
        self.id_length = id_length
        self.total = total


class PickerModel:
    """Query, scope, results and selection of one picker run."""

    def __init__(self, scope: Scope, rows: list[PickerRow] | None = None, *, sessions_root: str | None = None,
                 page_size: int = 10, scopes: tuple[Scope, ...] = ("project", "all")) -> None:
        self.scope: Scope = scope
        self.scopes = scopes  # what Tab cycles through, in order
        self.query = ""
        self._text_query = ""  # the query without its mark terms (is:pinned, tag:bug): what is matched as text
        self._mark_terms: MarkTerms | None = None
        self.marks: dict[str, Marks] = {}  # session id -> its marks (pins, stars, tags, notes)
        self._allowed: set[int] | None = None  # the rows the mark terms keep, once worked out (None: not yet)
        self.page_size = page_size
        self.sessions_root = sessions_root
        self.selected = 0
        self.top = 0
        self._scopes: dict[Scope, _ScopeData] = {}
        self._newest_first: dict[Scope, list[PickerRow]] = {}  # each scope's rows as the source gave them
        self.by_cost = False  # rows ordered by cost, most expensive first, instead of newest first
        self._search: Search | TermsSearch | None = None
        self._earlier: dict[str, Search | TermsSearch] = {}  # needle -> its search, for the prefixes of the current needle
        self._content: dict[str, str] = {}
        self._content_key: tuple[str, Scope] | None = None
        # results = ranks 0-3 (appended as the search makes them final), then content hits (once ranks 0-3 are
        # complete), then the rank-4 rows (appended as the search finds them); started again when the query, scope
        # or content changes.
        self._results: list[int] = []
        self._results_valid = False
        self._head_consumed = 0
        self._content_listed: set[int] | None = None  # the content hits listed after ranks 0-3, once they are
        self._weak_consumed = 0
        if rows is not None:
            self.set_rows(scope, rows)

    # -- rows per scope -------------------------------------------------------------------------------

    def set_rows(self, scope: Scope, rows: list[PickerRow]) -> None:
        """Install `scope`'s rows (newest first); when it is the current scope, search them again and keep
        the selected session selected if it is still there, else the row that took its place (the next one: after
        a trash, a second Ctrl+D must not reach the newest session)."""
        moved_to = self.selected_row() if scope == self.scope and self.selected else None
        position = self.selected
        self._newest_first[scope] = rows
        if scope in MARK_SCOPES:
            rows = [row for row in rows if scope_keeps(scope, self.marks.get(row.session_id))]
        if self.by_cost:
            rows = sorted(rows, key=lambda row: -row.cost)  # stable: equal costs stay newest first
        else:
            rows = pinned_first(rows, self.marks, _session_id)
        data = _ScopeData(rows, SearchIndex(rows, self.sessions_root),
                          {row.path: position for position, row in enumerate(rows)},
                          id_prefix_length([row.session_id for row in rows]), len(rows))
        self._scopes[scope] = data
        if scope == self.scope:
            self._restart()
            if moved_to is not None:
                self._keep_selected(data.position_of_path.get(moved_to.path), position)

    @classmethod
    def first_screen(cls, scope: Scope, rows: list[PickerRow], *, total: int, id_length: int,
                     scopes: tuple[Scope, ...], page_size: int) -> PickerModel:
        """The model of the picker's first frame: the first `rows` of a scope holding `total` rows, whose ids need
        `id_length` characters to tell apart, before any query (the full model comes with the application)."""
        model = cls(scope, scopes=scopes, page_size=page_size)
        model._scopes[scope] = _ScopeData(rows, SearchIndex(rows), {}, id_length, total)
        model._restart()
        return model

    def set_marks(self, marks: dict[str, Marks]) -> None:
        """Install every session's marks: pinned rows go first, the mark scopes and terms follow them; the selected
        session stays selected (a pin moves it to the top)."""
        before = self.marks
        self.marks = marks
        pins_changed = ({key for key, value in before.items() if value.pinned}
                        != {key for key, value in marks.items() if value.pinned})
        selected = self.selected_row() if self.selected_row_index() is not None else None
        for scope, rows in list(self._newest_first.items()):
            if pins_changed or scope in MARK_SCOPES:
                self.set_rows(scope, rows)
        self._allowed = None
        self._results_valid = False
        if selected is not None:
            data = self._scopes.get(self.scope)
            row = data.position_of_path.get(selected.path) if data is not None else None
            self._keep_selected(row, self.selected)

    @property
    def row_count(self) -> int:
        """How many rows the current scope has."""
        data = self._scopes.get(self.scope)
        return data.total if data is not None else 0

    @property
    def result_count(self) -> int:
        """How many rows the current results list (so far)."""
        data = self._scopes.get(self.scope)
        if data is not None and data.total > len(data.rows) and not self.needle and self._mark_terms is None:
            return data.total  # a first screen: an empty query lists every row
        return len(self.results)

    @property
    def loading(self) -> bool:
        """True while the current scope's rows are not loaded yet."""
        return self.scope not in self._scopes

    @property
    def rows(self) -> list[PickerRow]:
        """Every row of the current scope ([] while loading)."""
        data = self._scopes.get(self.scope)
        return data.rows if data is not None else []

    @property
    def id_length(self) -> int:
        """How many characters of an id tell the current scope's sessions apart."""
        data = self._scopes.get(self.scope)
        return data.id_length if data is not None else MIN_ID_PREFIX

    def build_index(self) -> None:
        """Prepare the current scope's search strings now (done when idle, so the first keystroke is fast)."""
        data = self._scopes.get(self.scope)
        if data is not None:
            data.index.build()

    # -- query and scope --------------------------------------------------------------------------------

    @property
    def needle(self) -> str:
        """The query as matched as text (folded, whitespace collapsed; without its mark terms)."""
        return normalize_query(self._text_query)

    def set_query(self, query: str) -> None:
        """Replace the query, rank again (narrowing from the previous search when it extends), select the top."""
        if query == self.query:
            return
        self.query = query
        self._text_query, self._mark_terms = split_mark_terms(query)
        self._allowed = None
        query = self._text_query
        data = self._scopes.get(self.scope)
        if data is not None:
            needle = normalize_query(query)
            # The searches of the query's prefixes are kept: erasing back to one of them costs nothing.
            self._earlier = {key: search for key, search in self._earlier.items()
                             if needle.startswith(key) and search.index is data.index}
            earlier = self._earlier.get(needle)
            self._search = earlier if earlier is not None else data.index.search(query, self._search)
            self._earlier[needle] = self._search
            self._search.fill(self._wanted_rows(), max_rows=SYNC_FILL_ROWS)
        self._after_change()

    def replace_rows(self, change: Callable[[list[PickerRow]], list[PickerRow]]) -> None:
        """Apply `change` to every loaded scope's rows (a rename or a trashed session), keeping the selection."""
        for scope, data in list(self._scopes.items()):
            self.set_rows(scope, change(data.rows))

    def toggle_cost_order(self) -> None:
        """Order rows by cost (most expensive first), or back to newest first (`by_cost` tells which)."""
        self.by_cost = not self.by_cost
        for scope, rows in list(self._newest_first.items()):
            self.set_rows(scope, rows)

    def toggle_scope(self) -> Scope:
        """Switch to the next scope (this project, this repository, all projects); return it (its rows may still
        be loading)."""
        position = self.scopes.index(self.scope) if self.scope in self.scopes else -1
        self.scope = self.scopes[(position + 1) % len(self.scopes)]
        self._restart()
        return self.scope

    def _restart(self) -> None:
        data = self._scopes.get(self.scope)
        self._allowed = None
        self._search = data.index.search(self._text_query) if data is not None else None
        if self._search is not None:
            self._search.fill(self._wanted_rows(), max_rows=SYNC_FILL_ROWS)
        self._after_change()

    def _after_change(self) -> None:
        self._results_valid = False
        self.selected = 0
        self.top = 0

    def _wanted_rows(self) -> int:
        """Rows worth ranking before painting: the first page and the next (PageDown stays instant)."""
        return 2 * self.page_size + 1

    # -- background work the view schedules ----------------------------------------------------------------

    def terms_to_warm(self) -> list[str]:
        """The query's terms whose rows over the whole scope are not known yet (see `warm_term`)."""
        data = self._scopes.get(self.scope)
        if data is None or not self.needle:
            return []
        return [term for term in dict.fromkeys(self.needle.split(" ")) if not data.index.knows_term(term)]

    def warm_term(self, term: str, max_rows: int) -> bool:
        """Look for `term` in `max_rows` more rows of the scope (idle time), for the query it will be an earlier term
        of; True once its rows over the whole scope are known."""
        data = self._scopes.get(self.scope)
        return data is None or data.index.warm_term(term, max_rows)

    @property
    def search_complete(self) -> bool:
        """True when every row has been tested against the query."""
        return self._search is None or self._search.complete

    def advance_search(self, max_rows: int) -> bool:
        """Test up to `max_rows` more rows; return True when the search is complete. Keeps the selected row."""
        if self._search is None or self._search.complete:
            return True
        return self._search.advance(max_rows)

    @property
    def content_key(self) -> tuple[str, Scope] | None:
        """(needle, scope) a content search should run for now, None when the query is too short for one."""
        needle = self.needle
        if self.loading or not should_search_content(needle):
            return None
        return (needle, self.scope)

    @property
    def content_pending(self) -> bool:
        """True while the content matches for the current query have not arrived."""
        key = self.content_key
        return key is not None and key != self._content_key

    def set_content_matches(self, key: tuple[str, Scope], matches: dict[str, str]) -> None:
        """Merge the source's content matches for `key`; ignored when the query or scope moved on."""
        if key != self.content_key:
            return
        moved_to = self.selected_row_index() if self.selected else None
        self._content_key = key
        self._content = matches
        self._results_valid = False
        if moved_to is not None:
            self._keep_selected(moved_to, self.selected)

    def _keep_selected(self, row: int | None, position: int) -> None:
        """After the results changed under a selection the user moved: select `row` again, if still listed, else
        the result at `position` (the last one if fewer are left).

        (An untouched selection stays on the top row, which is the best match.)"""
        if position >= len(self.results) - 1:
            self._ensure_ranked(position)
        results = self.results
        self.selected = results.index(row) if row in results else min(position, max(len(results) - 1, 0))

    # -- results ------------------------------------------------------------------------------------------

    @property
    def results(self) -> list[int]:
        """Row indices shown, best first: id/title/substring matches (ranks 0-3), then sessions whose messages
        match (content search), then the weak fuzzy matches (rank 4). Grows while the search completes: rows are
        only ever appended (what is shown does not move)."""
        search = self._search
        if search is None:
            return []
        if not self._results_valid:
            self._results = []
            self._head_consumed = self._weak_consumed = 0
            self._content_listed = None
            self._results_valid = True
        results = self._results
        allowed = self._allowed_rows()
        head = search.head
        if self._head_consumed < len(head):
            fresh = head[self._head_consumed:] if self._head_consumed else head
            results += fresh if allowed is None else filter(allowed.__contains__, fresh)
            self._head_consumed = len(head)
        if self._content_listed is None:
            if not search.head_complete:
                return results
            # Content hits not already in ranks 0-3, in the source's order (at most CONTENT_MATCH_LIMIT rows).
            content = [row for row in dict.fromkeys(self._content_rows()) if search.rank_of(row) in (None, 4)
                       and (allowed is None or row in allowed)]
            results += content
            self._content_listed = set(content)
        weak = search.weak_fuzzy()
        if self._weak_consumed < len(weak):
            fresh = weak[self._weak_consumed:]
            if allowed is not None:
                fresh = [row for row in fresh if row in allowed]
            results += filterfalse(self._content_listed.__contains__, fresh) if self._content_listed else fresh
            self._weak_consumed = len(weak)
        return results

    def _allowed_rows(self) -> set[int] | None:
        """The current scope's rows the query's mark terms keep; None when the query has none."""
        terms = self._mark_terms
        if terms is None:
            return None
        if self._allowed is None:
            marks = self.marks
            self._allowed = {position for position, row in enumerate(self.rows)
                             if terms.matches(marks.get(row.session_id))}
        return self._allowed

    def _content_rows(self) -> list[int]:
        data = self._scopes.get(self.scope)
        if data is None or self._content_key != self.content_key:
            return []
        return [data.position_of_path[path] for path in self._content if path in data.position_of_path]

    def snippet(self, row: int) -> str | None:
        """The content-search snippet of a row for the current query, if the source returned one."""
        if self._content_key != self.content_key:
            return None
        return self._content.get(self.rows[row].path)

    def selected_row_index(self) -> int | None:
        """The selected row's index in `rows`, None when nothing is shown."""
        results = self.results
        return results[self.selected] if 0 <= self.selected < len(results) else None

    def selected_row(self) -> PickerRow | None:
        """The selected session, None when the list is empty."""
        index = self.selected_row_index()
        return self.rows[index] if index is not None else None

    # -- navigation ------------------------------------------------------------------------------------------

    def _ensure_ranked(self, position: int) -> None:
        """Rank (synchronously) far enough that result `position` and a page after it are known, if they exist."""
        if self._search is not None and not self._search.complete and position >= len(self.results) - 1:
            self._search.fill(position + self.page_size + 1, max_rows=len(self.rows))

    def move(self, delta: int) -> None:
        """Move the selection by `delta` rows, stopping at the first and last."""
        self._ensure_ranked(self.selected + delta)
        self.selected = max(0, min(self.selected + delta, len(self.results) - 1))

    def page(self, direction: int) -> None:
        """Move the selection one page down (1) or up (-1)."""
        self.move(direction * max(self.page_size, 1))

    def first(self) -> None:
        """Select the first row."""
        self.selected = 0

    def last(self) -> None:
        """Select the last row (completing the search first, so that it really is the last)."""
        while not self.advance_search(len(self.rows)):
            pass
        self.selected = max(len(self.results) - 1, 0)

    def window(self, height: int) -> list[int]:
        """The result positions shown in a list `height` rows tall, scrolled so the selection is visible."""
        self.page_size = max(height, 1)
        if self.selected < self.top:
            self.top = self.selected
        elif self.selected >= self.top + height:
            self.top = self.selected - height + 1
        self.top = max(0, min(self.top, max(len(self.results) - height, 0)))
        return list(range(self.top, min(self.top + height, len(self.results))))


def _session_id(row: PickerRow) -> str:
    return row.session_id

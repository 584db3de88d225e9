"""Ranking the picker's rows for a typed query, fast enough to redo on every keystroke over 10,000 sessions.

Each row is searched through two folded strings: the strong fields (id, title) and the weak ones (the
start of the first message, cwd, and the path below the sessions root). Message text is not here: the
source's content search (FTS5 in the catalog) covers it, and the picker merges its hits (see below).

Ranks, best first, each newest first:
  0. the query as a substring of id or title, at a word start (an id prefix is one; a query that starts
     with punctuation counts as at a word start wherever it occurs)
  1. ... of id or title, elsewhere
  2. the query as a substring of a weak field
  3. a fuzzy match (the query's characters in order, within one field) in id or title
  4. a fuzzy match in a weak field
The picker lists content-search hits between ranks 3 and 4 (rank 4 is the noisiest: a short query's letters
are found, scattered, in most long texts).

A query of several space-separated terms is an unordered AND, as in fzf (`game docker event` finds what
`docker event game` finds): each term is ranked on its own as above, in whichever field it matches, and a row
takes the worst of its terms' ranks (`TermsSearch`).

A keystroke only pays for what its first screen needs. A search is done in three passes, each of C-level
tests (map() over the strings: no Python step per row) on chunks of rows taken in order, newest first:
  - on creation, the id/title substring test (short strings) gives ranks 0 and 1 whole;
  - the middle pass sorts every other candidate into rank 2 (weak substring), rank 3 (id/title fuzzy) or
    pending; rank-2 rows are final as soon as they are found (they come in order), rank 3 once the pass ends;
  - the weak pass tests the pending rows for rank 4 (a regex over the long weak strings: the costly one).
`fill` runs them until a screenful of final rows is known, and the picker runs the rest between keystrokes.
Typing narrows: a query that extends the previous one only tests that query's possible matches, and each
row only for what it can still be (a row without the shorter query in its weak string has not the longer one
either, so it skips that test).
"""

from __future__ import annotations

import re
from itertools import compress, filterfalse, repeat
from operator import contains, not_

from sessdex.catalog.tui.fuzzy import fold, normalize_query

TYPE_CHECKING = False  # typing stays off the first frame's imports
if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Sequence

    from sessdex.catalog.queries.source import PickerRow

FIELD_SEPARATOR = "\x1f"
FILL_STEP_ROWS = 64  # rows per step of a synchronous weak pass (`fill`)
MIDDLE_FIRST_STEP_ROWS = 128  # a synchronous middle pass starts with this many rows and doubles each step
MIDDLE_MAX_STEP_ROWS = 4_096

WORD_START_MARK = "\x01"
TERM_CACHE_SIZE = 64  # terms whose substring rows a SearchIndex keeps
# A keystroke gives at most this many rows the several-term fuzzy tests (a Python step per row, ~10 us each); the
# rest run between keystrokes, the page filling in as they are found.
TERMS_SYNC_FUZZY_ROWS = 384

_FLATTEN = re.compile(r"[\x00-\x1f\x7f]+")
_WORD_START = re.compile(r"(?<![^\W_])(?=[^\W_])")  # before a letter or digit that follows anything else


def _flat(text: str | None) -> str:
    """`text` on one line, with no field separators (control characters become one space)."""
    if not text:
        return ""
    return text if text.isprintable() else _FLATTEN.sub(" ", text)


def mark_word_starts(text: str) -> str:
    """`text` with WORD_START_MARK before every word start: marked needle in marked text = a word-start hit."""
    return _WORD_START.sub(WORD_START_MARK, text)


def fuzzy_pattern(needle: str) -> re.Pattern[str]:
    """A regex finding the characters of `needle` (spaces dropped) in order inside one field.

    Possessive gaps (`[^c...]*+`) make each attempt linear: the engine never backtracks into a gap.
    """
    chars = needle.replace(" ", "")
    parts = []
    for position, char in enumerate(chars):
        if position:
            parts.append(f"[^{re.escape(char)}\n{FIELD_SEPARATOR}]*+")
        parts.append(re.escape(char))
    return re.compile("".join(parts))


def _merged(*runs: Iterable[int]) -> list[int]:
    """Ascending lists of distinct rows merged into one ascending list (sorting runs is a merge for Timsort)."""
    rows: list[int] = []
    for run in runs:
        rows.extend(run)
    rows.sort()
    return rows


def _intersection(sets: Sequence[set[int]]) -> set[int]:
    """The rows in every one of `sets`, going through the smallest."""
    smallest = min(sets, key=len)
    return smallest.intersection(*(found for found in sets if found is not smallest))


def _rows_holding(previous: Search | TermsSearch, terms: list[str]) -> list[int] | None:
    """Ascending rows outside which no row holds each of `terms` as a substring, as `previous` (a search whose query
    the query of `terms` extends) knows them: the rows where each of its own terms is a substring, for its last term
    can only be a substring where it is. None when `previous` cannot tell yet (its id/title pass is not done)."""
    if isinstance(previous, Search):
        return previous.substring_rows()
    known = previous.terms
    if terms[:len(known) - 1] == known[:-1] and terms[len(known) - 1:len(known)] and \
            terms[len(known) - 1].startswith(known[-1]):
        return sorted(previous._in_any)
    return None


class SearchIndex:
    """The folded search strings of a list of rows (built on first use: an empty query never needs them)."""

    def __init__(self, rows: Sequence[PickerRow], sessions_root: str | None = None) -> None:
        self.rows = rows
        self._root_prefix = sessions_root.rstrip("/") + "/" if sessions_root else None
        self._strong: list[str] | None = None
        self._weak: list[str] = []
        self._marked_strong: list[str] = []
        self._term_rows: dict[str, tuple[set[int], set[int], set[int]]] = {}
        self._warming: dict[str, tuple[int, tuple[set[int], set[int], set[int]]]] = {}  # term -> (next row, found)

    def _relative_path(self, path: str) -> str:
        if self._root_prefix is not None and path.startswith(self._root_prefix):
            return path[len(self._root_prefix):]
        return path

    def build(self) -> None:
        """Fold every row's strong and weak strings (tens of ms for 10,000 rows)."""
        if self._strong is not None:
            return
        separator = FIELD_SEPARATOR
        strong = [fold(_flat(row.session_id) + separator + _flat(row.title)) for row in self.rows]
        self._weak = [fold(_flat(row.first_message) + separator + _flat(row.cwd)
                           + separator + _flat(self._relative_path(row.path))) for row in self.rows]
        self._marked_strong = mark_word_starts("\n".join(strong)).split("\n")
        self._strong = strong

    @property
    def strong(self) -> list[str]:
        """Each row's folded id and title, between them FIELD_SEPARATOR."""
        self.build()
        assert self._strong is not None
        return self._strong

    @property
    def weak(self) -> list[str]:
        """Each row's folded first message, cwd and path below the sessions root, FIELD_SEPARATOR between them."""
        self.build()
        return self._weak

    @property
    def marked_strong(self) -> list[str]:
        """`strong` with WORD_START_MARK before each word start."""
        self.build()
        return self._marked_strong

    def knows_term(self, term: str) -> bool:
        """True when `term_rows(term)` over every row is kept (answered without a search)."""
        return term in self._term_rows

    def term_rows(self, term: str, among: Sequence[int] | None = None) -> tuple[set[int], set[int], set[int]]:
        """The rows where `term` is a substring at a word start of id/title, anywhere in id/title, and in any field.

        Over every row, kept for the recent terms (the earlier terms of a query stay the same while its last one
        is typed); or only `among` those rows, not kept (the term being typed: its candidates are few)."""
        found = self._term_rows.get(term)
        if found is not None:
            return found
        if among is None:
            found = self._found(term, range(len(self.rows)), self.strong, self.marked_strong, self.weak)
            self._keep(term, found)
            return found
        return self._found(term, among, list(map(self.strong.__getitem__, among)),
                           list(map(self.marked_strong.__getitem__, among)), list(map(self.weak.__getitem__, among)))

    def warm_term(self, term: str, max_rows: int) -> bool:
        """Look for `term` in the next `max_rows` rows not looked at yet (idle time, in steps, so that a key typed
        meanwhile waits for one step at most); True once its rows over every row are kept (`term_rows`)."""
        if term in self._term_rows:
            return True
        start, found = self._warming.pop(term, (0, (set(), set(), set())))
        stop = min(start + max_rows, len(self.rows))
        for kept, more in zip(found, self._found(term, range(start, stop), self.strong[start:stop],
                                                 self.marked_strong[start:stop], self.weak[start:stop])):
            kept.update(more)
        if stop < len(self.rows):
            self._warming = {term: (stop, found)}  # only the term being warmed: a step for another one drops it
            return False
        self._keep(term, found)
        return True

    @staticmethod
    def _found(term: str, rows: Sequence[int], strong: list[str], marked: list[str],
               weak: list[str]) -> tuple[set[int], set[int], set[int]]:
        """`term_rows` of `rows`, whose strong, marked strong and weak strings are these."""
        in_strong = set(compress(rows, map(contains, strong, repeat(term))))
        at_word_start = set(compress(rows, map(contains, marked, repeat(mark_word_starts(term)))))
        return at_word_start, in_strong, in_strong | set(compress(rows, map(contains, weak, repeat(term))))

    def _keep(self, term: str, found: tuple[set[int], set[int], set[int]]) -> None:
        if len(self._term_rows) >= TERM_CACHE_SIZE:
            self._term_rows.clear()
        self._term_rows[term] = found

    def search(self, query: str, previous: Search | TermsSearch | None = None) -> Search | TermsSearch:
        """Rank the rows for `query`; narrow from `previous` (a search on this index) when `query` extends its query."""
        needle = normalize_query(query)
        extends = (previous is not None and previous.index is self and bool(previous.needle)
                   and needle.startswith(previous.needle))
        if " " in needle:
            return TermsSearch(self, needle, previous if extends else None)
        if extends and isinstance(previous, Search):
            return Search(self, needle, previous)
        return Search(self, needle)


class Search:
    """The ranked matches of one query, completed in passes (see the module docstring) by `advance` and `fill`."""

    def __init__(self, index: SearchIndex, needle: str, previous: Search | None = None) -> None:
        self.index = index
        self.needle = needle
        count = len(index.rows)
        self._head: list[int] = []  # ranks 0-3 as far as final, best first (only ever appended to)
        self._rank2: list[int] = []
        self._rank3: list[int] = []  # found so far (from both middle groups), not in order
        self._pending: list[int] = []  # neither rank 0-3: found so far, then (middle pass done) every one, in order
        self._weak: list[int] = []  # rank 4 as far as tested
        self._next_weak = 0  # pending rows before this one have had the weak test
        # The middle pass: rows to test for rank 2 then 3, then rows that can only be rank 3 (else pending).
        self._full: Sequence[int] = ()
        self._next_full = 0
        self._fuzzy_only: Sequence[int] = ()
        self._next_fuzzy_only = 0
        self._middle_done = False
        self._ranked: list[int] | None = None
        self._hit_set: set[int] | None = None
        # The search this one narrows, until the middle pass needs its groups (`_group`): a keystroke whose screen
        # is filled by ranks 0-1 leaves that to the background.
        self._previous: Search | None = None
        if not needle:
            self._hits: Sequence[int] = range(count)
            self._head = list(range(count))
            self._middle_done = True
            return
        chars = needle.replace(" ", "")
        self._fuzzy_search: Callable[[str], object] | None = None  # compiled when first needed (`_fuzzy`)
        self._one_char = len(chars) == 1  # an id/title fuzzy match of one character is a substring: ranks 0-1
        self._marked_needle = mark_word_starts(needle)
        strong, marked = index.strong, index.marked_strong
        if previous is None:
            hits = list(compress(range(count), map(contains, strong, repeat(needle))))
            self._full = range(count)
        else:
            hits = list(compress(previous._hits, map(contains, map(strong.__getitem__, previous._hits), repeat(needle))))
            self._previous = previous
        self._hits = hits
        at_word = list(map(contains, map(marked.__getitem__, hits), repeat(self._marked_needle)))
        self._head = list(compress(hits, at_word))
        self._head.extend(compress(hits, map(not_, at_word)))

    @property
    def _fuzzy(self) -> Callable[[str], object]:
        """The fuzzy pattern's search (not compiled for a keystroke whose screen ranks 0-1 fill)."""
        if self._fuzzy_search is None:
            self._fuzzy_search = fuzzy_pattern(self.needle).search
        return self._fuzzy_search

    def _hits_set(self) -> set[int]:
        if self._hit_set is None:
            self._hit_set = set(self._hits)
        return self._hit_set

    def _group(self) -> None:
        """Sort the narrowed search's rows by what each can still be (a longer needle only matches less), from what
        the previous search knows by now: the middle pass's groups and the rows already known to be pending.

        The previous search may not be grouped yet either (keys typed faster than the background ran): the chain
        is grouped oldest first, in a loop (a pasted run of keys can make it thousands of searches long)."""
        chain = []
        search: Search | None = self
        while search is not None and search._previous is not None:
            chain.append(search)
            search = search._previous
        for search in reversed(chain):
            search._group_after_previous()

    def _group_after_previous(self) -> None:
        previous = self._previous
        assert previous is not None and previous._previous is None  # grouped already
        if previous._middle_done:
            self._full = _merged(previous._hits, previous._rank2)
            self._fuzzy_only = sorted(previous._rank3)
            self._pending = _merged(previous._weak, previous._pending[previous._next_weak:])
        else:
            untested = previous._full[previous._next_full:]
            self._full = _merged(previous._hits, previous._rank2,
                                 filterfalse(previous._hits_set().__contains__, untested))
            self._fuzzy_only = _merged(previous._rank3, previous._fuzzy_only[previous._next_fuzzy_only:])
            self._pending = sorted(previous._pending)
        self._previous = None

    # -- the passes --------------------------------------------------------------------------------------

    def _classify(self, rows: Sequence[int]) -> None:
        """Middle pass over `rows` (ascending, of the full group): weak substring -> rank 2, id/title fuzzy -> 3."""
        weak = self.index.weak
        rest = list(filterfalse(self._hits_set().__contains__, rows))
        in_weak = list(map(contains, map(weak.__getitem__, rest), repeat(self.needle)))
        found = list(compress(rest, in_weak))
        self._rank2 += found
        self._head += found
        others = list(compress(rest, map(not_, in_weak)))
        if self._one_char:
            self._pending += others
        else:
            self._fuzzy_split(others)

    def _fuzzy_split(self, rows: list[int]) -> None:
        """Rows that are neither rank 0-2 into rank 3 (an id/title fuzzy match) or pending."""
        fuzzy = list(map(self._fuzzy, map(self.index.strong.__getitem__, rows)))
        self._rank3 += compress(rows, fuzzy)
        self._pending += compress(rows, map(not_, fuzzy))

    def _advance_middle(self, max_rows: int) -> None:
        self._group()
        if self._next_full < len(self._full):
            stop = self._next_full + max_rows
            self._classify(self._full[self._next_full:stop])
            self._next_full = min(stop, len(self._full))
        elif self._next_fuzzy_only < len(self._fuzzy_only):
            stop = self._next_fuzzy_only + max_rows
            self._fuzzy_split(list(self._fuzzy_only[self._next_fuzzy_only:stop]))
            self._next_fuzzy_only = min(stop, len(self._fuzzy_only))
        if self._next_full >= len(self._full) and self._next_fuzzy_only >= len(self._fuzzy_only):
            self._rank3.sort()
            self._head += self._rank3
            self._pending.sort()
            self._middle_done = True
        self._ranked = None

    @property
    def head_complete(self) -> bool:
        """True when ranks 0-3 are complete (`head` is final)."""
        return self._middle_done

    @property
    def complete(self) -> bool:
        """True when every candidate has been tested."""
        return self._middle_done and self._next_weak >= len(self._pending)

    def advance(self, max_rows: int) -> bool:
        """Test up to `max_rows` more rows (middle pass first, then the weak pass); True when the search is complete."""
        if not self._middle_done:
            self._advance_middle(max_rows)
            return self.complete
        if self.complete:
            return True
        weak = self.index.weak
        chunk = self._pending[self._next_weak:self._next_weak + max_rows]
        self._next_weak += len(chunk)
        found = list(compress(chunk, map(self._fuzzy, map(weak.__getitem__, chunk))))
        if found:
            self._weak += found
            self._ranked = None
        return self.complete

    def fill(self, wanted: int, max_rows: int) -> None:
        """Advance until `wanted` rows are ranked or the search is complete; the weak pass (the costly one) tests at
        most `max_rows` rows (the middle pass goes as far as needed: ranks 0-3 always show at once)."""
        step = MIDDLE_FIRST_STEP_ROWS
        while not self._middle_done and len(self._head) < wanted:
            self._advance_middle(step)
            step = min(step * 2, MIDDLE_MAX_STEP_ROWS)
        tested = 0
        while len(self.ranked()) < wanted and not self.complete and tested < max_rows:
            step = min(FILL_STEP_ROWS, max_rows - tested)
            self.advance(step)
            tested += step

    # -- results -----------------------------------------------------------------------------------------

    @property
    def head(self) -> list[int]:
        """Ranks 0-3 as far as final, best first, newest first within a rank (grows; complete with head_complete)."""
        return self._head

    def weak_fuzzy(self) -> list[int]:
        """Rank 4 as far as tested: rows matched only by a fuzzy match in a weak field."""
        return self._weak

    def ranked(self) -> list[int]:
        """Row indices whose place is known so far, best rank first, newest first within a rank."""
        if not self._middle_done:
            return self._head
        if not self._weak:
            return self._head
        if self._ranked is None:
            self._ranked = self._head + self._weak
        return self._ranked

    def possible_rows(self) -> Sequence[int]:
        """Ascending rows a longer query may still match: the matches, once complete; once the middle pass is done,
        the matches so far and the rows the weak pass has not tested; else every row."""
        if self.complete:
            return sorted(self.ranked())
        if self._middle_done:
            return _merged(self._head, self._weak, self._pending[self._next_weak:])
        return range(len(self.index.rows))

    def substring_rows(self) -> list[int] | None:
        """Ascending rows where the needle is a substring of some field (ranks 0-2); None until the middle pass
        is done."""
        if not self._middle_done:
            return None
        return _merged(self._hits, self._rank2)

    def rank_of(self, row: int) -> int | None:
        """The rank of `row` for this needle (None: no match), by testing it alone."""
        if not self.needle:
            return 0
        strong, weak = self.index.strong[row], self.index.weak[row]
        if self.needle in strong:
            return 0 if self._marked_needle in self.index.marked_strong[row] else 1
        if self.needle in weak:
            return 2
        if self._fuzzy(strong):
            return 3
        return 4 if self._fuzzy(weak) else None


class TermsSearch:
    """The ranked matches of a query of several terms (an unordered AND): the same interface as `Search`.

    On creation the rows where each term is a substring (C-level tests, as `Search`'s first pass, kept per term
    by the index) are intersected, which makes ranks 0-2 whole; rows where some term is no substring anywhere are
    pending, and `advance` gives them the fuzzy tests in order, newest first: a row found at rank 3 is final at
    once (ranks 0-2 are complete), one at rank 4 goes to `weak_fuzzy`. A query extending the previous one only
    tests what that one could still match.
    """

    def __init__(self, index: SearchIndex, needle: str, previous: Search | TermsSearch | None = None) -> None:
        self.index = index
        self.needle = needle
        self.terms = list(dict.fromkeys(needle.split(" ")))
        self._fuzzies = [fuzzy_pattern(term).search for term in self.terms]
        candidates = previous.possible_rows() if previous is not None else range(len(index.rows))
        # Ranks 0-2 (every term a substring) can only be among the rows where the previous search found each of its
        # terms: the terms are looked for there only, the one being typed included.
        among: Sequence[int] | None = None if previous is None else _rows_holding(previous, self.terms)
        if among is None:
            per_term = [index.term_rows(term) for term in self.terms[:-1]]
            if per_term and previous is not None:
                among = list(filter(min((found[2] for found in per_term), key=len).__contains__, candidates))
            else:
                among = candidates if previous is not None else None
        else:  # the earlier terms too: their rows over every row when kept, else looked for among those
            per_term = [index.term_rows(term, among) for term in self.terms[:-1]]
        per_term.append(index.term_rows(self.terms[-1], among))
        at_word_start, in_strong, in_any = (_intersection(sets) for sets in zip(*per_term))
        self._head = sorted(at_word_start)
        self._head += sorted(in_strong - at_word_start)
        self._head += sorted(in_any - in_strong)
        self._in_any = in_any  # every term a substring somewhere: what a longer last term is looked for in
        self._pending = list(filterfalse(in_any.__contains__, candidates))  # some term is no substring anywhere
        self._next_pending = 0
        self._weak: list[int] = []
        self._ranked: list[int] | None = None

    def _fuzzy_rank(self, row: int) -> int | None:
        """3 when every term is a substring or an id/title fuzzy match, 4 when some term only fuzzy-matches a weak
        field, None when some term matches nowhere (a pending row's rank: some term is no substring)."""
        strong, weak = self.index.strong[row], self.index.weak[row]
        rank = 3
        for term, fuzzy in zip(self.terms, self._fuzzies):
            if term in strong or term in weak or fuzzy(strong):
                continue
            if not fuzzy(weak):
                return None
            rank = 4
        return rank

    @property
    def head_complete(self) -> bool:
        """True when ranks 0-3 are complete (`head` is final)."""
        return self._next_pending >= len(self._pending)

    @property
    def complete(self) -> bool:
        """True when every candidate has been tested."""
        return self._next_pending >= len(self._pending)

    def advance(self, max_rows: int) -> bool:
        """Give up to `max_rows` more pending rows the fuzzy tests; True when the search is complete."""
        chunk = self._pending[self._next_pending:self._next_pending + max_rows]
        self._next_pending += len(chunk)
        for row in chunk:
            rank = self._fuzzy_rank(row)
            if rank == 3:
                self._head.append(row)
            elif rank == 4:
                self._weak.append(row)
        self._ranked = None
        return self.complete

    def fill(self, wanted: int, max_rows: int) -> None:
        """Advance until `wanted` rows of ranks 0-3 are known, the search is complete or `max_rows` were tested
        (at most TERMS_SYNC_FUZZY_ROWS)."""
        max_rows = min(max_rows, TERMS_SYNC_FUZZY_ROWS)
        tested = 0
        while len(self._head) < wanted and not self.complete and tested < max_rows:
            step = min(FILL_STEP_ROWS, max_rows - tested)
            self.advance(step)
            tested += step

    @property
    def head(self) -> list[int]:
        """Ranks 0-3 as far as final, best first, newest first within a rank."""
        return self._head

    def weak_fuzzy(self) -> list[int]:
        """Rank 4 as far as tested."""
        return self._weak

    def ranked(self) -> list[int]:
        """Row indices whose place is known so far, best rank first, newest first within a rank."""
        if not self.complete or not self._weak:
            return self._head
        if self._ranked is None:
            self._ranked = self._head + self._weak
        return self._ranked

    def possible_rows(self) -> Sequence[int]:
        """Ascending rows a longer query may still match: those matched so far and those not tested yet."""
        return _merged(self._head, self._weak, self._pending[self._next_pending:])

    def rank_of(self, row: int) -> int | None:
        """The rank of `row` for this query (None: no match), by testing it alone."""
        strong, weak = self.index.strong[row], self.index.weak[row]
        marked = self.index.marked_strong[row]
        worst = 0
        for term in self.terms:
            if term in strong:
                worst = max(worst, 0 if mark_word_starts(term) in marked else 1)
            elif term in weak:
                worst = max(worst, 2)
            else:
                return self._fuzzy_rank(row)
        return worst

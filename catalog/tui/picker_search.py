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
Ranks 0-3 cost a few C-level string operations per row and are computed at once. Rank 4, a regular
expression over the long weak strings, is the expensive test: it runs on demand (`advance`) so that a
keystroke can paint as soon as the visible page is known, and the rest completes between keystrokes.
It is also the noisiest (a short query's letters are found, scattered, in most long texts), which is
why the picker lists content-search hits between ranks 3 and 4.
Typing narrows: a query that extends the previous one only re-tests that query's matches, and once those
are a small share of the rows, its whole-list regex scans become per-row tests of just those rows.
"""

from __future__ import annotations

import re
from itertools import compress, repeat
from operator import contains

from sessdex.catalog.tui.fuzzy import fold, normalize_query

TYPE_CHECKING = False  # typing stays off the first frame's imports
if TYPE_CHECKING:
    from collections.abc import Sequence

    from sessdex.catalog.queries.source import PickerRow

FIELD_SEPARATOR = "\x1f"
RANK_COUNT = 5
WEAK_FUZZY_RANK = 4
FILL_STEP_ROWS = 32
# Below this share of the rows, candidates are tested one by one instead of by one scan over every row. Measured
# at 10,000 rows: testing the narrowed candidates of a longer query one by one beats the whole-list scans even
# when they are most rows (the tests stop early, and matched rows skip the weak-string test).
NARROW_SHARE = 1.0

WORD_START_MARK = "\x01"

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


class _Lines:
    """Many strings, tested at C speed: map() over a C-level test per string, no Python step per string (a
    one-letter query matches nearly every row, and a Python step per match would cost more than the tests)."""

    def __init__(self, texts: list[str]) -> None:
        self.texts = texts

    def searched(self, pattern: re.Pattern[str]) -> set[int]:
        """Indices of the strings where `pattern` is found: one C-level search per string (short strings)."""
        return set(compress(range(len(self.texts)), map(pattern.search, self.texts)))

    def containing(self, needle: str) -> set[int]:
        """Indices of the strings holding `needle`: one C-level `in` per string, whether few or all match."""
        return set(compress(range(len(self.texts)), map(contains, self.texts, repeat(needle))))


class SearchIndex:
    """The folded search strings of a list of rows (built on first use: an empty query never needs them)."""

    def __init__(self, rows: Sequence[PickerRow], sessions_root: str | None = None) -> None:
        self.rows = rows
        self._root_prefix = sessions_root.rstrip("/") + "/" if sessions_root else None
        self._strong: list[str] | None = None
        self._weak: list[str] | None = None
        self._strong_lines = _Lines([])
        self._weak_lines = _Lines([])
        self._marked_strong: list[str] = []
        self._marked_strong_lines = _Lines([])

    def _relative_path(self, path: str) -> str:
        if self._root_prefix is not None and path.startswith(self._root_prefix):
            return path[len(self._root_prefix):]
        return path

    def build(self) -> None:
        """Fold every row's strong and weak strings (tens of ms for 10,000 rows)."""
        if self._strong is not None:
            return
        separator = FIELD_SEPARATOR
        self._strong = [fold(row.session_id + separator + _flat(row.title)) for row in self.rows]
        self._weak = [fold(_flat(row.first_message) + separator + _flat(row.cwd)
                           + separator + _flat(self._relative_path(row.path))) for row in self.rows]
        self._strong_lines = _Lines(self._strong)
        self._weak_lines = _Lines(self._weak)
        self._marked_strong = mark_word_starts("\n".join(self._strong)).split("\n")
        self._marked_strong_lines = _Lines(self._marked_strong)

    def _few(self, candidates: Sequence[int] | None) -> bool:
        """True when `candidates` are few enough to test one by one rather than by scans over every row."""
        return candidates is not None and len(candidates) < NARROW_SHARE * len(self.rows)

    def strong_fuzzy_rows(self, needle: str, candidates: Sequence[int] | None = None) -> set[int]:
        """The rows (of `candidates`, default all) whose id or title holds the characters of `needle` in order.

        One regex pass over all rows, or a test per candidate when they are few.
        """
        self.build()
        if self._few(candidates):
            search, strong = fuzzy_pattern(needle).search, self.strong
            return {row for row in candidates if search(strong[row])}  # type: ignore[union-attr]
        characters = needle.replace(" ", "")
        if len(characters) == 1:  # one character in order is that character anywhere
            return self._strong_lines.containing(characters)
        return self._strong_lines.searched(fuzzy_pattern(needle))

    def strong_word_start_rows(self, needle: str, candidates: Sequence[int] | None = None) -> set[int]:
        """The rows (of `candidates`, default all) whose id or title holds `needle` starting at a word start."""
        self.build()
        marked_needle = mark_word_starts(needle)
        if self._few(candidates):
            marked = self._marked_strong
            return {row for row in candidates if marked_needle in marked[row]}  # type: ignore[union-attr]
        return self._marked_strong_lines.containing(marked_needle)

    def substring_rows(self, needle: str, *, strong: bool) -> set[int]:
        """Every row whose strong (else weak) string holds `needle` (one scan over all rows)."""
        self.build()
        return (self._strong_lines if strong else self._weak_lines).containing(needle)

    @property
    def strong(self) -> list[str]:
        self.build()
        assert self._strong is not None
        return self._strong

    @property
    def weak(self) -> list[str]:
        self.build()
        assert self._weak is not None
        return self._weak

    def search(self, query: str, previous: Search | None = None) -> Search:
        """Rank the rows for `query`; reuse `previous` (a search on this index) when `query` extends its query."""
        needle = normalize_query(query)
        if previous is not None and previous.index is self and needle.startswith(previous.needle):
            return Search(self, needle, previous.remaining_candidates())
        return Search(self, needle, range(len(self.rows)))


class Search:
    """The ranked matches of one query: ranks 0-3 complete on creation, rank 4 filled in by `advance`."""

    def __init__(self, index: SearchIndex, needle: str, candidates: Sequence[int]) -> None:
        self.index = index
        self.needle = needle
        self._ranks: list[list[int]] = [[] for _ in range(RANK_COUNT)]
        self._pending: list[int] = []
        self._next_pending = 0
        self._ranked: list[int] | None = None
        if not needle:
            self._ranks[0] = list(candidates)
            return
        self._fuzzy = fuzzy_pattern(needle).search
        self._first_pass(candidates)

    def _first_pass(self, candidates: Sequence[int]) -> None:
        needle, strong, weak = self.needle, self.index.strong, self.index.weak
        narrowed = None if isinstance(candidates, range) else candidates
        strong_fuzzy_rows = self.index.strong_fuzzy_rows(needle, narrowed)
        strong_word_rows = self.index.strong_word_start_rows(needle, narrowed)
        if narrowed is None and candidates == range(len(self.index.rows)):
            self._first_pass_over_all(strong_fuzzy_rows, strong_word_rows)
            return
        at_word, inner, weak_substring, strong_fuzzy = (rank.append for rank in self._ranks[:4])
        pending = self._pending.append
        for row in candidates:
            if row in strong_fuzzy_rows:
                if row in strong_word_rows:
                    at_word(row)
                elif needle in strong[row]:
                    inner(row)
                elif needle in weak[row]:
                    weak_substring(row)
                else:
                    strong_fuzzy(row)
            elif needle in weak[row]:
                weak_substring(row)
            else:
                pending(row)

    def _first_pass_over_all(self, strong_fuzzy_rows: set[int], strong_word_rows: set[int]) -> None:
        """`_first_pass` over every row, as set operations on whole-list scans instead of a test per row."""
        in_strong = self.index.substring_rows(self.needle, strong=True)
        in_weak = self.index.substring_rows(self.needle, strong=False)
        fuzzy_elsewhere = strong_fuzzy_rows - strong_word_rows
        not_inner = fuzzy_elsewhere - in_strong
        ranks = (strong_fuzzy_rows & strong_word_rows, fuzzy_elsewhere & in_strong,
                 (not_inner & in_weak) | (in_weak - strong_fuzzy_rows), not_inner - in_weak)
        for rank, rows in zip(self._ranks, ranks):
            rank.extend(sorted(rows))
        self._pending = sorted(set(range(len(self.index.rows))) - strong_fuzzy_rows - in_weak)

    @property
    def complete(self) -> bool:
        """True when every candidate has been tested."""
        return self._next_pending >= len(self._pending)

    def advance(self, max_rows: int) -> bool:
        """Test up to `max_rows` more rows for a weak fuzzy match; return True when the search is complete."""
        if self.complete:
            return True
        weak, fuzzy = self.index.weak, self._fuzzy
        stop = min(len(self._pending), self._next_pending + max_rows)
        found = [row for row in self._pending[self._next_pending:stop] if fuzzy(weak[row])]
        self._next_pending = stop
        if found:
            self._ranks[WEAK_FUZZY_RANK].extend(found)
            self._ranked = None
        return self.complete

    def fill(self, wanted: int, max_rows: int) -> None:
        """Advance until `wanted` rows are ranked, the search is complete, or `max_rows` rows were tested."""
        tested = 0
        while len(self.ranked()) < wanted and not self.complete and tested < max_rows:
            step = min(FILL_STEP_ROWS, max_rows - tested)
            self.advance(step)
            tested += step

    def ranked(self) -> list[int]:
        """Row indices matched so far, best rank first, newest first within a rank."""
        if self._ranked is None:
            self._ranked = [row for rank in self._ranks for row in rank]
        return self._ranked

    def strong_ranked(self) -> list[int]:
        """Ranks 0-3 (complete from the start): every match except the weak fuzzy ones."""
        return [row for rank in self._ranks[:WEAK_FUZZY_RANK] for row in rank]

    def weak_fuzzy(self) -> list[int]:
        """Rank 4 as far as tested: rows matched only by a fuzzy match in a weak field."""
        return self._ranks[WEAK_FUZZY_RANK]

    def remaining_candidates(self) -> list[int]:
        """Every row a longer query could still match: the matches so far plus the untested rows, newest first."""
        rows = self.ranked() + self._pending[self._next_pending:]
        rows.sort()
        return rows

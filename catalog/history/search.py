"""Searching the prompt history: the agent's FTS5 semantics, newest first, fast on a million prompts.

Semantics (the agent's): each whitespace-separated word of the query is cut into tokens by FTS5's own
tokenizer (unicode61: case and diacritics folded) and becomes one phrase: its tokens adjacent and in
order, the last one matching as a prefix (`to/file` is the phrase "to file*"). A prompt matches when
it holds every phrase ("terms" below are these phrases; most are a single token). Results are ordered
newest first by (created_at, id). These semantics are computed exactly; only the plan is clever:

* The schema is the agent's, so `history_fts` has no prefix index, and FTS5 answers `"the"*` by
  merging the postings of every word that starts with "the" (tens of ms to a second on a million
  prompts). Such terms are common, though, so their matches are dense among the newest prompts.
* Phase 1 therefore scans the newest prompts in (created_at, id) order and tests them in Python. On
  ASCII text FTS5's tokenizer is simply "runs of [a-z0-9], lowercased", so that test is exact; other
  prompts go through FTS5 itself on a scratch in-memory table. It also measures how common each term
  (and the wanted cwd) is, and keeps scanning while that is estimated cheaper than phase 2.
* Phase 2 asks `history_fts` for the older prompts with the rare terms (cheap to merge) plus any
  common term worth merging, streams them by rowid descending, tests the other terms per row, and
  stops once no older row can outrank what it holds (ids grow with time, except after an import).
* Snippets come from FTS5's snippet() on a scratch table holding just the hits.

When nothing matches, an optional substring search finds words inside words (`mit` in `commit`):
the newest prompts first, then one sequential scan of the table.
"""


from __future__ import annotations

import heapq
import re
import sqlite3
from collections import namedtuple

from sessdex.core.text import without_lone_surrogates
from sessdex.core.values import FrozenValue

TYPE_CHECKING = False  # typing and dataclasses stay off the hot commands' imports
if TYPE_CHECKING:
    from collections.abc import Callable, Iterable
    from typing import Any

Row = tuple[int, str, int, "str | None"]
_COLUMNS = "id, prompt, created_at, cwd"
NEWEST_FIRST = "ORDER BY created_at DESC, id DESC"

_FIRST_CHUNK_ROWS, _MAX_CHUNK_ROWS = 32, 256  # chunks double: dense queries read few rows
DEFAULT_SCAN_BUDGET = 256  # phase 1: prompts tested before phase 2 is considered (non-ASCII count 8x)
_NON_ASCII_COST = 8  # a non-ASCII prompt is tested by FTS5 on the scratch table: roughly 8x dearer
_DENSE_FRACTION = 0.05  # a term matching this share of the newest prompts is left out of phase 2's MATCH
_MAX_TERMS_MEASURED = 8
# Rough costs measured on a million prompts (2 cores, file in the OS cache, mmap on), for planning only.
_SCAN_SECONDS_PER_ROW = 3e-6  # phase 1: one row in (created_at, id) order, fetched and tested
_LOOKUP_SECONDS_PER_MATCH = 2e-6  # phase 2: joining one index match to its row
_TEST_SECONDS_PER_ROW = 3e-6  # phase 2: fetching a joined row into Python and testing it
_MERGE_SECONDS_PER_POSTING = 70e-9  # FTS5 merging one posting of a prefix term
_BOUND_CHECK_SECONDS_PER_ROW = 0.07e-6  # the stop-bound check, per index entry it walks

# The agent's schema objects in history.db, and the columns sessdex needs in its `history` table.
SCHEMA_OBJECTS = ("history", "idx_history_created_at", "history_fts", "history_ai")
REQUIRED_COLUMNS = frozenset({"id", "prompt", "created_at", "cwd"})
HISTORY_DB_NAME = "history.db"
BUSY_TIMEOUT_SECONDS = 5.0
# Search seeks rows all over the file: memory-mapped reads make each seek much cheaper.
READER_MMAP_BYTES = 1 << 30
_MAX_SQL_LIMIT = 2**62
# JavaScript's String.prototype.trim() whitespace: the agent trims prompts with it.
_JS_WHITESPACE = ("\t\n\v\f\r \u00a0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008"
                  "\u2009\u200a\u2028\u2029\u202f\u205f\u3000\ufeff")

_ASCII_TERM = re.compile(r"[a-z0-9]+")
_WORD_CHARS = frozenset("abcdefghijklmnopqrstuvwxyz0123456789")
# Line breaks and tabs become spaces in snippets (one for one, so highlight offsets stay valid).
_ONE_LINE = str.maketrans({ch: " " for ch in "\t\n\v\f\r\x85\u2028\u2029"})
_ASCII_LOWER = str.maketrans({chr(c): chr(c + 32) for c in range(ord("A"), ord("Z") + 1)})
# Private-use characters bracket the highlighted terms of an FTS5 snippet; they are parsed out again.
_MARK_START, _MARK_END = "\ue000", "\ue001"
_SNIPPET_TOKENS = 16
_SUBSTRING_CONTEXT_CHARS = 40
_MAX_SUBSTRING_SQL_WORDS = 16  # further words are checked in Python (SQLite caps expression depth)
_MAX_LIKE_WORD_CHARS = 1000  # SQLite refuses LIKE patterns over 50,000 bytes
_SUBSTRING_WINDOW_ROWS = 2000  # the substring fallback first looks at this many newest prompts


def trim_prompt(prompt: str) -> str:
    """The prompt as the agent stores it: JavaScript-trimmed at both ends, inner whitespace kept."""
    return prompt.strip(_JS_WHITESPACE)


def clamp_limit(limit: int) -> int:
    """A row count SQLite accepts as LIMIT: negative ones become 0."""
    return max(0, min(int(limit), _MAX_SQL_LIMIT))


class HistoryEntry(FrozenValue):
    """One stored prompt; a search hit also carries a one-line snippet and the highlighted spans in it.

    Immutable, compared, hashed and shown by its fields (a plain class, not a dataclass: `history search`
    is a hot command).
    """

    __slots__ = ("id", "prompt", "created_at", "cwd", "snippet", "highlights")
    id: int
    prompt: str
    created_at: int
    cwd: str | None
    snippet: str | None
    highlights: tuple[tuple[int, int], ...]

    def __init__(self, id: int, prompt: str, created_at: int, cwd: str | None, snippet: str | None = None,
                 highlights: tuple[tuple[int, int], ...] = ()) -> None:
        self._set_fields(id, prompt, created_at, cwd, snippet, highlights)

    def to_json(self) -> dict[str, Any]:
        """A JSON-ready dict (what `--json` prints)."""
        data: dict[str, Any] = {"id": self.id, "prompt": self.prompt, "created_at": self.created_at,
                                "cwd": self.cwd}
        if self.snippet is not None:
            data["snippet"] = self.snippet
            data["highlights"] = [list(span) for span in self.highlights]
        return data


# A phrase: the folded tokens of one query word, in order (the last one a prefix).
Phrase = tuple[str, ...]


def fts_match_expression(phrases: Iterable[Phrase]) -> str:
    """Every phrase quoted as an FTS5 string with a prefix star (on its last token); all are required."""
    return " ".join('"' + " ".join(phrase).replace('"', '""') + '"*' for phrase in phrases)


class SearchScratch:
    """A private in-memory SQLite database running FTS5's tokenizer and matcher on a few strings.

    Using SQLite itself (not a Python imitation) keeps query terms, matches and snippets identical
    to what `history_fts` would give, for every script. Not thread-safe: callers serialize access.
    """

    def __init__(self) -> None:
        self._connection = sqlite3.connect(":memory:", isolation_level=None, check_same_thread=False)
        self._connection.execute("CREATE VIRTUAL TABLE query USING fts5(text)")
        self._connection.execute("CREATE VIRTUAL TABLE query_terms USING fts5vocab(query, 'instance')")
        self._connection.execute("CREATE VIRTUAL TABLE probe USING fts5(prompt)")

    def phrases(self, text: str) -> list[Phrase]:
        """The distinct phrases of `text`: per whitespace-separated word, its tokens as FTS5 indexes them (folded)."""
        words = text.split()
        if not words:
            return []
        connection = self._connection
        connection.execute("BEGIN")
        try:
            connection.executemany("INSERT INTO query(rowid, text) VALUES (?, ?)", enumerate(words, 1))
            rows = connection.execute("SELECT doc, term FROM query_terms ORDER BY doc, offset").fetchall()
        finally:
            connection.execute("ROLLBACK")
        tokens: dict[int, list[str]] = {}
        for word, term in rows:
            tokens.setdefault(word, []).append(term)
        return list(dict.fromkeys(tuple(terms) for _, terms in sorted(tokens.items())))

    def matching(self, prompts: list[tuple[int, str]], match: str) -> set[int]:
        """The ids among `prompts` that the FTS5 expression `match` selects."""
        return {row[0] for row in self._probe(prompts, "SELECT rowid FROM probe WHERE probe MATCH ?", (match,))}

    def snippets(self, prompts: list[tuple[int, str]], match: str) -> dict[int, tuple[str, tuple[tuple[int, int], ...]]]:
        """FTS5 snippets for `prompts` under `match`, as one-line text plus highlighted (start, end) spans."""
        rows = self._probe(prompts, "SELECT rowid, snippet(probe, 0, ?, ?, '…', ?) FROM probe WHERE probe MATCH ?",
                           (_MARK_START, _MARK_END, _SNIPPET_TOKENS, match))
        return {rowid: parse_marked_snippet(marked) for rowid, marked in rows}

    def _probe(self, prompts: list[tuple[int, str]], sql: str, parameters: tuple[Any, ...]) -> list[Any]:
        """Run `sql` over a probe table holding just `prompts`; the rollback empties it again."""
        connection = self._connection
        connection.execute("BEGIN")
        try:
            connection.executemany("INSERT INTO probe(rowid, prompt) VALUES (?, ?)", prompts)
            return connection.execute(sql, parameters).fetchall()
        finally:
            connection.execute("ROLLBACK")

    def close(self) -> None:
        """Release the in-memory database."""
        self._connection.close()


def parse_marked_snippet(marked: str) -> tuple[str, tuple[tuple[int, int], ...]]:
    """Strip the highlight markers out of an FTS5 snippet: one-line text and the highlighted spans."""
    parts: list[str] = []
    spans: list[tuple[int, int]] = []
    length = 0
    for index, piece in enumerate(marked.replace(_MARK_END, _MARK_START).split(_MARK_START)):
        if index % 2 == 1 and piece:
            spans.append((length, length + len(piece)))
        parts.append(piece)
        length += len(piece)
    return "".join(parts).translate(_ONE_LINE), tuple(spans)


def _key(row: Row) -> tuple[int, int]:
    return row[2], row[0]


def starts_a_word(term: str | None, lowered: str) -> bool:
    """Does `term` occur in the lowercased ASCII text at the start of a `[a-z0-9]+` run?"""
    if term is None:
        return False
    position = lowered.find(term)
    while position > 0 and lowered[position - 1] in _WORD_CHARS:
        position = lowered.find(term, position + 1)
    return position >= 0


def _never(_lowered: str) -> bool:
    return False


def phrase_test(phrase: Phrase) -> Callable[[str], bool]:
    """For lowercased ASCII text: does `phrase` occur (tokens adjacent, whole but the last, which starts a word)?

    Exact, since unicode61 on ASCII text is its `[a-z0-9]+` runs. A token with other characters can
    never come from ASCII text: such a phrase never matches.
    """
    if not all(_ASCII_TERM.fullmatch(token) for token in phrase):
        return _never
    if len(phrase) == 1:
        term = phrase[0]
        return lambda lowered: starts_a_word(term, lowered)
    search = re.compile("(?<![a-z0-9])" + "".join(token + "[^a-z0-9]+" for token in phrase[:-1]) + phrase[-1]).search
    return lambda lowered: search(lowered) is not None


class _TermTests:
    """For ASCII prompts: does each phrase occur? (see phrase_test)"""

    def __init__(self, terms: list[Phrase]) -> None:
        self.tests = [phrase_test(term) for term in terms]

    def all_match(self, lowered: str) -> bool:
        return all(test(lowered) for test in self.tests)


class _Plan(namedtuple("_Plan", "index_terms checked_terms seconds")):
    """How phase 2 runs: which terms the index MATCH gets, which are tested per row, and its estimated cost."""

    __slots__ = ()
    # The fields' types, for the type checker (annotations only: no class attributes).
    index_terms: list[Phrase]
    checked_terms: list[Phrase]
    seconds: float


class _IndexSearch:
    """One prefix-AND query, planned as the module docstring explains."""

    def __init__(self, connection: sqlite3.Connection, scratch: SearchScratch, terms: list[Phrase], limit: int,
                 cwd: str | None, scan_budget: int) -> None:
        self.connection = connection
        self.scratch = scratch
        self.terms = terms
        self.limit = limit
        self.cwd = cwd
        self.scan_budget = scan_budget
        self.full_match = fts_match_expression(terms)
        self.all_terms = _TermTests(terms)
        # Phase 1 statistics: per-term matches among the ASCII rows, and rows in the wanted cwd.
        self.term_counts = [0] * len(terms)
        self.ascii_rows_measured = 0
        self.rows_scanned = 0
        self.cwd_rows = 0
        # Phase 1 state: the newest-first cursor, the last key examined, whether all rows were.
        self.hits: list[Row] = []
        self.cursor: sqlite3.Cursor | None = None
        self.boundary: tuple[int, int] | None = None
        self.exhausted = False
        self.chunk_rows = _FIRST_CHUNK_ROWS

    def run(self) -> list[Row]:
        try:
            self._scan_newest(self.scan_budget)
            if self._done():
                return self.hits
            total_rows = self.connection.execute("SELECT max(id) FROM history").fetchone()[0] or 0
            plan = self._plan(total_rows)
            hit_rate = self._hit_rate()
            if hit_rate > 0:
                # Matches are common enough: scanning on may beat merging the index's postings.
                rows_needed = (self.limit - len(self.hits)) / hit_rate
                if rows_needed * _SCAN_SECONDS_PER_ROW < plan.seconds:
                    self._scan_newest(int(rows_needed * 1.5) + _FIRST_CHUNK_ROWS)
                    if self._done():
                        return self.hits
                    plan = self._plan(total_rows)
        finally:
            if self.cursor is not None:
                self.cursor.close()
        return self.hits + self._stream_older(plan, total_rows)

    def _hit_rate(self) -> float:
        """Share of scanned rows that are hits: as seen, else estimated from the terms' shares and the cwd's."""
        if self.hits:
            return len(self.hits) / self.rows_scanned
        if not self.ascii_rows_measured or len(self.terms) > _MAX_TERMS_MEASURED:
            return 0.0
        rate = self.cwd_rows / self.rows_scanned if self.cwd is not None else 1.0
        for count in self.term_counts:
            rate *= count / self.ascii_rows_measured
        return rate

    def _done(self) -> bool:
        return len(self.hits) >= self.limit or self.exhausted

    def _scan_newest(self, budget: int) -> None:
        """Phase 1: test the next `budget` cost units of prompts, newest first, collecting hits in order."""
        if self.cursor is None:
            self.cursor = self.connection.execute(f"SELECT {_COLUMNS} FROM history {NEWEST_FIRST}")
        while budget > 0 and not self._done():
            chunk = self.cursor.fetchmany(min(self.chunk_rows, budget))
            self.chunk_rows = min(2 * self.chunk_rows, _MAX_CHUNK_ROWS)
            if not chunk:
                self.exhausted = True
                return
            matched, cost = self._matching_ids(chunk, self.all_terms, measure=True)
            for row in chunk:
                self.boundary = _key(row)
                if row[0] in matched:
                    self.hits.append(row)
                    if len(self.hits) == self.limit:
                        return
            budget -= cost

    def _plan(self, total_rows: int) -> _Plan:
        """Choose the phase-2 MATCH terms: rare terms always, then the rarest common term while that is cheaper."""
        wanted = self.limit - len(self.hits)
        if not self.ascii_rows_measured or len(self.terms) > _MAX_TERMS_MEASURED:
            return _Plan(self.terms, [], 0.0)
        share = {term: count / self.ascii_rows_measured for term, count in zip(self.terms, self.term_counts)}
        by_rarity = sorted(self.terms, key=share.__getitem__)
        index_terms = [term for term in by_rarity if share[term] < _DENSE_FRACTION] or by_rarity[:1]
        common = [term for term in by_rarity if term not in index_terms]
        if share[index_terms[-1]] < _DENSE_FRACTION:  # all rare: counting their matches is cheap
            matches = float(self.connection.execute(
                "SELECT count(*) FROM history_fts WHERE history_fts MATCH ?",
                (fts_match_expression(index_terms),)).fetchone()[0])
        else:
            matches = share[index_terms[0]] * total_rows
        cwd_share = self.cwd_rows / max(self.rows_scanned, 1) if self.cwd is not None else 1.0

        def cost(index: list[Phrase], checked: list[Phrase], index_matches: float) -> float:
            return _plan_seconds(index, checked, index_matches, share, total_rows, wanted, cwd_share)

        best = _Plan(index_terms, common, cost(index_terms, common, matches))
        while best.checked_terms:
            moved = best.checked_terms[0]
            matches *= share[moved]
            candidate = _Plan(best.index_terms + [moved], best.checked_terms[1:],
                              cost(best.index_terms + [moved], best.checked_terms[1:], matches))
            if candidate.seconds >= best.seconds:
                break
            best = candidate
        return best

    def _stream_older(self, plan: _Plan, newest_id: int) -> list[Row]:
        """Phase 2: the best matches older than phase 1's boundary, streamed from the index by rowid desc."""
        wanted = self.limit - len(self.hits)
        checks = _TermTests(plan.checked_terms) if plan.checked_terms else None
        cwd_filter, parameters = ("AND h.cwd = ?", (self.cwd,)) if self.cwd is not None else ("", ())
        cursor = self.connection.execute(
            "SELECT h.id, h.prompt, h.created_at, h.cwd FROM history_fts JOIN history h ON h.id = history_fts.rowid "
            f"WHERE history_fts MATCH ? {cwd_filter} ORDER BY history_fts.rowid DESC",
            (fts_match_expression(plan.index_terms), *parameters))
        best: list[tuple[tuple[int, int], Row]] = []  # min-heap: best[0] is the weakest kept
        boundary = self.boundary
        rows_streamed = 0
        next_check_span = 0
        chunk_rows = max(2 * wanted, _FIRST_CHUNK_ROWS)  # small at first: the first stop check spans few ids
        try:
            while chunk := cursor.fetchmany(chunk_rows):
                chunk_rows = min(2 * chunk_rows, _MAX_CHUNK_ROWS)
                rows_streamed += len(chunk)
                older = chunk if boundary is None else [row for row in chunk if _key(row) < boundary]
                matched = self._matching_ids(older, checks, measure=False)[0] if checks else {row[0] for row in older}
                for row in older:
                    if row[0] in matched:
                        if len(best) < wanted:
                            heapq.heappush(best, (_key(row), row))
                        elif _key(row) > best[0][0]:
                            heapq.heapreplace(best, (_key(row), row))
                lowest_id = chunk[-1][0]
                span = newest_id - lowest_id
                if len(best) < wanted or span < next_check_span:
                    continue
                if _check_pays(span, lowest_id, rows_streamed):
                    if self._nothing_newer_below(lowest_id, best[0][0][0]):
                        break
                    next_check_span = 2 * span  # imported prompts in the way: look again further down
        finally:
            cursor.close()
        return [row for _, row in sorted(best, reverse=True)]

    def _nothing_newer_below(self, row_id: int, created_at: int) -> bool:
        """True when no prompt with an id below `row_id` is newer than `created_at` (so streaming can stop)."""
        row = self.connection.execute(
            "SELECT created_at FROM history INDEXED BY idx_history_created_at WHERE id < ? "
            "ORDER BY created_at DESC LIMIT 1", (row_id,)).fetchone()
        return row is None or row[0] <= created_at

    def _matching_ids(self, rows: list[Row], tests: _TermTests, measure: bool) -> tuple[set[int], int]:
        """Ids of `rows` in the wanted cwd that pass `tests` (exactly), and the cost units spent.

        With `measure`, also counts for each term how many ASCII rows it matches (any cwd).
        """
        matched: set[int] = set()
        for_fts5: list[tuple[int, str]] = []
        cost = 0
        measure_terms = measure and len(self.terms) <= _MAX_TERMS_MEASURED
        counts = self.term_counts
        for row_id, prompt, _, cwd in rows:
            wanted_cwd = self.cwd is None or cwd == self.cwd
            if measure:
                self.rows_scanned += 1
                self.cwd_rows += wanted_cwd
            if prompt.isascii():
                cost += 1
                lowered = prompt.lower()
                if measure_terms:
                    self.ascii_rows_measured += 1
                    passed = True
                    for index, test in enumerate(tests.tests):
                        if test(lowered):
                            counts[index] += 1
                        else:
                            passed = False
                else:
                    passed = wanted_cwd and tests.all_match(lowered)
                if passed and wanted_cwd:
                    matched.add(row_id)
            elif wanted_cwd:
                cost += _NON_ASCII_COST
                for_fts5.append((row_id, prompt))
        if for_fts5:
            matched |= self.scratch.matching(for_fts5, self.full_match)
        return matched, cost


def _plan_seconds(index_terms: list[Phrase], checked_terms: list[Phrase], matches: float, share: dict[Phrase, float],
                  total_rows: int, wanted: int, cwd_share: float) -> float:
    """Estimated phase-2 time: merging the index terms' postings, then streaming either every match or,
    when `wanted` hits come sooner, that many rows plus one stop-bound check."""
    merge = sum(share[term] for term in index_terms) * total_rows * _MERGE_SECONDS_PER_POSTING
    per_match = _LOOKUP_SECONDS_PER_MATCH + cwd_share * _TEST_SECONDS_PER_ROW
    stream_all = matches * per_match
    hit_rate = cwd_share
    for term in checked_terms:
        hit_rate *= share[term]
    needed = wanted / hit_rate if hit_rate > 0 else float("inf")
    if needed >= matches:
        return merge + stream_all
    span = total_rows * needed / max(matches, 1.0)
    return merge + min(stream_all, needed * per_match + span * _BOUND_CHECK_SECONDS_PER_ROW)


def _check_pays(span: int, ids_left: int, rows_streamed: int) -> bool:
    """Is checking the stop bound (walks about `span` index entries) cheaper than streaming on to the end?

    `rows_streamed` matches came from the newest `span` ids; the `ids_left` below hold proportionally many.
    """
    rows_left = rows_streamed * ids_left / max(span, 1)
    return span * _BOUND_CHECK_SECONDS_PER_ROW < rows_left * (_LOOKUP_SECONDS_PER_MATCH + _TEST_SECONDS_PER_ROW)


def search_prompts(connection: sqlite3.Connection, scratch: SearchScratch, text: str, limit: int,
                   cwd: str | None = None, *, substring_fallback: bool = True,
                   scan_budget: int = DEFAULT_SCAN_BUDGET) -> list[HistoryEntry]:
    """Prompts holding every phrase of `text` (one per word, see the module doc), newest first, with snippets.

    With `substring_fallback`, a query the index answers with nothing is retried as a substring scan.
    A broken or missing FTS index also falls back to the scan.
    """
    terms = scratch.phrases(text)
    rows: list[Row] = []
    if terms:
        try:
            rows = _IndexSearch(connection, scratch, terms, limit, cwd, scan_budget).run()
        except sqlite3.OperationalError:
            substring_fallback = True
    if rows:
        match = fts_match_expression(terms)
        snippets = scratch.snippets([(row[0], row[1]) for row in rows], match)
        return [HistoryEntry(*row, *snippets.get(row[0], (row[1].translate(_ONE_LINE), ()))) for row in rows]
    if substring_fallback:
        return _substring_search(connection, text.split(), limit, cwd)
    return []


def _like_pattern(word: str) -> str:
    return "%" + word.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"


def _substring_search(connection: sqlite3.Connection, words: list[str], limit: int,
                      cwd: str | None) -> list[HistoryEntry]:
    """Prompts containing every word anywhere (ASCII case-insensitive), newest first.

    The newest prompts are tried first, in order; if they hold too few hits, one sequential scan
    of the table (much faster than walking it in time order) finds the rest, sorted at the end.
    """
    words = [word for word in dict.fromkeys(word.replace("\x00", "") for word in words) if word]
    if not words:
        return []
    conditions: list[str] = []
    parameters: list[Any] = []
    if cwd is not None:
        conditions.append("cwd = ?")
        parameters.append(cwd)
    for word in words[:_MAX_SUBSTRING_SQL_WORDS]:
        if len(word) <= _MAX_LIKE_WORD_CHARS:
            conditions.append("prompt LIKE ? ESCAPE '\\'")
            parameters.append(_like_pattern(word))
        else:  # LIKE patterns are capped in length; instr() is not
            conditions.append("instr(lower(prompt), ?) > 0")
            parameters.append(word.translate(_ASCII_LOWER))
    where = " AND ".join(conditions)
    later_needles = [word.translate(_ASCII_LOWER) for word in words[_MAX_SUBSTRING_SQL_WORDS:]]
    newest = (f"SELECT {_COLUMNS} FROM (SELECT {_COLUMNS} FROM history {NEWEST_FIRST} LIMIT {_SUBSTRING_WINDOW_ROWS}) "
              f"WHERE {where} {NEWEST_FIRST}")
    rows = _rows_with(connection, newest, parameters, later_needles, limit)
    total = connection.execute("SELECT count(*) FROM (SELECT 1 FROM history LIMIT ?)",
                               (_SUBSTRING_WINDOW_ROWS + 1,)).fetchone()[0]
    if len(rows) < limit and total > _SUBSTRING_WINDOW_ROWS:
        rows = _rows_with(connection, f"SELECT {_COLUMNS} FROM history NOT INDEXED WHERE {where} {NEWEST_FIRST}",
                          parameters, later_needles, limit)
    return [HistoryEntry(*row, *_substring_snippet(row[1], words)) for row in rows]


def _rows_with(connection: sqlite3.Connection, sql: str, parameters: list[Any], later_needles: list[str],
               limit: int) -> list[Row]:
    """The first `limit` rows of `sql` whose prompt also contains every one of `later_needles`."""
    if not later_needles:
        return connection.execute(sql + " LIMIT ?", (*parameters, limit)).fetchall()
    rows: list[Row] = []
    cursor = connection.execute(sql, parameters)
    try:
        for row in cursor:
            folded = row[1].translate(_ASCII_LOWER)
            if all(needle in folded for needle in later_needles):
                rows.append(row)
                if len(rows) >= limit:
                    break
    finally:
        cursor.close()
    return rows


def _substring_snippet(prompt: str, words: list[str]) -> tuple[str, tuple[tuple[int, int], ...]]:
    """A window of the prompt around the first matched word, every word occurrence in it highlighted."""
    folded = prompt.translate(_ASCII_LOWER)
    needles = [word.translate(_ASCII_LOWER) for word in words]
    first = min((pos for pos in (folded.find(needle) for needle in needles) if pos >= 0), default=0)
    begin = max(0, first - _SUBSTRING_CONTEXT_CHARS)
    end = min(len(prompt), first + max(map(len, needles), default=0) + _SUBSTRING_CONTEXT_CHARS)
    prefix, suffix = ("…" if begin > 0 else ""), ("…" if end < len(prompt) else "")
    spans: list[tuple[int, int]] = []
    for needle in needles:
        pos = folded.find(needle, begin)
        while 0 <= pos and pos + len(needle) <= end:
            spans.append((pos - begin + len(prefix), pos - begin + len(prefix) + len(needle)))
            pos = folded.find(needle, pos + len(needle))
    merged: list[tuple[int, int]] = []
    for start, stop in sorted(spans):
        if merged and start <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(merged[-1][1], stop))
        else:
            merged.append((start, stop))
    return (prefix + prompt[begin:end] + suffix).translate(_ONE_LINE), tuple(merged)


def search_history_file(path: str, query: str, limit: int, cwd: str | None) -> list[HistoryEntry] | None:
    """`HistoryStorage.search` on an existing history.db, without its writer thread or any schema work.

    `sessdex history search` uses it. None (nothing done) when the file is
    missing, lacks the agent's schema or fails to read: the full HistoryStorage then creates, checks
    or reports it.
    """
    import os

    if not os.path.isfile(path):
        return None
    try:
        connection = sqlite3.connect(path, timeout=BUSY_TIMEOUT_SECONDS, isolation_level=None)
    except sqlite3.Error:
        return None
    scratch = None
    try:
        present = connection.execute(
            "SELECT count(*) FROM sqlite_master WHERE name IN (?, ?, ?, ?)", SCHEMA_OBJECTS).fetchone()[0]
        columns = {row[1] for row in connection.execute("PRAGMA table_info(history)")}
        if present != len(SCHEMA_OBJECTS) or not REQUIRED_COLUMNS <= columns:
            return None
        limit = clamp_limit(limit)
        text = without_lone_surrogates(trim_prompt(query))
        if limit == 0 or not text:
            return []
        connection.execute(f"PRAGMA mmap_size = {READER_MMAP_BYTES}").fetchall()
        scratch = SearchScratch()
        return search_prompts(connection, scratch, text, limit, cwd and without_lone_surrogates(cwd))
    except sqlite3.Error:
        return None
    finally:
        if scratch is not None:
            scratch.close()
        connection.close()

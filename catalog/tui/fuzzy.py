"""Fuzzy matching of a typed query against one text: does it match, how well, and which characters matched.

The picker ranks its rows in bulk (`sessdex.catalog.tui.picker_search`); this module answers the per-text questions
that bulk ranking leaves open: the best alignment of a query in a displayed text (for highlighting) and
its score. Matching is case-insensitive; whitespace in the query separates terms, which match in any order
(an unordered AND, as in fzf). A term matches when it is a substring of the text, or else when its characters
are a subsequence of the text; a query of several terms matches when it is a substring as a whole, or else
when every term matches on its own.

Scoring (higher is better) rewards what makes a match look intentional: each matched character scores,
characters at a word start and runs of consecutive characters earn bonuses, and gaps cost a little.
"""

from __future__ import annotations

from collections import namedtuple

SCORE_MATCH = 16
BONUS_WORD_START = 8
BONUS_FIRST_CHAR_MULTIPLIER = 2
BONUS_CONSECUTIVE = 4
BONUS_SUBSTRING = 8
PENALTY_GAP_START = 3
PENALTY_GAP_EXTENSION = 1
MAX_SUBSTRING_CANDIDATES = 16


class FuzzyMatch(namedtuple("FuzzyMatch", "score positions")):
    """Where and how well a query matched a text: `positions` index the original text, ascending.

    A named tuple, not a dataclass: the picker's first frame imports this module before anything heavy."""

    __slots__ = ()
    score: int
    positions: tuple[int, ...]


def fold(text: str) -> str:
    """`text` lower-cased character by character, so that every index still points at the same character."""
    folded = text.lower()
    if len(folded) == len(text):
        return folded
    return "".join(lowered if len(lowered := char.lower()) == 1 else char for char in text)


def normalize_query(query: str) -> str:
    """The query as matched: folded, trimmed, inner whitespace runs collapsed to one space."""
    return " ".join(fold(query).split())


def is_word_start(text: str, index: int) -> bool:
    """True when `text[index]` begins a word: at the start, after a non-alphanumeric, or a camelCase hump."""
    if index == 0:
        return True
    previous, current = text[index - 1], text[index]
    if not previous.isalnum():
        return current.isalnum()
    return previous.islower() and current.isupper() or previous.isalpha() and current.isdigit()


def score_positions(text: str, positions: tuple[int, ...]) -> int:
    """The score of matching the characters of `text` at `positions` (see the module docstring)."""
    score = 0
    previous = -2
    for rank, index in enumerate(positions):
        score += SCORE_MATCH
        if is_word_start(text, index):
            score += BONUS_WORD_START * (BONUS_FIRST_CHAR_MULTIPLIER if rank == 0 else 1)
        if index == previous + 1:
            score += BONUS_CONSECUTIVE
        elif rank > 0:
            score -= PENALTY_GAP_START + PENALTY_GAP_EXTENSION * (index - previous - 2)
        previous = index
    return score


def _best_substring(text: str, folded_text: str, needle: str) -> FuzzyMatch | None:
    """The best-scoring occurrence of `needle` among the first few; None when it does not occur."""
    best: FuzzyMatch | None = None
    start = folded_text.find(needle)
    for _ in range(MAX_SUBSTRING_CANDIDATES):
        if start < 0:
            break
        positions = tuple(index for index in range(start, start + len(needle)) if not needle[index - start].isspace())
        candidate = FuzzyMatch(score_positions(text, positions) + BONUS_SUBSTRING, positions)
        if best is None or candidate.score > best.score:
            best = candidate
        start = folded_text.find(needle, start + 1)
    return best


def _subsequence(folded_text: str, chars: str) -> tuple[int, ...] | None:
    """A tight alignment of `chars` in `folded_text`: the earliest complete match, then shrunk from its end."""
    index = -1
    for char in chars:
        index = folded_text.find(char, index + 1)
        if index < 0:
            return None
    # Walk back from the earliest end to the latest start that still fits: the shortest window ending there.
    positions = [index]
    for char in reversed(chars[:-1]):
        index = folded_text.rfind(char, 0, index)
        positions.append(index)
    return tuple(reversed(positions))


def _word_start_subsequence(text: str, folded_text: str, chars: str) -> tuple[int, ...] | None:
    """An alignment that puts each character on a word start or right after the previous one, if there is one."""
    positions: list[int] = []
    index = -1
    for char in chars:
        if index + 1 < len(folded_text) and positions and folded_text[index + 1] == char:
            index += 1
        else:
            index = folded_text.find(char, index + 1)
            while index >= 0 and not is_word_start(text, index):
                index = folded_text.find(char, index + 1)
            if index < 0:
                return None
        positions.append(index)
    return tuple(positions)


def fuzzy_match(query: str, text: str) -> FuzzyMatch | None:
    """Match `query` against `text`; None when it does not match, else the best alignment found and its score.

    An empty query matches everything with score 0 and no positions.
    """
    needle = normalize_query(query)
    if not needle:
        return FuzzyMatch(0, ())
    return needle_match(needle, text, fold(text))


def needle_match(needle: str, text: str, folded_text: str) -> FuzzyMatch | None:
    """`fuzzy_match` of a non-empty `needle` (a query as `normalize_query` gives it) in `text`, whose `fold` is
    `folded_text`: for matching one query against many texts, each folded once."""
    substring = _best_substring(text, folded_text, needle)
    if substring is not None:
        return substring
    if " " in needle:
        return _terms_match(needle.split(" "), text, folded_text)
    tight = _subsequence(folded_text, needle)
    if tight is None:
        return None
    candidates = [tight]
    acronym = _word_start_subsequence(text, folded_text, needle)
    if acronym is not None:
        candidates.append(acronym)
    best = max(candidates, key=lambda positions: score_positions(text, positions))
    return FuzzyMatch(score_positions(text, best), best)


def _terms_match(terms: list[str], text: str, folded_text: str) -> FuzzyMatch | None:
    """Every term matched on its own, in any order: the scores summed, the positions joined; None when one
    term does not match."""
    score = 0
    positions: set[int] = set()
    for term in dict.fromkeys(terms):
        match = needle_match(term, text, folded_text)
        if match is None:
            return None
        score += match.score
        positions.update(match.positions)
    return FuzzyMatch(score, tuple(sorted(positions)))


def highlight_positions(needle: str, text: str, folded_text: str) -> tuple[int, ...]:
    """The positions `needle_match` highlights in `text` (() when it does not match), without scoring the
    alignment when there is nothing to choose: a needle found once as a substring is highlighted there."""
    start = folded_text.find(needle)
    if start >= 0 and folded_text.find(needle, start + 1) < 0:
        return tuple(index for index in range(start, start + len(needle)) if not needle[index - start].isspace())
    match = needle_match(needle, text, folded_text)
    return match.positions if match is not None else ()


def term_positions(needle: str, text: str, folded_text: str) -> tuple[int, ...]:
    """The positions of every term of `needle` that matches in `text`, each on its own (() when none does): a
    row matches when each term is found in one of its fields, so each field shows the terms found there."""
    if " " not in needle:
        return highlight_positions(needle, text, folded_text)
    positions: set[int] = set()
    for term in dict.fromkeys(needle.split(" ")):
        positions.update(highlight_positions(term, text, folded_text))
    return tuple(sorted(positions))


def highlight_runs(text: str, positions: tuple[int, ...]) -> list[tuple[str, bool]]:
    """`text` cut into (piece, highlighted) runs, highlighted where `positions` say; pieces join back to `text`."""
    runs: list[tuple[str, bool]] = []
    start = 0  # where the text not yet in `runs` begins
    run_start = run_end = -1  # the highlighted run being grown
    for index in sorted({position for position in positions if 0 <= position < len(text)}):
        if index == run_end:
            run_end += 1
            continue
        if run_start >= 0:
            runs.append((text[run_start:run_end], True))
            start = run_end
        if index > start:
            runs.append((text[start:index], False))
        run_start, run_end = index, index + 1
    if run_start >= 0:
        runs.append((text[run_start:run_end], True))
        start = run_end
    if start < len(text):
        runs.append((text[start:], False))
    return runs

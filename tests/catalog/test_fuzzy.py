"""sessdex.catalog.tui.fuzzy: matching, alignment choice, scores and highlight runs."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from sessdex.catalog.tui.fuzzy import (
    FuzzyMatch,
    fold,
    fuzzy_match,
    highlight_positions,
    highlight_runs,
    is_word_start,
    normalize_query,
    score_positions,
)


def spelled(text: str, match: FuzzyMatch) -> str:
    return "".join(text[index] for index in match.positions)


def test_empty_query_matches_everything_without_positions() -> None:
    assert fuzzy_match("", "anything") == FuzzyMatch(0, ())
    assert fuzzy_match("   ", "") == FuzzyMatch(0, ())


def test_no_match() -> None:
    assert fuzzy_match("xyz", "fix the parser") is None
    assert fuzzy_match("rp", "parser") is None
    assert fuzzy_match("rsx", "parser x") is not None
    assert fuzzy_match("pz", "parser") is None


def test_substring_is_case_insensitive_and_contiguous() -> None:
    match = fuzzy_match("PARSE", "Fix the parser")
    assert match is not None and match.positions == (8, 9, 10, 11, 12)


def test_word_start_occurrence_beats_an_earlier_inner_one() -> None:
    match = fuzzy_match("api", "rapid api gateway")
    assert match is not None and match.positions == (6, 7, 8)


def test_subsequence_prefers_word_starts_over_the_tightest_window() -> None:
    # The tightest window is "a b" inside "alpha beta" (a@4, b@6); word starts give a@0, b@6.
    match = fuzzy_match("ab", "alpha beta")
    assert match is not None and match.positions == (0, 6)


def test_query_terms_match_in_any_order() -> None:
    text = "fix the parser"
    exact = fuzzy_match("the parser", text)
    assert exact is not None and spelled(text, exact) == "theparser" and exact.positions[0] == 4
    loose = fuzzy_match("fix  parser", text)
    assert loose is not None and spelled(text, loose) == "fixparser"
    reordered = fuzzy_match("parser fix", text)
    assert reordered is not None and spelled(text, reordered) == "fixparser"
    assert fuzzy_match("parser zzz", text) is None


def test_consecutive_and_word_start_matches_score_higher() -> None:
    tight = fuzzy_match("abc", "abc xxxxxx")
    scattered = fuzzy_match("abc", "xaxbxcxxxx")
    assert tight is not None and scattered is not None and tight.score > scattered.score
    at_start = fuzzy_match("pa", "parse")
    inside = fuzzy_match("pa", "xpase")
    assert at_start is not None and inside is not None and at_start.score > inside.score


def test_word_starts() -> None:
    text = "fooBar baz_qux x2"
    starts = [index for index in range(len(text)) if is_word_start(text, index)]
    assert [text[index] for index in starts] == ["f", "B", "b", "q", "x", "2"]


def test_fold_keeps_every_index() -> None:
    text = "İstanbul Straße"
    folded = fold(text)
    assert len(folded) == len(text)
    assert folded.endswith("straße")
    match = fuzzy_match("stan", text)
    assert match is not None and spelled(text, match) == "stan"


def test_normalize_query() -> None:
    assert normalize_query("  Fix \t The   PARSER ") == "fix the parser"


def test_score_of_gaps() -> None:
    assert score_positions("abcd", (0, 1)) > score_positions("abcd", (0, 2)) > score_positions("abcd", (0, 3))


def test_highlight_runs() -> None:
    assert highlight_runs("parser", (0, 1, 4)) == [("pa", True), ("rs", False), ("e", True), ("r", False)]
    assert highlight_runs("abc", ()) == [("abc", False)]
    assert highlight_runs("", ()) == []


@given(st.text(alphabet="abcXYZ _-é", min_size=1, max_size=30), st.data())
def test_every_subsequence_matches_and_is_highlighted(text: str, data: st.DataObject) -> None:
    indices = sorted(data.draw(st.sets(st.integers(0, len(text) - 1), min_size=1, max_size=6)))
    query = "".join(text[index] for index in indices).replace(" ", "")
    match = fuzzy_match(query, text)
    assert match is not None
    if query.strip():
        assert list(match.positions) == sorted(set(match.positions))
        assert fold(spelled(text, match)).replace(" ", "") == fold(query).replace(" ", "")
    runs = highlight_runs(text, match.positions)
    assert "".join(piece for piece, _ in runs) == text
    assert sum(len(piece) for piece, marked in runs if marked) == len(match.positions)


@given(st.text(alphabet="abcXYZ _-éİ", max_size=30), st.text(alphabet="abcxyz _-éi", min_size=1, max_size=5))
def test_highlight_positions_are_those_of_the_best_match(text: str, query: str) -> None:
    needle = normalize_query(query)
    if needle:
        match = fuzzy_match(query, text)
        assert highlight_positions(needle, text, fold(text)) == (match.positions if match is not None else ())

"""SessionSummary: the fold behind list() and the catalog, and its resumable state."""

from __future__ import annotations

import itertools
import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from sessdex.core.summary import NO_MESSAGES, SessionSummary, message_text, session_info
from tests.core.sessiontree import assistant, header, message, user


def fold(values: list[Any]) -> tuple[SessionSummary, list[str]]:
    summary = SessionSummary()
    texts = [text for value in values if (text := summary.feed(value)) is not None]
    return summary, texts


def test_counts_every_message_but_only_user_and_assistant_text_is_searchable() -> None:
    values = [header("s1", "/p"), user("hello"), assistant("hi there"),
              message("toolResult", [{"type": "text", "text": "tool output"}], "t0000001"),
              message("assistant", [{"type": "toolCall", "id": "c", "name": "read", "arguments": {}}], "a0000002"),
              {"type": "model_change", "id": "m0000001", "parentId": None, "model": "openai/gpt-4o"}]
    summary, texts = fold(values)
    assert summary.message_count == 4
    assert texts == ["hello", "hi there"]
    assert summary.first_message == "hello"
    assert summary.entry_count == 5
    assert summary.last_entry_id == "m0000001"
    assert summary.last_model == "openai/gpt-4o"


def test_text_blocks_are_joined_with_spaces_and_other_blocks_ignored() -> None:
    content = [{"type": "text", "text": "one"}, {"type": "image", "data": "x"}, {"type": "text", "text": "two"}]
    assert message_text({"role": "user", "content": content}) == "one two"
    assert message_text({"role": "user", "content": None}) == ""


def test_first_message_skips_users_without_text_and_assistants() -> None:
    values = [header("s1", "/p"), assistant("first reply", parent=None),
              message("user", [{"type": "image", "data": "x"}], "u0000009"), user("real question")]
    summary, _ = fold(values)
    assert summary.first_message == "real question"


def test_title_prefers_title_line_then_header_then_latest_compaction_summary() -> None:
    compaction = {"type": "compaction", "id": "c1", "parentId": None, "summary": "long", "shortSummary": "older"}
    later = {**compaction, "id": "c2", "shortSummary": "newer"}
    assert fold([header("s", "/p"), compaction, later])[0].title == "newer"
    assert fold([header("s", "/p", title="Header"), later])[0].title == "Header"
    titled = fold([{"type": "title", "title": "From slot"}, header("s", "/p", title="Header"), later])[0]
    assert titled.title == "From slot"
    assert titled.header_title == "From slot"
    assert fold([{"type": "title", "title": ""}, header("s", "/p", title="Header")])[0].title == "Header"


def test_invalid_first_record_makes_the_whole_file_headerless() -> None:
    summary, texts = fold([{"type": "message"}, header("s", "/p"), user("q")])
    assert not summary.header_valid
    assert texts == [] and summary.message_count == 0
    assert not fold([{"type": "session", "id": 12}])[0].header_valid
    assert not fold([{"type": "title", "title": "x"}, {"type": "title", "title": "y"}, header("s", "/p")])[0].header_valid


def test_non_object_records_and_broken_messages_never_raise() -> None:
    summary, texts = fold([header("s", "/p"), None, 42, "text", [1], {"type": "message"},
                           {"type": "message", "message": None}, user("kept")])
    assert texts == ["kept"]
    assert summary.message_count == 3
    assert summary.entry_count == 7


def test_usage_of_assistant_messages_is_summed() -> None:
    usage = {"input": 10, "output": 5, "cacheRead": 2, "cacheWrite": 1, "cost": {"total": 0.5}}
    summary, _ = fold([header("s", "/p"), assistant("a", usage=usage), assistant("b", "a0000002", usage=usage),
                       assistant("c", "a0000003", usage={"input": "bad", "cost": {"total": True}})])
    assert (summary.input_tokens, summary.output_tokens) == (20, 10)
    assert (summary.cache_read_tokens, summary.cache_write_tokens) == (4, 2)
    assert summary.cost_total == 1.0
    assert summary.last_model == "anthropic/claude-test"


def test_session_info_uses_header_timestamp_and_given_mtime() -> None:
    summary, texts = fold([header("s", "/p", parentSession="older")])
    info = session_info(Path("/x.jsonl"), summary, " ".join(texts), 1_738_368_000_123.9)
    assert info.created == datetime(2025, 1, 1, tzinfo=UTC)
    assert info.modified == datetime(2025, 2, 1, 0, 0, 0, 123_000, tzinfo=UTC)
    assert info.first_message == NO_MESSAGES and info.title is None
    assert info.parent_session == "older"
    assert "title" not in info.to_agent_json()
    broken = fold([header("s", "/p", timestamp="not a date")])[0]
    assert session_info(Path("/x"), broken, "", 1_738_368_000_000).created == datetime(2025, 2, 1, tzinfo=UTC)


_records = st.lists(st.one_of(
    st.builds(lambda text, i: user(text, f"u{i:07d}"), st.text(max_size=5), st.integers(0, 99)),
    st.builds(lambda text, i: assistant(text, f"a{i:07d}", usage={"input": i, "output": 1, "cost": {"total": 0.25}}),
              st.text(max_size=5), st.integers(0, 99)),
    st.builds(lambda s: {"type": "compaction", "id": "c", "shortSummary": s}, st.text(max_size=3)),
    st.builds(lambda m: {"type": "model_change", "id": "m", "model": m}, st.sampled_from(["a/b", "c/d"])),
    st.sampled_from([None, 3, "x", [1], {"type": "custom"}]),
), max_size=12)


@settings(max_examples=150, deadline=None)
@given(prefix=st.sampled_from([[], [{"type": "title", "title": "T"}], [{"type": "junk"}]]), body=_records,
       split=st.integers(0, 14))
def test_resuming_from_stored_state_equals_one_fold(prefix: list[Any], body: list[Any], split: int) -> None:
    values = prefix + [header("s", "/p", title="H")] + body
    whole, whole_texts = fold(values)
    split = min(split, len(values))
    first, first_texts = fold(values[:split])
    state = json.loads(json.dumps(first.to_state()))
    resumed = SessionSummary.from_state(state)
    rest_texts = [text for value in values[split:] if (text := resumed.feed(value)) is not None]
    assert resumed.to_state() == whole.to_state()
    assert first_texts + rest_texts == whole_texts


_figures = st.one_of(st.integers(-5, 5), st.floats(allow_nan=True, allow_infinity=True), st.booleans(), st.none(),
                     st.just("12"))


@settings(max_examples=200, deadline=None)
@given(prefix=st.sampled_from([[], [{"type": "title", "title": "T"}], [{"type": "junk"}]]), body=_records,
       usages=st.lists(st.fixed_dictionaries({"input": _figures, "output": _figures,
                                              "cost": st.fixed_dictionaries({"total": _figures})}), max_size=3),
       cuts=st.lists(st.integers(0, 20), max_size=4))
def test_feeding_records_in_any_groups_equals_feeding_them_one_by_one(prefix: list[Any], body: list[Any],
                                                                      usages: list[dict[str, Any]],
                                                                      cuts: list[int]) -> None:
    values = prefix + [header("s", "/p")] + body + [assistant("u", f"a{n:07d}", usage=usage)
                                                    for n, usage in enumerate(usages)]
    one_by_one, texts = fold(values)
    grouped, grouped_texts = SessionSummary(), []
    bounds = sorted({min(cut, len(values)) for cut in cuts} | {0, len(values)})
    for start, end in itertools.pairwise(bounds):
        grouped_texts += grouped.feed_all(values[start:end])
    assert grouped_texts == texts
    assert json.dumps(grouped.to_state()) == json.dumps(one_by_one.to_state())  # NaN-safe, and int stays int

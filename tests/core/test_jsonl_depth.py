"""The depth check of the lenient JSONL reader: its cheap bracket count never lets a too-deep line through."""

from __future__ import annotations

import orjson

from sessdex.core.jsonl import MAX_NESTING, parse_jsonl, too_deep


def test_a_long_shallow_line_full_of_brackets_in_strings_is_not_too_deep() -> None:
    line = orjson.dumps({"text": "[{" * 2000, "items": [[1], {"a": [2]}]})
    assert not too_deep(line, orjson.loads(line))
    assert not too_deep(memoryview(line), orjson.loads(line))
    assert len(parse_jsonl(line + b"\n").values) == 1


def test_a_line_nested_one_level_too_deep_is_a_bad_line_as_bytes_and_as_a_view() -> None:
    deep = b"[" * (MAX_NESTING + 1) + b"]" * (MAX_NESTING + 1)
    just = b"[" * MAX_NESTING + b"]" * MAX_NESTING
    assert too_deep(deep, orjson.loads(deep)) and too_deep(memoryview(deep), orjson.loads(deep))
    assert not too_deep(just, orjson.loads(just))
    parsed = parse_jsonl(deep + b"\n" + just + b"\n")
    assert (len(parsed.values), parsed.bad_records) == (1, 1)


def test_a_scalar_line_is_never_walked() -> None:
    line = orjson.dumps("[" * 5000)
    assert not too_deep(line, orjson.loads(line))


def test_depth_is_told_alike_for_values_with_few_children_and_with_many() -> None:
    """A value with few children in all is walked; one with many (a wide array beside the deep part) is told by
    its bracket count and then walked: both ways, one level too deep is a bad line and the limit itself is not."""
    for width in (0, 5000):
        for depth, bad in ((MAX_NESTING + 1, True), (MAX_NESTING, False)):
            nested: object = []
            for _ in range(depth - 2):  # with the dict around it: `depth` levels
                nested = [nested]
            value = {"wide": list(range(width)), "deep": nested}  # the dict itself is one more level
            value = value if width else {"deep": nested}
            line = orjson.dumps(value)
            assert too_deep(line, orjson.loads(line)) is bad, (width, depth)
            assert too_deep(memoryview(line), orjson.loads(line)) is bad, (width, depth)

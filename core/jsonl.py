"""Lenient JSONL reading: one JSON value per line, bad lines skipped and counted, torn tails dropped.

The rules follow the agent's streaming parser as the conformance cases record it: a value may span
lines, only the first value of a line is kept, and after a syntax error reading resumes on the line
after the error. Well-formed lines take the orjson fast path; only damaged regions use the slow path.

A record that the agent's other readers cannot hold is a bad line too, so one odd line never fails a
command about the whole file: a value nested deeper than MAX_NESTING, or an integer outside 64 bits
(orjson refuses both; the stdlib fallback would recurse or build huge ints). A UTF-8 byte order mark
at the start of a file's bytes is ignored, as the agent's file reader ignores it.
"""

from __future__ import annotations

import functools
import json
import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any, NamedTuple

import orjson

_WHITESPACE = b" \t\r\n"
UTF8_BOM = b"\xef\xbb\xbf"
# Deeper records are bad lines: orjson writes at most this depth (the CLI's JSON output, the session
# writer), and every later step (size control, blob resolution) stays far from Python's recursion limit.
MAX_NESTING = 253
_INT64_MIN, _UINT64_MAX = -(1 << 63), (1 << 64) - 1
# The longest line any reader holds: longer lines are skipped and counted as bad lines, so memory stays
# bounded whatever a file holds (a sparse file of zeros is one endless "line"). The session writer caps each
# persisted text at MAX_PERSIST_CHARS and moves images out to blobs, so real entries stay far below this.
MAX_LINE_BYTES = 32 << 20


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def _int_within_64_bits(text: str) -> int:
    value = int(text)
    if not _INT64_MIN <= value <= _UINT64_MAX:
        raise ValueError("integer beyond 64 bits")
    return value


_DECODER = json.JSONDecoder(parse_constant=_reject_constant, parse_int=_int_within_64_bits)


def nesting_depth(value: Any, stop_above: int | None = None) -> int:
    """How deeply arrays and objects nest inside `value` (a scalar is 0), without recursion.

    With `stop_above`, the walk ends as soon as the depth exceeds it (the answer is then that depth).
    """
    deepest = 0
    stack = [(value, 1)] if isinstance(value, (dict, list)) else []
    while stack:
        node, depth = stack.pop()
        if depth > deepest:
            deepest = depth
            if stop_above is not None and depth > stop_above:
                return depth
        for child in (node.values() if type(node) is dict else node):
            if type(child) is dict or type(child) is list:
                stack.append((child, depth + 1))
    return deepest


# How many children too_deep walks before it counts a line's brackets instead: an entry of the agent has a few dozen
# (its keys, content blocks, usage figures), however long the texts in it.
_WALKED_CHILDREN = 256


def _depth_of_small(value: Any) -> int | None:
    """The nesting depth of the container `value` when it has at most _WALKED_CHILDREN children in all, else None."""
    deepest = 0
    budget = _WALKED_CHILDREN
    stack = [(value, 1)]
    while stack:
        node, depth = stack.pop()
        if depth > deepest:
            deepest = depth
        children = node.values() if type(node) is dict else node
        budget -= len(children)
        if budget < 0:
            return None
        for child in children:
            if type(child) is dict or type(child) is list:
                stack.append((child, depth + 1))
    return deepest


def too_deep(line: bytes | memoryview, value: Any) -> bool:
    """True when `value`, parsed from `line`, nests deeper than MAX_NESTING: such a line is a bad line.

    orjson reads up to 1024 levels, so a reader with its own orjson fast path must ask this too to
    agree with `parse_jsonl`. Short lines cannot be that deep, and are not walked. A value with few children in all
    (an entry with long texts) is walked at once, which costs less than reading a long line's bytes; otherwise a
    line with at most MAX_NESTING opening brackets (each level opens one) cannot be that deep, which a byte count
    tells at C speed, and only the rare line above that is walked whole.
    """
    if len(line) <= 2 * MAX_NESTING or type(value) not in (dict, list):
        return False
    depth = _depth_of_small(value)
    if depth is not None:
        return depth > MAX_NESTING
    data = line if type(line) is bytes else bytes(line)
    if data.count(b"{") + data.count(b"[") <= MAX_NESTING:
        return False
    return nesting_depth(value, MAX_NESTING) > MAX_NESTING


@dataclass
class ParsedJsonl:
    """The values read from a JSONL buffer and how many malformed records were skipped."""

    values: list[Any] = field(default_factory=list)
    bad_records: int = 0
    torn_tail: bool = False


def parse_line(line: bytes) -> tuple[bool, Any]:
    """Parse one complete line; `(True, value)` when it is a single well-formed JSON value we can hold."""
    try:
        value = orjson.loads(line)
    except orjson.JSONDecodeError:
        return False, None
    if too_deep(line, value):
        return False, None
    return True, value


def parse_jsonl(data: bytes | str) -> ParsedJsonl:
    """Read every value of a JSONL buffer leniently (see the module docstring for the rules).

    `data` is a file's bytes (a leading UTF-8 BOM is skipped) or already decoded text (taken as given).
    """
    if isinstance(data, str):
        buf, pos = data.encode("utf-8", "surrogatepass"), 0
    else:
        # A file's bytes: a leading byte order mark is the file's encoding mark, not content (the agent's
        # file reader drops it). Text is taken as given: the agent's parser rejects a BOM inside text.
        buf, pos = data, (len(UTF8_BOM) if data.startswith(UTF8_BOM) else 0)
    result = ParsedJsonl()
    size = len(buf)
    while pos < size:
        newline = buf.find(b"\n", pos)
        line_end = size if newline < 0 else newline
        if line_end - pos > MAX_LINE_BYTES:
            result.bad_records += 1
            pos = line_end + 1
            continue
        line = buf[pos:line_end]
        if not line.strip(_WHITESPACE):
            pos = line_end + 1
            continue
        ok, value = parse_line(line)
        if ok:
            result.values.append(value)
            pos = line_end + 1
            continue
        pos = _parse_damaged(buf, pos, result)
    return result


def _parse_damaged(buf: bytes, pos: int, result: ParsedJsonl) -> int:
    """Slow path at a line orjson rejected: decode one value (possibly spanning lines), return the next position."""
    size = len(buf)
    window_end = buf.find(b"\n", pos)
    window_end = size if window_end < 0 else window_end
    while True:
        text = buf[pos:window_end].decode("utf-8", "replace")
        start = len(text) - len(text.lstrip(" \t\r\n"))
        try:
            value, end = _DECODER.raw_decode(text, start)
            if nesting_depth(value, MAX_NESTING) > MAX_NESTING:
                raise ValueError("nested too deeply")
        except (json.JSONDecodeError, ValueError, RecursionError) as exc:
            # NaN/Infinity, huge ints and deep nesting have no position: blame the value's start.
            error_at = exc.pos if isinstance(exc, json.JSONDecodeError) else start
            runs_past_window = error_at >= len(text.rstrip(" \t\r\n"))
            if runs_past_window and window_end < size:
                # The value may continue on the next lines: widen the window and try again.
                next_end = buf.find(b"\n", window_end + 1)
                window_end = size if next_end < 0 else next_end
                continue
            if window_end >= size and runs_past_window:
                result.torn_tail = True
            result.bad_records += 1
            error_byte = pos + len(text[:error_at].encode("utf-8", "surrogatepass"))
            resume = buf.find(b"\n", error_byte)
            return size if resume < 0 else resume + 1
        result.values.append(value)
        end_byte = pos + len(text[:end].encode("utf-8", "surrogatepass"))
        resume = buf.find(b"\n", end_byte)
        return size if resume < 0 else resume + 1


def dumps_line(value: Any) -> bytes:
    """Serialize one record as a JSONL line (compact, newline-terminated), as the agent writes them."""
    try:
        return orjson.dumps(value) + b"\n"
    except TypeError:
        # orjson refuses lone surrogates that a lenient read can produce; the stdlib keeps them escaped.
        return json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode("utf-8", "surrogatepass") + b"\n"


READ_CHUNK_BYTES = 4 << 20  # what a streaming read takes at once: memory is this plus one line at most

# What LineBlock.skipped says of a line over MAX_LINE_BYTES that was left out without being held.
SKIPPED_LINE = 1  # it ended with a newline: `offset` is where the bytes after it start
SKIPPED_TAIL = 2  # it ran to the end of what was read (no newline): `offset` is that end


class LineBlock(NamedTuple):
    """A run of whole lines of a file (`data`, from `offset`), or the place of one over-long line left out."""

    offset: int
    data: bytes  # whole lines; only the last block read may end without a newline; b"" when `skipped`
    skipped: int = 0  # 0, SKIPPED_LINE or SKIPPED_TAIL


def line_blocks(read: Callable[[int], bytes], offset: int = 0, limit: int | None = None,
                chunk_bytes: int = READ_CHUNK_BYTES) -> Iterator[LineBlock]:
    """The one chunked reader of JSONL files: `read(n)` (a file's `read`, or os.read on a descriptor) called for at
    most `chunk_bytes` at a time, from file offset `offset`, at most `limit` bytes in all; the bytes come back as
    blocks of whole lines, so memory stays bounded by the chunk and the longest line a reader may hold.

    A line longer than MAX_LINE_BYTES (and than a chunk) is never held: its bytes are dropped up to its newline and
    its place is yielded instead (`skipped`), for the caller to count as a bad line; one that fits in a chunk comes
    inside its block, where the parsers skip and count it as well. What follows the last newline is yielded
    last as it is (a torn last line, or one still being written). Opening the file (only regular files, without
    blocking) is the caller's: see sessdex.core.regular_files.
    """
    remaining = limit
    buffer = b""
    skipping = False  # inside a line over the cap: its bytes are dropped up to its newline
    while remaining is None or remaining > 0:
        data = read(chunk_bytes if remaining is None else min(chunk_bytes, remaining))
        if not data:
            break
        if remaining is not None:
            remaining -= len(data)
        if skipping:
            newline = data.find(b"\n")
            if newline < 0:
                offset += len(data)
                continue
            offset += newline + 1
            data, skipping = data[newline + 1:], False
            yield LineBlock(offset, b"", SKIPPED_LINE)
        buffer = buffer + data if buffer else data
        cut = buffer.rfind(b"\n") + 1
        if cut:
            yield LineBlock(offset, buffer[:cut] if cut < len(buffer) else buffer)
            offset += cut
            buffer = buffer[cut:]
        if len(buffer) > MAX_LINE_BYTES:
            offset += len(buffer)
            buffer, skipping = b"", True
    if skipping:
        yield LineBlock(offset, b"", SKIPPED_TAIL)
    elif buffer:
        yield LineBlock(offset, buffer)


def stream_jsonl(fd: int, limit: int | None = None, chunk_bytes: int = READ_CHUNK_BYTES) -> Iterator[ParsedJsonl]:
    """Read the JSONL of the descriptor `fd` (from its offset, at most `limit` bytes) by chunks (`line_blocks`): the
    values of each run of complete lines, parsed by `parse_jsonl`, so memory stays bounded whatever the file's size.

    The values and bad lines are those `parse_jsonl` finds in the whole bytes: a line longer than MAX_LINE_BYTES
    is skipped without being held and counted as one bad line; a damaged value that may continue on the next
    lines waits for them; a BOM counts only at the start of the file.
    """
    held = b""  # whole lines in which a damaged value may continue on the next lines
    first = True

    def parse(block: bytes) -> ParsedJsonl:
        # A BOM is the file's mark only at its start; elsewhere it is content (a leading newline keeps it).
        return parse_jsonl(block if first or not block.startswith(UTF8_BOM) else b"\n" + block)

    for block in line_blocks(functools.partial(os.read, fd), limit=limit, chunk_bytes=chunk_bytes):
        if block.skipped:
            if held:
                yield parse(held)
                held, first = b"", False
            first = False
            yield ParsedJsonl(bad_records=1)
            continue
        data = held + block.data if held else block.data
        parsed = parse(data)
        if parsed.torn_tail and len(data) <= MAX_LINE_BYTES and data.endswith(b"\n"):
            held = data  # a damaged value runs to the block's end: decided once more lines are in
            continue
        held, first = b"", False
        yield parsed
    if held:
        yield parse(held)

"""Lenient JSONL reading (S3): one JSON value per line, bad lines skipped and counted, torn tails dropped.

The rules follow the agent's streaming parser as the conformance cases record it: a value may span
lines, only the first value of a line is kept, and after a syntax error reading resumes on the line
after the error. Well-formed lines take the orjson fast path; only damaged regions use the slow path.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

import orjson

_WHITESPACE = b" \t\r\n"


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


_DECODER = json.JSONDecoder(parse_constant=_reject_constant)


@dataclass
class ParsedJsonl:
    """The values read from a JSONL buffer and how many malformed records were skipped."""

    values: list[Any] = field(default_factory=list)
    bad_records: int = 0
    torn_tail: bool = False


def parse_line(line: bytes) -> tuple[bool, Any]:
    """Parse one complete line; `(True, value)` when it is a single well-formed JSON value."""
    try:
        return True, orjson.loads(line)
    except orjson.JSONDecodeError:
        return False, None


def parse_jsonl(data: bytes | str) -> ParsedJsonl:
    """Read every value of a JSONL buffer leniently (see the module docstring for the rules)."""
    buf = data.encode("utf-8", "surrogatepass") if isinstance(data, str) else data
    result = ParsedJsonl()
    pos, size = 0, len(buf)
    while pos < size:
        newline = buf.find(b"\n", pos)
        line_end = size if newline < 0 else newline
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
        except (json.JSONDecodeError, ValueError) as exc:
            # NaN/Infinity are rejected by parse_constant without a position: blame the value's start.
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

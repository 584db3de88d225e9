"""Where a session file holds secrets: entry id, field path and kind of each finding, never the secret itself.

The file is read raw (no blob resolution: blobs hold images) in blocks of whole lines, so memory stays bounded by the
block and the longest line (a line over MAX_LINE_BYTES is skipped, as every reader skips it); a line that is not
JSON is skipped. One pass of the matcher over each block finds the places a rule may match (secret_places), and only
the lines holding one are parsed: most of a session is never parsed at all.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO

import orjson

from sessdex.catalog.export.lines import line_blocks
from sessdex.catalog.secrets import find_secrets, keywords_in, secret_places
from sessdex.core.jsonl import MAX_LINE_BYTES
from sessdex.core.regular_files import open_regular


@dataclass(slots=True, frozen=True)
class SecretFinding:
    """One secret found in a session: the file, the entry id (or "header"), the field path and the rule's kind."""

    path: Path
    entry_id: str
    field: str
    kind: str

    def as_json(self) -> dict[str, str]:
        return {"path": str(self.path), "entryId": self.entry_id, "field": self.field, "kind": self.kind}


def _field(place: str, key: Any, in_list: bool) -> str:
    """The field path of a container's child: `message.content` then `message.content[0]`."""
    if in_list:
        return f"{place}[{key}]"
    return f"{place}.{key}" if place else str(key)


def _strings(value: Any) -> Iterator[tuple[str, Any, bool, str]]:
    """Every string inside the container `value`, in document order, iteratively: the field path of the container
    holding it, its key (or index, when `in_list`) there, and the string. A string's own path is only written out
    for a finding."""
    stack: list[tuple[Iterator[tuple[Any, Any]], str, bool]] = []

    def opened(container: Any, place: str) -> tuple[Iterator[tuple[Any, Any]], str, bool]:
        is_list = isinstance(container, list)
        return (iter(enumerate(container) if is_list else container.items()), place, is_list)

    stack.append(opened(value, ""))
    while stack:
        children, place, in_list = stack[-1]
        for key, child in children:
            if isinstance(child, str):
                yield place, key, in_list, child
            elif isinstance(child, (dict, list)):
                stack.append(opened(child, _field(place, key, in_list)))
                break
        else:
            stack.pop()


def scan_record(path: Path, record: Any, keywords: tuple[str, ...] | None = None) -> list[SecretFinding]:
    """Findings in one parsed JSONL record (`keywords`: the only rule keywords it can hold, when known)."""
    if not isinstance(record, dict):
        return []
    entry_id = record.get("id") if record.get("type") != "session" else "header"
    entry_id = str(entry_id) if entry_id is not None else "?"
    found = []
    for place, key, in_list, text in _strings(record):
        for match in find_secrets(text, keywords):
            found.append(SecretFinding(path, entry_id, _field(place, key, in_list), match.kind))
    return found


def _line_around(block: bytes, at: int) -> tuple[int, int]:
    """(start, end) of the line of `block` holding the byte before offset `at`: `end` is at its newline."""
    newline = block.find(b"\n", at)
    return block.rfind(b"\n", 0, at) + 1, len(block) if newline < 0 else newline


def scan_session_file(path: Path) -> list[SecretFinding] | None:
    """Every finding in the session file at `path`, or None when it is not a readable regular file (or reading it
    fails part-way: the caller counts it, and goes on with the other files)."""
    try:
        fd = open_regular(path, follow_symlinks=False)
    except OSError:
        return None
    try:
        with open(fd, "rb") as handle:
            return _scan_lines(path, handle)
    except OSError:
        return None


def _scan_lines(path: Path, handle: BinaryIO) -> list[SecretFinding]:
    """The findings in the open session file `handle` (at `path`)."""
    found: list[SecretFinding] = []
    for _offset, block in line_blocks(handle):
        # One pass of the matcher over the block says which lines a rule may match in: only those are parsed
        # and searched (most lines of a session hold no keyword, or hold it as a mere word).
        done = 0
        for place in secret_places(block):
            if place <= done:
                continue  # (a place of a line already scanned)
            start, done = _line_around(block, place)
            if done - start > MAX_LINE_BYTES:
                continue  # (skipped, as every reader skips it)
            line = block[start:done]
            keywords = keywords_in(line)
            if not keywords or not line.strip():
                continue
            try:
                record = orjson.loads(line)
            except orjson.JSONDecodeError:
                continue
            found.extend(scan_record(path, record, keywords))
    return found

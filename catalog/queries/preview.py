"""What the picker's preview pane shows of a session: its user and assistant messages as text, read from the
session file on demand (in a worker thread, once per file), and the lines of them that match a query."""

from __future__ import annotations

import os
import re
from typing import NamedTuple

PREVIEW_MAX_BYTES = 8 * 1024 * 1024  # past this, only the file's end is read: the last messages are what shows
_WHITESPACE = re.compile(r"\s+")
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")  # never sent to the terminal


class PreviewMessage(NamedTuple):
    """One message as the preview shows it: who spoke, and its text (whitespace collapsed)."""

    role: str
    text: str


def load_messages(path: str) -> list[PreviewMessage]:
    """The user and assistant messages of the session file at `path`, in file order ([] when unreadable).

    Reads only regular files and at most the last PREVIEW_MAX_BYTES of one; damaged lines are skipped.
    """
    from sessdex.core.jsonl import parse_line
    from sessdex.core.summary import message_text

    try:
        descriptor = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    except OSError:
        return []
    with os.fdopen(descriptor, "rb") as handle:
        info = os.fstat(handle.fileno())
        if not (info.st_mode & 0o170000 == 0o100000):  # regular files only
            return []
        if info.st_size > PREVIEW_MAX_BYTES:
            handle.seek(info.st_size - PREVIEW_MAX_BYTES)
            handle.readline()  # drop the partial line
        data = handle.read()
    messages: list[PreviewMessage] = []
    for line in data.splitlines():
        ok, record = parse_line(line)
        if not ok or not isinstance(record, dict) or record.get("type") != "message":
            continue
        message = record.get("message")
        role = message.get("role") if isinstance(message, dict) else None
        if role not in ("user", "assistant"):
            continue
        text = _CONTROL.sub(" ", _WHITESPACE.sub(" ", message_text(message))).strip()
        if text:
            messages.append(PreviewMessage(role, text))
    return messages


def matching_lines(messages: list[PreviewMessage], terms: list[str], limit: int = 5,
                   context: int = 60) -> list[tuple[str, list[tuple[int, int]]]]:
    """Up to `limit` excerpts of `messages` (newest first) holding every term of `terms`, with the spans to mark."""
    if not terms:
        return []
    found: list[tuple[str, list[tuple[int, int]]]] = []
    for message in reversed(messages):
        lowered = message.text.lower()
        if not all(term in lowered for term in terms):
            continue
        first = lowered.find(terms[0])
        start = max(0, first - context // 2)
        excerpt = ("…" if start else "") + message.text[start:start + 2 * context]
        excerpt_lower = excerpt.lower()
        spans = []
        for term in terms:
            position = excerpt_lower.find(term)
            while position >= 0:
                spans.append((position, position + len(term)))
                position = excerpt_lower.find(term, position + len(term))
        found.append((excerpt, sorted(spans)))
        if len(found) >= limit:
            break
    return found

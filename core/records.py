"""The shape of a session file's records (S2): header validation and the optional leading `title` line."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

CURRENT_SESSION_VERSION = 3

ENTRY_TYPES = frozenset({
    "message", "thinking_level_change", "model_change", "compaction", "branch_summary", "custom",
    "custom_message", "label", "ttsr_injection", "session_init", "mode_change",
})


def is_session_header(value: Any) -> bool:
    """A valid header is an object with `type == "session"` and a string `id`."""
    return isinstance(value, dict) and value.get("type") == "session" and isinstance(value.get("id"), str)


def is_title_line(value: Any) -> bool:
    """Newer agents may write a `{"type":"title",...}` line before the header."""
    return isinstance(value, dict) and value.get("type") == "title"


@dataclass
class SessionRecords:
    """A session file split into its optional title line, its header and its entries (file order)."""

    header: dict[str, Any]
    entries: list[Any] = field(default_factory=list)
    title_line: dict[str, Any] | None = None

    @property
    def title(self) -> str | None:
        """The session title: a non-empty title line wins over the header's `title`."""
        line_title = self.title_line.get("title") if self.title_line else None
        if isinstance(line_title, str) and line_title:
            return line_title
        title = self.header.get("title")
        return title if isinstance(title, str) else None


def split_session_records(values: list[Any]) -> SessionRecords | None:
    """Split parsed values into title line, header and entries; None when there is no valid header."""
    title_line = None
    rest = values
    if rest and is_title_line(rest[0]):
        title_line, rest = rest[0], rest[1:]
    if not rest or not is_session_header(rest[0]):
        return None
    return SessionRecords(header=rest[0], entries=list(rest[1:]), title_line=title_line)

"""Size control before persisting: long strings cut, transient fields dropped, line counts fixed."""

from __future__ import annotations

from typing import Any

MAX_PERSIST_CHARS = 500_000
TRUNCATION_NOTICE = "\n\n[Session persistence truncated large content]"
TRANSIENT_FIELDS = frozenset({"partialJson", "jsonlEvents"})


def utf16_length(text: str) -> int:
    """Length in UTF-16 code units, the unit the agent's limit counts in."""
    return len(text) + sum(1 for ch in text if ord(ch) > 0xFFFF)


def truncate_string(text: str) -> str:
    """Cut to exactly MAX_PERSIST_CHARS UTF-16 units including the notice, never splitting a surrogate pair."""
    if len(text) <= MAX_PERSIST_CHARS // 2 or utf16_length(text) <= MAX_PERSIST_CHARS:
        return text
    budget = MAX_PERSIST_CHARS - len(TRUNCATION_NOTICE)
    units = 0
    cut = 0
    for index, ch in enumerate(text):
        width = 2 if ord(ch) > 0xFFFF else 1
        if units + width > budget:
            cut = index
            break
        units += width
    return text[:cut] + TRUNCATION_NOTICE


def limit_sizes(value: Any) -> Any:
    """A copy of `value` fit for disk; the original (the in-memory entry) is left untouched."""
    if isinstance(value, str):
        return truncate_string(value)
    if isinstance(value, list):
        return [limit_sizes(item) for item in value]
    if isinstance(value, dict):
        result = {key: limit_sizes(item) for key, item in value.items() if key not in TRANSIENT_FIELDS}
        content = result.get("content")
        if "lineCount" in result and isinstance(content, str) and content is not value.get("content"):
            result["lineCount"] = content.count("\n") + 1
        return result
    return value

"""Migrations of old session files: v1 -> v2 (ids, parent chain, firstKeptEntryId), v2 -> v3 (hookMessage)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from sessdex.core.records import CURRENT_SESSION_VERSION


def migrate_session(header: dict[str, Any], entries: list[Any], new_entry_id: Callable[[], str]) -> bool:
    """Bring header and entries (mutated in place) to the current version; True when anything changed."""
    version = header.get("version")
    if not isinstance(version, int):
        version = 1
    if version >= CURRENT_SESSION_VERSION:
        return False
    if version < 2:
        _v1_to_v2(entries, new_entry_id)
    _v2_to_v3(entries)
    header["version"] = CURRENT_SESSION_VERSION
    return True


def _v1_to_v2(entries: list[Any], new_entry_id: Callable[[], str]) -> None:
    previous_id: str | None = None
    ids: list[str | None] = []
    for entry in entries:
        if not isinstance(entry, dict):
            ids.append(None)
            continue
        entry["id"] = new_entry_id()
        entry["parentId"] = previous_id
        previous_id = entry["id"]
        ids.append(entry["id"])
    for entry in entries:
        if isinstance(entry, dict) and entry.get("type") == "compaction" and "firstKeptEntryIndex" in entry:
            index = entry.pop("firstKeptEntryIndex")
            # The v1 index counts the header as line 0.
            if isinstance(index, int) and 1 <= index <= len(ids):
                entry["firstKeptEntryId"] = ids[index - 1]


def _v2_to_v3(entries: list[Any]) -> None:
    for entry in entries:
        if isinstance(entry, dict) and entry.get("type") == "message":
            message = entry.get("message")
            if isinstance(message, dict) and message.get("role") == "hookMessage":
                message["role"] = "custom"

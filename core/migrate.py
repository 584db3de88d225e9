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
    """Give every entry a new id and a parent chain; resolve compactions' `firstKeptEntryIndex` on the way.

    Indexes are resolved in the same pass that assigns ids, as the agent does: an index pointing at an earlier
    entry (or the compaction itself) gets that entry's new id, one pointing forward gets the id the later entry
    carried before the migration, and nothing when it carried none.
    """
    previous_id: str | None = None
    for entry in entries:
        if not isinstance(entry, dict):
            continue
        entry["id"] = new_entry_id()
        entry["parentId"] = previous_id
        previous_id = entry["id"]
        if entry.get("type") == "compaction" and "firstKeptEntryIndex" in entry:
            index = entry.pop("firstKeptEntryIndex")
            # The v1 index counts the header as line 0.
            target = entries[index - 1] if isinstance(index, int) and 1 <= index <= len(entries) else None
            kept_id = target.get("id") if isinstance(target, dict) else None
            if isinstance(kept_id, str):
                entry["firstKeptEntryId"] = kept_id


def _v2_to_v3(entries: list[Any]) -> None:
    for entry in entries:
        if isinstance(entry, dict) and entry.get("type") == "message":
            message = entry.get("message")
            if isinstance(message, dict) and message.get("role") == "hookMessage":
                message["role"] = "custom"

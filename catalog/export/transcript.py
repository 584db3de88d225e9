"""A session read for export: header, entries, the chosen path (or the whole tree) and per-model totals.

The file is read once, migrated in memory and blob-resolved, exactly as the agent would load it; nothing is written.
Optional redaction replaces every detected secret in every string of every entry, so all three output formats and
any other consumer see the same redacted data.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sessdex.core.blobs import BlobStore
from sessdex.core.context import path_to_leaf
from sessdex.core.runtime import SessionRuntime
from sessdex.core.secrets import redact, redact_value
from sessdex.core.session_manager import load_session_file


@dataclass(slots=True)
class ModelTotals:
    """Tokens and cost of one model's assistant messages."""

    messages: int = 0
    input: int = 0
    output: int = 0
    cache_read: int = 0
    cache_write: int = 0
    cost: float = 0.0


@dataclass(slots=True)
class Transcript:
    """What an export shows: the header, the entries in file order, and which of them are on the shown path."""

    path: Path
    header: dict[str, Any]
    entries: list[dict[str, Any]]
    shown: list[dict[str, Any]]
    leaf_id: str | None
    all_branches: bool = False
    title: str = ""
    models: dict[str, ModelTotals] = field(default_factory=dict)


def model_totals(entries: list[dict[str, Any]]) -> dict[str, ModelTotals]:
    """Per model: assistant message count, tokens and cost."""
    totals: dict[str, ModelTotals] = {}
    for entry in entries:
        message = entry.get("message") if entry.get("type") == "message" else None
        if not isinstance(message, dict) or message.get("role") != "assistant":
            continue
        name = str(message.get("model") or "unknown")
        item = totals.setdefault(name, ModelTotals())
        item.messages += 1
        usage: dict[str, Any] = message["usage"] if isinstance(message.get("usage"), dict) else {}
        for key, attr in (("input", "input"), ("output", "output"), ("cacheRead", "cache_read"),
                          ("cacheWrite", "cache_write")):
            amount = usage.get(key)
            if isinstance(amount, int):
                setattr(item, attr, getattr(item, attr) + amount)
        cost = usage.get("cost")
        total = cost.get("total") if isinstance(cost, dict) else None
        if isinstance(total, (int, float)):
            item.cost += float(total)
    return totals


def load_transcript(path: Path, runtime: SessionRuntime, *, leaf_id: str | None = None, all_branches: bool = False,
                    redact_secrets: bool = True) -> Transcript:
    """Read the session at `path` for export. `leaf_id` picks the branch (default: the last entry's)."""
    storage = runtime.file_storage()
    blobs = BlobStore(runtime.paths.blobs_dir, storage)
    loaded = load_session_file(path, storage, blobs, runtime.ids.entry_id)
    if loaded.header is None:
        raise ValueError(f"{path} is not a session file (no valid session header)")
    entries = [entry for entry in loaded.entries if isinstance(entry, dict)]
    header = dict(loaded.header)
    if redact_secrets:
        entries = [redact_value(entry) for entry in entries]
        header = redact_value(header)
    by_id = {entry["id"]: entry for entry in entries if isinstance(entry.get("id"), str)}
    if leaf_id is not None and leaf_id not in by_id:
        matches = [key for key in by_id if key.startswith(leaf_id)]
        if len(matches) != 1:
            raise LookupError(f"no single entry has an id starting with {leaf_id!r}")
        leaf_id = matches[0]
    leaf = leaf_id if leaf_id is not None else (entries[-1].get("id") if entries else None)
    shown = entries if all_branches else path_to_leaf(entries, leaf, by_id)
    title = ""
    for entry in entries:
        if entry.get("type") == "session_info" and isinstance(entry.get("name"), str):
            title = entry["name"]
    if not title and isinstance(header.get("title"), str):
        title = header["title"]
    if not title and isinstance(loaded.title_line, dict) and isinstance(loaded.title_line.get("title"), str):
        title = redact(loaded.title_line["title"]) if redact_secrets else loaded.title_line["title"]
    return Transcript(path, header, entries, shown, leaf if isinstance(leaf, str) else None, all_branches, title,
                      model_totals(shown))

"""What is sent to the model: `build_session_context` over the path from the root to a leaf."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from sessdex.core.runtime import ms_from_iso


def path_to_leaf(entries: list[dict[str, Any]], leaf_id: str | None,
                 by_id: dict[str, dict[str, Any]] | None = None) -> list[dict[str, Any]]:
    """Entries from the root to `leaf_id` (the last entry when the id is unknown); empty for a null leaf."""
    if leaf_id is None or not entries:
        return []
    index = by_id if by_id is not None else {e["id"]: e for e in entries if isinstance(e, dict) and "id" in e}
    leaf = index.get(leaf_id) or entries[-1]
    path: list[dict[str, Any]] = []
    seen: set[str] = set()
    node: dict[str, Any] | None = leaf
    while node is not None and node.get("id") not in seen:
        seen.add(str(node.get("id")))
        path.append(node)
        parent_id = node.get("parentId")
        node = index.get(parent_id) if parent_id is not None else None
    path.reverse()
    return path


def _entry_ms(entry: dict[str, Any]) -> int | None:
    return ms_from_iso(entry.get("timestamp", ""))


def custom_message_from_entry(entry: dict[str, Any]) -> dict[str, Any]:
    """A custom_message entry as the `custom` message the model sees."""
    message: dict[str, Any] = {"role": "custom"}
    for key in ("customType", "content", "display", "details"):
        if entry.get(key) is not None:
            message[key] = entry[key]
    # Only the writer adds "agent": an entry without an attribution gets none here.
    if entry.get("attribution") is not None:
        message["attribution"] = entry["attribution"]
    message["timestamp"] = _entry_ms(entry)
    return message


def branch_summary_message(entry: dict[str, Any]) -> dict[str, Any]:
    return {"role": "branchSummary", "summary": entry.get("summary"), "fromId": entry.get("fromId"),
            "timestamp": _entry_ms(entry)}


def compaction_summary_message(entry: dict[str, Any]) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "compactionSummary", "summary": entry.get("summary")}
    if entry.get("shortSummary") is not None:
        message["shortSummary"] = entry["shortSummary"]
    message["tokensBefore"] = entry.get("tokensBefore")
    message["timestamp"] = _entry_ms(entry)
    return message


def _as_message(entry: dict[str, Any]) -> dict[str, Any] | None:
    kind = entry.get("type")
    if kind == "message":
        return entry.get("message")
    if kind == "custom_message":
        return custom_message_from_entry(entry)
    if kind == "branch_summary" and entry.get("summary"):
        return branch_summary_message(entry)
    return None


def _messages(path: list[dict[str, Any]]) -> list[dict[str, Any]]:
    compaction_index = max((i for i, e in enumerate(path) if e.get("type") == "compaction"), default=None)
    if compaction_index is None:
        selected: Iterable[dict[str, Any]] = path
        prefix: list[dict[str, Any]] = []
    else:
        compaction = path[compaction_index]
        first_kept = compaction.get("firstKeptEntryId")
        kept_start = next((i for i, e in enumerate(path[:compaction_index]) if e.get("id") == first_kept),
                          compaction_index)
        prefix = [compaction_summary_message(compaction)]
        selected = path[kept_start:compaction_index] + path[compaction_index + 1:]
    messages = list(prefix)
    for entry in selected:
        message = _as_message(entry)
        if message is not None:
            messages.append(message)
    return messages


def build_session_context(entries: list[dict[str, Any]], leaf_id: str | None,
                          by_id: dict[str, dict[str, Any]] | None = None) -> dict[str, Any]:
    """The model's view of a session at `leaf_id`: messages plus thinking level, models, rules and mode."""
    path = path_to_leaf(entries, leaf_id, by_id)
    thinking_level = "off"
    service_tier: Any = None
    models: dict[str, str] = {}
    rules: list[str] = []
    mode, mode_data = "none", None
    for entry in path:
        kind = entry.get("type")
        if kind == "thinking_level_change":
            thinking_level = entry.get("thinkingLevel") or "off"
        elif kind == "model_change" and entry.get("model"):
            models[entry.get("role") or "default"] = entry["model"]
        elif kind == "message":
            message = entry.get("message") or {}
            if message.get("role") == "assistant" and message.get("provider") and message.get("model"):
                models["default"] = f"{message['provider']}/{message['model']}"
        elif kind == "ttsr_injection":
            for rule in entry.get("injectedRules") or []:
                if rule not in rules:
                    rules.append(rule)
        elif kind == "mode_change":
            mode, mode_data = entry.get("mode") or "none", entry.get("data")
        elif kind == "service_tier_change":
            service_tier = entry.get("serviceTier")
    context: dict[str, Any] = {"messages": _messages(path), "thinkingLevel": thinking_level}
    if service_tier is not None:
        context["serviceTier"] = service_tier
    context.update({"models": models, "injectedTtsrRules": rules, "mode": mode})
    if mode_data is not None:
        context["modeData"] = mode_data
    return context

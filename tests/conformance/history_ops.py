"""Conformance ops for the prompt history: `history`, `historyWait` and `sqliteDump`.

The recorded agent keeps one HistoryStorage per process (`HistoryStorage.open()` is a singleton over
`$AGENT/history.db`); here it lives in `sandbox.state["history"]`. An awaited `add` is flushed at
once; a `noAwait` add stays queued (the writer is given a batch window longer than any case) until
`historyWait` drains it, exactly like the recording's writes that "land later".
"""

from __future__ import annotations

import math
import sqlite3
from pathlib import Path
from typing import Any

from sessdex.catalog.history.storage import HistoryEntry, HistoryStorage

_STATE_KEY = "history"
_PENDING_KEY = "history_pending_adds"
_HOLD_UNTIL_FLUSHED = 3600.0  # seconds: noAwait adds land only when historyWait drains them


def _storage(sandbox: Any) -> HistoryStorage:
    storage = sandbox.state.get(_STATE_KEY)
    if storage is None:
        storage = HistoryStorage.open(agent_dir=sandbox.agent_dir, batch_delay=_HOLD_UNTIL_FLUSHED)
        sandbox.state[_STATE_KEY] = storage
    return storage


def _entry(entry: HistoryEntry) -> dict[str, Any]:
    """A row as the agent returns it: no `cwd` key when the prompt has none."""
    row: dict[str, Any] = {"id": entry.id, "prompt": entry.prompt, "created_at": entry.created_at}
    if entry.cwd is not None:
        row["cwd"] = entry.cwd
    return row


def _limit(value: Any) -> int:
    """The agent's numeric limit (JS number) as sessdex's int: fractions are cut."""
    return math.trunc(value)


def run_history_op(op: dict[str, Any], sandbox: Any) -> object:
    """`HistoryStorage.open()[action](...args)`, mapped to sessdex's API."""
    action = op["action"]
    args = sandbox.resolve(op.get("args", []))
    if action == "static.resetInstance":
        close_history(sandbox)
        return None
    storage = _storage(sandbox)
    if action == "add":
        storage.add(args[0], args[1] if len(args) > 1 else None)
        if op.get("noAwait"):
            sandbox.state[_PENDING_KEY] = sandbox.state.get(_PENDING_KEY, 0) + 1
            return {"$pending": True}
        storage.flush()
        return None
    if action == "getRecent":
        return [_entry(entry) for entry in storage.recent(_limit(args[0]))]
    if action == "search":
        # The agent has no substring fallback; sessdex's is switched off to replay it.
        return [_entry(entry) for entry in storage.search(args[0], _limit(args[1]), substring_fallback=False)]
    if action == "close":
        close_history(sandbox)
        return None
    raise NotImplementedError(f"history action {action!r}")


def run_history_wait(op: dict[str, Any], sandbox: Any) -> object:
    """Wait for every `noAwait` add to land; reports how many were awaited."""
    storage = sandbox.state.get(_STATE_KEY)
    if storage is not None:
        storage.flush()
    return {"awaited": sandbox.state.pop(_PENDING_KEY, 0)}


def run_sqlite_dump(op: dict[str, Any], sandbox: Any) -> object:
    """Schema (sqlite_master by type, name), user_version and the rows of each plain table; None if no file."""
    path = Path(sandbox.resolve(op["path"]))
    if not path.exists():
        return None
    connection = sqlite3.connect(f"{path.as_uri()}?mode=ro", uri=True)
    connection.row_factory = sqlite3.Row
    try:
        schema = [dict(row) for row in connection.execute(
            "SELECT type, name, tbl_name, sql FROM sqlite_master ORDER BY type, name")]
        dump: dict[str, Any] = {"schema": schema}
        if not op.get("schemaOnly"):
            dump["tables"] = {name: [dict(row) for row in connection.execute(f'SELECT * FROM "{name}" ORDER BY rowid')]
                              for name in _plain_tables(schema)}
        dump["userVersion"] = dict(connection.execute("PRAGMA user_version").fetchone())
        return dump
    finally:
        connection.close()


def _plain_tables(schema: list[dict[str, Any]]) -> list[str]:
    """Ordinary tables: not sqlite_*, not virtual tables, not the shadow tables of a virtual table."""
    virtual = [row["name"] for row in schema if (row["sql"] or "").upper().startswith("CREATE VIRTUAL TABLE")]
    return [row["name"] for row in schema
            if row["type"] == "table" and not row["name"].startswith("sqlite_") and row["name"] not in virtual
            and not any(row["name"].startswith(name + "_") for name in virtual)]


def close_history(sandbox: Any) -> None:
    """Drain and close the case's HistoryStorage, if one was opened."""
    storage = sandbox.state.pop(_STATE_KEY, None)
    if storage is not None:
        storage.close()

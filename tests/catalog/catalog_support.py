"""Builders shared by the catalog tests: a sandboxed agent dir, session files, and catalog/file-scan comparison."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from sessdex.catalog.queries.sessions import Catalog
from sessdex.catalog.store.location import resolve_location
from sessdex.core.paths import AgentPaths
from tests.core.sessiontree import BASE_MS, jsonl, set_mtime, write_file  # noqa: F401 - shared with catalog tests


def sandbox_paths(root: Path, naming: str = "documented") -> AgentPaths:
    """An AgentPaths whose agent dir, home and temp dir all live under `root`."""
    (root / "home").mkdir(parents=True, exist_ok=True)
    (root / "tmp").mkdir(parents=True, exist_ok=True)
    return AgentPaths(agent_dir=root / "home" / ".xcsh" / "agent", home=root / "home", tmp_dir=root / "tmp",
                      naming=naming)  # type: ignore[arg-type]


def open_catalog_for(paths: AgentPaths, backend: str = "auto") -> Catalog:
    """A Catalog at `<agent dir>/catalog.db` (the default location)."""
    return Catalog(paths, resolve_location(paths.agent_dir), backend=backend)


def header(session_id: str, cwd: str | os.PathLike[str], **extra: Any) -> dict[str, Any]:
    return {"type": "session", "version": 3, "id": session_id, "timestamp": "2025-01-01T00:00:00.000Z",
            "cwd": str(cwd), **extra}


def message(role: str, content: Any, entry_id: str, **extra: Any) -> dict[str, Any]:
    return {"type": "message", "id": entry_id, "parentId": None, "timestamp": "2025-01-01T00:00:00.000Z",
            "message": {"role": role, "content": content, "timestamp": BASE_MS, **extra}}


def user(text: str, entry_id: str = "u0000001") -> dict[str, Any]:
    return message("user", text, entry_id)


def assistant(text: str, entry_id: str = "a0000001") -> dict[str, Any]:
    return message("assistant", [{"type": "text", "text": text}], entry_id, provider="anthropic",
                   model="claude-test", usage={"input": 10, "output": 5, "cost": {"total": 0.25}})


def append_bytes(path: Path, data: bytes) -> None:
    with open(path, "ab") as handle:
        handle.write(data)


def session_fields(info: Any) -> dict[str, Any]:
    """Every field of a SessionInfo (all_messages_text included) plus its concrete values, for comparison."""
    return info.fields()


def recent_fields(item: Any) -> dict[str, Any]:
    """What a RecentSessionInfo shows: path, mtime, names, id and the agent JSON shape."""
    return {"path": item.path, "mtime": item.mtime, "full_name": item.full_name, "name": item.name,
            "session_id": item.session_id, "json": item.to_agent_json()}

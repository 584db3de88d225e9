"""Builders for small session trees on disk, shared by the discovery, breadcrumb, resume and CLI tests."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

from sessdex.core.paths import AgentPaths, agent_project_dir_name, documented_project_dir_name

BASE_MS = 1_735_689_600_000  # 2025-01-01T00:00:00Z


def header(session_id: str, cwd: str | os.PathLike[str], **extra: Any) -> dict[str, Any]:
    """A v3 session header."""
    return {"type": "session", "version": 3, "id": session_id, "timestamp": "2025-01-01T00:00:00.000Z",
            "cwd": str(cwd), **extra}


def message(role: str, content: Any, entry_id: str, parent: str | None = None, **extra: Any) -> dict[str, Any]:
    """A message entry holding an agent message with `role` and `content`."""
    return {"type": "message", "id": entry_id, "parentId": parent, "timestamp": "2025-01-01T00:00:00.000Z",
            "message": {"role": role, "content": content, "timestamp": BASE_MS, **extra}}


def user(text: str, entry_id: str = "u0000001", parent: str | None = None) -> dict[str, Any]:
    return message("user", text, entry_id, parent)


def assistant(text: str, entry_id: str = "a0000001", parent: str | None = "u0000001", **extra: Any) -> dict[str, Any]:
    return message("assistant", [{"type": "text", "text": text}], entry_id, parent,
                   provider="anthropic", model="claude-test", **extra)


def conversation(question: str, answer: str = "answer") -> list[dict[str, Any]]:
    """One user question and one assistant answer."""
    return [user(question), assistant(answer)]


def jsonl(records: list[Any]) -> bytes:
    return b"".join(orjson.dumps(record) + b"\n" for record in records)


def set_mtime(path: Path, epoch_ms: int) -> None:
    os.utime(path, ns=(epoch_ms * 1_000_000, epoch_ms * 1_000_000))


def write_file(path: Path, data: bytes, mtime_ms: int | None = None) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    if mtime_ms is not None:
        set_mtime(path, mtime_ms)
    return path


@dataclass
class Tree:
    """A sandbox: a home with projects, a temp dir and an agent dir holding sessions."""

    root: Path
    naming: str = "documented"

    @property
    def home(self) -> Path:
        return self.root / "home"

    @property
    def paths(self) -> AgentPaths:
        return AgentPaths(agent_dir=self.home / ".xcsh" / "agent", home=self.home, tmp_dir=self.root / "tmp",
                          naming=self.naming)  # type: ignore[arg-type]

    def project(self, name: str) -> Path:
        """A project folder under home (created)."""
        folder = self.home / name
        folder.mkdir(parents=True, exist_ok=True)
        return folder

    def project_dir(self, cwd: Path, scheme: str = "documented") -> Path:
        """The project's session folder in the `documented` or `agent` naming scheme."""
        name = (documented_project_dir_name(cwd) if scheme == "documented"
                else agent_project_dir_name(cwd, self.home, self.root / "tmp"))
        return self.paths.sessions_root / name

    def session(self, cwd: Path, session_id: str, records: list[Any] | None = None, *, mtime_ms: int | None = None,
                scheme: str = "documented", head: dict[str, Any] | None = None,
                title_line: dict[str, Any] | None = None) -> Path:
        """Write `<project dir>/<ts>_<id>.jsonl`: header (or `head`), then `records` (default: one exchange)."""
        if records is None:
            records = conversation(f"question of {session_id}")
        lines = ([title_line] if title_line is not None else []) + [head or header(session_id, cwd)] + records
        path = self.project_dir(cwd, scheme) / f"2025-01-01T00-00-00-000Z_{session_id}.jsonl"
        return write_file(path, jsonl(lines), mtime_ms)


def make_tree(tmp_path: Path, naming: str = "documented") -> Tree:
    (tmp_path / "home").mkdir(parents=True, exist_ok=True)
    (tmp_path / "tmp").mkdir(exist_ok=True)
    return Tree(tmp_path, naming)

"""`sessdex context` and `sessdex entries`: read-only views of one session file, shaped as the agent shapes them."""

from __future__ import annotations

import argparse
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

import orjson

from sessdex.catalog.cli.output import echo
from sessdex.catalog.tui.terminal_text import terminal_json
from sessdex.core.blobs import BlobStore
from sessdex.core.context import build_session_context
from sessdex.core.errors import SessionFileError
from sessdex.core.paths import AgentPaths
from sessdex.core.runtime import SessionRuntime
from sessdex.core.session_manager import LoadedSession, load_session_file
from sessdex.core.storage import FileSessionStorage

if TYPE_CHECKING:
    from sessdex.catalog.store.settings import Settings


def _blob_dir_for(session_file: Path, agent_dir: str | None) -> Path:
    """Blobs live beside `sessions/` in the agent dir that holds the file, else in the configured agent dir."""
    for parent in session_file.resolve().parents:
        if parent.name == "sessions" and (parent.parent / "blobs").is_dir():
            return parent.parent / "blobs"
    return AgentPaths.from_env(agent_dir).blobs_dir


def read_session(path: str, agent_dir: str | None) -> LoadedSession:
    """Load a session file without writing anything; a missing or headerless file is a SessionFileError."""
    file = Path(path)
    if not file.is_file():
        raise SessionFileError(f"{path}: no such session file")
    try:
        loaded = load_session_file(file, FileSessionStorage(), BlobStore(_blob_dir_for(file, agent_dir)),
                                   SessionRuntime.default(agent_dir).ids.entry_id)
    except OSError as exc:
        raise SessionFileError(f"{path}: cannot read it ({exc.strerror or exc})") from exc
    if loaded.header is None:
        raise SessionFileError(f"{path}: not a session file (no valid session header on its first line)")
    return loaded


def _print_json(value: Any) -> None:
    echo(terminal_json(orjson.dumps(value, option=orjson.OPT_INDENT_2).decode()))


def _message_text(message: dict[str, Any]) -> str:
    content = message.get("content", message.get("summary", ""))
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = []
        for block in content:
            if isinstance(block, dict):
                kind = block.get("type")
                if kind == "text":
                    parts.append(str(block.get("text", "")))
                elif kind == "toolCall":
                    parts.append(f"[tool call {block.get('name')}]")
                elif kind == "image":
                    parts.append("[image]")
        return " ".join(parts)
    return ""


def _session_argument(text: str) -> str:
    """An argument type: a session id prefix or a file path (one that need not exist, but is not a directory)."""
    if os.path.isdir(text):
        raise argparse.ArgumentTypeError(f"{text!r} is a directory, not a file")
    return text


def session_file(value: str, settings: Settings) -> str:
    """The file a SESSION argument names: a path as given, or an id prefix resolved as `resume` finds it."""
    from sessdex.catalog.cli.manage_commands import find_session
    from sessdex.core.resume import is_path_like

    if is_path_like(value) or os.path.exists(value):
        return value
    return find_session(settings, value).path_text


def add_context_arguments(parser: argparse.ArgumentParser) -> None:
    parser.description = "Print what the model would see for SESSION, built as the agent builds it."
    parser.add_argument("file", metavar="SESSION", type=_session_argument, help="An id prefix or a session file.")
    parser.add_argument("--leaf", dest="leaf_id", metavar="ID",
                        help="Build the context at this entry instead of the last one.")
    parser.add_argument("--json", dest="as_json", action="store_true",
                        help="Print the context as JSON, shaped as the agent shapes it.")


def run_context(args: argparse.Namespace, settings: Settings) -> int:
    file, leaf_id = session_file(args.file, settings), args.leaf_id
    loaded = read_session(file, settings.agent_dir)
    entries = [e for e in loaded.entries if isinstance(e, dict)]
    if leaf_id is not None and not any(e.get("id") == leaf_id for e in entries):
        raise SessionFileError(f"{file}: no entry with id {leaf_id!r}")
    leaf = leaf_id if leaf_id is not None else (entries[-1].get("id") if entries else None)
    context = build_session_context(entries, leaf)
    if args.as_json:
        _print_json(context)
        return 0
    models = ", ".join(f"{role}={model}" for role, model in context["models"].items()) or "none"
    echo(f"thinking {context['thinkingLevel']} · models {models} · mode {context['mode']}")
    for message in context["messages"]:
        text = " ".join(_message_text(message).split())
        echo(f"{str(message.get('role', '?')):>17}: {text[:200]}")
    return 0


def add_entries_arguments(parser: argparse.ArgumentParser) -> None:
    parser.description = ("Print the loaded, migrated, blob-resolved entries of SESSION in file order (the header "
                          "left out).")
    parser.add_argument("file", metavar="SESSION", type=_session_argument, help="An id prefix or a session file.")
    parser.add_argument("--json", dest="as_json", action="store_true", help="Print the entries as a JSON array.")


def run_entries(args: argparse.Namespace, settings: Settings) -> int:
    loaded = read_session(session_file(args.file, settings), settings.agent_dir)
    if args.as_json:
        _print_json(loaded.entries)
        return 0
    for entry in loaded.entries:
        if isinstance(entry, dict):
            echo(f"{str(entry.get('id', '-')):>8} <- {str(entry.get('parentId')):>8}  {entry.get('type')}")
        else:
            echo(f"{'-':>8}              (non-object record: {str(entry)[:60]})")
    if loaded.bad_records:
        echo(f"{loaded.bad_records} unparseable line(s) skipped", err=True)
    return 0

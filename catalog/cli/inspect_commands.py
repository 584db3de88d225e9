"""`sessdex context` and `sessdex entries`: read-only views of one session file, shaped as the agent shapes them."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click
import orjson

from sessdex.catalog.cli.click_app import command_settings
from sessdex.catalog.cli.output import echo
from sessdex.catalog.tui.terminal_text import terminal_json
from sessdex.core.blobs import BlobStore
from sessdex.core.context import build_session_context
from sessdex.core.errors import SessionFileError
from sessdex.core.paths import AgentPaths
from sessdex.core.runtime import SessionRuntime
from sessdex.core.session_manager import LoadedSession, load_session_file
from sessdex.core.storage import FileSessionStorage


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


@click.command("context")
@click.argument("file", type=click.Path(dir_okay=False))
@click.option("--leaf", "leaf_id", help="Build the context at this entry instead of the last one.")
@click.option("--json", "as_json", is_flag=True, help="Print the context as JSON, shaped as the agent shapes it.")
@click.pass_context
def context_command(ctx: click.Context, file: str, leaf_id: str | None, as_json: bool) -> None:
    """Print what the model would see for the session FILE, built as the agent builds it."""
    loaded = read_session(file, command_settings(ctx).agent_dir)
    entries = [e for e in loaded.entries if isinstance(e, dict)]
    if leaf_id is not None and not any(e.get("id") == leaf_id for e in entries):
        raise SessionFileError(f"{file}: no entry with id {leaf_id!r}")
    leaf = leaf_id if leaf_id is not None else (entries[-1].get("id") if entries else None)
    context = build_session_context(entries, leaf)
    if as_json:
        _print_json(context)
        return
    models = ", ".join(f"{role}={model}" for role, model in context["models"].items()) or "none"
    echo(f"thinking {context['thinkingLevel']} · models {models} · mode {context['mode']}")
    for message in context["messages"]:
        text = " ".join(_message_text(message).split())
        echo(f"{str(message.get('role', '?')):>17}: {text[:200]}")


@click.command("entries")
@click.argument("file", type=click.Path(dir_okay=False))
@click.option("--json", "as_json", is_flag=True, help="Print the entries as a JSON array.")
@click.pass_context
def entries_command(ctx: click.Context, file: str, as_json: bool) -> None:
    """Print the loaded, migrated, blob-resolved entries of FILE in file order (the header left out)."""
    loaded = read_session(file, command_settings(ctx).agent_dir)
    if as_json:
        _print_json(loaded.entries)
        return
    for entry in loaded.entries:
        if isinstance(entry, dict):
            echo(f"{str(entry.get('id', '-')):>8} <- {str(entry.get('parentId')):>8}  {entry.get('type')}")
        else:
            echo(f"{'-':>8}              (non-object record: {str(entry)[:60]})")
    if loaded.bad_records:
        echo(f"{loaded.bad_records} unparseable line(s) skipped", err=True)

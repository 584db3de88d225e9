"""`sessdex history recent | search | add | import`: the agent's prompt history from the shell (S11).

Reads and writes the agent's own `<agent dir>/history.db`, so prompts typed in xcsh, added from a
shell hook (`sessdex history add "$cmd"`) or imported from old session files all show up together.
"""

from __future__ import annotations

import os
import shutil
import sys
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path

import click
import orjson

from sessdex.catalog.cli.click_app import command_settings
from sessdex.catalog.history.storage import HistoryEntry, HistoryStorage, history_db_path
from sessdex.catalog.tui.width import char_width

DEFAULT_COUNT = 20
_LINE_BREAKS = str.maketrans({"\r": " ", "\n": " ", "\t": " ", "\v": " ", "\f": " ",
                              "\x85": " ", "\u2028": " ", "\u2029": " "})
_ELLIPSIS = "…"


def _agent_dir() -> Path:
    return command_settings(click.get_current_context()).paths.agent_dir


@contextmanager
def _history(batch_delay: float | None = None) -> Iterator[HistoryStorage]:
    """The agent's history.db, closed (and drained) when the command ends."""
    path = history_db_path(_agent_dir())
    storage = HistoryStorage.open(path) if batch_delay is None else HistoryStorage.open(path, batch_delay=batch_delay)
    try:
        yield storage
    finally:
        storage.close()


def _short_cwd(cwd: str | None) -> str:
    if not cwd:
        return "-"
    home = os.path.expanduser("~").rstrip("/")
    if home and (cwd == home or cwd.startswith(home + "/")):
        return "~" + cwd[len(home):]
    return cwd


def _output_width() -> int | None:
    """Columns of the terminal on stdout ($COLUMNS wins); None when stdout is not a terminal."""
    if os.environ.get("COLUMNS", "").isdigit():
        return int(os.environ["COLUMNS"])
    return shutil.get_terminal_size().columns if sys.stdout.isatty() else None


def _cut(text: str, spans: Sequence[tuple[int, int]], columns: int | None) -> tuple[str, list[tuple[int, int]]]:
    """`text` cut to `columns` display columns (with an ellipsis), and the spans that still fit."""
    if columns is None:
        return text, list(spans)
    used = 0
    for index, char in enumerate(text):
        used += char_width(char)
        if used > columns - 1 and index < len(text) - 1:
            return text[:index] + _ELLIPSIS, [(a, min(b, index)) for a, b in spans if a < index]
    return text, list(spans)


def _render(entry: HistoryEntry, width: int | None) -> str:
    """One line: local time, cwd, then the prompt (or a search hit's snippet, its matches in bold)."""
    prefix = f"{datetime.fromtimestamp(entry.created_at):%Y-%m-%d %H:%M}  {_short_cwd(entry.cwd)}  "
    text: str
    spans: Sequence[tuple[int, int]]
    text, spans = (entry.snippet, entry.highlights) if entry.snippet is not None else \
        (entry.prompt.translate(_LINE_BREAKS), ())
    room = None if width is None else max(width - sum(map(char_width, prefix)), 10)
    text, spans = _cut(text, spans, room)
    pieces, position = [prefix], 0
    for start, end in spans:
        pieces.append(text[position:start])
        pieces.append(click.style(text[start:end], bold=True))
        position = end
    pieces.append(text[position:])
    return "".join(pieces)


def _print(entries: list[HistoryEntry], as_json: bool) -> None:
    if as_json:
        click.echo(orjson.dumps([entry.to_json() for entry in entries], option=orjson.OPT_INDENT_2).decode())
        return
    width = _output_width()
    for entry in entries:
        click.echo(_render(entry, width))


_count_option = click.option("-n", "--limit", "limit", type=click.IntRange(min=1), default=DEFAULT_COUNT,
                             show_default=True, help="How many prompts to show.")
_json_option = click.option("--json", "as_json", is_flag=True, help="Print a JSON array instead of lines.")


@click.group("history")
def history_group() -> None:
    """The prompts you sent to the agent, across every project (the agent's history.db)."""


@history_group.command("recent")
@_count_option
@_json_option
def recent_command(limit: int, as_json: bool) -> None:
    """The most recent prompts, newest first."""
    with _history() as history:
        _print(history.recent(limit), as_json)


@history_group.command("search")
@click.argument("query", nargs=-1, required=True)
@click.option("--here", is_flag=True, help="Only prompts sent from the current directory.")
@_count_option
@_json_option
def search_command(query: tuple[str, ...], here: bool, limit: int, as_json: bool) -> None:
    """Search prompts: each word of QUERY must start a word (else occur anywhere).

    Newest first; matched words are shown in bold.
    """
    with _history() as history:
        _print(history.search(" ".join(query), limit, cwd=os.getcwd() if here else None), as_json)


@history_group.command("add")
@click.argument("text")
@click.option("--cwd", type=click.Path(file_okay=False), help="Directory to record (default: the current one).")
def add_command(text: str, cwd: str | None) -> None:
    """Record TEXT as a prompt (`-`: read it from stdin).

    Meant for shell hooks; consecutive repeats are dropped, as in the agent.
    """
    prompt = sys.stdin.read() if text == "-" else text
    # A one-shot process: write at once instead of gathering a batch.
    with _history(batch_delay=0) as history:
        history.add(prompt, os.path.abspath(cwd) if cwd else os.getcwd())


@history_group.command("import")
def import_command() -> None:
    """Back-fill from the user prompts of all session files.

    Prompts already in the history are skipped, so running it again adds nothing.
    """
    from sessdex.catalog.history.session_prompts import scan_session_prompts

    sessions_root = _agent_dir() / "sessions"
    scan = scan_session_prompts(sessions_root)
    with _history() as history:
        added = history.import_prompts(scan.prompts)
    skipped = f"; {scan.files_skipped} file(s) without a valid session header skipped" if scan.files_skipped else ""
    click.echo(f"Imported {added} new prompt(s) of {len(scan.prompts)} found in {scan.files_read} "
               f"session file(s){skipped}.")

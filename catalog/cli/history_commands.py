"""`sessdex history recent | search | add | import`: the agent's prompt history from the shell (S11).

Reads and writes the agent's own `<agent dir>/history.db`, so prompts typed in xcsh, added from a
shell hook (`sessdex history add "$cmd"`) or imported from old session files all show up together.
"""

from __future__ import annotations

import logging
import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import click

from sessdex.catalog.cli.click_app import command_settings
from sessdex.catalog.cli.output import MAX_COUNT, current_directory, echo, search_query
from sessdex.catalog.cli.search_commands import DEFAULT_HISTORY_COUNT, print_history
from sessdex.catalog.history.storage import (
    DEFAULT_BATCH_DELAY_SECONDS,
    HistoryStorage,
    HistoryWriteError,
    history_db_path,
)
from sessdex.core.errors import HistoryError

# A shell hook's `history add` may meet the agent mid-write: it waits this long for the lock rather than
# give up after the library's 5 s and lose the prompt (the agent holds it for well under a second).
SHELL_BUSY_TIMEOUT_SECONDS = 30.0
# A failed write is raised to the command (and said in one line): the storage's own log of it would be a second.
logging.getLogger(HistoryStorage.__module__).addHandler(logging.NullHandler())


def _agent_dir() -> Path:
    return command_settings(click.get_current_context()).paths.agent_dir


def _require_history(as_json: bool) -> None:
    """Reading creates nothing: no agent dir or no history.db yet is said in one line (exit 1; 2 for a named
    agent dir that does not exist), before anything opens the database."""
    from sessdex.catalog.cli.read_guard import agent_dir_named, json_refusal, require_agent_dir
    from sessdex.core.errors import SessionNotFoundError

    ctx = click.get_current_context()
    with json_refusal(as_json):
        require_agent_dir(command_settings(ctx).paths, agent_dir_named(ctx))
        path = history_db_path(_agent_dir())
        if not path.exists():
            raise SessionNotFoundError(f"no prompt history yet ({path} does not exist)")


@contextmanager
def _history(batch_delay: float | None = None) -> Iterator[HistoryStorage]:
    """The agent's history.db, closed (and drained) when the command ends."""
    path = history_db_path(_agent_dir())
    storage = HistoryStorage.open(path, busy_timeout=SHELL_BUSY_TIMEOUT_SECONDS,
                                  batch_delay=DEFAULT_BATCH_DELAY_SECONDS if batch_delay is None else batch_delay)
    try:
        yield storage
    finally:
        storage.close()


_count_option = click.option("-n", "--limit", "limit", type=click.IntRange(min=1, max=MAX_COUNT),
                             default=DEFAULT_HISTORY_COUNT,
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
    _require_history(as_json)
    with _history() as history:
        print_history(history.recent(limit), as_json)


@history_group.command("search")
@click.argument("query", nargs=-1, required=True)
@click.option("--here", is_flag=True, help="Only prompts sent from the current directory.")
@_count_option
@_json_option
def search_command(query: tuple[str, ...], here: bool, limit: int, as_json: bool) -> None:
    """Search prompts: each word of QUERY must occur as a phrase, its end as a prefix (else anywhere).

    `to/file` finds "path/to/file" but not "file to archive". Newest first; matched words are shown in bold.
    """
    text = search_query(query)
    _require_history(as_json)
    with _history() as history:
        print_history(history.search(text, limit, cwd=current_directory() if here else None), as_json)


@history_group.command("add")
@click.argument("text")
@click.option("--cwd", type=click.Path(file_okay=False), help="Directory to record (default: the current one).")
def add_command(text: str, cwd: str | None) -> None:
    """Record TEXT as a prompt (`-`: read it from stdin).

    Meant for shell hooks; consecutive repeats are dropped, as in the agent.
    """
    prompt = sys.stdin.read() if text == "-" else text
    where = os.path.abspath(cwd) if cwd else current_directory()
    try:
        # A one-shot process: write at once instead of gathering a batch.
        with _history(batch_delay=0) as history:
            history.add(prompt, where)
    except HistoryWriteError as exc:
        # Said plainly: this process ends, so nothing stays queued.
        raise HistoryError(f"the prompt was not recorded ({exc})".replace(" still queued", " not written")) from None


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
    echo(f"Imported {added} new prompt(s) of {len(scan.prompts)} found in {scan.files_read} "
               f"session file(s){skipped}.")

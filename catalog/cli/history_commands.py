"""`sessdex history recent | search | add | import`: the agent's prompt history from the shell.

Reads and writes the agent's own `<agent dir>/history.db`, so prompts typed in xcsh, added from a
shell hook (`sessdex history add "$cmd"`) or imported from old session files all show up together.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys

from sessdex.catalog.cli.commands import HelpFormatter, add_global_options, agent_dir_named, directory, positive_count
from sessdex.catalog.cli.output import current_directory, echo, search_query
from sessdex.catalog.cli.search_commands import DEFAULT_HISTORY_COUNT, print_history
from sessdex.catalog.history.search import HISTORY_DB_NAME, search_history_file

TYPE_CHECKING = False  # see the README's start-up budget
if TYPE_CHECKING:
    from collections.abc import Iterator
    from pathlib import Path
    from typing import Any

    from sessdex.catalog.history.storage import HistoryStorage
    from sessdex.catalog.store.settings import Settings

# A shell hook's `history add` may meet the agent mid-write: it waits this long for the lock rather than
# give up after the library's 5 s and lose the prompt (the agent holds it for well under a second).
SHELL_BUSY_TIMEOUT_SECONDS = 30.0
INTERACTIVE_LOAD = 20_000  # the newest prompts the interactive search loads (full-text search reaches them all)


def _require_history(args: argparse.Namespace, settings: Settings) -> None:
    """Reading creates nothing: no agent dir or no history.db yet is said in one line (exit 1; 2 for a named
    agent dir that does not exist), before anything opens the database."""
    from sessdex.catalog.cli.read_guard import json_refusal, require_agent_dir
    from sessdex.core.errors import SessionNotFoundError

    with json_refusal(args.as_json):
        require_agent_dir(settings.paths, agent_dir_named(args))
        path = os.path.join(settings.paths.agent_dir_text, HISTORY_DB_NAME)
        if not os.path.exists(path):
            raise SessionNotFoundError(f"no prompt history yet ({path} does not exist); "
                                       "`sessdex history import` fills it from the prompts of your session files")


@contextlib.contextmanager
def _history(agent_dir: str, batch_delay: float | None = None) -> Iterator[HistoryStorage]:
    """The agent's history.db, closed (and drained) when the command ends."""
    import logging

    from sessdex.catalog.history.storage import DEFAULT_BATCH_DELAY_SECONDS, HistoryStorage

    # A failed write is raised to the command (and said in one line): the storage's own log of it would be a second.
    logging.getLogger(HistoryStorage.__module__).addHandler(logging.NullHandler())
    storage = HistoryStorage.open(os.path.join(agent_dir, HISTORY_DB_NAME), busy_timeout=SHELL_BUSY_TIMEOUT_SECONDS,
                                  batch_delay=DEFAULT_BATCH_DELAY_SECONDS if batch_delay is None else batch_delay)
    try:
        yield storage
    finally:
        storage.close()


def _add_count_and_json(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("-n", "--limit", type=positive_count, default=DEFAULT_HISTORY_COUNT,
                        help=f"How many prompts to show (default {DEFAULT_HISTORY_COUNT}).")
    parser.add_argument("--json", dest="as_json", action="store_true", help="Print a JSON array instead of lines.")


def add_history_arguments(parser: argparse.ArgumentParser) -> None:
    parser.description = """\
The prompts you sent to the agent, across every project (the agent's history.db).

Without a command, on a terminal: an interactive search (Ctrl+R: this directory / all, Ctrl+S: fuzzy /
full-text); Enter prints the chosen prompt (for a shell binding to insert, see `sessdex init --history-key`),
Esc cancels (exit 130). Without a terminal: the most recent prompts, as `history recent`."""
    parser.add_argument("-q", "--query", default="", metavar="TEXT", help="Start the interactive search with TEXT.")
    parser.add_argument("--here", dest="start_here", action="store_true",
                        help="Start the interactive search on this directory's prompts.")
    parser.set_defaults(as_json=False, limit=DEFAULT_HISTORY_COUNT)
    commands = parser.add_subparsers(title="commands", dest="history_command", metavar="COMMAND")
    formatter = HelpFormatter

    recent = commands.add_parser("recent", help="The most recent prompts.", allow_abbrev=False,
                                 prog=f"{parser.prog} recent", formatter_class=formatter,
                                 description="The most recent prompts, newest first.")
    _add_count_and_json(recent)

    search = commands.add_parser("search", help="Search prompts.", allow_abbrev=False, prog=f"{parser.prog} search",
                                 formatter_class=formatter, description="""\
Search prompts: each word of QUERY must occur as a phrase, its end as a prefix (else anywhere).

`to/file` finds "path/to/file" but not "file to archive". Newest first; matched words are shown in bold.""")
    search.add_argument("query", metavar="QUERY", nargs="+", help="The words to look for.")
    search.add_argument("--here", action="store_true", help="Only prompts sent from the current directory.")
    _add_count_and_json(search)

    add = commands.add_parser("add", help="Record a prompt (for shell hooks).", allow_abbrev=False,
                              prog=f"{parser.prog} add", formatter_class=formatter, description="""\
Record TEXT as a prompt (`-`: read it from stdin).

Meant for shell hooks; consecutive repeats are dropped, as in the agent.""")
    add.add_argument("text", metavar="TEXT", help="The prompt, or - to read it from stdin.")
    add.add_argument("--cwd", metavar="DIR", type=directory, help="Directory to record (default: the current one).")

    commands.add_parser("import", help="Back-fill from the user prompts of all session files.", allow_abbrev=False,
                        prog=f"{parser.prog} import", formatter_class=formatter, description="""\
Back-fill from the user prompts of all session files.

Prompts already in the history are skipped, so running it again adds nothing.""")
    for command in commands.choices.values():
        add_global_options(command)


def run_history(args: argparse.Namespace, settings: Settings) -> int:
    agent_dir = settings.paths.agent_dir_text
    if args.history_command is None:
        from sessdex.catalog.cli.pick_commands import terminal_available

        if terminal_available():
            _require_history(args, settings)
            return _interactive(agent_dir, args.query, args.start_here)
        args.history_command = "recent"
    if args.history_command == "recent":
        _require_history(args, settings)
        with _history(agent_dir) as history:
            print_history(history.recent(args.limit), args.as_json)
    elif args.history_command == "search":
        text = search_query(args.query)
        _require_history(args, settings)
        cwd = current_directory() if args.here else None
        # Read-only, without the storage's writer thread; the storage itself when the file does not hold the
        # agent's schema (it creates, checks or reports it).
        entries = search_history_file(os.path.join(agent_dir, HISTORY_DB_NAME), text, args.limit, cwd)
        if entries is None:
            with _history(agent_dir) as history:
                entries = history.search(text, args.limit, cwd=cwd)
        print_history(entries, args.as_json)
    elif args.history_command == "add":
        _add(agent_dir, args.text, args.cwd)
    else:
        _import(agent_dir)
    return 0


def _add(agent_dir: str, text: str, cwd: Path | None) -> None:
    from sessdex.catalog.history.storage import HistoryWriteError
    from sessdex.core.errors import HistoryError
    prompt = sys.stdin.read() if text == "-" else text
    where = os.path.abspath(cwd) if cwd else current_directory()
    try:
        # A one-shot process: write at once instead of gathering a batch.
        with _history(agent_dir, batch_delay=0) as history:
            history.add(prompt, where)
    except HistoryWriteError as exc:
        # Said plainly: this process ends, so nothing stays queued.
        raise HistoryError(f"the prompt was not recorded ({exc})".replace(" still queued", " not written")) from None


def _import(agent_dir: str) -> None:
    from pathlib import Path

    from sessdex.catalog.history.session_prompts import scan_session_prompts

    scan = scan_session_prompts(Path(agent_dir, "sessions"))
    with _history(agent_dir) as history:
        added = history.import_prompts(scan.prompts)
    skipped = f"; {scan.files_skipped} file(s) without a valid session header skipped" if scan.files_skipped else ""
    echo(f"Imported {added} new prompt(s) of {len(scan.prompts)} found in {scan.files_read} "
         f"session file(s){skipped}.")


def _interactive(agent_dir: str, query: str, here: bool) -> int:
    """The interactive search: print the chosen prompt and return 0, or return 130 on a cancel."""
    from sessdex.catalog.cli.errors import INTERRUPTED_STATUS
    from sessdex.catalog.cli.pick_commands import picker_terminal
    from sessdex.catalog.history.search import search_history_file
    from sessdex.catalog.tui.history_picker import HistoryModel, HistoryPicker
    from sessdex.catalog.tui.terminal_text import terminal_text

    path = os.path.join(agent_dir, HISTORY_DB_NAME)
    with _history(agent_dir) as history:
        entries = history.recent(INTERACTIVE_LOAD)

    def full_text(text: str, limit: int, cwd: str | None) -> list[Any]:
        found = search_history_file(path, text, limit, cwd)
        if found is None:  # not the agent's schema: the storage reports it
            with _history(agent_dir) as storage:
                found = storage.search(text, limit, cwd=cwd)
        return found

    model = HistoryModel(entries, current_directory(), full_text, filter_mode="directory" if here else "all")
    with picker_terminal() as (terminal_input, terminal_output):
        chosen = HistoryPicker(model, query=query, input=terminal_input, output=terminal_output).run()
    if chosen is None:
        echo("No prompt selected", err=True)
        return INTERRUPTED_STATUS
    # The user's own prompt, for the command line: every character kept but those a terminal would act on.
    sys.stdout.write(terminal_text(chosen.prompt, keep_newlines=True) + "\n")
    sys.stdout.flush()
    return 0

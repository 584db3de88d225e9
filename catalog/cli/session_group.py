"""The options of `sessdex list | recent | resume | continue`; their bodies are in
`sessdex.catalog.cli.session_commands` and their output in `sessdex.catalog.cli.output`."""

from __future__ import annotations

import argparse
import sys

from sessdex.catalog.cli import session_commands
from sessdex.catalog.cli.commands import directory, positive_count
from sessdex.catalog.cli.output import RESUME_FIELDS, add_json_option, add_table_option
from sessdex.catalog.cli.read_guard import resume_source, session_source
from sessdex.core.errors import UsageError

TYPE_CHECKING = False  # see the README's start-up budget
if TYPE_CHECKING:
    from sessdex.catalog.store.settings import Settings


def add_session_dir_option(parser: argparse.ArgumentParser, help: str) -> None:
    """--session-dir DIR: read one session folder instead of the project's folders."""
    parser.add_argument("--session-dir", metavar="DIR", type=directory, help=help)


def _add_list_like(parser: argparse.ArgumentParser) -> None:
    # The marks filters (and the marks module behind them) are imported by list and recent only: resume and
    # continue never read marks unless asked for JSON.
    from sessdex.catalog.cli.marks_filters import add_marks_filter_options

    add_json_option(parser, "Print JSON instead of a table.")
    add_table_option(parser)
    parser.add_argument("--all", dest="all_projects", action="store_true",
                        help="Sessions of every project, not only this one.")
    add_session_dir_option(parser, "Read this session folder instead of the project's folders.")
    add_marks_filter_options(parser)


def _listing_output(args: argparse.Namespace) -> session_commands.ListingOutput:
    return session_commands.ListingOutput(args.as_json, args.json_fields, args.table)


def add_list_arguments(parser: argparse.ArgumentParser) -> None:
    parser.description = ("List sessions with at least one message, pinned first, then newest first (this project, "
                          "or all with --all).")
    parser.add_argument("-n", "--limit", type=positive_count, default=None,
                        help="Show at most this many sessions (default: all).")
    _add_list_like(parser)


def run_list(args: argparse.Namespace, settings: Settings) -> int:
    from sessdex.catalog.cli.marks_filters import MarksFilter

    return session_commands.run_list(lambda: session_source(args, settings), all_projects=args.all_projects,
                                     output=_listing_output(args), session_dir=args.session_dir, limit=args.limit,
                                     wanted=MarksFilter.of(args))


def add_recent_arguments(parser: argparse.ArgumentParser) -> None:
    parser.description = ("The project's most recently changed sessions (read from each file's first 4 KB), "
                          "newest first.")
    parser.add_argument("-n", "--limit", type=positive_count, default=session_commands.DEFAULT_RECENT_COUNT,
                        help=f"How many sessions to show (default {session_commands.DEFAULT_RECENT_COUNT}).")
    _add_list_like(parser)


def run_recent(args: argparse.Namespace, settings: Settings) -> int:
    from sessdex.catalog.cli.marks_filters import MarksFilter

    return session_commands.run_recent(lambda: session_source(args, settings), settings.paths, limit=args.limit,
                                       output=_listing_output(args), session_dir=args.session_dir,
                                       all_projects=args.all_projects, wanted=MarksFilter.of(args))


def add_resume_arguments(parser: argparse.ArgumentParser) -> None:
    parser.description = """\
Print the session file VALUE (an id prefix or a path) resolves to, for `xcsh --resume`.

An id is looked up in this project first, then in every project; a session from another
project is forked into this one on confirmation. Without VALUE, opens the session picker."""
    parser.add_argument("value", metavar="VALUE", nargs="?", help="An id prefix or a session file path.")
    parser.add_argument("--yes", "-y", dest="assume_yes", action="store_true",
                        help="Fork a session from another project without asking.")
    parser.add_argument("--no-fork", action="store_true", help="Refuse sessions from another project without asking.")
    parser.add_argument("--own-dir", action="store_true",
                        help="Open a session of another project where it lives instead of forking it (see --shell).")
    add_json_option(parser, "Print the session object (plus action and cwd) as JSON.", RESUME_FIELDS)
    parser.add_argument("--shell", action="store_true",
                        help="Print two lines: the directory to run the agent in, then the file.")
    add_session_dir_option(parser, "Read this session folder instead of the project's folders.")
    parser.add_argument("--keep-marks", action="store_true",
                        help="A fork keeps the pins, stars, tags and note of the session it is forked from "
                             "(otherwise it starts unmarked).")


def run_resume(args: argparse.Namespace, settings: Settings) -> int:
    assume = session_commands.fork_choice(args.assume_yes, args.no_fork)
    if not args.value:
        if not sys.stdin.isatty():
            # Nobody to pick: one line and a usage status, never the whole project list.
            raise UsageError("resume needs an id prefix or a path when there is no terminal to pick on "
                             "(`sessdex list` shows the ids)")
        from sessdex.catalog.cli.pick_commands import resume_without_value

        return resume_without_value(args, settings)
    from sessdex.core.errors import AmbiguousSessionError

    def resume(value: str, keep_marks: bool = args.keep_marks) -> int:
        marks_wanted = args.as_json or keep_marks  # as run_resume reads them
        return session_commands.run_resume(lambda: resume_source(args, settings, marks_wanted=marks_wanted),
                                           settings.paths, value,
                                           assume=assume, as_json=args.as_json, session_dir=args.session_dir,
                                           own_dir=args.own_dir, shell=args.shell,
                                           json_fields=args.json_fields,
                                           keep_marks=settings.machine_name if keep_marks else None)

    try:
        return resume(args.value)
    except AmbiguousSessionError as error:
        # On a terminal, the candidates go to the picker (as fzf would show them), and the chosen one is resumed.
        if args.as_json or not sys.stdin.isatty():
            raise  # no one to ask (checked before the picker's module is imported)
        from sessdex.catalog.cli.pick_commands import pick_among, terminal_available

        if not terminal_available():
            raise
        chosen = pick_among(args, settings, error.candidates, f"Sessions matching “{args.value}”")
    if chosen is None or chosen.row is None:
        from sessdex.catalog.cli.errors import INTERRUPTED_STATUS

        return INTERRUPTED_STATUS
    # Chosen with Alt+Enter: a fork of it keeps its marks, as with --keep-marks.
    return resume(chosen.row.session_id, args.keep_marks or chosen.keep_marks)


def add_continue_arguments(parser: argparse.ArgumentParser) -> None:
    parser.description = "Print the session `xcsh --continue` would resume here: this terminal's last one, else the newest."
    add_json_option(parser, "Print the resolution as JSON.")
    add_session_dir_option(parser, "Read this session folder instead of the project's folders.")


def run_continue(args: argparse.Namespace, settings: Settings) -> int:
    return session_commands.run_continue(lambda: session_source(args, settings), settings.paths,
                                         as_json=args.as_json, session_dir=args.session_dir,
                                         json_fields=args.json_fields)

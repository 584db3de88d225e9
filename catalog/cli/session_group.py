"""The options of `sessdex list | recent | resume | continue`; their bodies are in
`sessdex.catalog.cli.session_commands` and their output in `sessdex.catalog.cli.output`."""

from __future__ import annotations

import argparse

from sessdex.catalog.cli import session_commands
from sessdex.catalog.cli.commands import directory, positive_count
from sessdex.catalog.cli.marks_filters import MarksFilter, add_marks_filter_options
from sessdex.catalog.cli.read_guard import session_source

TYPE_CHECKING = False  # see the README's start-up budget
if TYPE_CHECKING:
    from sessdex.catalog.store.settings import Settings


def add_session_dir_option(parser: argparse.ArgumentParser, help: str) -> None:
    """--session-dir DIR: read one session folder instead of the project's folders."""
    parser.add_argument("--session-dir", metavar="DIR", type=directory, help=help)


def _add_list_like(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--json", dest="as_json", action="store_true", help="Print JSON instead of a table.")
    add_session_dir_option(parser, "Read this session folder instead of the project's folders.")
    add_marks_filter_options(parser)


def add_list_arguments(parser: argparse.ArgumentParser) -> None:
    parser.description = ("List sessions with at least one message, pinned first, then newest first (this project, "
                          "or all with --all).")
    parser.add_argument("--all", dest="all_projects", action="store_true",
                        help="Sessions of every project, not only this one.")
    _add_list_like(parser)


def run_list(args: argparse.Namespace, settings: Settings) -> int:
    return session_commands.run_list(lambda: session_source(args, settings), all_projects=args.all_projects,
                                     as_json=args.as_json, session_dir=args.session_dir, wanted=MarksFilter.of(args))


def add_recent_arguments(parser: argparse.ArgumentParser) -> None:
    parser.description = ("The project's most recently changed sessions (read from each file's first 4 KB), "
                          "newest first.")
    parser.add_argument("-n", "--limit", type=positive_count, default=session_commands.DEFAULT_RECENT_COUNT,
                        help=f"How many sessions to show (default {session_commands.DEFAULT_RECENT_COUNT}).")
    _add_list_like(parser)


def run_recent(args: argparse.Namespace, settings: Settings) -> int:
    return session_commands.run_recent(lambda: session_source(args, settings), settings.paths, limit=args.limit,
                                       as_json=args.as_json, session_dir=args.session_dir, wanted=MarksFilter.of(args))


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
    parser.add_argument("--json", dest="as_json", action="store_true",
                        help="Print the session object (plus action and cwd) as JSON.")
    parser.add_argument("--shell", action="store_true",
                        help="Print two lines: the directory to run the agent in, then the file.")
    add_session_dir_option(parser, "Read this session folder instead of the project's folders.")


def run_resume(args: argparse.Namespace, settings: Settings) -> int:
    assume = session_commands.fork_choice(args.assume_yes, args.no_fork)
    if not args.value:
        from sessdex.catalog.cli.pick_commands import resume_without_value

        return resume_without_value(args, settings)
    return session_commands.run_resume(lambda: session_source(args, settings), settings.paths, args.value,
                                       assume=assume, as_json=args.as_json, session_dir=args.session_dir,
                                       own_dir=args.own_dir, shell=args.shell)


def add_continue_arguments(parser: argparse.ArgumentParser) -> None:
    parser.description = "Print the session `xcsh --continue` would resume here: this terminal's last one, else the newest."
    parser.add_argument("--json", dest="as_json", action="store_true", help="Print the resolution as JSON.")
    add_session_dir_option(parser, "Read this session folder instead of the project's folders.")


def run_continue(args: argparse.Namespace, settings: Settings) -> int:
    return session_commands.run_continue(lambda: session_source(args, settings), settings.paths,
                                         as_json=args.as_json, session_dir=args.session_dir)

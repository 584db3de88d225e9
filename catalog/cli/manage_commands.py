"""`sessdex rename ID TITLE` and `sessdex trash ID | list | restore ID`: a session's title and its removal,
never a real delete (the trash mirrors the sessions folder under `<agent dir>/trash/`)."""

from __future__ import annotations

import argparse
import os
import time
from typing import TYPE_CHECKING, Any

from sessdex.catalog.cli.commands import agent_dir_named
from sessdex.catalog.cli.output import (
    Column,
    current_directory,
    echo,
    echo_json,
    home_relative,
    output_width,
    render_table,
    session_json,
    session_label,
)
from sessdex.catalog.cli.read_guard import json_refusal, require_agent_dir
from sessdex.catalog.queries.naming import display_name
from sessdex.catalog.tui.dates import short_date
from sessdex.core.discovery import id_prefix_length
from sessdex.core.errors import UsageError
from sessdex.core.paths import AgentPaths
from sessdex.core.summary import SessionInfo

if TYPE_CHECKING:
    from sessdex.catalog.store.settings import Settings
    from sessdex.core.marks import Marks


def _paths(args: argparse.Namespace, settings: Settings) -> AgentPaths:
    paths = settings.paths
    require_agent_dir(paths, agent_dir_named(args))
    return paths


def find_session(settings: Settings, value: str) -> SessionInfo:
    """The session VALUE names: a session file path, or an id prefix (this project first, then every project)."""
    from sessdex.catalog.queries.open_source import open_session_source
    from sessdex.core.discovery import read_session_info
    from sessdex.core.resume import is_path_like

    if is_path_like(value):
        info = read_session_info(os.path.abspath(os.path.expanduser(value)))
        if info is None:
            raise UsageError(f"{value} is not a readable session file")
        return info
    with open_session_source(settings, warn=lambda message: echo(f"sessdex: {message}", err=True)) as source:
        return source.find_session_by_id(value, current_directory(), None)


def all_marks(settings: Settings) -> dict[str, Marks]:
    """Session id -> marks, from the session source (every machine's on a shared catalog; the file without one)."""
    from sessdex.catalog.queries.open_source import open_session_source

    with open_session_source(settings, warn=lambda message: echo(f"sessdex: {message}", err=True)) as source:
        return source.marks()


def marked_json(info: SessionInfo, marks: dict[str, Marks]) -> dict[str, Any]:
    """`session_json` with the session's marks (none: every field false or empty)."""
    from sessdex.core.marks import NO_MARKS

    return session_json(info, marks.get(info.id, NO_MARKS))


def add_rename_arguments(parser: argparse.ArgumentParser) -> None:
    parser.description = "Give the session ID (an id prefix or a file) the title TITLE, as a rename in the agent does."
    parser.add_argument("value", metavar="ID", help="An id prefix or a session file.")
    parser.add_argument("title", metavar="TITLE", help="The new title.")
    parser.add_argument("--json", dest="as_json", action="store_true", help="Print the renamed session's object as JSON.")


def run_rename(args: argparse.Namespace, settings: Settings) -> int:
    from sessdex.core.discovery import read_session_info
    from sessdex.core.rename import rename_session

    with json_refusal(args.as_json):
        paths = _paths(args, settings)
        info = find_session(settings, args.value)
        stored = rename_session(info.path, args.title, paths)
    renamed = read_session_info(info.path) or info
    if args.as_json:
        echo_json(marked_json(renamed, all_marks(settings)))
    else:
        echo(f"Renamed {info.id} to “{stored}”", err=True)
    return 0


def _trash_listing(settings: Settings, paths: AgentPaths, as_json: bool) -> None:
    from sessdex.core.trash import trash_root, trashed_sessions

    items = trashed_sessions(paths)
    if as_json:
        marks = all_marks(settings) if items else {}
        echo_json([{**marked_json(item.info, marks), "restoreTo": str(item.restore_to)} for item in items])
        return
    if not items:
        echo(f"The trash is empty ({trash_root(paths)})", err=True)
        return
    now_ms = time.time() * 1000
    prefix = id_prefix_length([item.info.id for item in items])
    rows = [[item.info.id[:prefix], short_date(item.trashed_ms, now_ms), session_label(item.info),
             home_relative(item.info.cwd)] for item in items]
    columns = [Column("ID"), Column("TRASHED"), Column("NAME", flexible=True), Column("CWD", flexible=True, path=True)]
    echo(render_table(columns, rows, output_width()))


def add_trash_arguments(parser: argparse.ArgumentParser) -> None:
    parser.description = """\
Move the session ID to <agent dir>/trash/; `trash list` shows the trash, `trash restore ID` brings one back.

Nothing is ever deleted: a session in the trash is a file you can still open, and restoring it puts it
back exactly where it was (refusing if a file is there now)."""
    parser.add_argument("words", nargs="+", metavar="ID | list | restore ID",
                        help="A session to trash, `list`, or `restore` and a trashed session's id.")
    parser.add_argument("--json", dest="as_json", action="store_true", help="Print JSON.")


def run_trash(args: argparse.Namespace, settings: Settings) -> int:
    from sessdex.core.trash import find_trashed, restore_session, trash_session

    words, as_json = tuple(args.words), args.as_json
    with json_refusal(as_json):
        if words == ("list",):
            _trash_listing(settings, _paths(args, settings), as_json)
            return 0
        if words[0] == "restore":
            if len(words) != 2:
                raise UsageError("usage: sessdex trash restore ID")
            item = find_trashed(words[1], _paths(args, settings))
            restored = restore_session(item)
            if as_json:
                echo_json({**marked_json(item.info, all_marks(settings)), "path": str(restored)})
            else:
                echo(f"Restored {item.info.id} to {restored}", err=True)
            return 0
        if len(words) != 1:
            raise UsageError("usage: sessdex trash ID | sessdex trash list | sessdex trash restore ID")
        paths = _paths(args, settings)
        info = find_session(settings, words[0])
        target = trash_session(info.path, paths)
    if as_json:
        echo_json({**marked_json(info, all_marks(settings)), "path": str(target), "restoreTo": str(info.path)})
    else:
        name = display_name(info.title, info.first_message, info.message_count, info.id, str(info.path))
        echo(f"Moved {info.id} ({name}) to the trash: {target}\n"
             f"`sessdex trash restore {info.id[:id_prefix_length([info.id])]}` brings it back.", err=True)
    return 0

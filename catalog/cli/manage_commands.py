"""`sessdex rename ID TITLE` and `sessdex trash ID | list | restore ID | empty`: a session's title and its removal
(the trash mirrors the sessions folder under `<agent dir>/trash/`); `trash empty` is the only command that deletes."""

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
from sessdex.core.errors import AmbiguousSessionError, UsageError
from sessdex.core.paths import AgentPaths
from sessdex.core.summary import SessionInfo

if TYPE_CHECKING:
    from sessdex.catalog.store.settings import Settings
    from sessdex.core.marks import Marks


def agent_paths(args: argparse.Namespace, settings: Settings) -> AgentPaths:
    """The agent's paths, refused with one line when its folder does not exist."""
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
        try:
            return source.find_session_by_id(value, current_directory(), None)
        except AmbiguousSessionError as error:
            error.candidate_marks = source.marks()  # type: ignore[attr-defined]  # for the candidates' JSON
            raise


def all_marks(settings: Settings) -> dict[str, Marks]:
    """Session id -> marks, from the session source (every machine's on a shared catalog; the file without one)."""
    from sessdex.catalog.queries.open_source import open_session_source

    with open_session_source(settings, warn=lambda message: echo(f"sessdex: {message}", err=True)) as source:
        return source.marks()


def marked_json(info: SessionInfo, marks: dict[str, Marks]) -> dict[str, Any]:
    """`session_json` with the session's marks (none: every field false or empty)."""
    from sessdex.core.marks import NO_MARKS

    return session_json(info, marks.get(info.id, NO_MARKS))


# -- the arguments and sizes of `prune` and `trash empty` ------------------------------------------------

_DURATION_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 7 * 86400}
_SIZE_UNITS = {"": 1, "b": 1, "k": 1 << 10, "kb": 1 << 10, "kib": 1 << 10, "m": 1 << 20, "mb": 1 << 20, "mib": 1 << 20,
               "g": 1 << 30, "gb": 1 << 30, "gib": 1 << 30}


def duration(text: str) -> float:
    """An argument type: `90d`, `12h`, `2w`, `30m`, `45s` as seconds."""
    unit = text[-1:].lower()
    number = text[:-1]
    if unit not in _DURATION_UNITS or not number.isdigit():
        raise argparse.ArgumentTypeError(f"{text!r} is not a duration such as 90d, 12h, 2w, 30m")
    return int(number) * _DURATION_UNITS[unit]


def byte_size(text: str) -> int:
    """An argument type: `500`, `10k`, `2M`, `1G` as bytes."""
    lowered = text.strip().lower()
    digits = len(lowered) - len(lowered.lstrip("0123456789"))
    number, unit = lowered[:digits], lowered[digits:]
    if not number or unit not in _SIZE_UNITS:
        raise argparse.ArgumentTypeError(f"{text!r} is not a size such as 500, 10k, 2M")
    return int(number) * _SIZE_UNITS[unit]


def human_size(size: int) -> str:
    """A size as people read it, in the units SIZE arguments take (1 KiB = 1024 bytes): 512 bytes, 12.3 KiB."""
    if size < 1024:
        return f"{size} bytes"
    for unit, scale in (("KiB", 1 << 10), ("MiB", 1 << 20)):
        if size < scale * 1024:
            return f"{size / scale:.1f} {unit}"
    return f"{size / (1 << 30):.1f} GiB"


def add_rename_arguments(parser: argparse.ArgumentParser) -> None:
    parser.description = "Give the session ID (an id prefix or a file) the title TITLE, as a rename in the agent does."
    parser.add_argument("value", metavar="ID", help="An id prefix or a session file.")
    parser.add_argument("title", metavar="TITLE", help="The new title.")
    parser.add_argument("--json", dest="as_json", action="store_true", help="Print the renamed session's object as JSON.")


def run_rename(args: argparse.Namespace, settings: Settings) -> int:
    from sessdex.core.discovery import read_session_info
    from sessdex.core.rename import rename_session

    with json_refusal(args.as_json):
        paths = agent_paths(args, settings)
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
    marks = all_marks(settings)
    if any(item.info.id in marks for item in items):  # a MARKS column only when a trashed session has marks
        from sessdex.catalog.cli.output import marks_cell

        columns.insert(2, Column("MARKS"))
        for row, item in zip(rows, items, strict=True):
            row.insert(2, marks_cell(marks.get(item.info.id)))
    echo(render_table(columns, rows, output_width()))


def add_trash_arguments(parser: argparse.ArgumentParser) -> None:
    parser.description = """\
Move the session ID to <agent dir>/trash/; `trash list` shows the trash, `trash restore ID [ID...]` brings
sessions back.

A session in the trash is a file you can still open, and restoring it puts it back exactly where it was
(refusing if a file is there now). `trash empty [--older-than 30d]` deletes the trashed files for good: the
only command of sessdex that deletes; it says how many files and bytes and asks first (without a terminal,
--yes is required)."""
    parser.add_argument("words", nargs="+", metavar="ID | list | restore ID | empty",
                        help="A session to trash, `list`, `restore` and trashed sessions' ids, or `empty`.")
    parser.add_argument("--older-than", type=duration, metavar="AGE",
                        help="`empty`: only the files trashed at least AGE ago (30d, 12h, 2w).")
    parser.add_argument("--yes", "-y", dest="assume_yes", action="store_true", help="`empty`: delete without asking.")
    parser.add_argument("--json", dest="as_json", action="store_true", help="Print JSON.")


def _empty_trash(args: argparse.Namespace, paths: AgentPaths) -> int:
    """`trash empty`: say what would go, ask (or take --yes), delete, and report in one line."""
    import sys

    from sessdex.core.trash import delete_from_trash, files_to_empty, trash_root

    files = files_to_empty(paths, args.older_than)
    total = sum(item.size for item in files)
    if not files:
        if args.as_json:
            echo_json({"deleted": 0, "bytes": 0, "paths": []})
        which = " trashed that long ago" if args.older_than is not None else ""
        echo(f"Nothing to delete: no session file in the trash{which} ({trash_root(paths)})", err=True)
        return 0
    what = f"{len(files)} session file(s), {total:,} bytes ({human_size(total)})"
    if not args.assume_yes:
        if not sys.stdin.isatty():
            raise UsageError(f"trash empty would delete {what} for good; pass --yes to do it without a terminal")
        from sessdex.catalog.cli.output import confirm

        if not confirm(f"Delete {what} from the trash for good?"):
            echo("Nothing was deleted.", err=True)
            return 0  # as `prune` declined: a no is an answer, not a failure
    deleted = delete_from_trash(paths, files)
    deleted_bytes = sum(item.size for item in deleted)
    if args.as_json:
        echo_json({"deleted": len(deleted), "bytes": deleted_bytes, "paths": [item.path for item in deleted]})
    echo(f"Deleted {len(deleted)} session file(s), {deleted_bytes:,} bytes ({human_size(deleted_bytes)}), from the trash.",
         err=True)
    return 0


def run_trash(args: argparse.Namespace, settings: Settings) -> int:
    from sessdex.core.trash import find_trashed, restore_session, trash_session, trashed_sessions

    words, as_json = tuple(args.words), args.as_json
    with json_refusal(as_json):
        if words[0] == "empty":
            if len(words) != 1:
                raise UsageError("usage: sessdex trash empty [--older-than AGE] [--yes]")
            return _empty_trash(args, agent_paths(args, settings))
        if args.older_than is not None or args.assume_yes:
            raise UsageError("--older-than and --yes go with `sessdex trash empty` only")
        if words == ("list",):
            _trash_listing(settings, agent_paths(args, settings), as_json)
            return 0
        if words[0] == "restore":
            if len(words) < 2:
                raise UsageError("usage: sessdex trash restore ID [ID...]")
            paths = agent_paths(args, settings)
            trashed = trashed_sessions(paths)
            items = [find_trashed(value, paths, trashed) for value in words[1:]]  # all found before any moves
            answers = []
            for item in items:
                restored = restore_session(item)
                answers.append((item, restored))
                if not as_json:
                    echo(f"Restored {item.info.id} to {restored}", err=True)
            if as_json:
                marks = all_marks(settings)
                objects = [{**marked_json(item.info, marks), "path": str(restored)} for item, restored in answers]
                echo_json(objects[0] if len(objects) == 1 else objects)  # several ids: an array
            return 0
        if len(words) != 1:
            raise UsageError("usage: sessdex trash ID | sessdex trash list | sessdex trash restore ID [ID...] | "
                             "sessdex trash empty")
        paths = agent_paths(args, settings)
        info = find_session(settings, words[0])
        target = trash_session(info.path, paths)
    if as_json:
        echo_json({**marked_json(info, all_marks(settings)), "path": str(target), "restoreTo": str(info.path)})
    else:
        name = display_name(info.title, info.first_message, info.message_count, info.id, str(info.path))
        echo(f"Moved {info.id} ({name}) to the trash: {target}\n"
             f"`sessdex trash restore {info.id[:id_prefix_length([info.id])]}` brings it back.", err=True)
    return 0

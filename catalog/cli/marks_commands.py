"""`sessdex pin | unpin | star | unstar | tag | note | marks | tags` and `sessdex prune`.

Marks are events appended to `<agent dir>/sessdex/marks.jsonl` (sessdex.core.marks), keyed by session id, so they
follow a session through rename, trash and restore. A SESSION argument is resolved as `rename` and `trash` resolve
it (an id prefix: this project first, then every project; or a session file). `prune` moves sessions to the trash
(sessdex.core.trash), never one with a mark, never one a live agent may be writing, and lists them first.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from typing import TYPE_CHECKING, Any

from sessdex.catalog.cli.manage_commands import agent_paths
from sessdex.catalog.cli.output import (
    Column,
    echo,
    echo_json,
    home_relative,
    marks_cell,
    output_width,
    render_table,
    session_json,
    session_label,
)
from sessdex.catalog.cli.read_guard import json_refusal
from sessdex.core.errors import SessdexError, UsageError
from sessdex.core.marks import NO_MARKS, Marks, append_events, make_event, valid_note, valid_tag

if TYPE_CHECKING:
    from sessdex.catalog.store.settings import Settings
    from sessdex.core.summary import SessionInfo


def _add_session_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("value", metavar="SESSION", help="An id prefix or a session file.")
    parser.add_argument("--json", dest="as_json", action="store_true", help="Print the session object as JSON.")


def _set_marks(args: argparse.Namespace, settings: Settings, op: str, done: str, **fields: Any) -> int:
    """Resolve SESSION, append one `op` event for it, and say what its marks are now."""
    from sessdex.catalog.cli.manage_commands import all_marks, find_session

    with json_refusal(args.as_json):
        paths = agent_paths(args, settings)
        info = find_session(settings, args.value)
        append_events(paths, [make_event(info.id, settings.machine_name, op, **fields)])
        marks = all_marks(settings).get(info.id, NO_MARKS)  # this machine's file and every other machine's
    if args.as_json:
        echo_json(session_json(info, marks))
    else:
        now = marks_cell(marks) or "no marks"
        echo(f"{done} {info.id} ({session_label(info)}): {now}", err=True)
    return 0


def add_pin_arguments(parser: argparse.ArgumentParser) -> None:
    parser.description = "Pin SESSION: pinned sessions come first in `list` (and `list --pinned` shows only them)."
    _add_session_argument(parser)


def run_pin(args: argparse.Namespace, settings: Settings) -> int:
    return _set_marks(args, settings, "pin", "Pinned")


def add_unpin_arguments(parser: argparse.ArgumentParser) -> None:
    parser.description = "Unpin SESSION."
    _add_session_argument(parser)


def run_unpin(args: argparse.Namespace, settings: Settings) -> int:
    return _set_marks(args, settings, "unpin", "Unpinned")


def add_star_arguments(parser: argparse.ArgumentParser) -> None:
    parser.description = "Star SESSION (`list --starred` shows the starred ones)."
    _add_session_argument(parser)


def run_star(args: argparse.Namespace, settings: Settings) -> int:
    return _set_marks(args, settings, "star", "Starred")


def add_unstar_arguments(parser: argparse.ArgumentParser) -> None:
    parser.description = "Unstar SESSION."
    _add_session_argument(parser)


def run_unstar(args: argparse.Namespace, settings: Settings) -> int:
    return _set_marks(args, settings, "unstar", "Unstarred")


def add_tag_arguments(parser: argparse.ArgumentParser) -> None:
    parser.description = "Tag SESSION: `+bug` (or `bug`) adds the tag bug, `-wip` removes the tag wip."
    _add_session_argument(parser)
    parser.add_argument("changes", metavar="+TAG|-TAG", nargs="*", help="Tags to add (+TAG or TAG) or remove (-TAG).")
    _take_dashed_words_as_arguments(parser)


def _take_dashed_words_as_arguments(parser: argparse.ArgumentParser) -> None:
    """Make `-wip` an argument (a tag to remove) rather than an unknown option: only the parser's own options
    (--json, --help, the global ones) are read as options."""
    parse_optional = parser._parse_optional

    def tags_are_arguments(arg_string: str) -> Any:
        if arg_string.startswith("-") and not arg_string.startswith("--") and \
                arg_string not in parser._option_string_actions:
            return None
        return parse_optional(arg_string)

    parser._parse_optional = tags_are_arguments  # type: ignore[method-assign]


def parse_tag_changes(words: list[str]) -> tuple[list[str], list[str]]:
    """The tags `+a b -c` adds (a, b) and removes (c); UsageError when there is none or one is not a tag."""
    if not words:
        raise UsageError("tag needs +TAG or -TAG (for example: sessdex tag ab12 +bug -wip)")
    added: list[str] = []
    removed: list[str] = []
    for word in words:
        if word.startswith("-"):
            removed.append(valid_tag(word[1:]))
        else:
            added.append(valid_tag(word[1:] if word.startswith("+") else word))
    added = list(dict.fromkeys(added))
    return added, [tag for tag in dict.fromkeys(removed) if tag not in added]


def run_tag(args: argparse.Namespace, settings: Settings) -> int:
    with json_refusal(args.as_json):
        added, removed = parse_tag_changes(args.changes)
    return _set_marks(args, settings, "tag", "Tagged", add=added, remove=removed)


def add_note_arguments(parser: argparse.ArgumentParser) -> None:
    parser.description = "Give SESSION a note (one per session: a new note replaces it); --clear removes it."
    _add_session_argument(parser)
    parser.add_argument("text", metavar="TEXT", nargs="*", help="The note.")
    parser.add_argument("--clear", action="store_true", help="Remove the session's note.")


def run_note(args: argparse.Namespace, settings: Settings) -> int:
    with json_refusal(args.as_json):
        if args.clear and args.text:
            raise UsageError("give a note or --clear, not both")
        text = None if args.clear else valid_note(" ".join(args.text))
    return _set_marks(args, settings, "note", "Noted" if text is not None else "Cleared the note of", text=text)


# -- reading marks -----------------------------------------------------------------------------------------

def _marked_sessions(settings: Settings) -> tuple[dict[str, Marks], dict[str, SessionInfo]]:
    """Every marked session id's marks (from the catalog, or the file) and the sessions known under those ids."""
    from sessdex.catalog.queries.open_source import open_session_source

    with open_session_source(settings, warn=lambda message: echo(f"sessdex: {message}", err=True)) as source:
        marks = source.marks()
        sessions = {info.id: info for info in source.list_all_sessions(include_empty=True) if info.id in marks}
    return marks, sessions


def add_marks_arguments(parser: argparse.ArgumentParser) -> None:
    parser.description = ("The marks of SESSION, or every marked session (pinned, starred, tagged or with a note); "
                          "a marked session that is not in the sessions folder (trashed, on another machine) is "
                          "listed by its id.")
    parser.add_argument("value", metavar="SESSION", nargs="?", help="An id prefix or a session file.")
    parser.add_argument("--json", dest="as_json", action="store_true", help="Print JSON.")


def run_marks(args: argparse.Namespace, settings: Settings) -> int:
    from sessdex.catalog.cli.manage_commands import find_session

    with json_refusal(args.as_json):
        agent_paths(args, settings)
        if args.value:
            info = find_session(settings, args.value)
            marks, _sessions = _marked_sessions(settings)
            return _print_one(info, marks.get(info.id, NO_MARKS), args.as_json)
        marks, sessions = _marked_sessions(settings)
    ids = sorted(marks, key=lambda session_id: (not marks[session_id].pinned, not marks[session_id].starred,
                                                session_id))
    if args.as_json:
        echo_json([session_json(sessions[session_id], marks[session_id]) if session_id in sessions else
                   {"id": session_id, "marks": marks[session_id].to_json()} for session_id in ids])
        return 0
    if not ids:
        echo("No marked sessions", err=True)
        return 0
    home = os.path.expanduser("~")
    rows = [[session_id[:12], marks_cell(marks[session_id]), marks[session_id].note or "",
             session_label(sessions[session_id]) if session_id in sessions else "(not in the sessions folder)",
             home_relative(sessions[session_id].cwd, home) if session_id in sessions else ""] for session_id in ids]
    columns = [Column("ID"), Column("MARKS"), Column("NOTE", flexible=True), Column("NAME", flexible=True),
               Column("CWD", flexible=True, path=True)]
    echo(render_table(columns, rows, output_width()))
    return 0


def _print_one(info: SessionInfo, marks: Marks, as_json: bool) -> int:
    if as_json:
        echo_json(session_json(info, marks))
    else:
        echo(f"{info.id} ({session_label(info)}): {marks_cell(marks) or 'no marks'}")
        if marks.note:
            echo(f"note: {marks.note}")
    return 0


def add_tags_arguments(parser: argparse.ArgumentParser) -> None:
    parser.description = "Every tag in use, with how many sessions carry it (most used first)."
    parser.add_argument("--json", dest="as_json", action="store_true", help="Print JSON.")


def tag_counts(marks: dict[str, Marks]) -> list[tuple[str, int]]:
    """(tag, sessions carrying it), most used first, then by name."""
    counts: dict[str, int] = {}
    for session_marks in marks.values():
        for tag in session_marks.tags:
            counts[tag] = counts.get(tag, 0) + 1
    return sorted(counts.items(), key=lambda item: (-item[1], item[0]))


def run_tags(args: argparse.Namespace, settings: Settings) -> int:
    from sessdex.catalog.queries.open_source import open_session_source

    with json_refusal(args.as_json):
        agent_paths(args, settings)
        with open_session_source(settings, warn=lambda message: echo(f"sessdex: {message}", err=True)) as source:
            counts = tag_counts(source.marks())
    if args.as_json:
        echo_json([{"tag": tag, "sessions": count} for tag, count in counts])
    elif not counts:
        echo("No tags yet: `sessdex tag SESSION +TAG` adds one", err=True)
    else:
        echo(render_table([Column("TAG", flexible=True), Column("SESSIONS", align_right=True)],
                          [[tag, str(count)] for tag, count in counts], output_width()))
    return 0


# -- prune ----------------------------------------------------------------------------------------------

# A session file changed this recently may be open in a live agent: prune leaves it alone.
LIVE_SECONDS = 10 * 60


def add_prune_arguments(parser: argparse.ArgumentParser) -> None:
    from sessdex.catalog.cli.manage_commands import byte_size, duration

    parser.description = """\
Move the sessions that match every given condition to the trash (`sessdex trash restore ID` brings one back).

Never a pinned, starred, tagged or noted session, never one whose file changed in the last 10 minutes or that
another process has open for writing (a live agent). The sessions are listed first; they are moved after a
yes on a terminal, or with --yes. Nothing is ever deleted."""
    parser.add_argument("--older-than", type=duration, metavar="AGE",
                        help="Sessions not changed for AGE (90d, 12h, 2w).")
    parser.add_argument("--empty", action="store_true", help="Sessions without a message.")
    parser.add_argument("--smaller-than", type=byte_size, metavar="SIZE",
                        help="Session files smaller than SIZE (500, 10k, 2M).")
    parser.add_argument("--project", metavar="DIR", help="Only sessions whose working directory is DIR.")
    parser.add_argument("--dry-run", action="store_true", help="Only list what would be moved.")
    parser.add_argument("--yes", "-y", dest="assume_yes", action="store_true", help="Move without asking.")
    parser.add_argument("--json", dest="as_json", action="store_true",
                        help="Print the sessions (moved, or that would be) as JSON.")


class PruneRule:
    """What `prune` selects: every given condition, never a marked or possibly live session."""

    __slots__ = ("older_than", "empty", "smaller_than", "project", "now")

    def __init__(self, *, older_than: float | None = None, empty: bool = False, smaller_than: int | None = None,
                 project: str | None = None, now: float | None = None) -> None:
        if older_than is None and not empty and smaller_than is None:
            raise UsageError("prune needs a condition: --older-than AGE, --empty or --smaller-than SIZE")
        self.older_than = older_than
        self.empty = empty
        self.smaller_than = smaller_than
        self.project = None if project is None else os.path.abspath(os.path.expanduser(project))
        self.now = time.time() if now is None else now

    def selects(self, info: SessionInfo, size: int, mtime: float, marks: Marks | None) -> bool:
        if marks is not None and not marks.empty:
            return False
        if self.now - mtime < LIVE_SECONDS:
            return False
        if self.project is not None and os.path.abspath(info.cwd or "/") != self.project:
            return False
        if self.older_than is not None and self.now - mtime < self.older_than:
            return False
        if self.empty and info.message_count > 0:
            return False
        return self.smaller_than is None or size < self.smaller_than


def prune_candidates(sessions: list[SessionInfo], marks: dict[str, Marks], rule: PruneRule
                     ) -> list[tuple[SessionInfo, int]]:
    """The sessions `rule` selects, each with its file's size, oldest first (a file gone meanwhile is left out,
    and so is one another process has open for writing: an agent idle for hours still has its session open)."""
    from sessdex.core.live_writers import files_open_for_writing

    chosen = []
    for info in sessions:
        try:
            result = os.lstat(info.path_text)
        except OSError:
            continue
        if rule.selects(info, result.st_size, result.st_mtime, marks.get(info.id)):
            chosen.append((info, result.st_size, result.st_mtime, (result.st_dev, result.st_ino)))
    if chosen:
        open_elsewhere = files_open_for_writing()
        chosen = [item for item in chosen if item[3] not in open_elsewhere]
    chosen.sort(key=lambda item: (item[2], item[0].path_text))
    return [(info, size) for info, size, _mtime, _identity in chosen]


def run_prune(args: argparse.Namespace, settings: Settings) -> int:
    from sessdex.catalog.cli.manage_commands import human_size
    from sessdex.catalog.queries.open_source import open_session_source
    from sessdex.core.trash import trash_session

    with json_refusal(args.as_json):
        rule = PruneRule(older_than=args.older_than, empty=args.empty, smaller_than=args.smaller_than,
                         project=args.project)
        paths = agent_paths(args, settings)
        with open_session_source(settings, warn=lambda message: echo(f"sessdex: {message}", err=True)) as source:
            sessions = source.list_all_sessions(include_empty=True)
            marks = source.marks()
    here = [info for info in sessions if not getattr(info, "remote", False)]
    candidates = prune_candidates(here, marks, rule)
    total = sum(size for _info, size in candidates)
    if not candidates:
        if args.as_json:
            echo_json([])
        echo("Nothing to prune: no unmarked session matches", err=True)
        return 0
    if not args.as_json:
        _print_candidates(candidates)
    move = not args.dry_run and (args.assume_yes or _confirmed(len(candidates), total))
    moved: list[tuple[SessionInfo, str]] = []
    if move:
        for info, _size in candidates:
            try:
                moved.append((info, os.fspath(trash_session(info.path, paths))))
            except (OSError, SessdexError) as exc:  # gone or replaced meanwhile: the others still go
                echo(f"sessdex: {info.id} was not moved: {exc}", err=True)
    if args.as_json:
        if move:
            echo_json([{**session_json(info, marks.get(info.id, NO_MARKS)), "path": target,
                        "restoreTo": info.path_text} for info, target in moved])
        else:
            echo_json([{**session_json(info, marks.get(info.id, NO_MARKS)), "size": size}
                       for info, size in candidates])
    if move:
        moved_bytes = sum(size for info, size in candidates if any(info is done for done, _target in moved))
        echo(f"Moved {len(moved)} session(s) ({human_size(moved_bytes)}) to the trash; "
             "`sessdex trash list` shows them, `sessdex trash restore ID` brings one back.", err=True)
    else:
        hint = "" if args.dry_run else " (pass --yes to move them)"
        echo(f"Would move {len(candidates)} session(s) ({human_size(total)}) to the trash{hint}.", err=True)
    return 0


def _print_candidates(candidates: list[tuple[SessionInfo, int]]) -> None:
    from sessdex.catalog.tui.dates import short_date
    from sessdex.core.discovery import id_prefix_length

    now_ms = time.time() * 1000
    prefix = id_prefix_length([info.id for info, _size in candidates])
    home = os.path.expanduser("~")
    rows = [[info.id[:prefix], short_date(info.modified.timestamp() * 1000, now_ms), str(info.message_count),
             f"{size:,}", session_label(info), home_relative(info.cwd, home)] for info, size in candidates]
    columns = [Column("ID"), Column("MODIFIED"), Column("MSGS", align_right=True), Column("BYTES", align_right=True),
               Column("NAME", flexible=True), Column("CWD", flexible=True, path=True)]
    echo(render_table(columns, rows, output_width()), err=True)


def _confirmed(count: int, total: int) -> bool:
    """Ask on a terminal; elsewhere (a script, a pipe) the answer is no: only --yes moves without a terminal."""
    from sessdex.catalog.cli.manage_commands import human_size

    if not sys.stdin.isatty():
        return False
    from sessdex.catalog.cli.output import confirm

    return confirm(f"Move these {count} session(s) ({human_size(total)}) to the trash?")


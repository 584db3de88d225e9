"""The bodies of `sessdex list | recent | resume | continue`; their options are in `sessdex.catalog.cli.session_group`.

Each body takes its session source as a callable that opens it (the catalog, or the file scan), opens it
only after its own argument checks, and returns the exit status.

`resume` and `continue` print only the resolved session file on stdout, so that
`xcsh --resume "$(sessdex resume ab12)"` works; every other message goes to stderr.
"""

from __future__ import annotations

import os
import sys

from sessdex.catalog.cli.output import (
    MAX_COUNT,
    color_enabled,
    current_directory,
    echo,
    echo_json,
    echo_paths,
    output_width,
    resume_json,
    session_json,
    session_label,
    sessions_table,
    tab_separated,
)
from sessdex.catalog.cli.read_guard import json_refusal
from sessdex.core.errors import UsageError

TYPE_CHECKING = False  # see the README's start-up budget
if TYPE_CHECKING:
    from collections.abc import Callable, Sequence
    from pathlib import Path

    from sessdex.catalog.cli.marks_filters import MarksFilter
    from sessdex.catalog.queries.source import ResumeSource, SessionSource
    from sessdex.core.marks import Marks
    from sessdex.core.paths import AgentPaths
    from sessdex.core.resume import ResumeResult
    from sessdex.core.summary import SessionInfo

    SourceOpener = Callable[[], SessionSource]
    ResumeSourceOpener = Callable[[], ResumeSource]

DEFAULT_RECENT_COUNT = 10
# What a refusal of another project's session says after the error: the two ways on.
OTHER_PROJECT_WAY_OUT = "pass --yes to fork it into this project, or --own-dir to open it where it lives"


def run_list(open_source: SourceOpener, *, all_projects: bool, output: ListingOutput, session_dir: Path | None,
             limit: int | None = None, wanted: MarksFilter | None = None) -> int:
    """`sessdex list`: sessions with at least one message, pinned first, then newest first (this project, or every
    one), at most `limit` (None: all); `wanted`: only those with these marks."""
    from sessdex.catalog.cli.marks_filters import pinned_first

    if all_projects and session_dir is not None:
        raise UsageError("--all and --session-dir cannot be combined")
    with json_refusal(output.as_json), open_source() as source:
        sessions = source.list_all_sessions() if all_projects else source.list_sessions(current_directory(), session_dir)
        marks = source.marks()
        if wanted is not None:
            sessions = wanted.select(sessions, marks, _session_id)
        sessions = pinned_first(sessions, marks, _session_id)
        if limit is not None:
            del sessions[limit:]
        print_sessions(source, sessions, output, marks)
    return 0


def _session_id(info: SessionInfo) -> str:
    return info.id


class ListingOutput:
    """How a listing command prints: JSON (all fields, or the `json_fields` named), or the table (`--table`: the
    aligned table even when stdout is not a terminal)."""

    __slots__ = ("as_json", "json_fields", "table")

    def __init__(self, as_json: bool = False, json_fields: Sequence[str] = (), table: bool = False) -> None:
        self.as_json = as_json
        self.json_fields = json_fields
        self.table = table


def print_sessions(source: SessionSource, sessions: list[SessionInfo], output: ListingOutput,
                   marks: dict[str, Marks] | None = None) -> None:
    """A listing command's sessions: the JSON array of session objects, or the table (a note when empty); ids as
    wide as `resume` needs them to tell every session apart. With `marks` (session id -> Marks), each object
    says its marks and the table shows them."""
    if output.as_json:
        if marks is None:
            echo_json([session_json(info) for info in sessions], fields=output.json_fields)
        else:
            from sessdex.core.marks import NO_MARKS

            echo_json([session_json(info, marks.get(info.id, NO_MARKS)) for info in sessions],
                      fields=output.json_fields)
    elif not sessions:
        echo("No sessions found", err=True)
    else:
        from sessdex.catalog.queries.session_ids import resume_id_width

        id_width = resume_id_width(source, [info.id for info in sessions])
        echo(sessions_table(sessions, output_width(), color=color_enabled(), tsv=tab_separated(output.table),
                            id_width=id_width, marks=marks), markup=True, sanitized=True)


def run_recent(open_source: SourceOpener, paths: AgentPaths, *, limit: int, output: ListingOutput,
               session_dir: Path | None, all_projects: bool = False, wanted: MarksFilter | None = None) -> int:
    """`sessdex recent`: the project's (or with `all_projects` every project's) most recently changed sessions,
    newest first (`wanted`: the newest of those with these marks)."""
    from sessdex.catalog.queries.sessions import Catalog
    from sessdex.core.discovery import read_session_info

    if all_projects and session_dir is not None:
        raise UsageError("--all and --session-dir cannot be combined")
    filtered = wanted is not None and wanted.active
    with json_refusal(output.as_json), open_source() as source:
        marks = source.marks()
        if all_projects:
            sessions = source.list_all_sessions(include_empty=True)
            if not filtered:
                del sessions[limit:]
        elif isinstance(source, Catalog):
            # The catalog holds every field of the session object: one query, no file read (a recent session
            # may be hundreds of megabytes).
            sessions = source.list_sessions(current_directory(), session_dir, include_empty=True,
                                            limit=None if filtered else limit)
        else:
            # The file scan: the newest files by their first 4 KB, then only those few read whole (with a marks
            # filter, only the marked ones among them).
            folders = ([os.fspath(session_dir)] if session_dir is not None
                       else paths.project_session_folders(current_directory()))
            recent = source.recent_sessions_in(folders, MAX_COUNT if filtered else limit)
            if wanted is not None:
                recent = wanted.select(recent, marks, lambda item: item.session_id or "")
            sessions = [info for item in recent[:limit]
                        if (info := read_session_info(item.path, item.mtime)) is not None]
        if wanted is not None:
            sessions = wanted.select(sessions, marks, _session_id)[:limit]
        print_sessions(source, sessions, output, marks)
    return 0


def fork_choice(assume_yes: bool, no_fork: bool) -> bool | None:
    """The answer `--yes` (True) or `--no-fork` (False) gives to the fork question; None to ask."""
    if assume_yes and no_fork:
        raise UsageError("--yes and --no-fork cannot be combined")
    return True if assume_yes else False if no_fork else None


def fork_confirmation(assume: bool | None) -> Callable[[SessionInfo], bool]:
    """The confirm_fork callback: the --yes/--no-fork choice, else ask on a terminal, else decline."""
    def confirm(info: SessionInfo) -> bool:
        if assume is not None:
            return assume
        if not sys.stdin.isatty():
            return False  # the refusal says what to pass (`way_out`)
        from sessdex.catalog.cli.output import confirm

        return confirm(f"Session {info.id} ({session_label(info)}) is in another project ({info.cwd}). "
                       "Fork it into this project?")
    return confirm


def run_resume(open_source: ResumeSourceOpener, paths: AgentPaths, value: str | None, *, assume: bool | None,
               as_json: bool, session_dir: Path | None, own_dir: bool = False, shell: bool = False,
               json_fields: Sequence[str] = (), keep_marks: str | None = None) -> int:
    """`sessdex resume VALUE`: print the file an id prefix or path resolves to, forking on `assume` or a yes.

    `assume` is `fork_choice(...)`; the picker for a missing VALUE is `pick_commands.resume_without_value`'s.
    `own_dir`: a session of another project is opened where it lives instead of forked. `shell`: print the
    directory to run the agent in, then the file (two lines, for the `sessdex init` function).
    With `as_json`, a refusal prints `{"error", "candidates"}` on stdout besides the message on stderr.
    `keep_marks` (this machine's name): a fork gets the marks of the session it was forked from; otherwise a
    fork starts unmarked (it has an id of its own).
    """
    if value is None:
        raise UsageError("resume needs a session id prefix or a path (or run `sessdex pick`)")
    if as_json and shell:
        raise UsageError("--json and --shell cannot be combined")
    with json_refusal(as_json):
        result, run_in, marks = _resolve(open_source, paths, value, assume=assume, session_dir=session_dir,
                                         own_dir=own_dir, with_marks=as_json or keep_marks is not None)
        if result.action == "fork" and result.session is not None and keep_marks is not None:
            marks = _keep_marks(paths, keep_marks, result, marks or {})
    if result.action == "open" and not os.path.isfile(result.path_text):
        echo(f"{result.path_text} does not exist yet: opening it starts a new session there.", err=True)
    if result.action == "fork" and result.session is not None:
        echo(f"Forked {result.session.id} from {result.session.cwd} into {result.path_text}", err=True)
    if as_json:
        echo_json(resume_json(result, run_in, marks), fields=json_fields)
    elif shell:
        print_shell_target(run_in, result.path_text)
    else:
        echo_paths(result.path_text)
    return 0


def _keep_marks(paths: AgentPaths, machine: str, result: ResumeResult, marks: dict[str, Marks]) -> dict[str, Marks]:
    """Give the fork `result` made the marks of its source (appended to the marks file); the marks with them."""
    from sessdex.core.discovery import read_session_info
    from sessdex.core.marks import append_events, events_restoring

    assert result.session is not None
    kept = marks.get(result.session.id)
    forked = read_session_info(result.path_text)
    if kept is None or kept.empty or forked is None:
        return marks
    append_events(paths, events_restoring(kept, forked.id, machine))
    return {**marks, forked.id: kept}


def _resolve(open_source: ResumeSourceOpener, paths: AgentPaths, value: str, *, assume: bool | None,
             session_dir: Path | None, own_dir: bool, with_marks: bool = False
             ) -> tuple[ResumeResult, str, dict[str, Marks] | None]:
    """The resume result, the directory the agent should run in for it, and (`with_marks`) every session's marks."""
    from sessdex.core.errors import AmbiguousSessionError, SessionInOtherProjectError
    from sessdex.core.resume import ResumeResult, is_path_like, resolve_resume

    cwd = current_directory()
    confirm = fork_confirmation(assume)
    asked: list[SessionInfo] = []

    def confirm_fork(info: SessionInfo) -> bool:
        asked.append(info)
        return confirm(info)

    with open_source() as source:
        marks = source.marks() if with_marks else None
        try:
            if own_dir and value and not is_path_like(value):
                info = source.find_session_by_id(value, cwd, session_dir)
                return ResumeResult("open", info.path_text, info), info.cwd or cwd, marks
            result = resolve_resume(value, cwd, session_dir, paths=paths, confirm_fork=confirm_fork,
                                    find_session=lambda v, c, d, *, paths: source.find_session_by_id(v, c, d))
        except AmbiguousSessionError as error:
            error.candidate_marks = marks  # type: ignore[attr-defined]  # for the candidates' JSON
            raise
        except SessionInOtherProjectError as error:
            refusal = SessionInOtherProjectError(f"{error}; {OTHER_PROJECT_WAY_OUT}")
            refusal.candidates = asked  # type: ignore[attr-defined]  # the session refused, for --json
            refusal.candidate_marks = marks  # type: ignore[attr-defined]
            raise refusal from None
    if result.action == "fork":
        return result, cwd, marks
    if result.session is not None:
        return result, result.session.cwd or cwd, marks
    return result, _header_cwd(result.path_text) or cwd, marks


HEADER_PREFIX_BYTES = 64 * 1024  # the header (and a title line before it) is at the start of the file


def _header_cwd(path: str) -> str | None:
    """The cwd a session file's header names (read from its start only), None when it has none or is unreadable."""
    from sessdex.core.discovery import summarize_bytes

    try:
        if not os.path.isfile(path):
            return None
        with open(path, "rb") as handle:
            start = handle.read(HEADER_PREFIX_BYTES)
    except OSError:
        return None
    summary, _texts = summarize_bytes(start[:start.rfind(b"\n") + 1] or start)
    return summary.cwd if summary.header_valid and summary.cwd else None


def print_shell_target(directory: str, path: str) -> None:
    """Two lines for a shell function: the directory to run the agent in, then the session file."""
    if "\n" in directory or "\n" in path:
        raise UsageError("a path holds a line break; use --json instead of --shell")
    echo_paths(directory, path)


def run_continue(open_source: SourceOpener, paths: AgentPaths, *, as_json: bool, session_dir: Path | None,
                 json_fields: Sequence[str] = ()) -> int:
    """`sessdex continue`: the session `xcsh --continue` would resume here; status 1 when there is none."""
    from sessdex.core.breadcrumbs import continue_target

    with json_refusal(as_json), open_source() as source:
        target = continue_target(current_directory(), session_dir, paths=paths,
                                 most_recent=source.most_recent_session_file)
        marks = source.marks() if as_json and target is not None else {}
    message = "No session to continue in this project: xcsh --continue starts a new one."
    if target is None:
        if as_json:
            echo_json({"error": message, "candidates": []})
        echo(message, err=True)
        return 1
    if as_json:
        from sessdex.core.discovery import read_session_info
        from sessdex.core.marks import NO_MARKS

        info = read_session_info(target)
        echo_json(session_json(info, marks.get(info.id, NO_MARKS)) if info is not None else {"path": target},
                  fields=json_fields)
    else:
        echo_paths(target)
    return 0

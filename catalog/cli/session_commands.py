"""The bodies of `sessdex list | recent | resume | continue`, without click (S10, S12, S13, S16).

The click commands in `sessdex.catalog.cli.session_group` parse the options and call these; so does the fast path
(`sessdex.catalog.cli.fastpath`), which answers the common shapes of these commands without importing click. Each
body takes its session source as a callable that opens it (the catalog, or the file scan), opens it
only after its own argument checks, as the commands always did, and returns the exit status.

`resume` and `continue` print only the resolved session file on stdout, so that
`xcsh --resume "$(sessdex resume ab12)"` works; every other message goes to stderr.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable

from sessdex.catalog.cli.output import (
    current_directory,
    echo,
    echo_json,
    output_width,
    recent_json,
    recent_table,
    resume_json,
    session_json,
    session_label,
    sessions_table,
)
from sessdex.core.errors import UsageError

TYPE_CHECKING = False  # typing stays off the hot commands' imports (issue 12)
if TYPE_CHECKING:
    from pathlib import Path

    from sessdex.catalog.queries.source import SessionSource
    from sessdex.core.paths import AgentPaths
    from sessdex.core.summary import SessionInfo

    SourceOpener = Callable[[], SessionSource]

DEFAULT_RECENT_COUNT = 10


def run_list(open_source: SourceOpener, *, all_projects: bool, as_json: bool, session_dir: Path | None) -> int:
    """`sessdex list`: sessions with at least one message, newest first (this project, or every one)."""
    if all_projects and session_dir is not None:
        raise UsageError("--all and --session-dir cannot be combined")
    with open_source() as source:
        sessions = source.list_all_sessions() if all_projects else source.list_sessions(current_directory(), session_dir)
    if as_json:
        echo_json([session_json(info) for info in sessions])
    elif not sessions:
        echo("No sessions found", err=True)
    else:
        echo(sessions_table(sessions, output_width()))
    return 0


def run_recent(open_source: SourceOpener, paths: AgentPaths, *, limit: int, as_json: bool,
               session_dir: Path | None) -> int:
    """`sessdex recent`: the project's most recently changed sessions, newest first."""
    folders = ([os.fspath(session_dir)] if session_dir is not None
               else paths.project_session_folders(current_directory()))
    with open_source() as source:
        recent = source.recent_sessions_in(folders, limit)
    if as_json:
        echo_json([recent_json(item) for item in recent])
    elif not recent:
        echo("No sessions found", err=True)
    else:
        echo(recent_table(recent, output_width()))
    return 0


def fork_choice(assume_yes: bool, no_fork: bool) -> bool | None:
    """The answer `--yes` (True) or `--no-fork` (False) gives to the fork question; None to ask."""
    if assume_yes and no_fork:
        raise UsageError("--yes and --no-fork cannot be combined")
    return True if assume_yes else False if no_fork else None


def _fork_confirmation(assume: bool | None) -> Callable[[SessionInfo], bool]:
    """The confirm_fork callback: the --yes/--no-fork choice, else ask on a terminal, else decline."""
    def confirm(info: SessionInfo) -> bool:
        if assume is not None:
            return assume
        if not sys.stdin.isatty():
            echo("Pass --yes to fork a session from another project into this one.", err=True)
            return False
        import click  # only a person at a terminal is asked: the prompt is click's

        return click.confirm(f"Session {info.id} ({session_label(info)}) is in another project ({info.cwd}). "
                             "Fork it into this project?", default=False, err=True)
    return confirm


def run_resume(open_source: SourceOpener, paths: AgentPaths, value: str | None, *, assume: bool | None,
               as_json: bool, session_dir: Path | None) -> int:
    """`sessdex resume VALUE`: print the file an id prefix or path resolves to, forking on `assume` or a yes.

    `assume` is `fork_choice(...)`; the picker for a missing VALUE is the click command's business.
    """
    from sessdex.core.resume import resolve_resume

    if value is None:
        raise UsageError("resume needs a session id prefix or a path (or run `sessdex pick`)")
    with open_source() as source:
        result = resolve_resume(value, current_directory(), session_dir, paths=paths, confirm_fork=_fork_confirmation(assume),
                                find_session=lambda v, c, d, *, paths: source.find_session_by_id(v, c, d))
    if result.action == "open" and not os.path.isfile(result.path_text):
        echo(f"{result.path_text} does not exist yet: opening it starts a new session there.", err=True)
    if result.action == "fork" and result.session is not None:
        echo(f"Forked {result.session.id} from {result.session.cwd} into {result.path_text}", err=True)
    if as_json:
        echo_json(resume_json(result))
    else:
        echo(result.path_text)
    return 0


def run_continue(open_source: SourceOpener, paths: AgentPaths, *, as_json: bool, session_dir: Path | None) -> int:
    """`sessdex continue`: the session `xcsh --continue` would resume here; status 1 when there is none."""
    from sessdex.core.breadcrumbs import resolve_continue_target  # lazy: it pulls in the runtime/storage modules

    with open_source() as source:
        target = resolve_continue_target(current_directory(), session_dir, paths=paths,
                                         most_recent=source.most_recent_session_in)
    if target is None:
        if as_json:
            echo_json({"path": None})
        echo("No session to continue in this project: xcsh --continue starts a new one.", err=True)
        return 1
    if as_json:
        echo_json({"path": str(target)})
    else:
        echo(str(target))
    return 0

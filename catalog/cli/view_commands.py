"""`sessdex view [SESSION]`: open a session in the transcript viewer (or print it when not on a terminal)."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from sessdex.catalog.cli.commands import agent_dir_named, directory
from sessdex.catalog.cli.output import current_directory, echo
from sessdex.catalog.cli.session_commands import fork_confirmation
from sessdex.core.errors import SessionFileError, SessionNotFoundError
from sessdex.core.resume import is_path_like

if TYPE_CHECKING:
    from sessdex.catalog.store.settings import Settings


def _require_session_file(value: str, cwd: str) -> None:
    """A path given to the viewer must be an existing session file: viewing never starts a new session."""
    from sessdex.core.discovery import read_session_info

    path = Path(os.path.abspath(os.path.join(cwd, os.path.expanduser(value))))
    if not path.is_file():
        raise SessionFileError(f"{value}: no such session file")
    if read_session_info(path) is None:
        raise SessionFileError(f"{value}: not a session file (no valid session header on its first line)")


def add_view_arguments(parser: argparse.ArgumentParser) -> None:
    parser.description = """\
Show a session's transcript; press r to switch to another session in place, q to quit (Esc or Ctrl+C: exit 130).

SESSION is a session file or an id prefix (this project first, then every project); without it,
the session `xcsh --continue` would resume here. The session is resumed exactly as the agent
resumes it, but everything that resuming writes stays in memory: viewing never changes a
session file or the terminal's breadcrumb. Only forking a session of another project (asked
for with a yes) writes a new file."""
    parser.add_argument("session", metavar="SESSION", nargs="?", help="A session file or an id prefix.")
    parser.add_argument("--session-dir", metavar="DIR", type=directory,
                        help="Look sessions up in this folder instead of the project's folders.")
    parser.add_argument("--yes", "-y", dest="assume_yes", action="store_true",
                        help="Fork a session from another project without asking.")
    parser.add_argument("--print", dest="print_only", action="store_true",
                        help="Print the transcript and exit (the default when stdin or stdout is not a terminal).")


def run_view(args: argparse.Namespace, settings: Settings) -> int:
    session: str | None = args.session
    session_dir: Path | None = args.session_dir
    from sessdex.catalog.tui.viewer import (
        PickerChooser,
        TranscriptViewer,
        open_viewer_session,
        plain_view,
    )
    from sessdex.core.agent_session import AgentSession
    from sessdex.core.breadcrumbs import resolve_continue_target
    from sessdex.core.runtime import SessionRuntime
    from sessdex.core.storage import OverlaySessionStorage

    paths = settings.paths
    runtime = SessionRuntime(paths=paths, storage=OverlaySessionStorage())
    cwd = current_directory()
    if session is None or not is_path_like(session):
        from sessdex.catalog.cli.read_guard import require_agent_dir

        require_agent_dir(paths, agent_dir_named(args))
    if session is None:
        if resolve_continue_target(cwd, session_dir, paths=paths) is None:
            raise SessionNotFoundError("No sessions found")
        live, agent = open_viewer_session(lambda agent, models: AgentSession.continue_recent(
            cwd, agent, models, session_dir=session_dir, runtime=runtime))
    else:
        if is_path_like(session):
            _require_session_file(session, cwd)
        live, agent = open_viewer_session(lambda agent, models: AgentSession.resume(
            session, cwd, agent, models, confirm_fork=fork_confirmation(True if args.assume_yes else None),
            session_dir=session_dir,
            runtime=runtime))
    try:
        if args.print_only or not (sys.stdin.isatty() and sys.stdout.isatty()):
            echo(plain_view(live, agent, paths))
        else:
            chooser = PickerChooser(settings=settings)
            viewer = TranscriptViewer(live, agent, paths=paths, session_dir=session_dir, choose_session=chooser)
            viewer.run()
            if viewer.cancelled:
                from sessdex.catalog.cli.errors import INTERRUPTED_STATUS

                return INTERRUPTED_STATUS
    finally:
        live.close()
    return 0

"""`sessdex view [SESSION]`: open a session in the transcript viewer (or print it when not on a terminal)."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import click

from sessdex.catalog.cli.click_app import command_settings
from sessdex.catalog.cli.output import current_directory, echo
from sessdex.catalog.cli.session_commands import fork_confirmation
from sessdex.core.errors import SessionFileError, SessionNotFoundError
from sessdex.core.resume import is_path_like


def _require_session_file(value: str, cwd: str) -> None:
    """A path given to the viewer must be an existing session file: viewing never starts a new session."""
    from sessdex.core.discovery import read_session_info

    path = Path(os.path.abspath(os.path.join(cwd, os.path.expanduser(value))))
    if not path.is_file():
        raise SessionFileError(f"{value}: no such session file")
    if read_session_info(path) is None:
        raise SessionFileError(f"{value}: not a session file (no valid session header on its first line)")


@click.command("view")
@click.argument("session", required=False)
@click.option("--session-dir", type=click.Path(file_okay=False, path_type=Path),
              help="Look sessions up in this folder instead of the project's folders.")
@click.option("--yes", "-y", "assume_yes", is_flag=True, help="Fork a session from another project without asking.")
@click.option("--print", "print_only", is_flag=True,
              help="Print the transcript and exit (the default when stdin or stdout is not a terminal).")
@click.pass_context
def view_command(ctx: click.Context, session: str | None, session_dir: Path | None, assume_yes: bool,
                 print_only: bool) -> None:
    """Show a session's transcript; press r to switch to another session in place, q to quit (Esc or Ctrl+C: exit 130).

    SESSION is a session file or an id prefix (this project first, then every project); without it,
    the session `xcsh --continue` would resume here. The session is resumed exactly as the agent
    resumes it, but everything that resuming writes stays in memory: viewing never changes a
    session file or the terminal's breadcrumb. Only forking a session of another project (asked
    for with a yes) writes a new file.
    """
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

    settings = command_settings(ctx)
    paths = settings.paths
    runtime = SessionRuntime(paths=paths, storage=OverlaySessionStorage())
    cwd = current_directory()
    if session is None or not is_path_like(session):
        from sessdex.catalog.cli.read_guard import agent_dir_named, require_agent_dir

        require_agent_dir(paths, agent_dir_named(ctx))
    if session is None:
        if resolve_continue_target(cwd, session_dir, paths=paths) is None:
            raise SessionNotFoundError("No sessions found")
        live, agent = open_viewer_session(lambda agent, models: AgentSession.continue_recent(
            cwd, agent, models, session_dir=session_dir, runtime=runtime))
    else:
        if is_path_like(session):
            _require_session_file(session, cwd)
        live, agent = open_viewer_session(lambda agent, models: AgentSession.resume(
            session, cwd, agent, models, confirm_fork=fork_confirmation(True if assume_yes else None), session_dir=session_dir,
            runtime=runtime))
    try:
        if print_only or not (sys.stdin.isatty() and sys.stdout.isatty()):
            echo(plain_view(live, agent))
        else:
            chooser = PickerChooser(settings=settings)
            viewer = TranscriptViewer(live, agent, paths=paths, session_dir=session_dir, choose_session=chooser)
            viewer.run()
            if viewer.cancelled:
                from sessdex.catalog.cli.errors import INTERRUPTED_STATUS

                ctx.exit(INTERRUPTED_STATUS)
    finally:
        live.close()

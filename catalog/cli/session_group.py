"""`sessdex list | recent | resume | continue` as click commands (S10, S12, S13, S16).

Only the option parsing lives here: the bodies are in `sessdex.catalog.cli.session_commands` and the output in
`sessdex.catalog.cli.output`, shared with the click-free fast path (`sessdex.catalog.cli.fastpath`), which answers the
common shapes of these commands without importing click.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from sessdex.catalog.cli import session_commands
from sessdex.catalog.cli.click_app import command_settings
from sessdex.catalog.cli.output import MAX_COUNT, echo
from sessdex.catalog.cli.read_guard import agent_dir_named, require_agent_dir
from sessdex.catalog.queries.open_source import open_session_source
from sessdex.catalog.queries.source import SessionSource
from sessdex.core.paths import AgentPaths


def _session_source(ctx: click.Context) -> SessionSource:
    """The catalog (kept fresh by stat or by `sessdex watch`), or the file scan if the catalog is unusable.

    Refused (nothing created) when the agent dir does not exist."""
    settings = command_settings(ctx)
    require_agent_dir(settings.paths, agent_dir_named(ctx))
    return open_session_source(settings, warn=lambda message: echo(f"sessdex: {message}", err=True))


def _agent_paths(ctx: click.Context) -> AgentPaths:
    return command_settings(ctx).paths


def _session_dir_option(function: Any) -> Any:
    return click.option("--session-dir", type=click.Path(file_okay=False, path_type=Path),
                        help="Read this session folder instead of the project's folders.")(function)


@click.command("list")
@click.option("--all", "all_projects", is_flag=True, help="Sessions of every project, not only this one.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON instead of a table.")
@_session_dir_option
@click.pass_context
def list_command(ctx: click.Context, all_projects: bool, as_json: bool, session_dir: Path | None) -> None:
    """List sessions with at least one message, newest first (this project, or all with --all)."""
    session_commands.run_list(lambda: _session_source(ctx), all_projects=all_projects, as_json=as_json,
                              session_dir=session_dir)


@click.command("recent")
@click.option("-n", "--limit", type=click.IntRange(min=1, max=MAX_COUNT), default=session_commands.DEFAULT_RECENT_COUNT,
              show_default=True, help="How many sessions to show.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON instead of a table.")
@_session_dir_option
@click.pass_context
def recent_command(ctx: click.Context, limit: int, as_json: bool, session_dir: Path | None) -> None:
    """The project's most recently changed sessions (read from each file's first 4 KB), newest first."""
    session_commands.run_recent(lambda: _session_source(ctx), _agent_paths(ctx), limit=limit, as_json=as_json,
                                session_dir=session_dir)


@click.command("resume")
@click.argument("value", required=False)
@click.option("--yes", "-y", "assume_yes", is_flag=True, help="Fork a session from another project without asking.")
@click.option("--no-fork", is_flag=True, help="Refuse sessions from another project without asking.")
@click.option("--own-dir", is_flag=True,
              help="Open a session of another project where it lives instead of forking it (see --shell).")
@click.option("--json", "as_json", is_flag=True, help="Print the session object (plus action and cwd) as JSON.")
@click.option("--shell", is_flag=True, help="Print two lines: the directory to run the agent in, then the file.")
@_session_dir_option
@click.pass_context
def resume_command(ctx: click.Context, value: str | None, assume_yes: bool, no_fork: bool, own_dir: bool,
                   as_json: bool, shell: bool, session_dir: Path | None) -> None:
    """Print the session file VALUE (an id prefix or a path) resolves to, for `xcsh --resume`.

    An id is looked up in this project first, then in every project; a session from another
    project is forked into this one on confirmation. Without VALUE, opens the session picker.
    """
    assume = session_commands.fork_choice(assume_yes, no_fork)
    paths = _agent_paths(ctx)
    if not value:
        from sessdex.catalog.cli.pick_commands import resume_without_value

        resume_without_value(ctx, session_dir, as_json=as_json, shell=shell)
    session_commands.run_resume(lambda: _session_source(ctx), paths, value, assume=assume, as_json=as_json,
                                session_dir=session_dir, own_dir=own_dir, shell=shell)


@click.command("continue")
@click.option("--json", "as_json", is_flag=True, help="Print the resolution as JSON.")
@_session_dir_option
@click.pass_context
def continue_command(ctx: click.Context, as_json: bool, session_dir: Path | None) -> None:
    """Print the session `xcsh --continue` would resume here: this terminal's last one, else the newest."""
    status = session_commands.run_continue(lambda: _session_source(ctx), _agent_paths(ctx), as_json=as_json,
                                           session_dir=session_dir)
    if status:
        ctx.exit(status)

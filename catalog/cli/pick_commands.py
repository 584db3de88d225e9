"""`sessdex pick [--all]` and the picker flow of `sessdex resume` without a value (S13, S14).

The picker draws on the terminal itself (`/dev/tty`), never on stdout: stdout carries only the chosen
session file, so `xcsh --resume "$(sessdex resume)"` works. Outcomes and exit codes:
- a session chosen: its path on stdout (or its session object with --json, or its directory and path with
  --shell), status 0;
- Esc or Ctrl+C: `No session selected` on stderr, nothing on stdout, status 130 (as fzf), so that
  `p=$(sessdex pick) && xcsh --resume "$p"` stops there;
- `resume` with no session in this project: `No sessions found`, status 1, no picker.
Without a terminal (stdin not a TTY), `resume` lists the sessions on stderr and `pick` refuses.
On a terminal and a current SQLite catalog, the console script opens the picker without click, first frame
first (`sessdex.catalog.cli.pick_fast`); these commands answer every other case, with the same outcome.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import TYPE_CHECKING

import click

from sessdex.catalog.cli.click_app import command_settings
from sessdex.catalog.cli.output import current_directory, echo
from sessdex.catalog.cli.pick_fast import picker_terminal, print_outcome, terminal_available
from sessdex.catalog.queries.open_source import open_session_source
from sessdex.catalog.queries.picker_source import PickerSource
from sessdex.catalog.queries.source import PickerRow, Scope
from sessdex.core.errors import UsageError

if TYPE_CHECKING:
    from sessdex.catalog.tui.picker import PickerResult

def run_picker(ctx: click.Context, source: PickerSource, scope: Scope, rows: list[PickerRow],
               heading: str) -> PickerResult:
    """Open the picker on the terminal (with rename and trash) and return how it ended."""
    from sessdex.catalog.tui.picker import SessionActions, SessionPicker

    actions = SessionActions(command_settings(ctx).paths)
    with picker_terminal() as (picker_input, picker_output):
        picker = SessionPicker(source, scope, heading=heading, rows=rows, actions=actions,
                               input=picker_input, output=picker_output)
        return picker.run()


def finish(ctx: click.Context, result: PickerResult, *, as_json: bool = False, shell: bool = False) -> None:
    """Print the chosen session and exit 0, or report the cancel (Esc or Ctrl+C: nothing on stdout, exit 130)."""
    ctx.exit(print_outcome(result, as_json=as_json, shell=shell))


def _source(ctx: click.Context, cwd: str, session_dir: Path | None) -> PickerSource:
    """The catalog source for the CLI's --agent-dir / --catalog (the file scan if the catalog fails)."""
    from sessdex.catalog.cli.read_guard import agent_dir_named, require_agent_dir

    settings = command_settings(ctx)
    require_agent_dir(settings.paths, agent_dir_named(ctx))
    source = open_session_source(settings, warn=lambda message: echo(f"sessdex: {message}", err=True))
    return PickerSource(source, cwd, session_dir)


def sessions_listing(rows: list[PickerRow], now_ms: float) -> str:
    """The plain table `resume` prints when there is no terminal to pick on (the columns of `sessdex list`)."""
    from sessdex.catalog.cli.output import (
        Column,
        home_relative,
        output_width,
        render_table,
    )
    from sessdex.catalog.queries.naming import display_name
    from sessdex.catalog.tui.dates import short_date
    from sessdex.catalog.tui.figures import format_cost
    from sessdex.core.discovery import id_prefix_length

    prefix = id_prefix_length([row.session_id for row in rows])
    cells = [[row.session_id[:prefix], short_date(row.modified_ms, now_ms), str(row.message_count), format_cost(row.cost),
              display_name(row.title, row.first_message, row.message_count, row.session_id, row.path),
              home_relative(row.cwd)] for row in rows]
    columns = [Column("ID"), Column("MODIFIED"), Column("MSGS", align_right=True), Column("COST", align_right=True),
               Column("NAME", flexible=True), Column("CWD", flexible=True, path=True)]
    return render_table(columns, cells, output_width())


def resume_without_value(ctx: click.Context, session_dir: Path | None, *, as_json: bool = False,
                         shell: bool = False) -> None:
    """`sessdex resume` with no value (S13): this project's sessions in the picker; print the chosen one."""
    cwd = current_directory()
    source = _source(ctx, cwd, session_dir)
    try:
        rows = source.rows("project")
        if not rows:
            echo("No sessions found", err=True)
            ctx.exit(1)
        if not terminal_available():
            echo(sessions_listing(rows, time.time() * 1000), err=True)
            echo("Pass an id prefix from the list: sessdex resume <id>", err=True)
            ctx.exit(1)
        result = run_picker(ctx, source, "project", rows, "Resume a session")
    finally:
        source.close()
    finish(ctx, result, as_json=as_json, shell=shell)


@click.command("pick")
@click.option("--all", "all_projects", is_flag=True, help="Start with every project's sessions (Tab switches).")
@click.option("--repo", "this_repo", is_flag=True,
              help="Start with this git repository's sessions (every worktree and subfolder).")
@click.option("--session-dir", type=click.Path(file_okay=False, path_type=Path),
              help="Read this session folder as the project's sessions.")
@click.option("--json", "as_json", is_flag=True, help="Print the chosen session's object as JSON.")
@click.option("--shell", is_flag=True, help="Print two lines: the session's directory (when it exists), then its file.")
@click.pass_context
def pick_command(ctx: click.Context, all_projects: bool, this_repo: bool, session_dir: Path | None, as_json: bool,
                 shell: bool) -> None:
    """Choose a session in a full-screen list filtered as you type; print its file path.

    Keys: arrows, PgUp/PgDn move; Enter picks; Tab switches scope (this project, this git repository, all
    projects); the query line edits like a shell's (Left/Right, Home/End, Ctrl+A/E/W/U/K, Alt+B/F);
    Ctrl+/ toggles the preview; Ctrl+O orders by cost; Ctrl+R renames; Ctrl+D moves the session to the trash;
    Esc or Ctrl+C cancels (exit 130).
    """
    if as_json and shell:
        raise UsageError("--json and --shell cannot be combined")
    if all_projects and this_repo:
        raise UsageError("--all and --repo cannot be combined")
    if not terminal_available():
        raise UsageError("sessdex pick needs a terminal: stdin is not one")
    source = _source(ctx, current_directory(), session_dir)
    scope: Scope = "all" if all_projects else "repo" if this_repo else "project"
    if this_repo and not source.repo_dirs:
        source.close()
        raise UsageError(f"{current_directory()} is not inside a git repository")
    try:
        result = run_picker(ctx, source, scope, source.rows(scope), "Pick a session")
    finally:
        source.close()
    finish(ctx, result, as_json=as_json, shell=shell)

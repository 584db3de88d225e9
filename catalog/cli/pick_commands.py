"""`sessdex pick [--all]` and the picker flow of `sessdex resume` without a value (S13, S14).

The picker draws on the terminal itself (`/dev/tty`), never on stdout: stdout carries only the chosen
session file, so `xcsh --resume "$(sessdex resume)"` works. Outcomes and exit codes:
- a session chosen: its path on stdout, status 0;
- Esc: `No session selected` on stderr, status 1;
- Ctrl+C: the hard exit, nothing printed, status 0 (the agent's picker does the same);
- `resume` with no session in this project: `No sessions found`, status 1, no picker.
Without a terminal (stdin not a TTY), `resume` lists the sessions on stderr and `pick` refuses.
"""

from __future__ import annotations

import contextlib
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from sessdex.catalog.cli.click_app import command_settings
from sessdex.catalog.cli.output import current_directory, echo
from sessdex.catalog.queries.open_source import open_session_source
from sessdex.catalog.queries.picker_source import PickerSource
from sessdex.catalog.queries.source import PickerRow, Scope
from sessdex.core.errors import UsageError

if TYPE_CHECKING:
    from sessdex.catalog.tui.picker import PickerResult

TERMINAL_DEVICE = "/dev/tty"


def terminal_available() -> bool:
    """True when a person can drive the picker: stdin is a terminal and the terminal device can be opened."""
    if not sys.stdin.isatty():
        return False
    try:
        with open(TERMINAL_DEVICE, "w"):
            return True
    except OSError:
        return False


@contextlib.contextmanager
def picker_terminal() -> Iterator[tuple[Any, Any]]:
    """The picker's prompt_toolkit (input, output): keys from stdin, drawing on /dev/tty."""
    from prompt_toolkit.input import create_input
    from prompt_toolkit.output import create_output

    with open(TERMINAL_DEVICE, "w", encoding="utf-8") as terminal:
        yield create_input(sys.stdin), create_output(terminal)


def run_picker(source: PickerSource, scope: Scope, rows: list[PickerRow], heading: str) -> PickerResult:
    """Open the picker on the terminal and return how it ended."""
    from sessdex.catalog.tui.picker import SessionPicker

    with picker_terminal() as (picker_input, picker_output):
        picker = SessionPicker(source, scope, heading=heading, rows=rows,
                               input=picker_input, output=picker_output)
        return picker.run()


def finish(ctx: click.Context, result: PickerResult) -> None:
    """Print the chosen path and exit 0, or report the cancel (exit 1), or take the hard exit (exit 0)."""
    if result.outcome == "selected" and result.row is not None:
        echo(result.row.path)
        ctx.exit(0)
    if result.outcome == "cancelled":
        echo("No session selected", err=True)
        ctx.exit(1)
    ctx.exit(0)


def _source(ctx: click.Context, cwd: str, session_dir: Path | None) -> PickerSource:
    """The catalog source for the CLI's --agent-dir / --catalog (the file scan if the catalog fails)."""
    source = open_session_source(command_settings(ctx),
                                 warn=lambda message: echo(f"sessdex: {message}", err=True))
    return PickerSource(source, cwd, session_dir)


def sessions_listing(rows: list[PickerRow], now_ms: float) -> str:
    """The plain table `resume` prints when there is no terminal to pick on."""
    from sessdex.catalog.cli.output import (
        Column,
        output_width,
        render_table,
    )
    from sessdex.core.discovery import id_prefix_length, sanitize_display_name, time_ago
    from sessdex.core.usage import format_cost

    prefix = id_prefix_length([row.session_id for row in rows])
    cells = [[row.session_id[:prefix], time_ago(row.modified_ms, now_ms), str(row.message_count), format_cost(row.cost),
              sanitize_display_name(row.title or row.first_message), row.cwd] for row in rows]
    columns = [Column("ID"), Column("MODIFIED"), Column("MSGS", align_right=True), Column("COST", align_right=True),
               Column("TITLE", flexible=True), Column("CWD", flexible=True)]
    return render_table(columns, cells, output_width())


def resume_without_value(ctx: click.Context, session_dir: Path | None) -> None:
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
        result = run_picker(source, "project", rows, "Resume a session")
    finally:
        source.close()
    finish(ctx, result)


@click.command("pick")
@click.option("--all", "all_projects", is_flag=True, help="Start with every project's sessions (Tab switches).")
@click.option("--session-dir", type=click.Path(file_okay=False, path_type=Path),
              help="Read this session folder as the project's sessions.")
@click.pass_context
def pick_command(ctx: click.Context, all_projects: bool, session_dir: Path | None) -> None:
    """Choose a session in a full-screen list filtered as you type; print its file path.

    Keys: arrows, PgUp/PgDn, Home/End move; Enter picks; Tab switches between this project and all
    projects; Esc cancels (exit 1); Ctrl+C quits (exit 0).
    """
    if not terminal_available():
        raise UsageError("sessdex pick needs a terminal: stdin is not one")
    source = _source(ctx, current_directory(), session_dir)
    scope: Scope = "all" if all_projects else "project"
    try:
        result = run_picker(source, scope, source.rows(scope), "Pick a session")
    finally:
        source.close()
    finish(ctx, result)

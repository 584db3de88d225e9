"""`sessdex pick [--all]` and `sessdex resume` without a value, without click, first frame first.

The picker's first screen must show within a blink of the command starting: `run_pick_fast` reads the first
screenful of rows from a current SQLite catalog (with LIMIT, plus the ids for the count and the prefix length),
draws the first frame on the terminal (`sessdex.catalog.tui.picker_first_frame`), and only then imports
prompt_toolkit, reads every row and starts the picker application, which takes the screen over. It answers:

    [--agent-dir DIR] [--catalog X] pick [--all] [--json | --shell]
    [--agent-dir DIR] [--catalog X] resume [--json | --shell]

on a terminal, when the catalog is a SQLite file at the current schema revision. Anything else (no terminal,
`--repo`, `--session-dir`, another option, a catalog to create or migrate, an empty snapshot) returns None
before drawing anything, and the click command (`sessdex.catalog.cli.pick_commands`) takes over.
This module also holds what both paths share: the terminal check, the picker's terminal and the outcome.
"""

from __future__ import annotations

import contextlib
import os
import sys
import time

from sessdex.catalog.cli.output import current_directory, echo

TYPE_CHECKING = False  # typing stays off the picker's start
if TYPE_CHECKING:
    from collections.abc import Iterator, Sequence
    from typing import Any, TextIO

    from sessdex.catalog.queries.sessions import Catalog
    from sessdex.catalog.queries.source import Scope
    from sessdex.catalog.store.settings import Settings
    from sessdex.catalog.tui.picker import PickerResult, SessionPicker

TERMINAL_DEVICE = "/dev/tty"
HEADINGS = {"resume": "Resume a session", "pick": "Pick a session"}
FLAGS = {"resume": ("--json", "--shell"), "pick": ("--all", "--json", "--shell")}


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
    with open(TERMINAL_DEVICE, "w", encoding="utf-8") as terminal:
        yield terminal_io(terminal)


def terminal_io(terminal: TextIO) -> tuple[Any, Any]:
    """prompt_toolkit's input (stdin) and output (drawing on `terminal`) for the picker."""
    from prompt_toolkit.input import create_input
    from prompt_toolkit.output import create_output

    output = create_output(terminal)
    # A full-screen picker needs no cursor position report; asking for one only risks its reply arriving in
    # pieces, whose lone Esc would read as a cancel.
    output.enable_cpr = False  # type: ignore[attr-defined]
    return create_input(sys.stdin), output


def print_outcome(result: PickerResult, *, as_json: bool = False, shell: bool = False) -> int:
    """Print the chosen session (its path, its JSON object, or its directory and path) and return 0; or report
    the cancel (Esc or Ctrl+C: nothing on stdout) and return 130."""
    if result.outcome == "selected" and result.row is not None:
        row = result.row
        if as_json:
            from sessdex.catalog.cli.output import echo_json, session_json
            from sessdex.core.discovery import read_session_info

            info = read_session_info(row.path)
            echo_json(session_json(info) if info is not None else {"path": row.path, "cwd": row.cwd})
        elif shell:
            from sessdex.catalog.cli.session_commands import print_shell_target

            print_shell_target(row.cwd if row.cwd and os.path.isdir(row.cwd) else current_directory(), row.path)
        else:
            echo(row.path)
        return 0
    from sessdex.catalog.cli.errors import INTERRUPTED_STATUS

    echo("No session selected", err=True)
    return INTERRUPTED_STATUS


def _parse(args: Sequence[str]) -> tuple[str, dict[str, str], set[str]] | None:
    """(command, root options, flags) of a shape this path answers, else None."""
    from sessdex.catalog.cli.fastpath import root_options

    root = root_options(args)
    if root is None or "--machines" in root[0]:
        return None  # the picker of every machine starts through click
    options, position = root
    if position == len(args) or args[position] not in FLAGS:
        return None
    command = args[position]
    flags = set(args[position + 1:])
    if len(flags) != len(args) - position - 1 or not flags <= set(FLAGS[command]) or {"--json", "--shell"} <= flags:
        return None  # repeated, unknown or conflicting (click says which)
    return command, options, flags


def run_pick_fast(args: Sequence[str]) -> int | None:
    """Run the picker for `args` without click and return the exit status; None (nothing drawn or printed) when
    this path does not answer them."""
    from sessdex.catalog.cli.fastpath import COMPLETION_ENV

    parsed = _parse(args)
    if parsed is None or os.environ.get(COMPLETION_ENV):  # click answers completion requests itself
        return None
    command, options, flags = parsed
    from sessdex.catalog.store.settings import Settings

    settings = Settings.resolve(options.get("--agent-dir"), options.get("--catalog"))
    if settings.agent_dir is not None and os.path.isfile(settings.agent_dir):
        return None  # click.Path(file_okay=False) rejects it, with click's message
    if settings.catalog_off or not os.path.isdir(settings.paths.agent_dir_text) or not terminal_available():
        return None
    from sessdex.catalog.queries.open_source import open_session_source
    from sessdex.catalog.queries.sessions import Catalog

    source = open_session_source(settings, only_if_ready=True)
    if source is None or not isinstance(source, Catalog):
        if source is not None:
            source.close()
        return None
    with source:
        result = _run_picker(source, settings, "all" if "--all" in flags else "project", HEADINGS[command])
    if result is None:
        return None
    return print_outcome(result, as_json="--json" in flags, shell="--shell" in flags)


def _run_picker(catalog: Catalog, settings: Settings, scope: Scope, heading: str) -> PickerResult | None:
    """The first frame, then the picker application on the terminal; None (nothing drawn) when the catalog's
    snapshot holds no row for the scope (the click command brings it up to date, or says there is none)."""
    from sessdex.catalog.queries.git_repo import repository_dirs
    from sessdex.catalog.tui import picker_first_frame as frame
    from sessdex.catalog.tui.picker_screen import FIXED_LINES, body_height
    from sessdex.core.discovery import id_prefix_length

    cwd = current_directory()
    with open(TERMINAL_DEVICE, "w", encoding="utf-8") as terminal:
        columns, rows = _terminal_size(terminal)
        found = catalog.picker_first_screen(cwd, None, all_projects=scope == "all", limit=body_height(rows))
        if found is None or not found[1] or rows < FIXED_LINES + 1:
            return None
        first_rows, ids = found
        repo_dirs = repository_dirs(cwd)
        now_ms = time.time() * 1000
        screen = frame.first_screen(scope, first_rows, total=len(ids), id_length=id_prefix_length(ids),
                                    scopes=("project", "repo", "all") if repo_dirs else ("project", "all"),
                                    heading=heading, cwd=cwd, repo_root=repo_dirs[0] if repo_dirs else None,
                                    now_ms=now_ms, screen_rows=rows)
        keyboard = sys.stdin.fileno()
        previous = frame.raw_input(keyboard)  # keys typed from now on wait, unechoed, for the application
        picker: SessionPicker | None = None
        try:
            terminal.write(frame.first_frame_text(screen, columns, rows))
            terminal.flush()
            from sessdex.catalog.queries.picker_source import PickerSource
            from sessdex.catalog.tui.picker import SessionActions, SessionPicker

            source = PickerSource(catalog, cwd)
            picker_input, picker_output = terminal_io(terminal)
            frame.adopt_alternate_screen(picker_output)
            picker = SessionPicker(source, scope, heading=heading, rows=source.rows(scope), now_ms=now_ms,
                                   actions=SessionActions(settings.paths), input=picker_input, output=picker_output)
            return picker.run()
        finally:
            if picker is None or not picker.app.render_counter:
                # The application never took the screen over: give the shell its screen back.
                terminal.write(frame.LEAVE_ALTERNATE_SCREEN + frame.SHOW_CURSOR)
                terminal.flush()
            frame.restore_input(keyboard, previous)


def _terminal_size(terminal: TextIO) -> tuple[int, int]:
    """(columns, rows) of the terminal, as prompt_toolkit's output reads them (80x24 when unknown)."""
    try:
        size = os.get_terminal_size(terminal.fileno())
    except OSError:
        return 80, 24
    return size.columns or 80, size.lines or 24

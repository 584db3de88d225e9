"""The picker's first frame, drawn before prompt_toolkit is imported and before every row is read.

Importing prompt_toolkit and reading 10,000 rows take longer than a person notices; the first screen needs
neither: its rows (the newest), the row count and the id prefix length. `first_frame_text` draws that screen as
the picker application's first frame draws it (the same `PickerScreen` lines through the same `picker_paint`,
the query line and the preview pane laid out as prompt_toolkit lays them out), on the alternate screen. The
application then takes the screen over: `adopt_alternate_screen` keeps it from switching screens again, and its
first render redraws everything in one write.

Keys typed meanwhile must reach the query line: `raw_input` puts the terminal in the mode prompt_toolkit will
use (no echo, no line editing, no signals from Ctrl+C) without reading or discarding anything, so the keys wait
in the terminal's input queue for the application.
"""

from __future__ import annotations

import termios

from sessdex.catalog.tui.picker_marks import cycle_with_mark_scopes
from sessdex.catalog.tui.picker_model import PickerModel
from sessdex.catalog.tui.picker_paint import LinePainter, StyleCodes, colours_dropped, line_text, wrapped_lines
from sessdex.catalog.tui.picker_screen import (
    PREVIEW_MIN_COLUMNS,
    PickerScreen,
    body_height,
    list_width,
    painted_lines,
    preview_while_loading,
    preview_width,
)
from sessdex.catalog.tui.prompt_toolkit_adapter import HOME, stay_on_alternate_screen

TYPE_CHECKING = False  # typing stays off the first frame's imports
if TYPE_CHECKING:
    from typing import Any

    from sessdex.catalog.queries.source import PickerRow, Scope

ENTER_ALTERNATE_SCREEN = "\x1b[?1049h"
LEAVE_ALTERNATE_SCREEN = "\x1b[?1049l"
HIDE_CURSOR, SHOW_CURSOR = "\x1b[?25l", "\x1b[?25h"
QUERY_ROW = 1
PROMPT = "> "


def first_screen(scope: Scope, rows: list[PickerRow], *, total: int, id_length: int, scopes: tuple[Scope, ...],
                 heading: str, cwd: str, repo_root: str | None, now_ms: float, screen_rows: int,
                 marks: dict[str, Any] | None = None) -> PickerScreen:
    """The screen of a picker whose scope holds `total` rows, `rows` being the newest (at least a screenful), with
    every session's `marks` (none pinned: pinned rows would come first, and they may not be among `rows`)."""
    model = PickerModel.first_screen(scope, rows, total=total, id_length=id_length,
                                     scopes=cycle_with_mark_scopes(scopes, scope, marks or {}),
                                     page_size=body_height(screen_rows))
    model.marks = marks or {}
    return PickerScreen(model, heading=heading, cwd=cwd, now_ms=now_ms, repo_root=repo_root)


def first_frame_text(screen: PickerScreen, columns: int, rows: int, *, preview: bool | None = None) -> str:
    """The whole first frame as terminal output: switch to the alternate screen, draw, leave the cursor on the
    query line. `preview` as the picker's option (None: shown from PREVIEW_MIN_COLUMNS columns on)."""
    visible = columns >= PREVIEW_MIN_COLUMNS if preview is None else preview
    codes = StyleCodes(colours=not colours_dropped())
    out = [ENTER_ALTERNATE_SCREEN, HIDE_CURSOR, HOME, "\x1b[J",
           LinePainter(codes).paint(painted_lines(screen, columns, rows, visible), rows),
           f"\x1b[{QUERY_ROW + 1};1H",
           line_text(codes, [("class:prompt", PROMPT), ("class:dim", screen.placeholder())], columns)]
    if visible:
        height = body_height(rows)
        left, width = list_width(columns, True), preview_width(columns)
        pane = wrapped_lines(preview_while_loading(screen.model), width, height)
        for number in range(min(height, rows - 3)):
            out.append(f"\x1b[{4 + number};{left + 1}H" + line_text(codes, [("class:dim", "│")], 1)
                       + line_text(codes, pane[number] if number < len(pane) else [], width))
    out.append(f"\x1b[{QUERY_ROW + 1};{len(PROMPT) + 1}H{SHOW_CURSOR}")
    return "".join(out)


# What the picker's application is given to take the screen over from the first frame.
adopt_alternate_screen = stay_on_alternate_screen


def raw_input(fd: int) -> list[Any] | None:
    """Put the terminal `fd` in prompt_toolkit's raw mode (keys are neither echoed nor turned into signals, and
    nothing queued is discarded); the previous attributes, to give back to `restore_input`, None if not a tty."""
    try:
        previous = termios.tcgetattr(fd)
    except termios.error:
        return None
    attributes = termios.tcgetattr(fd)
    attributes[0] &= ~(termios.IXON | termios.IXOFF | termios.ICRNL | termios.INLCR | termios.IGNCR)
    attributes[3] &= ~(termios.ECHO | termios.ICANON | termios.IEXTEN | termios.ISIG)
    attributes[6][termios.VMIN] = 1
    termios.tcsetattr(fd, termios.TCSANOW, attributes)
    return previous


def restore_input(fd: int, previous: list[Any] | None) -> None:
    """Give the terminal `fd` back its attributes from before `raw_input` (queued input stays queued)."""
    if previous is not None:
        try:
            termios.tcsetattr(fd, termios.TCSANOW, previous)
        except termios.error:
            pass  # the terminal went away: nothing to give back

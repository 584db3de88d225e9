"""Drawing picker lines straight onto the terminal as ANSI text: the list, header, detail and help lines.

prompt_toolkit redraws by building a grid of every cell of the screen and comparing it with the previous grid,
cell by cell, in Python: at 120x40 that was most of a keystroke's time. The picker's lines are whole strings that
change as a whole, so they are drawn here instead: each line becomes one ANSI string, and only the lines whose
string changed are written (at their absolute position). prompt_toolkit keeps what needs a line editor or
wrapping (the query line, the preview pane), and sees empty windows where these lines are.

The same code writes the first frame before prompt_toolkit is imported (`sessdex.catalog.tui.picker_first_frame`),
so this module imports nothing heavy. The attributes are the ones prompt_toolkit's VT100 output uses for the
same styles (`STYLE_RULES`), with colours dropped where prompt_toolkit drops them (NO_COLOR, a dumb terminal).
"""

from __future__ import annotations

import os

from sessdex.catalog.tui.picker_screen import STYLE_RULES
from sessdex.catalog.tui.width import char_width, display_width

TYPE_CHECKING = False  # typing stays off the first frame's imports
if TYPE_CHECKING:
    from sessdex.catalog.tui.picker_screen import Fragments

RESET = "\x1b[0m"
SAVE_CURSOR, RESTORE_CURSOR = "\x1b7", "\x1b8"
_FLAGS = {"bold": "1", "italic": "3", "underline": "4", "blink": "5", "reverse": "7", "hidden": "8", "strike": "9"}
_COLOURS = {"ansiblack": "30", "ansired": "31", "ansigreen": "32", "ansiyellow": "33", "ansiblue": "34",
            "ansimagenta": "35", "ansicyan": "36", "ansigray": "37", "ansibrightblack": "90", "ansibrightred": "91",
            "ansibrightgreen": "92", "ansibrightyellow": "93", "ansibrightblue": "94", "ansibrightmagenta": "95",
            "ansibrightcyan": "96", "ansiwhite": "97"}
# What prompt_toolkit draws instead of characters a terminal would act on or not show (its Char.display_mappings),
# and the style class it adds to them; with the rules of those classes in its default style.
_DISPLAYED = {**{chr(code): "^" + chr(code + 64) for code in range(32)}, "\x7f": "^?",
              **{chr(code): f"<{code:x}>" for code in range(0x80, 0xa0)}, "\xa0": " "}
_DEFAULT_RULES = {"control-character": "ansiblue", "nbsp": "underline ansiyellow"}


def colours_dropped() -> bool:
    """True where prompt_toolkit draws without colours: $NO_COLOR, PROMPT_TOOLKIT_COLOR_DEPTH=DEPTH_1_BIT, or a
    dumb $TERM (ColorDepth.from_env, then Vt100_Output.get_default_color_depth)."""
    if os.environ.get("NO_COLOR"):
        return True
    depth = os.environ.get("PROMPT_TOOLKIT_COLOR_DEPTH")
    if depth in ("DEPTH_1_BIT", "DEPTH_4_BIT", "DEPTH_8_BIT", "DEPTH_24_BIT"):
        return depth == "DEPTH_1_BIT"
    return os.environ.get("TERM", "").lower() in ("dumb", "unknown")


def displayed(style: str, text: str) -> Fragments:
    """`text` as prompt_toolkit puts it on screen: control characters as ^X (class control-character), C1 ones as
    <8x>, a no-break space as a space (class nbsp)."""
    if text.isprintable():
        return [(style, text)]
    runs: Fragments = []
    for char in text:
        shown = _DISPLAYED.get(char)
        if shown is None:
            if runs and runs[-1][0] == style:
                runs[-1] = (style, runs[-1][1] + char)
            else:
                runs.append((style, char))
        else:
            runs.append((f"{style} class:{'nbsp' if char == chr(0xa0) else 'control-character'}", shown))
    return runs


class StyleCodes:
    """Style strings ("class:row.selected class:match") as SGR escapes, resolved as prompt_toolkit resolves them:
    each class named (and the classes it is inside of: "row" for "row.selected") adds its rule's attributes, in
    order; a later colour replaces an earlier one."""

    def __init__(self, *, colours: bool) -> None:
        self.colours = colours
        self._escapes: dict[str, str] = {}

    def escape(self, style: str) -> str:
        """The SGR sequence that sets exactly `style`'s attributes (from a reset)."""
        found = self._escapes.get(style)
        if found is None:
            found = self._escapes[style] = self._resolve(style)
        return found

    def _resolve(self, style: str) -> str:
        flags: set[str] = set()
        colour = ""
        for part in style.split():
            if not part.startswith("class:"):
                continue
            for name in part[len("class:"):].split(","):
                pieces = name.split(".")
                for depth in range(1, len(pieces) + 1):
                    rule = ".".join(pieces[:depth])
                    for word in STYLE_RULES.get(rule, _DEFAULT_RULES.get(rule, "")).split():
                        if word in _FLAGS:
                            flags.add(word)
                        else:
                            colour = _COLOURS.get(word.removeprefix("fg:"), colour)
        codes = sorted(_FLAGS[flag] for flag in flags)
        if colour and self.colours:
            codes.append(colour)
        return f"\x1b[0;{';'.join(codes)}m" if codes else RESET


def line_text(codes: StyleCodes, fragments: Fragments, width: int) -> str:
    """One screen line of `width` columns as ANSI text: the fragments cut at `width` (as a prompt_toolkit window
    without wrapping cuts them), then default-styled spaces up to `width`. Ends with attributes reset."""
    out: list[str] = []
    used = 0
    style = None
    escape = codes.escape
    for fragment in fragments:
        if used >= width:
            break
        text = fragment[1]
        if text.isascii() and text.isprintable():  # the common case: one column per character
            if not text:
                continue
            if used + len(text) > width:
                text = text[:width - used]
            if fragment[0] != style:
                style = fragment[0]
                out.append(escape(style))
            out.append(text)
            used += len(text)
            continue
        pieces = (fragment,) if text.isprintable() else displayed(*fragment)
        for fragment_style, text in pieces:
            if not text or used >= width:
                continue
            if text.isascii():
                text = text[:width - used]
                columns = len(text)
            else:
                columns = display_width(text)
                if used + columns > width:  # cut as prompt_toolkit cuts: every character starting inside the width
                    kept = []
                    columns = 0
                    for char in text:
                        if used + columns >= width:
                            break
                        kept.append(char)
                        columns += char_width(char)
                    text = "".join(kept)
            if fragment_style != style:
                out.append(escape(fragment_style))
                style = fragment_style
            out.append(text)
            used += columns
    if style:
        out.append(RESET)
    if used < width:
        out.append(" " * (width - used))
    return "".join(out)


def wrapped_lines(fragments: Fragments, width: int, height: int) -> list[Fragments]:
    """Fragments (with newlines) wrapped to `width` columns at word boundaries, at most `height` lines: a word that
    would cross the edge starts the next line (a word longer than a line is cut where the line ends), and a space
    it would wrap at is not drawn."""
    lines: list[Fragments] = [[]]
    used = 0
    word_start = 0  # where the word being laid out begins in the last line (0: the line holds only that word)
    for fragment_style, fragment_text in fragments:
        for index, piece in enumerate(fragment_text.split("\n")):
            if index:
                lines.append([])
                used = word_start = 0
            for style, text in displayed(fragment_style, piece):
                for char in text:
                    columns = char_width(char)
                    if used + columns > width:
                        if char == " ":
                            lines.append([])
                            used = word_start = 0
                            continue
                        line = lines[-1]
                        carried = line[word_start:] if word_start else []
                        del line[len(line) - len(carried):]
                        lines.append(carried)
                        used = sum(char_width(cell[1]) for cell in carried)
                        word_start = 0
                    lines[-1].append((style, char))
                    used += columns
                    if char == " ":
                        word_start = len(lines[-1])
    return lines[:height]


class LinePainter:
    """Writes lines at fixed places of the screen, each only when its text changed since it was last written."""

    def __init__(self, codes: StyleCodes) -> None:
        self.codes = codes
        self._painted: dict[tuple[int, int], tuple[Fragments, int, str]] = {}

    def forget(self) -> None:
        """The screen was cleared: write every line next time."""
        self._painted.clear()

    def paint(self, lines: list[tuple[int, int, int, Fragments]], screen_rows: int,
              anchor_row: int | None = None) -> str:
        """The ANSI text that brings the lines (row, column, width, fragments) up to date; '' when all are.

        Rows are the screen's (absolute positions), or with `anchor_row` the picker's own rows in an inline area
        whose top the program does not know: the cursor was saved (SAVE_CURSOR) on row `anchor_row`, and each line
        is reached from there."""
        out = []
        for row, column, width, fragments in lines:
            if row >= screen_rows or width <= 0:
                continue
            painted = self._painted.get((row, column))
            if painted is not None and painted[0] is fragments and painted[1] == width:
                continue  # the very same line as last time (the screen keeps row lines between redraws)
            text = line_text(self.codes, fragments, width)
            self._painted[(row, column)] = (fragments, width, text)
            if painted is None or painted[2] != text:
                out.append(f"\x1b[{row + 1};{column + 1}H{text}" if anchor_row is None
                           else relative_move(row - anchor_row, column) + text)
        return "".join(out)


def relative_move(rows_down: int, column: int) -> str:
    """From the saved cursor, to `column` of the row `rows_down` below it (above when negative)."""
    vertical = f"\x1b[{rows_down}B" if rows_down > 0 else f"\x1b[{-rows_down}A" if rows_down < 0 else ""
    return RESTORE_CURSOR + vertical + "\r" + (f"\x1b[{column}C" if column else "")

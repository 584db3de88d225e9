"""The columns and bars of `sessdex usage`'s table (without --json), and the table laid out from the cells the
catalog stores ready (`sessdex.catalog.store.usage_cells`).

A table from stored cells prints the same bytes as the one made from a summed report
(`sessdex.catalog.cli.usage_table`), without `sessdex.core.usage`: its work is the two parts of a label that
depend on the reader (a session's id prefix, the length every id shown needs; a project's home as `~`), the bars,
and the layout (`table_lines`, column by column).
"""

from __future__ import annotations

import os

from sessdex.catalog.cli.output import Column, home_relative, table_lines
from sessdex.core.usage_terms import PERIOD_KINDS

TYPE_CHECKING = False  # typing stays off the hot commands' imports (issue 12)
if TYPE_CHECKING:
    from sessdex.catalog.store.usage_cells import StoredCells
    from sessdex.core.usage_terms import ReportKind

BAR_WIDTH = 16
_EIGHTHS = " ▏▎▍▌▋▊▉█"
_KEY_HEADERS = {"daily": "DAY", "weekly": "WEEK OF", "monthly": "MONTH", "session": "SESSION",
                "project": "PROJECT", "model": "MODEL"}
_FIGURE_HEADERS = ("INPUT", "OUTPUT", "CACHE READ", "CACHE WRITE", "TOTAL", "COST")


def bar(value: float, largest: float, width: int = BAR_WIDTH) -> str:
    """A horizontal bar of `value` against `largest`, in eighths of a character."""
    if largest <= 0 or value <= 0:
        return ""
    eighths = max(1, round(value / largest * width * 8))
    return "█" * (eighths // 8) + (_EIGHTHS[eighths % 8] if eighths % 8 else "")


def report_columns(kind: ReportKind, *, bars: bool, machines: bool) -> list[Column]:
    """The table's columns: the key, the models (but in the model report), the figures, the bars on a terminal,
    and the machine of each session when the report shows other machines' sessions."""
    columns = [Column(_KEY_HEADERS[kind], flexible=kind in ("project", "session"))]
    if kind != "model":
        columns.append(Column("MODELS", flexible=True))
    columns += [Column(header, align_right=True) for header in _FIGURE_HEADERS]
    if bars:
        columns.append(Column("" if kind in PERIOD_KINDS else "SHARE"))
    if machines:
        columns.append(Column("MACHINE"))
    return columns


def stored_usage_table(stored: StoredCells, width: int | None, *, bars: bool) -> bytes:
    """The table of a report read as stored cells, UTF-8 encoded: its rows, a TOTAL line and on a terminal
    (`bars`) a bar per row scaled to the most expensive one.

    Every stored cell is terminal-safe already (`sessdex.core.usage_cells`): only a session's id, which the
    label shows as it is, is checked. The lines are encoded one by one: a 10,000-row report is megabytes, and one
    emoji in one title would make the whole text four bytes a character before encoding.
    """
    kind = stored.kind
    cells_by_column = stored.columns
    safe = list(range(len(cells_by_column) + bars))
    if kind == "session":  # the stored cell is what follows the id prefix
        from sessdex.core.discovery import id_prefix_length

        ids = stored.labels
        prefix = id_prefix_length(ids)
        cells_by_column[0] = [session_id[:prefix] + name for session_id, name in zip(ids, cells_by_column[0])]
        if not "".join(ids).isprintable():
            del safe[0]
    elif kind == "project":
        _home_as_tilde(stored.labels, cells_by_column[0])
    total = stored.total[1:] if kind == "model" else stored.total  # (the model report has no models column)
    for cells, cell in zip(cells_by_column, ["TOTAL", *total]):
        cells.append(cell)
    if bars:
        costs = stored.costs
        largest = max(costs)
        cells_by_column.append([bar(cost, largest) for cost in costs] + [""])
    lines = table_lines(report_columns(kind, bars=bars, machines=False), cells_by_column, width, safe=safe)
    return b"\n".join(map(str.encode, lines))


def _home_as_tilde(keys: list[str], labels: list[str]) -> None:
    """Write `~` for the reader's home at the start of the project labels whose key (cwd) is in it.

    A stored label is the key sanitized (`sanitize_display_name`): when the home is printable and neither starts
    nor ends with a space, that keeps the home as it is at the label's start, so the rest of the label follows it.
    """
    home = os.path.expanduser("~").rstrip("/")
    if not home:
        return
    below = home + "/"
    kept = home.isprintable() and home.strip() == home
    for index, key in enumerate(keys):
        if key == home or key.startswith(below):
            if kept:
                labels[index] = "~" + labels[index][len(home):]
            else:
                from sessdex.core.discovery import sanitize_display_name

                labels[index] = sanitize_display_name(home_relative(key, home))

"""`sessdex usage`'s table (without --json) from the report rows' cells the catalog stores ready
(`usage_totals.cells`, sessdex.core.usage_cells).

The same reports as the stored --json texts (`sessdex.catalog.store.usage_stored`) answer this way: one
machine's, over whole days of one folder or of every project, without --breakdown. Their rows' cells are read in
the report's order with each row's label (a session's id, a project's cwd) and cost (for the bars); no figure is
summed or formatted, and neither `sessdex.core.usage` nor its report objects are loaded. Any other report is
summed (`sessdex.catalog.queries.usage`).
"""

from __future__ import annotations

from sessdex.catalog.store.usage_stored import answered_by_stored_rows, stored_report_rows
from sessdex.core.usage_terms import CELL_SEPARATOR

TYPE_CHECKING = False  # typing stays off the hot commands' imports (issue 12)
if TYPE_CHECKING:
    from collections.abc import Sequence
    from typing import Any

    from sessdex.core.usage_terms import DateRange, ReportKind


class StoredCells:
    """A report's stored rows, in its order, column by column: each row's label (the row's key, a session's id),
    its cells (sessdex.core.usage_cells.stored_row_cells's, one list per cell) and its cost; and the TOTAL line's cells."""

    __slots__ = ("kind", "labels", "columns", "costs", "total", "token")

    def __init__(self, kind: ReportKind, labels: list[str], columns: list[list[str]], costs: list[float],
                 total: list[str]) -> None:
        self.kind = kind
        self.labels = labels
        self.columns = columns
        self.costs = costs
        self.total = total
        self.token: str | None = None  # the ready-report token of the rows read (sessdex.catalog.store.report_files)


def _split_cells(kind: str, rows: list[str]) -> list[list[str]] | None:
    """The stored rows' cells column by column (one split of them all), or None when a row has not the cells
    of its kind."""
    count = _CELLS_OF_KIND.get(kind, _CELLS_OF_KIND["daily"])
    cells = CELL_SEPARATOR.join(rows).split(CELL_SEPARATOR)
    if len(cells) != count * len(rows):
        return None
    return [cells[index::count] for index in range(count)]


# (label or session name, models (not in the model report), the six figures)
_CELLS_OF_KIND = {"daily": 8, "model": 7, "total": 7}


def stored_usage_cells(db: Any, kind: ReportKind, scope_name: str, parts: Sequence[dict[str, str]],
                       days: DateRange, breakdown: bool) -> StoredCells | None:
    """The stored cells of `sessdex usage KIND`'s table (the arguments as for
    `sessdex.catalog.queries.usage.catalog_usage_report`), or None when they cannot answer it (then the report is
    summed): a report of several machines, of some days, with --breakdown, of a project whose usage is in several
    of its folders (their rows add up), of every project while the catalog holds usage outside the sessions root,
    or with a row whose cells are missing. A scope without usage gives a report without rows."""
    if not answered_by_stored_rows(db, parts, days, breakdown):
        return None
    found = stored_report_rows(db, "cells", kind, scope_name, parts[0])
    if found is None:
        return None
    total, rows = found
    if total is None:  # no usage in the scope: a report without rows
        return StoredCells(kind, [], [], [], [])
    if not rows:
        return None
    labels, cells, costs = map(list, zip(*rows))
    if None in cells or None in labels:  # (a row the indexer did not render)
        return None
    columns = _split_cells(kind, cells)
    total_cells = _split_cells("total", [total])
    if columns is None or total_cells is None:
        return None
    return StoredCells(kind, labels, columns, costs, [column[0] for column in total_cells])

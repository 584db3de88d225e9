"""`sessdex usage`'s table (without --json) from the report rows' cells the catalog stores ready
(`usage_totals.cells`, sessdex.core.usage_cells).

The same reports as the stored --json texts (`sessdex.catalog.store.usage_stored`) answer this way: one
machine's, over whole days of one folder or of every project, without --breakdown. Their rows' cells are read in
the report's order with each row's label (a session's id, a project's cwd) and cost (for the bars); no figure is
summed or formatted, and neither `sessdex.core.usage` nor its report objects are loaded. Any other report is
summed (`sessdex.catalog.queries.usage`).
"""

from __future__ import annotations

import gc

from sessdex.catalog.store.usage_stored import usage_outside_root
from sessdex.core.usage_terms import CELL_SEPARATOR, PERIOD_KINDS

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
    if breakdown or len(parts) != 1 or parts[0]["machine"] != db.machine or days.since is not None \
            or days.until is not None:
        return None
    params = parts[0]
    machine = params["machine"]
    if scope_name == "under_root":
        root = {**params, "root_dir": params["root_lo"].rstrip("/")}
        if usage_outside_root(db, root):
            return None
        scopes = [""]
    else:
        scopes = list(dict.fromkeys(params[name] for name in ("dir0", "dir1", "dir2")))
    totals = []
    for scope in scopes:
        totals += [(scope, cells) for cells, in db.fetch_tuples("usage_cells_total", {"scope": scope, "machine": machine})]
    if not totals:  # no usage in the scope: a report without rows
        return StoredCells(kind, [], [], [], [])
    if len(totals) != 1 or totals[0][1] is None:
        return None
    scope, total = totals[0]
    if kind == "session":
        statement, query = (("usage_cells_sessions_under_root", root) if scope_name == "under_root"
                            else ("usage_cells_sessions_in_scope", {"scope": scope, "machine": machine}))
    else:
        statement = "usage_cells_rows" if kind in PERIOD_KINDS else "usage_cells_rows_by_cost"
        query = {"kind": kind, "scope": scope, "machine": machine}
    collecting = gc.isenabled()
    gc.disable()  # 10,000 row tuples would start the cycle collector over every object several times
    try:
        rows = db.fetch_tuples(statement, query)
        if not rows:
            return None
        labels, cells, costs = map(list, zip(*rows))
    finally:
        if collecting:
            gc.enable()
    if None in cells or None in labels:  # (a row the indexer did not render)
        return None
    columns = _split_cells(kind, cells)
    total_cells = _split_cells("total", [total])
    if columns is None or total_cells is None:
        return None
    return StoredCells(kind, labels, columns, costs, [column[0] for column in total_cells])

"""The table of `sessdex usage` (without --json): a line per row, a TOTAL line, and on a terminal a bar column
scaled to the most expensive row, so that the shape of the spending shows at a glance."""

from __future__ import annotations

from sessdex.catalog.cli.output import home_relative, render_table
from sessdex.catalog.cli.usage_stored_table import bar, report_columns
from sessdex.core.discovery import id_prefix_length, sanitize_display_name
from sessdex.core.usage import UsageReport, UsageRow
from sessdex.core.usage_cells import NO_CWD, figure_cells, models_cell, session_name_cell
from sessdex.core.usage_terms import ReportKind


def _cells(label: str, row: UsageRow, models: bool) -> list[str]:
    """A table line: the label, the models' names (when `models`), the figures."""
    totals = row.totals
    cells = [label]
    if models:
        cells.append(models_cell(row.models))
    return cells + figure_cells(totals.input, totals.output, totals.cache_read, totals.cache_write, totals.cost)


def usage_table(report: UsageReport, width: int | None, *, breakdown: bool, bars: bool) -> str:
    """The human report: one line per row (and per model with `breakdown`), a TOTAL line, optional bars."""
    kind = report.kind
    models = kind != "model"
    # Sessions of other machines sharing the catalog: every session row says whose it is, as listings do.
    machines = kind == "session" and any((row.session or {}).get("machine") for row in report.rows)
    columns = report_columns(kind, bars=bars, machines=machines)
    prefix = id_prefix_length([row.key for row in report.rows]) if kind == "session" else 0
    largest = max(row.totals.cost for row in report.rows)
    lines: list[list[str]] = []
    for row in report.rows:
        label = _row_label(kind, row, prefix)
        lines.append(_cells(label, row, models) + ([bar(row.totals.cost, largest)] if bars else [])
                     + ([sanitize_display_name((row.session or {}).get("machine") or "")] if machines else []))
        if breakdown:
            for name, figures in sorted(row.models.items(), key=lambda item: (-item[1].cost, item[0])):
                split = _cells(f"  └ {sanitize_display_name(name)}", UsageRow(name, figures), False)
                lines.append(split[:1] + ([""] if models else []) + split[1:] + ([""] if bars else [])
                             + ([""] if machines else []))
    lines.append(_cells("TOTAL", report.totals, models) + ([""] if bars else []) + ([""] if machines else []))
    return render_table(columns, lines, width)


def _row_label(kind: ReportKind, row: UsageRow, prefix: int) -> str:
    """A row's key as the table shows it: a session's id prefix and title, a project's cwd with ~, else the key."""
    if kind == "session":
        session = row.session or {}
        return row.key[:prefix] + session_name_cell(session.get("title"), session.get("firstMessage"))
    if kind == "project":
        return sanitize_display_name(home_relative(row.key or NO_CWD))
    return sanitize_display_name(row.key)

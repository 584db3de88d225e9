"""The table of `sessdex usage` (without --json): a line per row, a TOTAL line, and on a terminal a bar column
scaled to the most expensive row, so that the shape of the spending shows at a glance."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from sessdex.catalog.cli.output import Column, home_relative, render_table
from sessdex.catalog.tui.figures import format_cost, format_tokens
from sessdex.catalog.tui.terminal_text import terminal_text
from sessdex.core.discovery import id_prefix_length, sanitize_display_name
from sessdex.core.usage import UsageReport, UsageRow, UsageTotals
from sessdex.core.usage import model_name as core_model_name
from sessdex.core.usage_terms import PERIOD_KINDS, ReportKind

BAR_WIDTH = 16
NO_CWD = "(no cwd)"  # a project row whose sessions have no cwd
_EIGHTHS = " ▏▎▍▌▋▊▉█"
_KEY_HEADERS = {"daily": "DAY", "weekly": "WEEK OF", "monthly": "MONTH", "session": "SESSION",
                "project": "PROJECT", "model": "MODEL"}
FIGURE_HEADERS = ("INPUT", "OUTPUT", "CACHE READ", "CACHE WRITE", "TOTAL", "COST")
# On a narrow terminal the bars go first, then the cache figures, input, output, the models; TOTAL and COST stay.
FIGURE_DROPS = (4, 3, 5, 6, 1, 0)
SAME_MODELS = "same"  # a MODELS cell whose models are those of the row above


def model_name(key: str) -> str:
    """A model as every report names it (`sessdex.core.usage.model_name`), made safe for a terminal."""
    return sanitize_display_name(core_model_name(key))


def bar(value: float, largest: float, width: int = BAR_WIDTH) -> str:
    """A horizontal bar of `value` against `largest`, in eighths of a character."""
    if largest <= 0 or value <= 0:
        return ""
    eighths = max(1, round(value / largest * width * 8))
    return "█" * (eighths // 8) + (_EIGHTHS[eighths % 8] if eighths % 8 else "")


def report_columns(kind: ReportKind, *, bars: bool, machines: bool) -> list[Column]:
    """The table's columns: the key, the models (but in the model report), the figures, the bars on a terminal,
    and the machine of each session when the report shows other machines' sessions."""
    columns = [Column(_KEY_HEADERS[kind], flexible=kind in ("project", "session"), min_width=16)]
    if kind != "model":
        columns.append(Column("MODELS", flexible=True, drop=2, min_width=12))
    columns += [Column(header, align_right=True, drop=drop) for header, drop in zip(FIGURE_HEADERS, FIGURE_DROPS)]
    if bars:
        columns.append(Column("" if kind in PERIOD_KINDS else "SHARE", drop=7))
    if machines:
        columns.append(Column("MACHINE"))
    return columns


def models_cell(names: Iterable[str]) -> str:
    """The MODELS cell: the models' names (`model_name`), sorted by full name."""
    return ", ".join([model_name(name) for name in sorted(names)])


def figure_cells(totals: UsageTotals) -> list[str]:
    """The INPUT, OUTPUT, CACHE READ, CACHE WRITE, TOTAL and COST cells of a row's figures."""
    return [format_tokens(totals.input), format_tokens(totals.output), format_tokens(totals.cache_read),
            format_tokens(totals.cache_write), format_tokens(totals.total_tokens), format_cost(totals.cost)]


def session_name_cell(title: str | None, first_message: str | None) -> str:
    """What follows a session's id prefix in its label: a space and its title (else the start of its first
    message), or nothing when it has neither."""
    name = title or first_message
    return f" {sanitize_display_name(name)}" if name else ""


def _cells(label: str, row: UsageRow, models: bool) -> list[str]:
    """A table line: the label, the models' names (when `models`), the figures."""
    cells = [label]
    if models:
        cells.append(models_cell(row.models))
    return cells + figure_cells(row.totals)


def model_cells(model_sets: Sequence[tuple[str, ...]], tsv: bool) -> tuple[list[str] | None, str | None]:
    """The models named once: (None, the line under the table) when every row has the same ones (not in
    tab-separated output, `tsv`, whose every line stands alone); else (each row's MODELS cell, None), `same`
    where a row has the models of the row above."""
    if not tsv and len(set(model_sets)) == 1:
        return None, f"models: {terminal_text(models_cell(model_sets[0]))}"
    cells = [SAME_MODELS if not tsv and number and names == model_sets[number - 1] else models_cell(names)
             for number, names in enumerate(model_sets)]
    return cells, None


def usage_table(report: UsageReport, width: int | None, *, breakdown: bool, bars: bool, tsv: bool = False) -> str:
    """The human report: one line per row (and per model with `breakdown`), a TOTAL line, optional bars.

    The models are named once: when every row has the same ones, a line under the table names them instead of a
    MODELS column (not in tab-separated output, `tsv`, whose every line stands alone); else a row with the
    models of the row above says `same`."""
    kind = report.kind
    model_sets = [tuple(sorted(row.models)) for row in report.rows]
    cells, models_line = model_cells(model_sets, tsv) if kind != "model" else (None, None)
    one_set = models_line is not None
    models = cells is not None
    # Sessions of other machines sharing the catalog: every session row says whose it is, as listings do.
    machines = kind == "session" and any((row.session or {}).get("machine") for row in report.rows)
    columns = report_columns(kind, bars=bars, machines=machines)
    if one_set:
        del columns[1]
    prefix = id_prefix_length([row.key for row in report.rows]) if kind == "session" else 0
    largest = max(row.totals.cost for row in report.rows)
    lines: list[list[str]] = []
    for number, row in enumerate(report.rows):
        label = _row_label(kind, row, prefix)
        line = _cells(label, row, False)
        if cells is not None:
            line.insert(1, cells[number])
        lines.append(line + ([bar(row.totals.cost, largest)] if bars else [])
                     + ([sanitize_display_name((row.session or {}).get("machine") or "")] if machines else []))
        if breakdown:
            for name, figures in sorted(row.models.items(), key=lambda item: (-item[1].cost_nanos, item[0])):
                split = _cells(f"  └ {model_name(name)}", UsageRow(name, figures), False)
                lines.append(split[:1] + ([""] if models else []) + split[1:] + ([""] if bars else [])
                             + ([""] if machines else []))
    lines.append(_cells("TOTAL", report.totals, models) + ([""] if bars else []) + ([""] if machines else []))
    table = render_table(columns, lines, width, tsv=tsv)
    if models_line is not None:
        table += f"\n{models_line}"
    return table


def _row_label(kind: ReportKind, row: UsageRow, prefix: int) -> str:
    """A row's key as the table shows it: a session's id prefix and title, a project's cwd with ~, else the key."""
    if kind == "session":
        session = row.session or {}
        return row.key[:prefix] + session_name_cell(session.get("title"), session.get("firstMessage"))
    if kind == "project":
        return sanitize_display_name(home_relative(row.key or NO_CWD))
    if kind == "model":
        return model_name(row.key)
    return sanitize_display_name(row.key)

"""The body of `sessdex usage [daily|weekly|monthly|session|project|model]`, without click, and its table.

The click command (`sessdex.catalog.cli.usage_commands`) parses the options and calls `run_usage`; so does
the click-free fast path (`sessdex.catalog.cli.fastpath`), which answers it from a current catalog.
On a terminal the table ends with a bar column scaled to the most expensive row, so that the shape of
the spending shows at a glance; `--json` prints `sessdex.core.usage.UsageReport.to_json`.
"""

from __future__ import annotations

import os

from sessdex.catalog.cli.output import Column, current_directory, echo, output_width, render_table
from sessdex.catalog.tui.terminal_text import terminal_json
from sessdex.core.discovery import id_prefix_length, sanitize_display_name
from sessdex.core.errors import UsageError
from sessdex.core.usage import (
    PERIOD_KINDS,
    REPORT_KINDS,
    DateRange,
    ReportKind,
    UsageReport,
    UsageRow,
    format_cost,
    format_tokens,
    parse_day,
)

TYPE_CHECKING = False  # typing stays off the hot commands' imports (issue 12)
if TYPE_CHECKING:
    from collections.abc import Callable

    from sessdex.catalog.queries.source import SessionSource

    SourceOpener = Callable[[], SessionSource]

DEFAULT_REPORT: ReportKind = "daily"
BAR_WIDTH = 16
_EIGHTHS = " ▏▎▍▌▋▊▉█"
_KEY_HEADERS = {"daily": "DAY", "weekly": "WEEK OF", "monthly": "MONTH", "session": "SESSION",
                "project": "PROJECT", "model": "MODEL"}


def report_kind(value: str | None) -> ReportKind:
    """The report named on the command line (default daily); UsageError for any other word."""
    if value is None:
        return DEFAULT_REPORT
    for kind in REPORT_KINDS:
        if value == kind:
            return kind
    raise UsageError(f"unknown report {value!r}: choose one of {', '.join(REPORT_KINDS)}")


def date_range(since: str | None, until: str | None) -> DateRange:
    """`--since` / `--until` as a DateRange; UsageError for a value that is not a date or an empty range."""
    days: list[str | None] = []
    for option, value in (("--since", since), ("--until", until)):
        if value is None:
            days.append(None)
            continue
        try:
            days.append(parse_day(value))
        except ValueError:
            raise UsageError(f"{option} takes a date as YYYY-MM-DD or YYYYMMDD, not {value!r}") from None
    if days[0] is not None and days[1] is not None and days[0] > days[1]:
        raise UsageError(f"--since {days[0]} is after --until {days[1]}")
    return DateRange(days[0], days[1])


def run_usage(open_source: SourceOpener, *, kind: ReportKind, days: DateRange, all_projects: bool, breakdown: bool,
              as_json: bool) -> int:
    """`sessdex usage KIND`: tokens and cost per period, session, project or model, with a totals row."""
    with open_source() as source:
        report = source.usage_report(kind, current_directory(), all_projects=all_projects, days=days)
    if as_json:
        echo(terminal_json(report_json_text(report, breakdown)))
    elif not report.rows:
        echo("No usage found", err=True)
    else:
        width = output_width()
        echo(usage_table(report, width, breakdown=breakdown, bars=width is not None))
    return 0


# From this many rows on, `--json` is written by orjson: its import costs more than a small report's whole run,
# but it writes a row several times faster than Python (a session report holds a row per session).
ORJSON_ROWS = 1000


def report_json_text(report: UsageReport, breakdown: bool) -> str:
    """The report as `--json` prints it: orjson's text (json_text spells numbers as orjson does)."""
    value = report.to_json(breakdown)
    if len(report.rows) < ORJSON_ROWS:
        from sessdex.catalog.cli.json_text import json_text

        return json_text(value, orjson_numbers=True)
    import orjson

    return orjson.dumps(value, option=orjson.OPT_INDENT_2).decode()


def bar(value: float, largest: float, width: int = BAR_WIDTH) -> str:
    """A horizontal bar of `value` against `largest`, in eighths of a character."""
    if largest <= 0 or value <= 0:
        return ""
    eighths = max(1, round(value / largest * width * 8))
    return "█" * (eighths // 8) + (_EIGHTHS[eighths % 8] if eighths % 8 else "")


def _cells(label: str, row: UsageRow, models: bool) -> list[str]:
    """A table line: the label, the models' names (when `models`), the figures."""
    totals = row.totals
    cells = [label]
    if models:
        cells.append(", ".join(sanitize_display_name(name.split("/", 1)[-1]) for name in sorted(row.models)))
    return cells + [format_tokens(totals.input), format_tokens(totals.output), format_tokens(totals.cache_read),
                    format_tokens(totals.cache_write), format_tokens(totals.total_tokens), format_cost(totals.cost)]


def usage_table(report: UsageReport, width: int | None, *, breakdown: bool, bars: bool) -> str:
    """The human report: one line per row (and per model with `breakdown`), a TOTAL line, optional bars."""
    kind = report.kind
    models = kind != "model"
    columns = [Column(_KEY_HEADERS[kind], flexible=kind in ("project", "session"))]
    if models:
        columns.append(Column("MODELS", flexible=True))
    columns += [Column(header, align_right=True) for header in ("INPUT", "OUTPUT", "CACHE READ", "CACHE WRITE",
                                                                "TOTAL", "COST")]
    if bars:
        columns.append(Column("" if kind in PERIOD_KINDS else "SHARE"))
    # Sessions of other machines sharing the catalog: every session row says whose it is, as listings do.
    machines = kind == "session" and any((row.session or {}).get("machine") for row in report.rows)
    if machines:
        columns.append(Column("MACHINE"))
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
        name = session.get("title") or session.get("firstMessage")
        return row.key[:prefix] + (f" {sanitize_display_name(name)}" if name else "")
    if kind == "project":
        home = os.path.expanduser("~").rstrip("/")
        key = row.key or "(no cwd)"
        key = "~" + key[len(home):] if home and (key == home or key.startswith(home + "/")) else key
        return sanitize_display_name(key)
    return sanitize_display_name(row.key)

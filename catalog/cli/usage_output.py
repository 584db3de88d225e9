"""The body of `sessdex usage [daily|weekly|monthly|session|project|model]`, without click, and its table.

The click command (`sessdex.catalog.cli.usage_commands`) parses the options and calls `run_usage`; so does
the click-free fast path (`sessdex.catalog.cli.fastpath`), which answers it from a current catalog.
`--json` prints `sessdex.core.usage.UsageReport.to_json` as `sessdex.core.usage_json` writes it (from the
catalog, mostly texts stored ready); the table is `sessdex.catalog.cli.usage_stored_table`'s from the cells the
catalog stores ready where they answer, else `sessdex.catalog.cli.usage_table`'s from the summed report.
"""

from __future__ import annotations

import os
import sys

from sessdex.catalog.cli.output import current_directory, echo, output_width
from sessdex.core.errors import UsageError
from sessdex.core.usage_terms import REPORT_KINDS, DateRange, ReportKind, parse_day

TYPE_CHECKING = False  # typing stays off the hot commands' imports (issue 12)
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

    from sessdex.catalog.queries.source import SessionSource
    from sessdex.catalog.store.report_files import ReadyReport

    SourceOpener = Callable[[], SessionSource]

DEFAULT_REPORT: ReportKind = "daily"


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
        printed: bytes | str | ReadyReport | None = None
        laid_out = None  # the stored cells a table was laid out from, to keep it ready (keep_usage_table)
        try:
            if as_json:
                printed = source.usage_json_output(kind, current_directory(), all_projects=all_projects, days=days,
                                                   breakdown=breakdown)
            else:
                width = output_width()
                bars, home = width is not None, os.path.expanduser("~").rstrip("/")
                stored = source.usage_table_cells(kind, current_directory(), all_projects=all_projects, days=days,
                                                  breakdown=breakdown, ready_table=(width, bars, home))
                if stored is None:
                    printed = _summed_table(source, kind, days, all_projects, breakdown, width)
                else:
                    from sessdex.catalog.store.report_files import ReadyReport  # (loaded by the catalog's answer)

                    if isinstance(stored, ReadyReport):  # the table kept ready since its rows last changed
                        printed = stored
                    elif stored.labels:  # the table from the cells the catalog stores ready (no core.usage)
                        from sessdex.catalog.cli.usage_stored_table import stored_usage_table

                        printed = stored_usage_table(stored, width, bars=bars)
                        laid_out = stored
            progress = source.content_index_progress()
            if progress is not None:
                echo(f"sessdex: the usage figures are incomplete: {progress.percent}% of the content index is built "
                     f"({progress.done} of {progress.total} {progress.unit}) until `sessdex index` or `sessdex watch` "
                     "completes it", err=True)
        except BaseException:
            if printed is not None and not isinstance(printed, (bytes, str)):
                printed.close()  # a ready report's open file
            raise
        if printed is None:
            echo("No usage found", err=True)
        elif isinstance(printed, str):
            echo(printed)
        else:
            print_report_json(printed)
        if laid_out is not None and isinstance(printed, bytes):
            source.keep_usage_table(laid_out, width, bars, home, printed + b"\n")
    return 0


def _summed_table(source: SessionSource, kind: ReportKind, days: DateRange, all_projects: bool, breakdown: bool,
                  width: int | None) -> str | None:
    """The table of the report summed from the catalog's rollup (or read from the files), or None without usage."""
    report = source.usage_report(kind, current_directory(), all_projects=all_projects, days=days)
    if not report.rows:
        return None
    from sessdex.catalog.cli.usage_table import usage_table  # the table's figures and labels: not for --json

    return usage_table(report, width, breakdown=breakdown, bars=width is not None)


def print_report_json(report: bytes | ReadyReport) -> None:
    """Print a report's UTF-8 text, terminal-safe already (sessdex.core.usage_json escapes every string it
    writes), and a newline, as `echo` writes it, without echo's pass over the whole text (a session report is
    megabytes); a ready report file (whose text ends with the newline) is sent as it is."""
    stream = sys.stdout
    if stream is None:
        if not isinstance(report, bytes):
            report.close()
        return
    encoding = (getattr(stream, "encoding", None) or "").lower()
    buffer = getattr(stream, "buffer", None) if encoding in ("utf-8", "utf8") else None
    if isinstance(report, bytes):
        if buffer is None:
            echo(report.decode())  # another encoding: echo's own handling of it
            return
        stream.flush()
        buffer.write(report)
        buffer.write(b"\n")
        buffer.flush()
        return
    try:
        fd = _file_descriptor(buffer) if buffer is not None else None
        if buffer is None or fd is None:
            echo(report.read().decode().removesuffix("\n"))
            return
        stream.flush()
        buffer.flush()
        report.send(fd)
    finally:
        report.close()


def _file_descriptor(buffer: Any) -> int | None:
    """The descriptor under a byte stream, or None when it has none (a test's captured output)."""
    try:
        return int(buffer.fileno())
    except (AttributeError, OSError, ValueError):
        return None

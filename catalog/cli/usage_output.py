"""The body of `sessdex usage [daily|weekly|monthly|session|project|model]`: the report summed by the answer
source (the catalog's rollups, or the files with `--catalog off`), printed as a table or as JSON."""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence
from typing import Any

import orjson

from sessdex.catalog.cli.marks_filters import MarksFilter
from sessdex.catalog.cli.output import current_directory, echo, output_width, selected_fields, tab_separated
from sessdex.catalog.queries.source import SessionSource
from sessdex.catalog.queries.usage import SessionUsage
from sessdex.catalog.tui.terminal_text import terminal_json_bytes
from sessdex.core.errors import UsageError
from sessdex.core.marks import NO_MARKS
from sessdex.core.text import without_lone_surrogates
from sessdex.core.usage import UsageReport, figures_json
from sessdex.core.usage_terms import REPORT_KINDS, DateRange, ReportKind, parse_day

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
              as_json: bool, json_fields: Sequence[str] = (), table: bool = False,
              wanted: MarksFilter | None = None) -> int:
    """`sessdex usage KIND`: tokens and cost per period, session, project or model, with a totals row (`wanted`:
    over the sessions with these marks only)."""
    marked = wanted is not None and wanted.active
    session_rows = kind == "session" and as_json and not breakdown
    with open_source() as source:
        if session_rows:
            # One row per session (thousands): read as the rows the source keeps ahead when it does.
            sessions = None if marked or days.since or days.until else source.session_usage(
                current_directory(), all_projects=all_projects)
            if sessions is None:
                from sessdex.catalog.queries.usage import session_usage_of

                sessions = session_usage_of(_report(source, wanted, kind, all_projects, days))
            text = report_text(session_report_json(sessions, source.marks(), json_fields))
        else:
            report = _report(source, wanted, kind, all_projects, days)
            if kind == "session" and as_json:
                from sessdex.catalog.queries.usage import add_session_marks

                add_session_marks(report, source.marks())
        progress = source.content_index_progress(text=False)
    warn_if_incomplete(progress)
    if session_rows:
        print_json_text(text)
    elif as_json:
        print_json_text(report_json(report, breakdown, json_fields))
    elif not report.rows:
        echo("No usage found", err=True)
    else:
        from sessdex.catalog.cli.usage_table import usage_table  # the table's figures and labels: not for --json

        tsv = tab_separated(table)
        width = output_width()
        echo(usage_table(report, width, breakdown=breakdown, bars=width is not None and not tsv, tsv=tsv))
    return 0


def _report(source: SessionSource, wanted: MarksFilter | None, kind: ReportKind, all_projects: bool,
            days: DateRange) -> UsageReport:
    """The report from the source, over the sessions with the wanted marks only when a marks filter is given."""
    if wanted is not None and wanted.active:
        from sessdex.catalog.cli.marks_usage import marked_usage_report

        return marked_usage_report(source, wanted, kind, current_directory(), all_projects=all_projects, days=days)
    return source.usage_report(kind, current_directory(), all_projects=all_projects, days=days)


def session_report_json(sessions: SessionUsage, marks: dict[str, Any], fields: Sequence[str] = ()) -> dict[str, Any]:
    """`sessdex usage session --json`'s value (without --breakdown) from its rows (`SESSION_ROW_FIELDS`): the keys
    and figures `UsageReport.to_json` gives every report's rows, each session's names and marks."""
    unmarked = NO_MARKS.to_json()  # one value for every unmarked row (most of them): it is only printed
    rows = []
    for (session_id, path, cwd, title, first_message, machine, input_tokens, output_tokens, cache_read, cache_write,
         cost_nanos, messages, models) in sessions.rows:
        row = {"session": session_id, "path": path, "cwd": cwd, "title": title, "firstMessage": first_message}
        if machine is not None:
            row["machine"] = machine
        found = marks.get(session_id)
        row["marks"] = unmarked if found is None else found.to_json()
        figures_json(row, input_tokens, output_tokens, cache_read, cache_write, cost_nanos, messages, 1)
        row["models"] = orjson.loads(models)
        rows.append(row)
    value = UsageReport("session", [], sessions.totals).to_json(False)
    value["rows"] = selected_fields(rows, fields)
    value["totals"] = selected_fields(value["totals"], fields)
    return value


def warn_if_incomplete(progress: Any) -> None:
    """Say on stderr that the figures are partial while a first index's content (usage facts) is being built
    (`progress`: `SessionSource.content_index_progress()`)."""
    if progress is not None:
        echo(f"sessdex: the usage figures are incomplete: {progress.percent}% of the content index is built "
             f"({progress.done} of {progress.total} {progress.unit}) until `sessdex index` or `sessdex watch` "
             "completes it", err=True)


def report_json(report: UsageReport, breakdown: bool, fields: Sequence[str] = ()) -> bytes:
    """`sessdex usage --json`'s text (UTF-8): the report as orjson indents it, with the characters a terminal would
    act on escaped inside its strings (`terminal_json`); `fields`: what each row and the totals keep (`--json
    FIELDS`)."""
    value = report.to_json(breakdown)
    if fields:
        value["rows"] = selected_fields(value["rows"], fields)
        value["totals"] = selected_fields(value["totals"], fields)
    return report_text(value)


def report_text(value: dict[str, Any]) -> bytes:
    """A report's JSON value as indented UTF-8 text, terminal-safe (see `report_json`)."""
    try:
        text = orjson.dumps(value, option=orjson.OPT_INDENT_2)
    except TypeError:  # a lone surrogate (an undecodable file name), which UTF-8 cannot hold: U+FFFD, as the catalog
        text = orjson.dumps(_without_lone_surrogates(value), option=orjson.OPT_INDENT_2)
    return terminal_json_bytes(text)


def _without_lone_surrogates(value: Any) -> Any:
    if isinstance(value, str):
        return without_lone_surrogates(value)
    if isinstance(value, dict):
        return {without_lone_surrogates(key): _without_lone_surrogates(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_without_lone_surrogates(item) for item in value]
    return value


def print_json_text(text: bytes) -> None:
    """Print UTF-8 JSON text that is terminal-safe already, and a newline, as it is on a UTF-8 stdout (without
    echo's pass over the whole text: a session report is megabytes), else through echo."""
    stream = sys.stdout
    if stream is None:
        return
    encoding = (getattr(stream, "encoding", None) or "").lower()
    buffer = getattr(stream, "buffer", None) if encoding in ("utf-8", "utf8") else None
    if buffer is None:
        echo(text.decode())
        return
    stream.flush()
    buffer.write(text)
    buffer.write(b"\n")
    buffer.flush()

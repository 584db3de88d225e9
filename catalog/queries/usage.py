"""`sessdex usage` reports answered from the catalog, or from the files (`--catalog off`).

The catalog reads a report without a date range from `usage_totals`, where the indexer keeps every
report's rows summed ahead: only the result rows are read, whatever the number of sessions. With
--since/--until it runs two grouped queries over `usage_rollup` (one row per file, local day and
model): the rows with their distinct sessions, and the same rows split per model. Both are per machine:
with `--machines all` each machine's report is read and the reports are added up (a session belongs to
one machine, so the session counts add; the session report's rows are its sessions, never merged). The file
answer (`scan_usage_report`) reads every session file below the sessions root, because a fork's
parent may live in another project, and then keeps the scope's files: it is the reference the parity
tests compare the catalog with. Both build `sessdex.core.usage.UsageReport` values.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Callable, Sequence

from sessdex.core.paths import session_file_entries
from sessdex.core.usage import (
    FileUsage,
    ReportKind,
    UsageFact,
    UsageReport,
    UsageRow,
    UsageTotals,
    add_fact,
    build_report,
    counted_facts,
    mark_copies,
    model_names,
    order_rows,
    read_file_usage,
    session_fields,
)
from sessdex.core.usage_terms import DateRange
from sessdex.core.values import Value

TYPE_CHECKING = False  # see the README's start-up budget
if TYPE_CHECKING:
    from typing import Any

_KEY_WIDTH = {"daily": 1, "weekly": 1, "monthly": 1, "session": 6, "project": 1, "model": 2, "total": 0}
DAY_CEILING = "9999-12-31"


def _totals(values: Sequence[Any]) -> UsageTotals:
    """UsageTotals from the figures at the end of a report row (SQL sums are NULL-free: rows exist).

    (PostgreSQL sums BIGINT columns as NUMERIC, read as Decimal: the counts become ints again.)
    """
    input_tokens, output_tokens, cache_read, cache_write, cost_nanos, messages, sessions = values
    return UsageTotals(input_tokens, output_tokens, cache_read, cache_write, int(cost_nanos), int(messages),
                       int(sessions))


def _row_key(kind: str, keys: Sequence[Any]) -> tuple[Any, str]:
    """(grouping identity, displayed key) of a report row's key columns."""
    if kind == "session":
        return keys[0], keys[1]
    if kind == "model":
        return tuple(keys), f"{keys[0]}/{keys[1]}"
    if kind == "total":
        return "", ""
    return keys[0], keys[0] if keys[0] is not None else ""


def catalog_usage_report(db: Any, kind: ReportKind, scope_name: str, parts: Sequence[dict[str, str]],
                         days: DateRange) -> UsageReport:
    """A report from the catalog; `scope_name` is "in_directories" or "under_root", and `parts` holds, for each
    machine the report covers (this one first), its `machine` and its scope's parameters (`dir0..dir2`, or
    `root_lo`/`root_hi`); a machine may have several parts (disjoint sets of folders). The parts' reports
    are added up. A session row of another machine says whose it is (`machine`, as listings do)."""
    reports = []
    for params in parts:
        report = _machine_report(db, kind, scope_name, params, days)
        if kind == "session" and params["machine"] != db.machine:
            for row in report.rows:
                if row.session is not None:
                    row.session["machine"] = params["machine"]
        reports.append(report)
    return reports[0] if len(reports) == 1 else merge_reports(kind, reports)


class SessionUsage(Value):
    """The session report as it is printed: its rows in display order, each a tuple of `SESSION_ROW_FIELDS`
    (`models` the JSON array of its models' names), and its totals."""

    __slots__ = ("rows", "totals")

    def __init__(self, rows: list[tuple[Any, ...]], totals: UsageRow) -> None:
        self.rows = rows
        self.totals = totals


# A session row's fields (the columns of `usage_sessions` the report reads); `machine` is None for this machine's.
SESSION_ROW_FIELDS = ("session_id", "path", "cwd", "title", "first_message", "machine", "input", "output",
                      "cache_read", "cache_write", "cost_nanos", "messages", "models")
_SESSION_COST = SESSION_ROW_FIELDS.index("cost_nanos")


def _by_cost_then_id(row: tuple[Any, ...]) -> tuple[Any, Any]:
    return -row[_SESSION_COST], row[0]


def catalog_session_usage(db: Any, scope_name: str, parts: Sequence[dict[str, str]]) -> SessionUsage | None:
    """The session report over every day from the rows the indexer keeps ahead (`usage_sessions`), for the scope
    and machines of `catalog_usage_report`; None when the catalog also holds files of a machine outside its
    sessions root (the report of every project then sums the rollup: see `catalog_usage_report`)."""
    rows: list[tuple[Any, ...]] = []
    total = UsageRow("", UsageTotals())
    for params in parts:
        params = {**params, "this_machine": db.machine}
        if scope_name == "under_root":
            params["root_dir"] = params["root_lo"].rstrip("/")
            if usage_outside_root(db, params):
                return None
            rows.extend(db.fetch_tuples("usage_sessions_under_root", params))
        else:
            rows.extend(db.fetch_tuples("usage_sessions_in_scopes", params))
        _add_row(total, _rows_from_totals(db, "total", _totals_scopes(scope_name, params), {}))
    rows.sort(key=_by_cost_then_id)
    return SessionUsage(rows, total)


def session_usage_of(report: UsageReport) -> SessionUsage:
    """A session report computed as a UsageReport (from the files, over some days, over marked sessions) as the
    rows `catalog_session_usage` reads."""
    import orjson

    rows = []
    for row in report.rows:
        session = row.session or {}
        figures = row.totals
        rows.append((row.key, session.get("path"), session.get("cwd"), session.get("title"),
                     session.get("firstMessage"), session.get("machine"), figures.input, figures.output,
                     figures.cache_read, figures.cache_write, figures.cost_nanos, figures.messages,
                     orjson.dumps(model_names(row.models)).decode()))
    return SessionUsage(rows, report.totals)


def merge_reports(kind: ReportKind, reports: Sequence[UsageReport]) -> UsageReport:
    """The sum of reports over disjoint sets of sessions (other machines, other folders): rows of the same key
    add up, figures and session counts alike; the session report's rows (one per session file) are kept apart."""
    rows: list[UsageRow] = []
    by_key: dict[str, UsageRow] = {}
    total = UsageRow("", UsageTotals())
    for report in reports:
        _add_row(total, report.totals)
        for row in report.rows:
            if kind == "session":
                rows.append(row)
                continue
            known = by_key.get(row.key)
            if known is None:
                by_key[row.key] = known = UsageRow(row.key, UsageTotals())
                rows.append(known)
            _add_row(known, row)
    return UsageReport(kind, order_rows(kind, rows), total)


def _add_row(into: UsageRow, row: UsageRow) -> None:
    """Add a row's figures and per-model figures to another's."""
    _add_totals(into.totals, row.totals)
    for model, figures in row.models.items():
        _add_totals(into.models.setdefault(model, UsageTotals()), figures)


def _add_totals(into: UsageTotals, figures: UsageTotals) -> None:
    _add_figures(into, (figures.input, figures.output, figures.cache_read, figures.cache_write, figures.cost_nanos,
                        figures.messages, figures.sessions))


def _machine_report(db: Any, kind: ReportKind, scope_name: str, scope_params: dict[str, str],
                    days: DateRange) -> UsageReport:
    """One machine's report (`scope_params["machine"]`).

    Without --since/--until the rows were summed ahead (usage_totals), so only they are read; with a date
    range, or for every project when the catalog also holds files of the machine outside its sessions root,
    the rollup rows are summed here.
    """
    params = {**scope_params, "since": days.since or "", "until": days.until or DAY_CEILING}
    if "root_lo" in params:
        params["root_dir"] = params["root_lo"].rstrip("/")
    whole_days = days.since is None and days.until is None
    if whole_days and (scope_name == "in_directories" or not usage_outside_root(db, params)):
        return _report_from_totals(db, kind, scope_name, scope_params)
    report_rows = _rows(db, kind, f"usage_{kind}_{scope_name}", f"usage_{kind}_by_model_{scope_name}"
                        if kind != "model" else None, params)
    totals = _rows(db, "total", f"usage_total_{scope_name}", f"usage_total_by_model_{scope_name}", params)
    total = totals[0] if totals else UsageRow("", UsageTotals())
    return UsageReport(kind, order_rows(kind, report_rows), total)


def _report_from_totals(db: Any, kind: ReportKind, scope_name: str, scope_params: dict[str, str]) -> UsageReport:
    """A report read from one machine's usage_totals: its machine-wide rows for every project, else the project
    folders' rows added up (a file is in one folder, so figures and session counts add)."""
    scopes = _totals_scopes(scope_name, scope_params)
    rows: dict[str, UsageRow] = {}
    # The session rows come from their own query (with the sessions' names): here only the total.
    total = _rows_from_totals(db, "total" if kind == "session" else kind, scopes, rows)
    if kind == "session":
        where = "under_root" if scope_name == "under_root" else "in_scopes"
        params = ({**scope_params, "root_dir": scope_params["root_lo"].rstrip("/")} if scope_name == "under_root"
                  else scopes)
        # A session report has a row per session (10,000 of them): each row's figures are made in one step.
        for (key, _model, input_tokens, output_tokens, cache_read, cache_write, cost, messages, sessions, session_id,
             path, cwd, title, first_message) in db.fetch_tuples(f"usage_totals_sessions_{where}", params):
            rows[key] = UsageRow(session_id, UsageTotals(input_tokens, output_tokens, cache_read, cache_write,
                                                         int(cost), int(messages), int(sessions)),
                                 session=session_fields(path, cwd, title, first_message))
        for key, model, *figures in db.fetch_tuples(f"usage_totals_session_models_{where}", params):
            owner = rows.get(key)
            if owner is None:
                continue
            known = owner.models.get(model)
            if known is None:
                owner.models[model] = _totals(figures)
            else:
                _add_figures(known, figures)
    return UsageReport(kind, order_rows(kind, list(rows.values())), total)


def _totals_scopes(scope_name: str, scope_params: dict[str, str]) -> dict[str, str]:
    """The usage_totals scopes of one machine's report: its machine-wide rows for every project, else its project
    folders' rows."""
    if scope_name == "under_root":
        return {"dir0": "", "dir1": "", "dir2": "", "machine": scope_params["machine"]}
    return {name: scope_params[name] for name in ("dir0", "dir1", "dir2", "machine")}


def _rows_from_totals(db: Any, kind: str, scopes: dict[str, str], rows: dict[str, UsageRow]) -> UsageRow:
    """Add the usage_totals rows of `kind` in `scopes` to `rows` (by key) and return their total row."""
    total = UsageRow("", UsageTotals())
    for row_kind, key, model, *figures in db.fetch_tuples("usage_totals_in_scopes", {"kind": kind, **scopes}):
        if row_kind != "total" and row_kind != kind:
            continue
        row = total if row_kind == "total" else rows.setdefault(key, UsageRow(key, UsageTotals()))
        if kind == "model" and row_kind != "total":
            _add_figures(row.totals, figures)
            _add_figures(row.models.setdefault(key, UsageTotals()), figures)
        else:
            _add_figures(row.models.setdefault(model, UsageTotals()) if model else row.totals, figures)
    return total


def _add_figures(totals: UsageTotals, figures: Sequence[Any]) -> None:
    input_tokens, output_tokens, cache_read, cache_write, cost_nanos, messages, sessions = figures
    totals.input += input_tokens
    totals.output += output_tokens
    totals.cache_read += cache_read
    totals.cache_write += cache_write
    totals.cost_nanos += int(cost_nanos)
    totals.messages += int(messages)
    totals.sessions += int(sessions)


def _rows(db: Any, kind: str, rows_statement: str, by_model_statement: str | None,
          params: dict[str, Any]) -> list[UsageRow]:
    width = _KEY_WIDTH[kind]
    rows: dict[Any, UsageRow] = {}
    for values in db.fetch_tuples(rows_statement, params):
        if kind == "total" and values[-1] == 0:
            continue  # no rollup row in scope: an empty total
        identity, key = _row_key(kind, values[:width])
        row = rows[identity] = UsageRow(key, _totals(values[width:]))
        if kind == "session":
            row.session = session_fields(*values[2:6])
    if by_model_statement is None:  # the model report: each row is its own only model
        for row in rows.values():
            row.models[row.key] = row.totals.copy()
        return list(rows.values())
    for values in db.fetch_tuples(by_model_statement, params):
        identity, _key = _row_key(kind, values[:width])
        provider, model = values[width:width + 2]
        owner = rows.get(identity)
        if owner is not None:
            owner.models[f"{provider}/{model}"] = _totals(values[width + 2:])
    return list(rows.values())


def usage_outside_root(db: Any, params: dict[str, Any]) -> bool:
    """True when the catalog holds usage of a file outside the sessions root (indexed for a --session-dir)."""
    return bool(db.fetch_tuples("usage_outside_root", {**params, "limit": 1, "offset": 0}))


def _session_files_under(root: str) -> list[str]:
    """Every regular `*.jsonl` file below `root` (nested folders too), as the file-scan `list_all` walks it."""
    found = []
    for entry in session_file_entries(root, recursive=True):
        try:
            if stat.S_ISREG(entry.stat().st_mode):  # never open a FIFO or a device: reading one could block
                found.append(entry.path)
        except OSError:
            continue
    return found


def scan_usage_report(kind: ReportKind, sessions_root: str, folders: Sequence[str] | None,
                      days: DateRange) -> UsageReport:
    """A report read from the files: every session below the root (for the fork rule), then those in
    `folders` (None: all of them)."""
    files: list[FileUsage] = []
    for path in _session_files_under(sessions_root):
        usage = read_file_usage(path)
        if usage is not None:
            files.append(usage)
    mark_copies(files)
    if folders is not None:
        wanted = {os.path.abspath(folder) for folder in folders}
        files = [usage for usage in files if usage.directory in wanted]
    return build_report(kind, files, days)


# -- 5-hour billing blocks, as ccusage counts them ------------------------------------------------------------
#
# Messages are taken in time order. A block starts at its first message's time floored to the UTC hour and lasts
# five hours; a message more than five hours after its block's start, or more than five hours after the message
# before it, starts the next block. A block is active while now is before its end and less than five hours after
# its last message; its projection extends the burn rate between its first and last message to its end.

BLOCK_MS = 5 * 3600 * 1000
HOUR_MS = 3600 * 1000
MINUTE_MS = 60 * 1000
# How far before the wanted start the files are read at first when looking for the chain's last restart.
FIRST_LOOKBACK_MS = 24 * HOUR_MS
# A file's modification time can lag the clock its entries were stamped with by this much (coarse file systems).
MTIME_SLACK_MS = 2000


class BlockProjection(Value):
    """Where the active block ends up if its burn rate holds until its end."""

    __slots__ = ("tokens_per_minute", "cost_per_hour", "remaining_minutes", "total_tokens", "cost")

    def __init__(self, tokens_per_minute: float, cost_per_hour: float, remaining_minutes: float,
                 total_tokens: float, cost: float) -> None:
        self.tokens_per_minute = tokens_per_minute
        self.cost_per_hour = cost_per_hour
        self.remaining_minutes = remaining_minutes
        self.total_tokens = total_tokens
        self.cost = cost


class UsageBlock(Value):
    """One 5-hour billing block: its start (floored to the hour), its first and last message, its figures."""

    __slots__ = ("start_ms", "first_ms", "last_ms", "totals", "models", "session_paths", "active")

    def __init__(self, start_ms: int, first_ms: int, last_ms: int) -> None:
        self.start_ms = start_ms
        self.first_ms = first_ms
        self.last_ms = last_ms
        self.totals = UsageTotals()
        self.models: dict[str, UsageTotals] = {}
        self.session_paths: set[str] = set()
        self.active = False

    @property
    def end_ms(self) -> int:
        return self.start_ms + BLOCK_MS

    def projection(self, now_ms: int) -> BlockProjection | None:
        """The burn rate over the block's messages extended to its end; None when the block is not active or its
        messages span no time (one message gives no rate)."""
        minutes = (self.last_ms - self.first_ms) / MINUTE_MS
        if not self.active or minutes <= 0:
            return None
        tokens_per_minute = self.totals.total_tokens / minutes
        cost_per_hour = self.totals.cost / minutes * 60
        remaining = max(0.0, (self.end_ms - now_ms) / MINUTE_MS)
        return BlockProjection(tokens_per_minute, cost_per_hour, remaining,
                               self.totals.total_tokens + tokens_per_minute * remaining,
                               self.totals.cost + cost_per_hour / 60 * remaining)


def usage_blocks(facts: Sequence[tuple[UsageFact, str]], now_ms: int) -> list[UsageBlock]:
    """The blocks of (fact, session path) pairs sorted by time, oldest first; the last may be active."""
    blocks: list[UsageBlock] = []
    block: UsageBlock | None = None
    for fact, path in facts:
        moment = fact.ts_ms
        if block is None or moment - block.start_ms > BLOCK_MS or moment - block.last_ms > BLOCK_MS:
            block = UsageBlock(moment - moment % HOUR_MS, moment, moment)
            blocks.append(block)
        block.last_ms = moment
        add_fact(block.totals, fact)
        model = block.models.setdefault(f"{fact.provider}/{fact.model}", UsageTotals())
        add_fact(model, fact)
        block.session_paths.add(path)
    for block in blocks:
        block.totals.sessions = len(block.session_paths)
    if blocks:
        last = blocks[-1]
        last.active = now_ms < last.end_ms and now_ms - last.last_ms < BLOCK_MS
    return blocks


# Reads the counted facts, with their session, in time order: those of files modified since a moment (None: every
# file), from that moment on; and says whether that was every fact anyway (then nothing older is left to read).
FactsReader = Callable[[int | None], tuple[list[tuple[UsageFact, str]], bool]]


def chained_facts(read_from: FactsReader, since_ms: int | None) -> list[tuple[UsageFact, str]]:
    """The counted facts (fork copies dropped) with their session, in time order: every fact from `since_ms` on
    (None: all of them), and before it only from a message that starts a block whatever came before it, so that
    `usage_blocks` of the result gives the blocks the whole history gives.

    Only files modified since the span read began are read: the agent stamps an entry before appending it, so an
    older file holds no later entry (and a fork's copied entry is in a parent at least as recent). The span starts
    a day before `since_ms` and doubles until it holds a gap of more than five hours before `since_ms`, or every
    fact."""
    lookback = FIRST_LOOKBACK_MS
    while True:
        start = None if since_ms is None or since_ms - lookback <= 0 else since_ms - lookback
        facts, whole = read_from(start)
        if start is None or whole or since_ms is None:
            return facts
        restart = _chain_restart(facts, start, since_ms)
        if restart is not None:
            return facts[restart:]
        lookback *= 2


def timed_facts(sessions_root: str, since_ms: int | None) -> list[tuple[UsageFact, str]]:
    """`chained_facts` read from the session files below `sessions_root` alone (`--catalog off`)."""
    entries: list[tuple[str, int]] = []
    for entry in session_file_entries(sessions_root, recursive=True):
        try:
            status = entry.stat()
        except OSError:
            continue
        if stat.S_ISREG(status.st_mode):  # never open a FIFO or a device: reading one could block
            entries.append((entry.path, status.st_mtime_ns // 1_000_000))
    read: dict[str, FileUsage | None] = {}

    def read_from(start: int | None) -> tuple[list[tuple[UsageFact, str]], bool]:
        if start is not None and all(mtime_ms + MTIME_SLACK_MS >= start for _path, mtime_ms in entries):
            start = None  # every file is read anyway: take every fact
        wanted = [path for path, mtime_ms in entries if start is None or mtime_ms + MTIME_SLACK_MS >= start]
        for path in wanted:
            if path not in read:
                read[path] = read_file_usage(path)
        files = [usage for path in wanted if (usage := read[path]) is not None]
        mark_copies(files)
        facts = sorted(((fact, usage.path) for usage in files for fact in counted_facts(usage)
                        if start is None or fact.ts_ms >= start), key=lambda pair: pair[0].ts_ms)
        return facts, start is None

    return chained_facts(read_from, since_ms)


# Below any time a fact or a file can have: the lower bound of "every fact" in the catalog's query.
_NO_LOWER_BOUND = -(2**62)


def catalog_timed_facts(db: Any, roots: Sequence[dict[str, str]], since_ms: int | None) -> list[tuple[UsageFact, str]]:
    """`chained_facts` read from the catalog: the facts the indexer stored (fork copies already marked) of the
    files below each machine's sessions root (`roots`: its `machine`, `root_lo`, `root_hi`; this one first), with
    the catalog's modification times. Another machine's session is named `machine:path` (paths may repeat)."""
    here = roots[0]["machine"] if roots else ""

    def read_from(start: int | None) -> tuple[list[tuple[UsageFact, str]], bool]:
        bounds = ({"mtime_ns_lo": _NO_LOWER_BOUND, "ts_lo": _NO_LOWER_BOUND} if start is None
                  else {"mtime_ns_lo": (start - MTIME_SLACK_MS) * 1_000_000, "ts_lo": start})
        facts = []
        for root in roots:
            machine = root["machine"]
            for path, *values in db.fetch_tuples("usage_facts_since_under_root", {**root, **bounds}):
                values[-1] = int(values[-1])  # (a server may give the nano-dollars as a Decimal)
                facts.append((UsageFact(*values), path if machine == here else f"{machine}:{path}"))
        facts.sort(key=lambda pair: pair[0].ts_ms)
        return facts, start is None

    return chained_facts(read_from, since_ms)


def _chain_restart(facts: Sequence[tuple[UsageFact, str]], start: int, since_ms: int) -> int | None:
    """The index of a fact at or before the first one from `since_ms` on that starts a block whatever came before
    `start` (the read span's beginning): more than five hours after the fact before it, or after `start` for the
    first one. None when there is none before the first fact from `since_ms` on."""
    previous = start
    for index, (fact, _path) in enumerate(facts):
        if fact.ts_ms - previous > BLOCK_MS:
            return index
        if fact.ts_ms >= since_ms:
            return None
        previous = fact.ts_ms
    return len(facts)  # nothing from `since_ms` on


def add_session_marks(report: UsageReport, marks: dict[str, Any]) -> None:
    """Each row of a session usage report says its session's marks (as every JSON session object does)."""
    from sessdex.core.marks import NO_MARKS

    unmarked = NO_MARKS.to_json()  # one value for every unmarked row (most of them): it is only printed
    for row in report.rows:
        if row.session is not None:
            found = marks.get(row.key)
            row.session["marks"] = unmarked if found is None else found.to_json()

"""Token usage and cost of assistant messages: one fact per message, fork copies, and the usage reports.

Every assistant message the agent writes carries `provider`, `model` and `usage` (`input`, `output`,
`cacheRead`, `cacheWrite`, `cost.total`). `usage_facts` turns parsed records into `UsageFact`s; the
catalog indexer stores them, and `scan_usage` (the file-scan reference of `sessdex usage --catalog off`)
reads them from the files. Both then share the rules below, so the two paths agree by construction:

- a record is a fact when it is a `message` entry whose message is an assistant's with a `usage`
  object, in a file with a valid header; figures that are not finite numbers count as zero (as in
  `SessionSummary`); the provider and model default to "unknown";
- a fact's time is its entry's ISO `timestamp`, else the message's epoch-ms `timestamp`; a message
  with neither is left out of the reports (the agent always writes one);
- days are the UTC day and the local day of that time (the local zone of the process computing them);
  weeks start on Monday (local); months are the local day's `YYYY-MM`;
- an entry a fork or branched session copied from its parent (the same entry id and timestamp as an
  entry of a session its header's `parentSession` names, by session id or by file path) is counted
  once, in the parent.
"""

from __future__ import annotations

import math
import os
import time
from collections.abc import Iterable, Iterator, Sequence
from datetime import UTC, date, datetime, timedelta
from typing import Any, NamedTuple

from sessdex.core.text import without_lone_surrogates
from sessdex.core.usage_terms import PERIOD_KINDS, DateRange
from sessdex.core.usage_terms import ReportKind as ReportKind
from sessdex.core.values import Value

FIRST_MESSAGE_CHARS = 200  # the session report shows the start of a session's first message
UNKNOWN = "unknown"
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_MILLISECOND = timedelta(milliseconds=1)

# Costs are counted in whole nano-dollars, so that a sum is exact and the same in any order (the catalog adds
# and subtracts files' shares as they change; the file scan adds them in the order it finds the files).
NANOS_PER_DOLLAR = 1_000_000_000
# A message's cost beyond this many dollars counts as zero, as a figure that is not a number does: no real
# message costs that much, and 64-bit sums of the nano-dollars stay far from overflowing.
MAX_MESSAGE_COST = 10_000


def _number(value: Any) -> float:
    """A usage figure as a number; anything else (missing, bool, text, NaN, infinite) counts as zero."""
    if type(value) is int:
        return value
    if type(value) is float and math.isfinite(value):
        return value
    return 0


def cost_nanos(value: Any) -> int:
    """A message's `cost.total` in whole nano-dollars (rounded); anything that is not a plausible cost is 0."""
    cost = _number(value)
    if not -MAX_MESSAGE_COST <= cost <= MAX_MESSAGE_COST:
        return 0
    return round(cost * NANOS_PER_DOLLAR)


def dollars(nanos: int) -> float:
    """Nano-dollars as dollars (the nearest float to the exact quotient)."""
    return int(nanos) / NANOS_PER_DOLLAR


def _name(value: Any) -> str:
    return without_lone_surrogates(value) if isinstance(value, str) and value else UNKNOWN


def _text(value: Any) -> str | None:
    return without_lone_surrogates(value) if isinstance(value, str) else None


# One assistant message's usage, with the keys that find it again in a fork's copy: `entry_timestamp` is the
# entry's timestamp as written (the copy key, None when absent), `week_local` the Monday of `day_local`'s week.
# (The call form, with the types themselves: the class form would compile each field's annotation text at every
# start, since this module's annotations are strings, and `usage --line` runs in a shell prompt.)
UsageFact = NamedTuple("UsageFact", [  # noqa: UP014 (the call form: see above)
    ("entry_id", str | None), ("entry_timestamp", str | None), ("ts_ms", int), ("day_utc", str), ("day_local", str),
    ("week_local", str), ("provider", str), ("model", str), ("input_tokens", float), ("output_tokens", float),
    ("cache_read_tokens", float), ("cache_write_tokens", float), ("cost_nanos", int)])


# The columns of a `usage_facts` row, in the order `catalog.index.usage_writer` binds them.
USAGE_FACT_COLUMNS = ("file_id", "pending", "copied", *UsageFact._fields)


def _epoch_ms(entry: dict[str, Any], message: dict[str, Any]) -> int | None:
    """The entry's time in epoch ms: its ISO timestamp, else the message's epoch-ms timestamp."""
    stamp = entry.get("timestamp")
    if isinstance(stamp, str):
        try:
            parsed = datetime.fromisoformat(stamp)
        except ValueError:
            parsed = None
        if parsed is not None:
            if parsed.tzinfo is None:
                parsed = parsed.replace(tzinfo=UTC)
            return (parsed - _EPOCH) // _MILLISECOND  # exact, unlike float seconds
    epoch_ms = message.get("timestamp")
    if (type(epoch_ms) is int or type(epoch_ms) is float) and math.isfinite(epoch_ms) and abs(epoch_ms) < 1e15:
        return math.floor(epoch_ms)
    return None


# Day keys already computed (a corpus has many messages and few days): days since the epoch -> the UTC day,
# and a local (year, month, day) -> (that day, the Monday of its week). Emptied past _REMEMBERED_DAYS entries.
_UTC_DAYS: dict[int, str] = {}
_LOCAL_DAYS: dict[tuple[int, int, int], tuple[str, str]] = {}
_REMEMBERED_DAYS = 50_000
_EPOCH_DATE = date(1970, 1, 1)


def day_keys(ts_ms: int) -> tuple[str, str, str]:
    """(UTC day, local day, Monday of the local week) of an epoch-ms time, as YYYY-MM-DD.

    Raises OverflowError, OSError or ValueError for a time the platform or the calendar (years 1-9999)
    cannot place. The local day is the process's time zone's (read at each call: tests switch it).
    """
    seconds = ts_ms // 1000  # the second a datetime made from ts_ms / 1000 falls in
    local = time.localtime(seconds)
    if local.tm_year == 1 and time.localtime(seconds - 86_400).tm_year < 1:
        raise ValueError("year 0 is out of range")  # datetime.fromtimestamp's probe of the day before fails too
    local_key = (local.tm_year, local.tm_mon, local.tm_mday)
    local_days = _LOCAL_DAYS.get(local_key)
    if local_days is None:
        day = date(*local_key)  # ValueError outside years 1-9999, as datetime.fromtimestamp
        local_days = (day.isoformat(), (day - timedelta(days=day.weekday())).isoformat())
        if len(_LOCAL_DAYS) >= _REMEMBERED_DAYS:
            _LOCAL_DAYS.clear()
        _LOCAL_DAYS[local_key] = local_days
    days = seconds // 86_400
    utc_day = _UTC_DAYS.get(days)
    if utc_day is None:
        utc_day = (_EPOCH_DATE + timedelta(days=days)).isoformat()  # OverflowError outside years 1-9999
        if len(_UTC_DAYS) >= _REMEMBERED_DAYS:
            _UTC_DAYS.clear()
        _UTC_DAYS[days] = utc_day
    return utc_day, local_days[0], local_days[1]


def usage_fact(entry: Any) -> UsageFact | None:
    """The fact of one parsed record, or None when it is not an assistant message with usage and a time."""
    if type(entry) is not dict or entry.get("type") != "message":
        return None
    message = entry.get("message")
    if type(message) is not dict or message.get("role") != "assistant":
        return None
    usage = message.get("usage")
    if type(usage) is not dict:
        return None
    ts_ms = _epoch_ms(entry, message)
    if ts_ms is None:
        return None
    try:
        days = day_keys(ts_ms)
    except (OverflowError, OSError, ValueError):
        return None  # a time the platform cannot place in a calendar
    cost = usage.get("cost")
    return UsageFact(
        _text(entry.get("id")), _text(entry.get("timestamp")), ts_ms, *days,
        _name(message.get("provider")), _name(message.get("model")),
        _number(usage.get("input")), _number(usage.get("output")), _number(usage.get("cacheRead")),
        _number(usage.get("cacheWrite")), cost_nanos(cost.get("total")) if type(cost) is dict else 0)


def usage_facts(values: Iterable[Any]) -> list[UsageFact]:
    """The facts among parsed records (file order); the caller checks that the file's header is valid."""
    facts = []
    for value in values:
        # The cheap tests first: most records are not assistant messages with usage.
        if type(value) is dict and value.get("type") == "message":
            message = value.get("message")
            if type(message) is dict and message.get("role") == "assistant":
                fact = usage_fact(value)
                if fact is not None:
                    facts.append(fact)
    return facts


def copy_key(fact: UsageFact) -> tuple[str, str] | None:
    """What identifies a fact across a fork: (entry id, timestamp as written); None without both."""
    if fact.entry_id is None or fact.entry_timestamp is None:
        return None
    return fact.entry_id, fact.entry_timestamp


# -- reports ----------------------------------------------------------------------------------------------

class UsageTotals(Value):
    """Summed figures of a report row (or of one model inside it)."""

    __slots__ = ("input", "output", "cache_read", "cache_write", "cost_nanos", "messages", "sessions")

    def __init__(self, input: float = 0, output: float = 0, cache_read: float = 0, cache_write: float = 0,
                 cost_nanos: int = 0, messages: int = 0, sessions: int = 0) -> None:
        self.input = input
        self.output = output
        self.cache_read = cache_read
        self.cache_write = cache_write
        self.cost_nanos = cost_nanos
        self.messages = messages
        self.sessions = sessions

    def copy(self) -> UsageTotals:
        """Another UsageTotals with the same figures."""
        return UsageTotals(self.input, self.output, self.cache_read, self.cache_write, self.cost_nanos,
                           self.messages, self.sessions)

    @property
    def cost(self) -> float:
        """The cost in dollars."""
        return dollars(self.cost_nanos)

    @property
    def total_tokens(self) -> float:
        return self.input + self.output + self.cache_read + self.cache_write

    def to_json(self) -> dict[str, Any]:
        """The figures with the JSON names of `sessdex usage --json`."""
        return _figures_json(self, {})


def _figures_json(totals: UsageTotals, into: dict[str, Any]) -> dict[str, Any]:
    """Add `totals`' figures to the JSON object `into` (after its own keys) and return it."""
    return figures_json(into, totals.input, totals.output, totals.cache_read, totals.cache_write, totals.cost_nanos,
                        totals.messages, totals.sessions)


def figures_json(into: dict[str, Any], input_tokens: float, output: float, cache_read: float, cache_write: float,
                 cost_nanos: int, messages: int, sessions: int) -> dict[str, Any]:
    """Add a report row's figures to the JSON object `into` (after its own keys) with the names of `sessdex usage
    --json` and return it: token counts whole numbers as integers, the cost in dollars."""
    into["input"] = _plain(input_tokens)
    into["output"] = _plain(output)
    into["cacheRead"] = _plain(cache_read)
    into["cacheWrite"] = _plain(cache_write)
    into["totalTokens"] = _plain(input_tokens + output + cache_read + cache_write)
    into["cost"] = dollars(cost_nanos)
    into["messages"] = messages
    into["sessions"] = sessions
    return into


def _plain(value: float) -> float | int:
    """Token counts are whole numbers in practice: print them as integers when they are."""
    return int(value) if value.__class__ is float and value.is_integer() else value


class UsageRow(Value):
    """One row of a report: its key (a period, a session, a project or a model), totals and per-model split.

    `models` maps "provider/model" to that model's figures (printed by `model_name`); `session` holds the session
    report's path, cwd and title.
    """

    __slots__ = ("key", "totals", "models", "session")

    def __init__(self, key: str, totals: UsageTotals, models: dict[str, UsageTotals] | None = None,
                 session: dict[str, Any] | None = None) -> None:
        self.key = key
        self.totals = totals
        self.models: dict[str, UsageTotals] = {} if models is None else models
        self.session = session

    def to_json(self, kind: ReportKind, breakdown: bool) -> dict[str, Any]:
        """The row as `sessdex usage --json` prints it."""
        result: dict[str, Any] = {key_name(kind): model_name(self.key) if kind == "model" else self.key}
        if self.session is not None:
            result.update(self.session)
        _figures_json(self.totals, result)
        result["models"] = model_names(self.models)
        if breakdown:
            result["breakdown"] = [_figures_json(figures, {"model": model_name(name)})
                                   for name, figures in sorted(self.models.items(), key=_by_cost)]
        return result


def model_name(key: str) -> str:
    """A model as every report names it, in tables and JSON alike: the agent's model id without its provider
    (`claude-opus-4-1`, not `anthropic/claude-opus-4-1`); `key` is "provider/model" as report rows hold it."""
    return key[key.find("/") + 1:]  # (no "/": find gives -1, the whole key)


def model_names(keys: Iterable[str]) -> list[str]:
    """The names of a row's models (see `model_name`), in the order of their keys."""
    return [model_name(key) for key in sorted(keys)]


def _by_cost(item: tuple[str, UsageTotals]) -> tuple[int, str]:
    return -item[1].cost_nanos, item[0]


def key_name(kind: ReportKind) -> str:
    """The JSON field holding a row's key: `period` for daily/weekly/monthly, else the kind's name."""
    return "period" if kind in PERIOD_KINDS else kind


class UsageReport(Value):
    """A whole report: its rows in display order and the totals over all of them."""

    __slots__ = ("kind", "rows", "totals")

    def __init__(self, kind: ReportKind, rows: list[UsageRow], totals: UsageRow) -> None:
        self.kind: ReportKind = kind
        self.rows = rows
        self.totals = totals

    def to_json(self, breakdown: bool) -> dict[str, Any]:
        """`{"report", "rows": [...], "totals": {...}}` as `sessdex usage --json` prints it."""
        totals = self.totals.to_json(self.kind, breakdown)
        totals.pop(key_name(self.kind))
        return {"report": self.kind, "rows": [row.to_json(self.kind, breakdown) for row in self.rows],
                "totals": totals}


def order_rows(kind: ReportKind, rows: list[UsageRow]) -> list[UsageRow]:
    """Periods oldest first; sessions, projects and models most expensive first (then by key)."""
    if kind in PERIOD_KINDS:
        return sorted(rows, key=lambda row: row.key)
    return sorted(rows, key=lambda row: (-row.totals.cost_nanos, row.key))


# -- the file-scan reference ------------------------------------------------------------------------------

class FileUsage(Value):
    """One session file's facts, and what the reports and the fork rule need to know about the file; `copied`
    says per fact whether it was copied from a parent session (see mark_copies); `machine` names the machine
    whose file it is when that is not this one (its facts then come from a shared catalog)."""

    __slots__ = ("path", "directory", "session_id", "cwd", "title", "first_message", "parent_session", "facts",
                 "copied", "machine")

    def __init__(self, path: str, directory: str, session_id: str, cwd: str, title: str | None,
                 first_message: str | None, parent_session: str | None, facts: list[UsageFact],
                 copied: list[bool] | None = None, machine: str | None = None) -> None:
        self.path = path
        self.directory = directory
        self.session_id = session_id
        self.cwd = cwd
        self.title = title
        self.first_message = first_message
        self.parent_session = parent_session
        self.facts = facts
        self.copied: list[bool] = [] if copied is None else copied
        self.machine = machine

    @property
    def identity(self) -> str:
        """What tells this file from every other in a report: its path, and its machine when not this one (two
        machines may hold files at the same path)."""
        return self.path if self.machine is None else f"{self.machine}\0{self.path}"


def read_file_usage(path: str) -> FileUsage | None:
    """The facts of one session file read whole (lenient parse), or None without a valid header."""
    from sessdex.core.jsonl import parse_jsonl
    from sessdex.core.regular_files import read_regular_file
    from sessdex.core.summary import SessionSummary

    try:
        data = read_regular_file(path)  # a regular file only, opened without blocking (checked after opening)
    except OSError:
        return None
    values = parse_jsonl(data).values
    summary = SessionSummary()
    summary.feed_all(values)
    if not summary.header_valid or summary.session_id is None or summary.message_count == 0:
        return None
    key = os.path.abspath(path)
    return FileUsage(key, os.path.dirname(key), without_lone_surrogates(summary.session_id),
                     without_lone_surrogates(summary.cwd or ""), _text(summary.title), _text(summary.first_message),
                     summary.parent_session, usage_facts(values))


def mark_copies(files: Sequence[FileUsage]) -> None:
    """Set each file's `copied` flags: a fact is copied when a parent file (by session id or path) holds its key."""
    by_reference: dict[str, list[FileUsage]] = {}
    for usage in files:
        by_reference.setdefault(usage.session_id, []).append(usage)
        by_reference.setdefault(usage.path, []).append(usage)
    for usage in files:
        parents = [parent for parent in by_reference.get(usage.parent_session or "", ()) if parent is not usage]
        keys = {copy_key(fact) for parent in parents for fact in parent.facts} - {None}
        usage.copied = [copy_key(fact) in keys for fact in usage.facts]


def counted_facts(usage: FileUsage) -> Iterator[UsageFact]:
    """The facts of a file that it counts itself (not copies of its parent's)."""
    for fact, copied in zip(usage.facts, usage.copied or [False] * len(usage.facts)):
        if not copied:
            yield fact


def session_fields(path: str, cwd: str | None, title: str | None, first_message: str | None) -> dict[str, Any]:
    """What the session report says of a session besides its id: path, cwd, title, start of the first message."""
    return {"path": path, "cwd": cwd or "", "title": title,
            "firstMessage": first_message[:FIRST_MESSAGE_CHARS] if first_message is not None else None}


def row_key(kind: ReportKind, usage: FileUsage, fact: UsageFact) -> str:
    """The report row a fact belongs to."""
    if kind == "daily":
        return fact.day_local
    if kind == "weekly":
        return fact.week_local
    if kind == "monthly":
        return fact.day_local[:7]
    if kind == "session":
        return usage.identity
    if kind == "project":
        return usage.cwd
    return f"{fact.provider}/{fact.model}"


def build_report(kind: ReportKind, files: Iterable[FileUsage], days: DateRange | None = None) -> UsageReport:
    """Sum the counted facts of `files` into a report's rows (the file-scan reference computation)."""
    rows: dict[str, UsageRow] = {}
    row_sessions: dict[str, set[str]] = {}
    model_sessions: dict[tuple[str, str], set[str]] = {}
    total = UsageRow("", UsageTotals())
    total_sessions: set[str] = set()
    total_model_sessions: dict[str, set[str]] = {}
    for usage in files:
        for fact in counted_facts(usage):
            if days is not None and not days.contains(fact.day_local):
                continue
            key = row_key(kind, usage, fact)
            model = f"{fact.provider}/{fact.model}"
            row = rows.get(key)
            if row is None:
                row = rows[key] = UsageRow(key, UsageTotals())
                if kind == "session":
                    row.key = usage.session_id
                    row.session = session_fields(usage.path, usage.cwd, usage.title, usage.first_message)
                    if usage.machine is not None:
                        row.session["machine"] = usage.machine  # as a catalog report's rows of other machines say
            for target, figures_owner in ((row, key), (total, None)):
                add_fact(target.totals, fact)
                add_fact(target.models.setdefault(model, UsageTotals()), fact)
                if figures_owner is None:
                    total_sessions.add(usage.identity)
                    total_model_sessions.setdefault(model, set()).add(usage.identity)
                else:
                    row_sessions.setdefault(key, set()).add(usage.identity)
                    model_sessions.setdefault((key, model), set()).add(usage.identity)
    for key, row in rows.items():
        row.totals.sessions = len(row_sessions[key])
        for model, figures in row.models.items():
            figures.sessions = len(model_sessions[(key, model)])
    total.totals.sessions = len(total_sessions)
    for model, figures in total.models.items():
        figures.sessions = len(total_model_sessions[model])
    return UsageReport(kind, order_rows(kind, list(rows.values())), total)


def add_fact(totals: UsageTotals, fact: UsageFact) -> None:
    """Count one assistant message's usage fact into `totals`."""
    totals.input += fact.input_tokens
    totals.output += fact.output_tokens
    totals.cache_read += fact.cache_read_tokens
    totals.cache_write += fact.cache_write_tokens
    totals.cost_nanos += fact.cost_nanos
    totals.messages += 1

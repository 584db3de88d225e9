"""`sessdex usage --json` from the report rows' texts the catalog stores ready (`usage_totals.json`).

A report of one machine over one scope (one project folder, or every project) and whole days, without
--breakdown, is its rows' stored texts in the order SQL reads them, joined (`sessdex.core.usage_json`):
no figure is summed or formatted, whatever the number of rows (10,000 in a session report). Any other report
is summed by `sessdex.catalog.queries.usage` and written by the same module: both print the same text. This
module imports neither that nor `sessdex.core.usage`, so that the common report costs its command little more
than its queries.

The report of every project is also kept whole, as a file the watcher renders from these texts after the rows
changed (`sessdex.catalog.store.report_files`): while it is current, printing it reads no row at all.
"""

from __future__ import annotations

import gc

from sessdex.catalog.store.report_files import open_ready_report, usage_report_name
from sessdex.core.usage_terms import PERIOD_KINDS

TYPE_CHECKING = False  # typing stays off the hot commands' imports (issue 12)
if TYPE_CHECKING:
    from collections.abc import Sequence
    from typing import Any

    from sessdex.catalog.store.report_files import ReadyReport
    from sessdex.core.usage_terms import DateRange, ReportKind


def answered_by_stored_rows(db: Any, parts: Sequence[dict[str, str]], days: DateRange, breakdown: bool) -> bool:
    """Whether a report's stored rows (texts, cells) can answer it: one machine's (this one's), whole days,
    without --breakdown (the arguments as for `sessdex.catalog.queries.usage.catalog_usage_report`)."""
    return not breakdown and len(parts) == 1 and parts[0]["machine"] == db.machine and days.since is None \
        and days.until is None


def stored_usage_json(db: Any, kind: ReportKind, scope_name: str, parts: Sequence[dict[str, str]],
                      days: DateRange, breakdown: bool) -> bytes | ReadyReport | None:
    """`sessdex usage KIND --json`'s text, UTF-8 encoded, joined from the stored row texts (the arguments as for
    `sessdex.catalog.queries.usage.catalog_usage_report`), or None when they cannot answer it (then the report
    is summed: `summed_usage_json`). The report of every project comes as its ready file when that is current
    (its text ends with the newline the others are printed with).
    """
    if not answered_by_stored_rows(db, parts, days, breakdown):
        return None
    if scope_name == "under_root":
        ready = open_ready_report(db, usage_report_name(kind), db.machine, parts[0]["root_lo"])
        if ready is not None:
            return ready
    return joined_usage_json(db, kind, scope_name, parts[0])


def joined_usage_json(db: Any, kind: ReportKind, scope_name: str, params: dict[str, str]) -> bytes | None:
    """The report joined from stored row texts, or None when they cannot answer it (`stored_report_rows`; and no
    usage at all, or a row without its text)."""
    from sessdex.core.usage_json import report_bytes

    found = stored_report_rows(db, "json", kind, scope_name, params)
    if found is None or found[0] is None:
        return None
    total, rows = found
    texts = [text for text, in rows]
    if None in texts:
        return None
    return report_bytes(kind, texts, total)


def stored_report_rows(db: Any, form: str, kind: ReportKind, scope_name: str,
                       params: dict[str, str]) -> tuple[Any, list[tuple[Any, ...]]] | None:
    """The stored `form` ("json": texts, or "cells", with each row's label and cost) of a report's total row and
    of its rows in the report's order; (None, []) when the scope holds no usage, and None when they cannot
    answer it: a project whose usage is in several of its folders (their rows add up), usage outside the
    sessions root (then "every project" is not the machine-wide rows), or a total without its text."""
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
        totals += [(scope, value) for value, in db.fetch_tuples(f"usage_{form}_total", {"scope": scope,
                                                                                        "machine": machine})]
    if not totals:
        return None, []
    if len(totals) != 1 or totals[0][1] is None:
        return None
    scope, total = totals[0]
    if kind == "session":
        statement, query = ((f"usage_{form}_sessions_under_root", root) if scope_name == "under_root"
                            else (f"usage_{form}_sessions_in_scope", {"scope": scope, "machine": machine}))
    else:
        statement = f"usage_{form}_rows" if kind in PERIOD_KINDS else f"usage_{form}_rows_by_cost"
        query = {"kind": kind, "scope": scope, "machine": machine}
    collecting = gc.isenabled()
    gc.disable()  # 10,000 row tuples would start the cycle collector over every object several times
    try:
        return total, db.fetch_tuples(statement, query)
    finally:
        if collecting:
            gc.enable()


def usage_outside_root(db: Any, params: dict[str, Any]) -> bool:
    """True when the catalog holds usage of a file outside the sessions root (indexed for a --session-dir)."""
    return bool(db.fetch_tuples("usage_outside_root", {**params, "limit": 1, "offset": 0}))

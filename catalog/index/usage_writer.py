"""The indexer's writes of usage facts (`sessdex.core.usage`): fact rows, fork copies, and the per-day rollup.

A file's facts are replaced or appended with its other rows. Whether a fact was copied from a parent
session depends on two files, so after any change to a file both it and the files naming it as their
`parentSession` (its forks) get their `copied` flags and their rollup rows recomputed
(`refresh_usage_around`). The bulk run into an empty catalog writes fact rows only and calls
`refresh_all_usage` once at its end. Each refresh also writes the file's row of the session report
(`usage_sessions`: its names, figures and models), so that report reads one narrow row per session.

Every write here is about the catalog's own machine (`db.machine`): a fork's parent is looked for on the
fork's machine, the rollup and usage_totals rows carry the machine, and a rebuild or a re-index of one
machine never reads or writes another machine's usage rows.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from sessdex.core.usage import USAGE_FACT_COLUMNS, UsageFact

if TYPE_CHECKING:
    from sessdex.catalog.store.db import CatalogDatabase

# The largest integer a usage figure is stored as: JavaScript's Number.MAX_SAFE_INTEGER (the agent cannot
# write a larger one exactly). A file claiming more (10**400 tokens) must not make SQLite's INTEGER, or the
# sums of the rollup, overflow: one bad file never fails the index of the others.
MAX_USAGE_INTEGER = 2**53 - 1


def _storable_figure(value: Any) -> Any:
    if type(value) is int and not -MAX_USAGE_INTEGER <= value <= MAX_USAGE_INTEGER:
        return MAX_USAGE_INTEGER if value > 0 else -MAX_USAGE_INTEGER
    return value


def fact_values(file_id: int, fact: UsageFact, pending: bool) -> tuple[Any, ...]:
    """A fact as a row's values, in `statements.USAGE_FACT_COLUMNS` order (copied is decided later)."""
    # The integer fields are checked first: almost every fact is within range, and is then taken as it is.
    for value in (fact.ts_ms, fact.input_tokens, fact.output_tokens, fact.cache_read_tokens, fact.cache_write_tokens,
                  fact.cost_nanos):
        if type(value) is int and not -MAX_USAGE_INTEGER <= value <= MAX_USAGE_INTEGER:
            return (file_id, pending, False, *map(_storable_figure, fact))
    return (file_id, pending, False, *fact)


def insert_usage_facts(db: CatalogDatabase, file_id: int, facts: Sequence[UsageFact], pending: bool) -> None:
    """Add a file's facts (inside the caller's write transaction)."""
    if facts:
        db.executemany("insert_usage_fact", [dict(zip(USAGE_FACT_COLUMNS, fact_values(file_id, fact, pending)))
                                             for fact in facts])


def delete_usage_facts(db: CatalogDatabase, file_id: int, *, pending_only: bool = False) -> None:
    """Drop a file's facts (only those of its pending tail with `pending_only`)."""
    db.execute("delete_pending_usage_facts" if pending_only else "delete_usage_facts_of_file", {"file_id": file_id})


def _mark_copies(db: CatalogDatabase, file_id: int, parent: str | None) -> None:
    db.execute("reset_usage_copies", {"owner_id": file_id})
    if parent is None:
        return
    for (parent_id,) in db.fetch_tuples("usage_parent_ids", {"parent": parent, "file_id": file_id}):
        db.execute("mark_usage_copies", {"owner_id": file_id, "parent_id": parent_id})


_TOTAL_FIGURES = ("input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens", "cost_nanos",
                  "messages")
_KEY_NAMES = ("t_machine", "t_kind", "t_scope", "t_key", "t_model")
TotalKey = tuple[str, str, str, str, str]  # (machine, kind, scope, key, model) of a usage_totals row


def _contributions(file_id: int, rollup: Sequence[Sequence[Any]]) -> dict[TotalKey, list[Any]]:
    """What a file's rollup rows add to usage_totals: (machine, kind, scope, key, model) -> figures + [1 session].

    Every report row the file has facts under counts it once in `sessions`, whatever its number of rows there.
    """
    sums: dict[TotalKey, list[Any]] = {}
    for machine, directory, cwd, day, week, provider, model, *figures in rollup:
        name = f"{provider}/{model}"
        keys = [("daily", day), ("weekly", week), ("monthly", day[:7]), ("project", cwd), ("total", "")]
        for scope in (directory, ""):
            targets = [(machine, kind, scope, key, split) for kind, key in keys for split in ("", name)]
            targets.append((machine, "model", scope, name, ""))
            if scope:
                targets += [(machine, "session", scope, str(file_id), ""),
                            (machine, "session", scope, str(file_id), name)]
            for target in targets:
                total = sums.setdefault(target, [0] * len(_TOTAL_FIGURES) + [1])
                for index, value in enumerate(figures):
                    total[index] += value
    return sums


# Past this magnitude sums may overflow to infinity, and infinity minus infinity has no value: such figures
# (only a damaged or hostile file holds them) make usage_totals be summed again from the whole rollup.
HUGE_FIGURE = 1e300


def _summable(rollup: Sequence[Sequence[Any]]) -> bool:
    return all(abs(value) < HUGE_FIGURE for row in rollup for value in row[7:])


def rebuild_usage_totals(db: CatalogDatabase) -> None:
    """Sum this machine's usage_totals again from its whole rollup."""
    from sessdex.catalog.store.compiled_sql import SQL

    db.execute("delete_machine_usage_totals")
    for name in SQL:
        if name.startswith("rebuild_usage_totals_"):
            db.execute(name)


def _apply_totals(db: CatalogDatabase, file_id: int, rollup: Sequence[Sequence[Any]], sign: int) -> None:
    """Add (`sign` 1) or subtract (-1) a file's rollup rows to or from usage_totals."""
    rows = []
    for total_key, values in _contributions(file_id, rollup).items():
        row: dict[str, Any] = dict(zip(_KEY_NAMES, total_key))
        kind = total_key[1]
        row.update({f"t_{name}": sign * value for name, value in zip((*_TOTAL_FIGURES, "sessions"), values)})
        row["t_file_id"] = file_id if kind == "session" else None
        rows.append(row)
    if not rows:
        return
    db.executemany("usage_totals_add", rows)
    if sign > 0:
        db.executemany("usage_totals_insert_missing", rows)
    else:
        db.executemany("usage_totals_prune", rows)


def forget_file_usage(db: CatalogDatabase, file_id: int) -> bool:
    """Take a file's rollup out of usage_totals and drop it (before the file's row or facts go).

    False when its figures were too large to subtract: usage_totals was then summed again without them.
    """
    old = db.fetch_tuples("usage_rollup_of_file", {"file_id": file_id})
    db.execute("delete_usage_rollup_of_file", {"file_id": file_id})
    db.execute("delete_usage_session_of_file", {"file_id": file_id})
    if _summable(old):
        _apply_totals(db, file_id, old, -1)
        return True
    rebuild_usage_totals(db)
    return False


def refresh_file_usage(db: CatalogDatabase, file_id: int) -> None:
    """Recompute one file's `copied` flags (against its parent, as the catalog holds it now), its rollup and its
    share of usage_totals."""
    _mark_copies(db, file_id, db.scalar("usage_parent_of_file", {"file_id": file_id}))
    forgotten = forget_file_usage(db, file_id)
    db.execute("insert_usage_rollup_of_file", {"file_id": file_id})
    new = db.fetch_tuples("usage_rollup_of_file", {"file_id": file_id})
    db.execute("insert_usage_session_of_file", {"file_id": file_id})
    if forgotten and _summable(new):
        _apply_totals(db, file_id, new, 1)
    else:
        rebuild_usage_totals(db)


def refresh_usage_around(db: CatalogDatabase, file_id: int | None, session_id: str | None, path: str) -> None:
    """After a file changed (or, `file_id` None, vanished): refresh it and every fork naming it by id or path."""
    if file_id is not None:
        refresh_file_usage(db, file_id)
    for (child_id,) in db.fetch_tuples("usage_child_ids", {"session_id": session_id, "path": path}):
        if child_id != file_id:
            refresh_file_usage(db, child_id)


def refresh_all_usage(db: CatalogDatabase) -> None:
    """Mark every fork's copies, rebuild every rollup row and usage_totals of this machine (after a bulk run
    into an empty catalog)."""
    for file_id, parent in db.fetch_tuples("usage_files_with_parent"):
        _mark_copies(db, file_id, parent)
    db.execute("delete_machine_usage_rollups")
    db.execute("insert_machine_usage_rollups")
    rebuild_usage_totals(db)
    db.execute("delete_machine_usage_sessions")
    db.execute("insert_machine_usage_sessions")


def forget_machine_usage(db: CatalogDatabase) -> None:
    """Drop this machine's usage_totals rows (with its file rows, by `index --rebuild` on a shared catalog: the
    file rows' deletion takes their facts and rollups along, never the pre-summed rows)."""
    db.execute("delete_machine_usage_totals")

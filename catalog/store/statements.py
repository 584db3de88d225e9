"""Every dialect-neutral statement the catalog runs, built with SQLAlchemy Core on `sessdex.catalog.store.schema`.

This module is the single source of truth for the catalog's SQL. The SQLite fast path does not
import SQLAlchemy: it runs the same statements compiled once into `catalog/compiled_sql.py`
(regenerate with `python -m sessdex.catalog.store.statements`; a test fails when the two disagree). Parameters are
named; a project scope is at most three directories, passed as `dir0..dir2` (repeat one to pad).

Run as a script to rewrite `catalog/compiled_sql.py`.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from sqlalchemy import (
    Integer,
    Select,
    Text,
    bindparam,
    case,
    cast,
    delete,
    distinct,
    exists,
    false,
    func,
    insert,
    literal_column,
    select,
    true,
    union,
    update,
)
from sqlalchemy.dialects import sqlite
from sqlalchemy.ext.compiler import compiles
from sqlalchemy.sql import ClauseElement, ColumnElement
from sqlalchemy.sql.functions import FunctionElement

from sessdex.catalog.store.schema import (
    catalog_meta,
    machines,
    messages,
    session_files,
    session_marks,
    usage_facts,
    usage_rollup,
    usage_sessions,
    usage_totals,
)
from sessdex.core.usage import FIRST_MESSAGE_CHARS, USAGE_FACT_COLUMNS

SCOPE_DIRECTORY_PARAMS = ("dir0", "dir1", "dir2")

# Columns written by the indexer (everything but the primary key).
FILE_COLUMNS = tuple(column.name for column in session_files.columns if column.name != "id")
# What a listing needs to build SessionInfo / RecentSessionInfo without reading files.
INFO_COLUMNS = ("id", "machine", "path", "mtime_ns", "session_id", "cwd", "title", "message_count", "first_message",
                "created", "parent_session", "input_tokens", "output_tokens", "cache_read_tokens",
                "cache_write_tokens", "cost_total")
STAT_COLUMNS = ("path", "device", "inode", "size", "mtime_ns")
# A marks row, in the order of core.marks.MarkFact's fields.
MARK_COLUMNS = ("machine", "session_id", "kind", "key", "active", "note", "time_ms", "seq")

_f = session_files.c
_m = machines.c


def _mine():
    # Every read and write of session_files is about one machine's rows (see sessdex.catalog.store.machine).
    return _f.machine == bindparam("machine")


def _in_directories():
    return _f.directory.in_([bindparam(name) for name in SCOPE_DIRECTORY_PARAMS])


def _in_directory():
    return _f.directory == bindparam("directory")


def _under_root():
    # Every path below the sessions root sorts between "<root>/" and "<root>/\U0010ffff".
    return (_f.path > bindparam("root_lo")) & (_f.path < bindparam("root_hi"))


def _id_prefix():
    return (_f.session_id >= bindparam("id_lo")) & (_f.session_id < bindparam("id_hi"))


def _under_root_with_id_prefix():
    # An id prefix is a few rows of the (machine, session_id) index, the root every row of this machine: the path
    # is compared as `path || ''`, which no index holds, so that SQLite reads those few rows instead of walking the
    # path index over the whole root (10,000 sessions: a third of `resume PREFIX`'s own work).
    unindexed_path = _f.path.concat(literal_column("''"))
    return (unindexed_path > bindparam("root_lo")) & (unindexed_path < bindparam("root_hi")) & _id_prefix()


def _listable():
    return (_f.header_valid == true()) & (_f.message_count >= bindparam("min_messages"))


def _info_select() -> Select:
    return select(*(_f[name] for name in INFO_COLUMNS))


def _recent_select() -> Select:
    return (select(_f.path, _f.mtime_ns, _f.prefix_state)
            .where(_mine() & _f.prefix_state.is_not(None))
            .order_by(_f.mtime_ns.desc(), _f.path)
            .limit(bindparam("limit")).offset(bindparam("offset")))


USAGE_FIGURES = ("input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens", "cost_nanos")
USAGE_SCOPES = ("in_directories", "under_root")
def _first_message_start() -> ColumnElement[str]:
    """The start of a session's first message, as the session report shows it (not the whole text)."""
    return func.substr(_f.first_message, literal_column("1"), literal_column(str(FIRST_MESSAGE_CHARS)))


# Report kind -> the columns its rows are grouped by (session_files `f`, usage_rollup `r`).
_r = usage_rollup.c
USAGE_REPORT_KEYS = {
    "daily": (_r.day_local,),
    "weekly": (_r.week_local,),
    "monthly": (func.substr(_r.day_local, literal_column("1"), literal_column("7")).label("month"),),
    "session": (_f.id, _f.session_id, _f.path, _f.cwd, _f.title, _first_message_start()),
    "project": (_r.cwd,),
    "model": (_r.provider, _r.model),
    "total": (),
}


def _usage_report(kind: str, scope: str, by_model: bool) -> Select:
    """A report's rows (or, `by_model`, its rows split per model): key columns, then the summed figures,
    message count and distinct sessions, over one machine's rollup rows in scope and in the days."""
    keys = USAGE_REPORT_KEYS[kind]
    if by_model and kind != "model":
        keys = (*keys, _r.provider, _r.model)
    figures = [func.sum(_r[name]).label(name) for name in USAGE_FIGURES]
    where: ColumnElement[bool]
    if scope == "in_directories":
        where = _r.directory.in_([bindparam(name) for name in SCOPE_DIRECTORY_PARAMS])
    else:  # the root itself, or any folder below it
        where = (_r.directory == bindparam("root_dir")) | (
            (_r.directory > bindparam("root_lo")) & (_r.directory < bindparam("root_hi")))
    where = ((_r.machine == bindparam("machine")) & where & (_r.day_local >= bindparam("since"))
             & (_r.day_local <= bindparam("until")))
    statement = select(*keys, *figures, func.sum(_r.messages).label("messages"),
                       func.count(distinct(_r.file_id)).label("sessions"))
    # Only the session report needs the file's own columns; the others read the narrow rollup rows alone.
    source = usage_rollup.join(session_files, _f.id == _r.file_id) if kind == "session" else usage_rollup
    statement = statement.select_from(source).where(where)
    return statement.group_by(*keys) if keys else statement


TOTAL_FIGURES = (*USAGE_FIGURES, "messages", "sessions")
TOTAL_KEYS = ("kind", "scope", "key", "model")
_t = usage_totals.c
_EMPTY: ColumnElement[str] = literal_column("''")


def _model_name(columns=_r):
    return columns.provider + literal_column("'/'") + columns.model


# Report kind -> the usage_totals key of a rollup row.
_TOTAL_KEY_OF_ROLLUP = {
    "daily": _r.day_local,
    "weekly": _r.week_local,
    "monthly": func.substr(_r.day_local, literal_column("1"), literal_column("7")),
    "project": _r.cwd,
    "model": _model_name(),
    "session": cast(_r.file_id, Text),
    "total": None,
}


def _rebuild_totals(kind: str, per_folder: bool, per_model: bool) -> ClauseElement:
    """INSERT one machine's usage_totals rows of one kind (all its files or per folder, over all models or per
    model) summed from its whole rollup (after a bulk run)."""
    key = _TOTAL_KEY_OF_ROLLUP[kind]
    scope = _r.directory if per_folder else _EMPTY
    model = _model_name() if per_model else _EMPTY
    columns = [_r.machine, literal_column(f"'{kind}'"), scope, key if key is not None else _EMPTY, model,
               _r.file_id if kind == "session" else literal_column("NULL"),
               *(func.sum(_r[name]) for name in USAGE_FIGURES), func.sum(_r.messages), func.count(distinct(_r.file_id))]
    group = [column for column, used in ((_r.machine, True), (_r.directory, per_folder), (key, key is not None),
                                         (_r.provider, per_model), (_r.model, per_model)) if used]
    if kind == "session":
        group.append(_r.file_id)
    # Grouped by machine at least: an aggregate over no rows gives no row.
    rows = select(*columns).where(_r.machine == bindparam("machine")).group_by(*group)
    return insert(usage_totals).from_select(["machine", *TOTAL_KEYS, "file_id", *TOTAL_FIGURES], rows)


def _totals_statements() -> dict[str, ClauseElement]:
    """usage_totals: the indexer's add / insert / prune of one key, the rebuild, and the reports' reads (each
    about one machine's rows)."""
    # (`t_machine`: an UPDATE may not name a parameter after a column of its table.)
    match = ((_t.machine == bindparam("t_machine", type_=Text)) & (_t.kind == bindparam("t_kind", type_=Text))
             & (_t.scope == bindparam("t_scope", type_=Text)) & (_t.key == bindparam("t_key", type_=Text))
             & (_t.model == bindparam("t_model", type_=Text)))
    values: list[Any] = [bindparam(f"t_{name}", type_=Text) for name in ("machine", *TOTAL_KEYS)]
    values += [bindparam("t_file_id", type_=Integer()), *(bindparam(f"t_{name}") for name in TOTAL_FIGURES)]
    figures = [_t[name] for name in TOTAL_FIGURES]
    mine = _t.machine == bindparam("machine")
    scopes = mine & _t.scope.in_([bindparam(name) for name in SCOPE_DIRECTORY_PARAMS])
    under_root = mine & ((_t.scope == bindparam("root_dir"))
                         | ((_t.scope > bindparam("root_lo")) & (_t.scope < bindparam("root_hi"))))
    # The session report: one row per session with its names (joined), then its per-model rows (not joined).
    sessions = (select(_t.key, _t.model, *figures, _f.session_id, _f.path, _f.cwd, _f.title, _first_message_start())
                .select_from(usage_totals.join(session_files, _f.id == _t.file_id))
                .where(_t.model == _EMPTY))
    session_models = select(_t.key, _t.model, *figures).where(_t.model != _EMPTY)
    statements: dict[str, ClauseElement] = {
        "usage_rollup_of_file": select(_r.machine, _r.directory, _r.cwd, _r.day_local, _r.week_local, _r.provider, _r.model,
                                       *(_r[name] for name in USAGE_FIGURES), _r.messages)
        .where(_r.file_id == bindparam("file_id")),
        "usage_totals_add": update(usage_totals).where(match)
        .values({name: _t[name] + bindparam(f"t_{name}") for name in TOTAL_FIGURES}),
        "usage_totals_insert_missing": insert(usage_totals).from_select(
            ["machine", *TOTAL_KEYS, "file_id", *TOTAL_FIGURES],
            select(*values).where(~exists(select(_t.id).where(match)))),
        # A usage row of a file outside the machine's sessions root (a --session-dir listing indexed it): then
        # the machine-wide totals are not "every project" and the reports of every project sum the rollup.
        # Three ranges, each with the machine, so that each is one search of the rollup's index.
        "usage_outside_root": select(_r.id).where(
            ((_r.machine == bindparam("machine")) & (_r.directory < bindparam("root_dir")))
            | ((_r.machine == bindparam("machine")) & (_r.directory > bindparam("root_dir"))
               & (_r.directory <= bindparam("root_lo")))
            | ((_r.machine == bindparam("machine")) & (_r.directory >= bindparam("root_hi"))))
        .limit(bindparam("limit")).offset(bindparam("offset")),
        "usage_totals_prune": delete(usage_totals).where(match & (_t.sessions <= literal_column("0"))),
        "delete_machine_usage_totals": delete(usage_totals).where(_t.machine == bindparam("machine")),
        "usage_totals_in_scopes": select(_t.kind, _t.key, _t.model, *figures).where(
            _t.kind.in_([bindparam("kind"), literal_column("'total'")]) & scopes),
        "usage_totals_sessions_in_scopes": sessions.where((_t.kind == literal_column("'session'")) & scopes),
        "usage_totals_sessions_under_root": sessions.where((_t.kind == literal_column("'session'")) & under_root),
        "usage_totals_session_models_in_scopes": session_models.where((_t.kind == literal_column("'session'"))
                                                                      & scopes),
        "usage_totals_session_models_under_root": session_models.where((_t.kind == literal_column("'session'"))
                                                                       & under_root),
    }
    for kind in _TOTAL_KEY_OF_ROLLUP:
        for per_folder in (False, True):
            if kind == "session" and not per_folder:
                continue
            for per_model in (False, True):
                if kind == "model" and per_model:
                    continue
                name = f"rebuild_usage_totals_{kind}{'_per_folder' if per_folder else ''}{'_per_model' if per_model else ''}"
                statements[name] = _rebuild_totals(kind, per_folder, per_model)
    return statements


_s = usage_sessions.c
# What the session report shows of a session: its names, its machine, its figures and its models' names.
SESSION_ROW_COLUMNS = ("session_id", "path", "cwd", "title", "first_message", "machine", *USAGE_FIGURES, "messages",
                       "models")


class _JsonArrayOrdered(FunctionElement[str]):
    """The JSON array (text) of `value` over a group's rows in code point order of `key` (as Python sorts strings).

    SQLite has no ORDER BY inside an aggregate before 3.44: its rows must come from a subquery ordered by `key`,
    whose order its json_group_array keeps; PostgreSQL orders the aggregate itself, by byte order ("C")."""

    type = Text()
    inherit_cache = True
    name = "json_array_ordered"


@compiles(_JsonArrayOrdered, "sqlite")
def _json_array_ordered_sqlite(element: _JsonArrayOrdered, compiler: Any, **kw: Any) -> str:
    value, _key = element.clauses
    return f"json_group_array({compiler.process(value, **kw)})"


@compiles(_JsonArrayOrdered, "postgresql")
def _json_array_ordered_postgresql(element: _JsonArrayOrdered, compiler: Any, **kw: Any) -> str:
    value, key = element.clauses
    return f'CAST(json_agg({compiler.process(value, **kw)} ORDER BY {compiler.process(key, **kw)} COLLATE "C") AS TEXT)'


class _SlashPosition(FunctionElement[int]):
    """Where the first "/" is in a text (from 1; 0 when it has none): SQLite's instr, PostgreSQL's strpos."""

    type = Integer()
    inherit_cache = True
    name = "slash_position"


@compiles(_SlashPosition, "sqlite")
def _slash_position_sqlite(element: _SlashPosition, compiler: Any, **kw: Any) -> str:
    return f"instr({compiler.process(element.clauses, **kw)}, '/')"


@compiles(_SlashPosition, "postgresql")
def _slash_position_postgresql(element: _SlashPosition, compiler: Any, **kw: Any) -> str:
    return f"strpos({compiler.process(element.clauses, **kw)}, '/')"


def _session_rows_insert(one_file: bool) -> ClauseElement:
    """INSERT the usage_sessions rows of one machine's files (`one_file`: of the file `file_id` only), summed from
    their rollup rows: the file's names, its figures, and its models' names as `core.usage.model_names` lists them
    (sorted by "provider/model", without the provider), as a JSON array."""
    figures = select(_r.file_id, *(func.sum(_r[name]).label(name) for name in USAGE_FIGURES),
                     func.sum(_r.messages).label("messages"))
    figures = figures.where(_r.file_id == bindparam("file_id") if one_file else _r.machine == bindparam("machine"))
    sums = figures.group_by(_r.file_id).subquery("figures")
    models = usage_rollup.alias("model_rows")
    key = (models.c.provider + literal_column("'/'") + models.c.model).label("key")
    names = (select(key, func.substr(key, _SlashPosition(key) + literal_column("1")).label("name"))
             .distinct().where(models.c.file_id == _f.id).order_by(key).correlate(session_files).subquery("names"))
    model_list = select(_JsonArrayOrdered(names.c.name, names.c.key)).scalar_subquery()
    rows = (select(_f.id, _f.machine, _f.directory, _f.session_id, _f.path, func.coalesce(_f.cwd, literal_column("''")),
                   _f.title, _first_message_start(), *(sums.c[name] for name in USAGE_FIGURES), sums.c.messages,
                   model_list)
            .select_from(session_files.join(sums, sums.c.file_id == _f.id)))
    return insert(usage_sessions).from_select(
        ["file_id", "machine", "directory", "session_id", "path", "cwd", "title", "first_message", *USAGE_FIGURES,
         "messages", "models"], rows)


def _session_rows_statements() -> dict[str, ClauseElement]:
    """usage_sessions: the indexer's writes of one file's row and of every row of a machine (set-based, from the
    rollup), the deletes, and the session report's reads."""
    # (The machine is NULL for the rows of `this_machine`, which say none: no string per row to make and drop.)
    shown = select(*(_s[name] if name != "machine" else case((_s.machine == bindparam("this_machine", type_=Text),
                                                                literal_column("NULL")), else_=_s.machine)
                     for name in SESSION_ROW_COLUMNS))
    mine = _s.machine == bindparam("machine")
    return {
        "insert_usage_session_of_file": _session_rows_insert(one_file=True),
        "insert_machine_usage_sessions": _session_rows_insert(one_file=False),
        "delete_usage_session_of_file": delete(usage_sessions).where(_s.file_id == bindparam("file_id")),
        "delete_machine_usage_sessions": delete(usage_sessions).where(mine),
        "usage_sessions_in_scopes": shown.where(
            mine & _s.directory.in_([bindparam(name) for name in SCOPE_DIRECTORY_PARAMS])),
        "usage_sessions_under_root": shown.where(
            mine & ((_s.directory == bindparam("root_dir"))
                    | ((_s.directory > bindparam("root_lo")) & (_s.directory < bindparam("root_hi"))))),
    }


def _usage_statements() -> dict[str, ClauseElement]:
    """The indexer's writes of usage facts and rollups, and every report's two queries per scope."""
    u = usage_facts.c
    parent = usage_facts.alias("parent_fact")
    rollup_source = (select(u.file_id, _f.machine, _f.directory, func.coalesce(_f.cwd, literal_column("''")), u.day_local,
                            u.week_local, u.provider, u.model, *(func.sum(u[name]) for name in USAGE_FIGURES),
                            func.count())
                     .select_from(usage_facts.join(session_files, _f.id == u.file_id))
                     .where(u.copied == false()))
    rollup_columns = ["file_id", "machine", "directory", "cwd", "day_local", "week_local", "provider", "model", *USAGE_FIGURES,
                      "messages"]
    rollup_group = (u.file_id, _f.machine, _f.directory, _f.cwd, u.day_local, u.week_local, u.provider, u.model)
    statements: dict[str, ClauseElement] = {
        "insert_usage_fact": insert(usage_facts).values({name: bindparam(name) for name in USAGE_FACT_COLUMNS}),
        "delete_usage_facts_of_file": delete(usage_facts).where(u.file_id == bindparam("file_id")),
        "delete_pending_usage_facts": delete(usage_facts).where(
            (u.file_id == bindparam("file_id")) & (u.pending == true())),
        # A fork's parent is looked for on the fork's own machine (this one: the indexer refreshes its own files)
        # only: another machine's session of the same id or path (a copied agent dir) is another file, whose
        # entries this one did not copy. One query per way of naming the parent: each is one index search.
        "usage_parent_ids": union(*(select(_f.id).where(_mine() & (named == bindparam("parent"))
                                                       & (_f.id != bindparam("file_id")))
                                    for named in (_f.session_id, _f.path))),
        "usage_child_ids": select(_f.id).where(
            _mine() & ((_f.parent_session == bindparam("session_id")) | (_f.parent_session == bindparam("path")))),
        "usage_parent_of_file": select(_f.parent_session).where(_f.id == bindparam("file_id")),
        "usage_files_with_parent": select(_f.id, _f.parent_session).where(_mine() & _f.parent_session.is_not(None)),
        # (`owner_id`: an UPDATE may not name a parameter after a column of its table.)
        "reset_usage_copies": update(usage_facts).where(u.file_id == bindparam("owner_id")).values(copied=false()),
        "mark_usage_copies": update(usage_facts).where(
            (u.file_id == bindparam("owner_id")) & exists(select(parent.c.id).where(
                (parent.c.file_id == bindparam("parent_id")) & (parent.c.entry_id == u.entry_id)
                & (parent.c.entry_timestamp == u.entry_timestamp)))).values(copied=true()),
        "delete_usage_rollup_of_file": delete(usage_rollup).where(_r.file_id == bindparam("file_id")),
        "insert_usage_rollup_of_file": insert(usage_rollup).from_select(
            rollup_columns, rollup_source.where(u.file_id == bindparam("file_id")).group_by(*rollup_group)),
        "delete_machine_usage_rollups": delete(usage_rollup).where(_r.machine == bindparam("machine")),
        "insert_machine_usage_rollups": insert(usage_rollup).from_select(
            rollup_columns, rollup_source.where(_mine()).group_by(*rollup_group)),
        "count_usage_facts": select(func.count()).select_from(usage_facts),
        # The counted facts of one file (another machine's session in a report over marked sessions).
        "counted_usage_facts_of_file": select(*(u[name] for name in USAGE_FACT_COLUMNS[3:]))
        .where((u.file_id == bindparam("file_id")) & (u.copied == false())),
        # The 5-hour billing blocks: the counted facts, in time, of one machine's files below its sessions root
        # modified since a moment (an older file holds no later entry), from a time on.
        "usage_facts_since_under_root": select(_f.path, *(u[name] for name in USAGE_FACT_COLUMNS[3:]))
        .select_from(usage_facts.join(session_files, _f.id == u.file_id))
        .where(_mine() & _under_root() & (_f.mtime_ns >= bindparam("mtime_ns_lo")) & (u.copied == false())
               & (u.ts_ms >= bindparam("ts_lo"))),
        **_totals_statements(),
        **_session_rows_statements(),
        "session_usage_by_model": select(_r.provider, _r.model, *(func.sum(_r[name]).label(name) for name in USAGE_FIGURES),
                                         func.sum(_r.messages).label("messages"))
        .where(_r.file_id == bindparam("file_id")).group_by(_r.provider, _r.model),
    }
    for kind in USAGE_REPORT_KEYS:
        for scope in USAGE_SCOPES:
            statements[f"usage_{kind}_{scope}"] = _usage_report(kind, scope, by_model=False)
            if kind not in ("model", "total"):
                statements[f"usage_{kind}_by_model_{scope}"] = _usage_report(kind, scope, by_model=True)
            elif kind == "total":
                statements[f"usage_total_by_model_{scope}"] = _usage_report(kind, scope, by_model=True)
    return statements


def build_statements() -> dict[str, ClauseElement]:
    """Name -> statement for everything the catalog executes outside migrations and FTS."""
    f = _f
    return {
        # -- indexer -----------------------------------------------------------------------------
        "file_by_path": select(*(f[name] for name in ("id", *FILE_COLUMNS))).where(_mine() & (f.path == bindparam("path"))),
        "file_by_inode": select(f.id, f.path).where(
            _mine() & (f.device == bindparam("device")) & (f.inode == bindparam("inode"))),
        # No RETURNING: it opens a statement journal, and FTS5 flushes its pending terms at each one.
        "insert_file": insert(session_files).values({name: bindparam(name) for name in FILE_COLUMNS}),
        "update_file": update(session_files).where(f.id == bindparam("file_id"))
        .values({name: bindparam(name) for name in FILE_COLUMNS if name not in ("path", "machine")}),
        "move_file": update(session_files).where(f.id == bindparam("file_id"))
        .values(path=bindparam("path"), directory=bindparam("directory")),
        "delete_file": delete(session_files).where(f.id == bindparam("file_id")),
        "delete_machine_files": delete(session_files).where(_mine()),
        # Makes the next freshness pass read every file of the machine again from its start. (An UPDATE of
        # session_files cannot name a parameter after one of its columns: `own_machine`.)
        "forget_machine_reads": update(session_files).where(f.machine == bindparam("own_machine")).values(
            mtime_ns=literal_column("-1"), head_digest=literal_column("''")),
        "delete_messages_of_file": delete(messages).where(messages.c.file_id == bindparam("file_id")),
        "delete_pending_messages": delete(messages).where(
            (messages.c.file_id == bindparam("file_id")) & (messages.c.pending == true())),
        "max_committed_seq": select(func.coalesce(func.max(messages.c.seq), literal_column("-1"))).where(
            (messages.c.file_id == bindparam("file_id")) & (messages.c.pending != true())),
        "insert_message": insert(messages).values(
            id=bindparam("id"), file_id=bindparam("file_id"), seq=bindparam("seq"), pending=bindparam("pending"),
            text=bindparam("text")),
        "max_message_id": select(func.coalesce(func.max(messages.c.id), literal_column("0"))),
        "messages_of_file": select(messages.c.id, messages.c.text).where(messages.c.file_id == bindparam("file_id")),
        "pending_messages_of_file": select(messages.c.id, messages.c.text).where(
            (messages.c.file_id == bindparam("file_id")) & (messages.c.pending == true())),
        # -- freshness -----------------------------------------------------------------------------
        "stats_in_directory": select(*(f[name] for name in STAT_COLUMNS)).where(
            _mine() & (f.directory == bindparam("directory"))),
        "stats_under_root": select(*(f[name] for name in STAT_COLUMNS)).where(_mine() & _under_root()),
        "stats_in_directory_with_id": select(*(f[name] for name in STAT_COLUMNS)).where(
            _mine() & (f.directory == bindparam("directory")) & _id_prefix()),
        "stats_under_root_with_id": select(*(f[name] for name in STAT_COLUMNS)).where(_mine() & _under_root_with_id_prefix()),
        "paths_in_directory": select(f.path).where(_mine() & (f.directory == bindparam("directory"))),
        "paths_under_root": select(f.path).where(_mine() & _under_root()),
        # -- listings --------------------------------------------------------------------------------
        "infos_in_directories": _info_select().where(_mine() & _in_directories() & _listable()),
        # `recent`: only the newest rows leave SQLite (queries.sessions re-sorts them by the file scan's key). One
        # folder a statement: its rows are read newest first from the (machine, directory, mtime_ns) index, up to
        # the limit; over `directory IN (...)` SQLite walks the mtime index over every row of the machine instead.
        "newest_infos_in_directory": _info_select().where(_mine() & _in_directory() & _listable())
        .order_by(_f.mtime_ns.desc(), _f.path).limit(bindparam("limit")).offset(bindparam("offset")),
        "infos_under_root": _info_select().where(_mine() & _under_root() & _listable()),
        "infos_by_id_in_directories": _info_select().where(_mine() & _in_directories() & _listable() & _id_prefix()),
        "infos_by_id_under_root": _info_select().where(_mine() & _listable() & _under_root_with_id_prefix()),
        "recent_in_directory": _recent_select().where(_in_directory()),  # (one folder: as newest_infos_in_directory)
        "message_texts": select(messages.c.text).where(messages.c.file_id == bindparam("file_id"))
        .order_by(messages.c.seq),
        "file_health": select(f.id, f.path, f.header_valid, f.unparseable_lines, f.pending_unparseable,
                              f.message_count).where(_mine()).order_by(f.path),
        "count_files": select(func.count()).select_from(session_files),
        "count_messages": select(func.count()).select_from(messages),
        "count_machine_files": select(func.count()).select_from(session_files).where(_mine()),
        "file_ids_with_messages": select(f.id).where(_mine() & select(messages.c.id).where(
            messages.c.file_id == f.id).exists()),
        "file_by_id": _info_select().where(f.id == bindparam("file_id")),
        # -- catalog facts ---------------------------------------------------------------------------
        "meta_get": select(catalog_meta.c.value).where(catalog_meta.c.key == bindparam("key")),
        "meta_delete": delete(catalog_meta).where(catalog_meta.c.key == bindparam("key")),
        "meta_insert": insert(catalog_meta).values(key=bindparam("key"), value=bindparam("value")),
        # -- marks (catalog.index.marks_index) --------------------------------------------------------------
        "marks_all": select(*(session_marks.c[name] for name in MARK_COLUMNS)),
        "delete_machine_marks": delete(session_marks).where(session_marks.c.machine == bindparam("machine")),
        "insert_mark": insert(session_marks).values({name: bindparam(name) for name in MARK_COLUMNS}),
        # -- usage (core.usage) ---------------------------------------------------------------------------
        **_usage_statements(),
        # -- machines ----------------------------------------------------------------------------------
        "machine_get": select(_m.name, _m.host, _m.sessions_root, _m.content, _m.home)
        .where(_m.name == bindparam("machine")),
        "machines_all": select(_m.name, _m.host, _m.sessions_root, _m.content, _m.home).order_by(_m.name),
        "machine_insert": insert(machines).values(name=bindparam("machine"), host=bindparam("host"),
                                                  sessions_root=bindparam("sessions_root"),
                                                  content=bindparam("content"), home=bindparam("home")),
        "machine_update": update(machines).where(_m.name == bindparam("machine")).values(
            host=bindparam("host"), sessions_root=bindparam("sessions_root"), content=bindparam("content"),
            home=bindparam("home")),
    }


def compile_for_sqlite(statement: ClauseElement) -> str:
    """The statement as SQLite SQL with `:name` parameters, as the stdlib sqlite3 module takes it."""
    return str(statement.compile(dialect=sqlite.dialect(paramstyle="named")))


def head_revision() -> str:
    """The newest Alembic revision shipped in the package (imports Alembic)."""
    from alembic.script import ScriptDirectory

    from sessdex.catalog.store.migrate import alembic_config

    head = ScriptDirectory.from_config(alembic_config("sqlite://")).get_current_head()
    if head is None:
        raise RuntimeError("the package ships no Alembic revision")
    return head


def template_catalog() -> tuple[list[str], list[tuple[str, str, str]]]:
    """What a new SQLite file made by the migrations holds: the statements that give another file exactly that
    catalog (tables, indexes, FTS5 tables and their settings, the Alembic revision), so that a first use creates
    its catalog without importing Alembic and SQLAlchemy (`sessdex.catalog.store.migrate.upgrade_catalog`); and
    its schema objects (type, name, SQL), which a catalog at this revision must hold exactly
    (`sessdex.catalog.store.db.schema_damage`)."""
    import sqlite3
    import tempfile

    from sessdex.catalog.store.location import resolve_location
    from sessdex.catalog.store.migrate import upgrade_with_alembic

    with tempfile.TemporaryDirectory() as folder:
        location = resolve_location(folder, str(Path(folder) / "template.db"))
        upgrade_with_alembic(location, "template")  # never the script itself: it is what is being made
        connection = sqlite3.connect(str(location.sqlite_path))
        try:
            objects = connection.execute("SELECT type, name, sql FROM sqlite_master ORDER BY rowid").fetchall()
            virtual = [name for _kind, name, sql in objects if (sql or "").startswith("CREATE VIRTUAL TABLE")]
            shadow = {name for name in (row[1] for row in objects) for table in virtual if name.startswith(f"{table}_")}
            script = [sql for _kind, name, sql in objects if sql and name not in shadow]
            for table in virtual:  # FTS5 settings beyond what creating the table writes
                script += [f"INSERT INTO {table}({table}, rank) VALUES ({key!r}, {value!r})" for key, value in
                           connection.execute(f"SELECT k, v FROM {table}_config WHERE k != 'version' ORDER BY k")]
            for kind, name, _sql in objects:
                if kind == "table" and name not in shadow and name not in virtual:
                    for row in connection.execute(f'SELECT * FROM "{name}"'):
                        values = ", ".join("NULL" if value is None else repr(value) for value in row)
                        script.append(f'INSERT INTO "{name}" VALUES ({values})')
        finally:
            connection.close()
    return script, sorted((kind, name, sql or "") for kind, name, sql in objects if not name.startswith("sqlite_"))


def render_compiled_module() -> str:
    """The source of `catalog/compiled_sql.py` for the current statements and migrations."""
    lines = [
        '"""GENERATED by `python -m sessdex.catalog.store.statements` from catalog/store/statements.py: do not edit by hand.',
        "",
        "The SQLite fast path runs these strings with the stdlib sqlite3 module so that reading a current",
        "catalog never imports SQLAlchemy or Alembic; tests/catalog/test_schema.py checks they still match.",
        '"""',
        "",
        f"SCHEMA_REVISION = {head_revision()!r}",
        "",
        "SQL: dict[str, str] = {",
    ]
    for name, statement in build_statements().items():
        lines.append(f"    {name!r}: (")
        lines.extend(f"        {part!r}" for part in compile_for_sqlite(statement).splitlines(keepends=True))
        lines.append("    ),")
    lines.append("}")
    script, objects = template_catalog()
    lines += ["", "# A new SQLite catalog at SCHEMA_REVISION, without Alembic (statements.template_catalog).",
              "FRESH_CATALOG_SCRIPT: tuple[str, ...] = ("]
    lines.extend(f"    {statement!r}," for statement in script)
    lines += [")", "", "# The schema objects (type, name, SQL) of a SQLite catalog at SCHEMA_REVISION.",
              "SCHEMA_OBJECTS: frozenset[tuple[str, str, str]] = frozenset({"]
    lines.extend(f"    {item!r}," for item in objects)
    lines.append("})")
    return "\n".join(lines) + "\n"


COMPILED_MODULE_PATH = Path(__file__).with_name("compiled_sql.py")


if __name__ == "__main__":
    COMPILED_MODULE_PATH.write_text(render_compiled_module(), encoding="utf-8")
    sys.stdout.write(f"wrote {COMPILED_MODULE_PATH}\n")

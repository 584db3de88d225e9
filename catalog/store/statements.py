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

from sqlalchemy import Select, bindparam, delete, func, insert, literal_column, select, true, update
from sqlalchemy.dialects import sqlite
from sqlalchemy.sql import ClauseElement

from sessdex.catalog.store.schema import catalog_meta, messages, session_files

SCOPE_DIRECTORY_PARAMS = ("dir0", "dir1", "dir2")

# Columns written by the indexer (everything but the primary key).
FILE_COLUMNS = tuple(column.name for column in session_files.columns if column.name != "id")
# What a listing needs to build SessionInfo / RecentSessionInfo without reading files.
INFO_COLUMNS = ("id", "path", "mtime_ns", "session_id", "cwd", "title", "message_count", "first_message",
                "created", "parent_session")
STAT_COLUMNS = ("path", "device", "inode", "size", "mtime_ns")

_f = session_files.c


def _in_directories():
    return _f.directory.in_([bindparam(name) for name in SCOPE_DIRECTORY_PARAMS])


def _under_root():
    # Every path below the sessions root sorts between "<root>/" and "<root>/\U0010ffff".
    return (_f.path > bindparam("root_lo")) & (_f.path < bindparam("root_hi"))


def _id_prefix():
    return (_f.session_id >= bindparam("id_lo")) & (_f.session_id < bindparam("id_hi"))


def _listable():
    return (_f.header_valid == true()) & (_f.message_count >= bindparam("min_messages"))


def _info_select() -> Select:
    return select(*(_f[name] for name in INFO_COLUMNS))


def _recent_select() -> Select:
    return (select(_f.path, _f.mtime_ns, _f.prefix_state)
            .where(_f.prefix_state.is_not(None))
            .order_by(_f.mtime_ns.desc(), _f.path)
            .limit(bindparam("limit")).offset(bindparam("offset")))


def build_statements() -> dict[str, ClauseElement]:
    """Name -> statement for everything the catalog executes outside migrations and FTS."""
    f = _f
    return {
        # -- indexer -----------------------------------------------------------------------------
        "file_by_path": select(*(f[name] for name in ("id", *FILE_COLUMNS))).where(f.path == bindparam("path")),
        "file_by_inode": select(f.id, f.path).where((f.device == bindparam("device")) & (f.inode == bindparam("inode"))),
        # No RETURNING: it opens a statement journal, and FTS5 flushes its pending terms at each one.
        "insert_file": insert(session_files).values({name: bindparam(name) for name in FILE_COLUMNS}),
        "update_file": update(session_files).where(f.id == bindparam("file_id"))
        .values({name: bindparam(name) for name in FILE_COLUMNS if name != "path"}),
        "move_file": update(session_files).where(f.id == bindparam("file_id"))
        .values(path=bindparam("path"), directory=bindparam("directory")),
        "delete_file": delete(session_files).where(f.id == bindparam("file_id")),
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
        "stats_in_directory": select(*(f[name] for name in STAT_COLUMNS)).where(f.directory == bindparam("directory")),
        "stats_under_root": select(*(f[name] for name in STAT_COLUMNS)).where(_under_root()),
        "stats_in_directory_with_id": select(*(f[name] for name in STAT_COLUMNS)).where(
            (f.directory == bindparam("directory")) & _id_prefix()),
        "stats_under_root_with_id": select(*(f[name] for name in STAT_COLUMNS)).where(_under_root() & _id_prefix()),
        "paths_in_directory": select(f.path).where(f.directory == bindparam("directory")),
        "paths_under_root": select(f.path).where(_under_root()),
        # -- listings --------------------------------------------------------------------------------
        "infos_in_directories": _info_select().where(_in_directories() & _listable()),
        "infos_under_root": _info_select().where(_under_root() & _listable()),
        "infos_by_id_in_directories": _info_select().where(_in_directories() & _listable() & _id_prefix()),
        "infos_by_id_under_root": _info_select().where(_under_root() & _listable() & _id_prefix()),
        "recent_in_directories": _recent_select().where(_in_directories()),
        "message_texts": select(messages.c.text).where(messages.c.file_id == bindparam("file_id"))
        .order_by(messages.c.seq),
        "file_health": select(f.id, f.path, f.header_valid, f.unparseable_lines, f.pending_unparseable,
                              f.message_count).order_by(f.path),
        "count_files": select(func.count()).select_from(session_files),
        "count_messages": select(func.count()).select_from(messages),
        # -- catalog facts ---------------------------------------------------------------------------
        "meta_get": select(catalog_meta.c.value).where(catalog_meta.c.key == bindparam("key")),
        "meta_delete": delete(catalog_meta).where(catalog_meta.c.key == bindparam("key")),
        "meta_insert": insert(catalog_meta).values(key=bindparam("key"), value=bindparam("value")),
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
    return "\n".join(lines) + "\n"


COMPILED_MODULE_PATH = Path(__file__).with_name("compiled_sql.py")


if __name__ == "__main__":
    COMPILED_MODULE_PATH.write_text(render_compiled_module(), encoding="utf-8")
    sys.stdout.write(f"wrote {COMPILED_MODULE_PATH}\n")

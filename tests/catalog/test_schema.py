"""The schema's single source of truth: SQLAlchemy statements, their compiled SQL cache, and the migrated tables."""

from __future__ import annotations

import re
import sqlite3
from pathlib import Path

import pytest

from sessdex.catalog.store import compiled_sql
from sessdex.catalog.store.db import open_catalog
from sessdex.catalog.store.location import resolve_location
from sessdex.catalog.store.schema import is_fts_table, metadata
from sessdex.catalog.store.statements import (
    COMPILED_MODULE_PATH,
    build_statements,
    compile_for_sqlite,
    head_revision,
    render_compiled_module,
)


def test_compiled_sql_module_is_what_the_statements_compile_to():
    # If this fails, run `python -m sessdex.catalog.store.statements` and review the diff of catalog/compiled_sql.py.
    assert COMPILED_MODULE_PATH.read_text(encoding="utf-8") == render_compiled_module()


def test_each_cached_statement_equals_its_sqlalchemy_compilation():
    statements = build_statements()
    assert set(compiled_sql.SQL) == set(statements)
    for name, statement in statements.items():
        assert compiled_sql.SQL[name] == compile_for_sqlite(statement), name


def test_cached_revision_is_the_newest_migration():
    assert compiled_sql.SCHEMA_REVISION == head_revision()


def test_every_cached_statement_prepares_against_the_migrated_schema(tmp_path: Path):
    db = open_catalog(resolve_location(tmp_path))
    db.close()
    connection = sqlite3.connect(tmp_path / "catalog.db")
    try:
        for sql in compiled_sql.SQL.values():
            parameters = {param: None for param in re.findall(r":(\w+)", sql)}
            connection.execute("EXPLAIN " + sql, parameters)  # raises on unknown tables, columns or parameters
    finally:
        connection.close()


def _query_plan(tmp_path: Path, name: str) -> str:
    """SQLite's query plan of the named compiled statement on a new catalog, its steps joined by " | "."""
    db = open_catalog(resolve_location(tmp_path))
    db.close()
    connection = sqlite3.connect(tmp_path / "catalog.db")
    try:
        sql = compiled_sql.SQL[name]
        parameters = {param: "x" for param in re.findall(r":(\w+)", sql)}
        return " | ".join(row[3] for row in connection.execute("EXPLAIN QUERY PLAN " + sql, parameters))
    finally:
        connection.close()


@pytest.mark.parametrize("name", ["infos_by_id_under_root", "stats_under_root_with_id"])
def test_an_id_prefix_under_the_root_is_looked_up_by_the_session_id_index(tmp_path: Path, name: str):
    # Walking the path index would read every row of the sessions root (all of this machine's) for a few ids.
    plan = _query_plan(tmp_path, name)
    assert "ix_session_files_machine_session_id (machine=? AND session_id>? AND session_id<?)" in plan, plan


@pytest.mark.parametrize("name", ["newest_infos_in_directory", "recent_in_directory"])
def test_the_newest_rows_of_a_folder_are_read_from_the_directory_index(tmp_path: Path, name: str):
    # `recent` and `continue` want a folder's few newest rows: walking the mtime index instead reads every row of
    # this machine (every project's) until enough of the folder's turn up.
    plan = _query_plan(tmp_path, name)
    assert "ix_session_files_machine_directory (machine=? AND directory=?)" in plan, plan


def test_no_statement_carries_a_hidden_literal_parameter():
    # Auto-named binds (":param_1", ":coalesce_2") would be unset on the stdlib path.
    for name, sql in compiled_sql.SQL.items():
        assert not re.search(r":\w+_\d+\b", sql), name


@pytest.mark.parametrize("name, expected", [
    ("message_fts", True), ("message_fts_data", True), ("session_fts_idx", True),
    ("messages", False), ("session_files", False), (None, False),
])
def test_fts_tables_are_recognised_for_autogenerate_exclusion(name, expected):
    assert is_fts_table(name) is expected


def test_schema_defines_no_fts_table():
    assert not [table for table in metadata.tables if is_fts_table(table)]


def _whole_database(path: Path) -> dict[str, object]:
    """The schema objects in creation order, every table's rows (FTS5 shadow tables included) and the file's settings."""
    connection = sqlite3.connect(path)
    try:
        objects = connection.execute("SELECT type, name, tbl_name, sql FROM sqlite_master ORDER BY rowid").fetchall()
        rows = {name: sorted(connection.execute(f'SELECT * FROM "{name}"').fetchall(), key=repr)
                for kind, name, _table, sql in objects if kind == "table" and not (sql or "").startswith("CREATE VIRTUAL")}
        settings = [connection.execute(f"PRAGMA {name}").fetchone() for name in
                    ("journal_mode", "user_version", "page_size", "auto_vacuum", "encoding")]
        return {"objects": objects, "rows": rows, "settings": settings}
    finally:
        connection.close()


def test_a_new_catalog_made_without_alembic_is_the_one_the_migrations_make(tmp_path: Path):
    from sessdex.catalog.store import migrate

    new = resolve_location(tmp_path, str(tmp_path / "new.db"))
    open_catalog(new).close()  # a new file: FRESH_CATALOG_SCRIPT
    migrated = resolve_location(tmp_path, str(tmp_path / "migrated.db"))
    connection = sqlite3.connect(migrated.sqlite_path)
    connection.execute("PRAGMA journal_mode = WAL")
    connection.close()
    migrate.upgrade_with_alembic(migrated, "this-machine")  # what every catalog went through before
    assert _whole_database(new.sqlite_path) == _whole_database(migrated.sqlite_path)
    assert _whole_database(new.sqlite_path)["rows"]["message_fts_config"]  # automerge and version

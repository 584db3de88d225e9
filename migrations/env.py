"""Alembic environment for the sessdex catalog, driven from code (catalog.migrate) rather than an .ini file.

The caller passes an open SQLAlchemy connection in `config.attributes["connection"]`; without one,
an engine is built from the `sqlalchemy.url` main option. Autogenerate compares against
`sessdex.catalog.store.schema.metadata` and ignores the hand-made full-text objects of either dialect.
"""

from __future__ import annotations

from typing import Any

from alembic import context
from sqlalchemy import create_engine

from sessdex.catalog.store.schema import is_fts_table, is_pg_search_object, metadata


def include_name(name: str | None, type_: Any, parent_names: Any) -> bool:
    """Leave the FTS5 tables (SQLite) and the search columns and indexes (PostgreSQL) out of autogenerate's
    comparison."""
    if type_ == "table":
        return not is_fts_table(name)
    if type_ in ("column", "index"):
        return not is_pg_search_object(name)
    return True


def run_migrations(connection) -> None:
    """Configure the migration context on `connection` and run the requested command."""
    context.configure(
        connection=connection,
        target_metadata=metadata,
        include_name=include_name,
        render_as_batch=connection.dialect.name == "sqlite",
        compare_type=True,
    )
    with context.begin_transaction():
        context.run_migrations()


def run_online() -> None:
    connection = context.config.attributes.get("connection")
    if connection is not None:
        run_migrations(connection)
        return
    url = context.config.get_main_option("sqlalchemy.url")
    if url is None:
        raise RuntimeError("the Alembic config names no sqlalchemy.url")
    engine = create_engine(url)
    try:
        with engine.connect() as connection:
            run_migrations(connection)
    finally:
        engine.dispose()


if context.is_offline_mode():
    raise RuntimeError("the sessdex catalog is migrated online only")
run_online()

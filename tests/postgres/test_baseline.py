"""The baseline revision on a real PostgreSQL server: it makes exactly schema.py's tables (Alembic's `check`),
and goes down to nothing and up again."""

from __future__ import annotations

from pathlib import Path

from sessdex.catalog.store.db import open_catalog
from sessdex.catalog.store.location import resolve_location
from sessdex.catalog.store.migrate import alembic_on, check_catalog


def test_the_baseline_makes_schema_py_on_postgresql_and_downgrades_to_nothing(postgres_url: str, tmp_path: Path):
    import psycopg
    from alembic import command

    location = resolve_location(tmp_path, postgres_url)
    open_catalog(location, machine="here").close()
    check_catalog(location)  # raises on any difference
    with psycopg.connect(postgres_url) as connection:
        collations = dict(connection.execute(
            "SELECT table_name || '.' || column_name, collation_name FROM information_schema.columns "
            "WHERE column_name IN ('path', 'directory', 'session_id', 'scope') AND table_schema = 'public'"))
    assert set(collations.values()) == {"C"}, collations  # compared byte-wise, as on SQLite and in Python
    with alembic_on(location) as config:
        command.downgrade(config, "base")
    with psycopg.connect(postgres_url) as connection:
        tables = {row[0] for row in connection.execute(
            "SELECT table_name FROM information_schema.tables WHERE table_schema = 'public'")}
    assert tables <= {"alembic_version"}
    open_catalog(location, machine="here").close()
    check_catalog(location)

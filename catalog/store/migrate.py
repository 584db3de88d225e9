"""Create or upgrade the catalog schema with Alembic, configured in code, under a file lock.

Alembic is imported here only, and only when `sessdex.catalog.store.db.open_catalog` finds the database missing or
behind `SCHEMA_REVISION`: reading a current catalog never pays for it. The migration scripts ship
inside the `migrations` package; nothing reads an alembic.ini.
"""

from __future__ import annotations

import io
import sqlite3
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TextIO

from sessdex.catalog.store.location import CatalogLocation, create_catalog_engine, exclusive_lock
from sessdex.core.errors import CatalogError
from sessdex.core.private_files import check_private_database, make_private_dirs

MIGRATE_LOCK_KEY = 0x73657373646D67  # "sessdmg": the PostgreSQL advisory lock held while migrating

# The revisions of sessdex releases before the baseline: a catalog at one of them is emptied and indexed again
# from the session files (it is derived data), never migrated.
RETIRED_REVISIONS = frozenset({"0001", "0002_usage_facts", "0003_machines", "0004_usage_per_machine",
                               "0005_usage_report_text", "0006_usage_table_cells", "0007_usage_report_tokens"})
# What those revisions made on PostgreSQL besides tables (their triggers go with the tables).
_RETIRED_POSTGRESQL_FUNCTIONS = ("sessdex_fold(text)", "usage_totals_drop_tokens()", "usage_totals_clear_cells()")


def _say_rebuilt(location: CatalogLocation, revision: str) -> None:
    sys.stderr.write(f"sessdex: the catalog {location.display} was made by an older sessdex (revision {revision}); "
                     "it is emptied and indexed again from the session files\n")
    sys.stderr.flush()


def _migrations_dir() -> Path:
    """The installed `sessdex.migrations` package's own folder (never a top-level `migrations` on sys.path)."""
    from sessdex import migrations

    return Path(migrations.__file__).resolve().parent


def alembic_config(url: str, output: TextIO | None = None):
    """An Alembic Config pointing at the packaged migrations and the catalog URL (no .ini file).

    Alembic's own messages go to `output` (discarded by default: the CLI's stdout carries only data).
    """
    from alembic.config import Config

    config = Config(stdout=output if output is not None else io.StringIO())
    config.set_main_option("script_location", str(_migrations_dir()))
    # ConfigParser interpolates "%": escape it so URLs with encoded characters survive.
    config.set_main_option("sqlalchemy.url", url.replace("%", "%%"))
    return config


@contextmanager
def alembic_on(location: CatalogLocation, machine: str | None = None) -> Iterator[Any]:
    """An Alembic Config bound to one transaction on the catalog, for running a command in code.

    `machine` is the name rows that exist before migration 0003 are given (default: the host name).
    """
    engine = create_catalog_engine(location.url, foreign_keys=False)
    try:
        with engine.begin() as connection:
            if connection.dialect.name == "postgresql":
                # Machines sharing the server upgrade one at a time (the file lock only orders this machine's).
                from sqlalchemy import text

                connection.execute(text("SELECT pg_advisory_xact_lock(:key)"), {"key": MIGRATE_LOCK_KEY})
            config = alembic_config(location.url)
            config.attributes["connection"] = connection
            config.attributes["machine"] = machine
            yield config
    finally:
        engine.dispose()


def upgrade_catalog(location: CatalogLocation, machine: str | None = None) -> None:
    """Bring the catalog at `location` to the newest revision; concurrent callers wait on a file lock.

    A new SQLite file is given the newest schema at once by the script the migrations were rendered into
    (`compiled_sql.FRESH_CATALOG_SCRIPT`): a first use does not wait for Alembic and SQLAlchemy to load."""
    if location.sqlite_path is not None:
        make_private_dirs(location.sqlite_path.parent)
    with exclusive_lock(location.migrate_lock_path):
        if location.sqlite_path is not None:
            check_private_database(location.sqlite_path)  # 0600 before SQLite makes it (and its -wal, -shm) 0644
            # WAL is a property of the file and cannot be switched inside the migration's transaction.
            connection = sqlite3.connect(location.sqlite_path, isolation_level=None)
            try:
                connection.execute("PRAGMA journal_mode = WAL")
                _empty_retired_sqlite_catalog(location, connection)
                if _create_new_catalog(connection):
                    return
            finally:
                connection.close()
        upgrade_with_alembic(location, machine)


def _create_new_catalog(connection: sqlite3.Connection) -> bool:
    """Give an empty SQLite database the newest schema by FRESH_CATALOG_SCRIPT; False when it is not empty."""
    from sessdex.catalog.store.compiled_sql import FRESH_CATALOG_SCRIPT

    connection.execute("BEGIN IMMEDIATE")
    try:
        if connection.execute("SELECT count(*) FROM sqlite_master").fetchone()[0]:
            connection.execute("ROLLBACK")
            return False
        for statement in FRESH_CATALOG_SCRIPT:
            connection.execute(statement)
        connection.execute("COMMIT")
    except BaseException:
        connection.execute("ROLLBACK")
        raise
    return True


def _empty_retired_sqlite_catalog(location: CatalogLocation, connection: sqlite3.Connection) -> None:
    """Drop every table, index and trigger of a SQLite catalog at a retired revision (saying so once)."""
    try:
        row = connection.execute("SELECT version_num FROM alembic_version").fetchone()
    except sqlite3.OperationalError:
        return  # no revision: a new file, or not a catalog sessdex made (Alembic says so)
    if row is None or row[0] not in RETIRED_REVISIONS:
        return
    connection.execute("BEGIN IMMEDIATE")
    try:
        objects = connection.execute("SELECT type, name, sql FROM sqlite_master").fetchall()
        # The FTS5 tables first: dropping one drops its shadow tables, which cannot be dropped on their own.
        virtual = [name for kind, name, sql in objects if kind == "table" and (sql or "").startswith("CREATE VIRTUAL")]
        for name in virtual:
            connection.execute(f'DROP TABLE IF EXISTS "{name}"')
        for kind, name, _sql in objects:
            if kind == "trigger":
                connection.execute(f'DROP TRIGGER IF EXISTS "{name}"')
        left = [name for (name,) in connection.execute(
            "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'")]
        for name in left:
            connection.execute(f'DROP TABLE IF EXISTS "{name}"')
        connection.execute("COMMIT")
    except BaseException:
        connection.execute("ROLLBACK")
        raise
    _remove_ready_reports(location)
    _say_rebuilt(location, row[0])


def _remove_ready_reports(location: CatalogLocation) -> None:
    """Remove the folder of whole usage reports releases before the baseline kept beside a SQLite catalog
    (`catalog.db.reports`): derived text nothing reads any more. A symlink there is left alone."""
    import shutil

    folder = Path(f"{location.sqlite_file}.reports")
    if folder.is_dir() and not folder.is_symlink():
        shutil.rmtree(folder, ignore_errors=True)


def _empty_retired_server_catalog(location: CatalogLocation, connection: Any) -> None:
    """Drop the tables and functions of a PostgreSQL catalog at a retired revision (saying so once), inside the
    migration's transaction."""
    from sqlalchemy import inspect, text

    if not inspect(connection).has_table("alembic_version"):
        return
    revision = connection.execute(text("SELECT version_num FROM alembic_version")).scalar()
    if revision not in RETIRED_REVISIONS:
        return
    from sessdex.catalog.store.schema import metadata

    # Every table of today's schema too: a newer revision's table (one a half-finished upgrade created) would
    # make the baseline's CREATE fail.
    for table in [*(table.name for table in reversed(metadata.sorted_tables)), "alembic_version"]:
        connection.execute(text(f'DROP TABLE IF EXISTS "{table}" CASCADE'))
    for function in _RETIRED_POSTGRESQL_FUNCTIONS:
        connection.execute(text(f"DROP FUNCTION IF EXISTS {function} CASCADE"))
    _say_rebuilt(location, revision)


def upgrade_with_alembic(location: CatalogLocation, machine: str | None) -> None:
    """Run the migrations up to the newest revision on the catalog at `location` (the caller holds the migrate
    lock, or owns the file alone)."""
    from alembic import command
    from alembic.util.exc import CommandError

    try:
        with alembic_on(location, machine) as config:
            if location.sqlite_path is None:
                _empty_retired_server_catalog(location, config.attributes["connection"])
            command.upgrade(config, "head")
    except CommandError as exc:
        raise CatalogError(f"cannot upgrade the catalog {location.display}: {exc} (it may have been created "
                           "by a newer sessdex; use another --catalog or rebuild it with "
                           "`sessdex index --rebuild`)") from exc


def check_catalog(location: CatalogLocation) -> None:
    """Run Alembic's `check` (autogenerate finds no difference between migrations and schema.py) or raise."""
    from alembic import command

    with alembic_on(location) as config:
        command.check(config)

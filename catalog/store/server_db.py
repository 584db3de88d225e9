"""Opening a catalog on a database server (PostgreSQL, shared by several machines), and `SqlAlchemyCatalog`.

`open_server_catalog` (called by `db.open_catalog` for a server URL) opens PostgreSQL through psycopg directly
(`sessdex.catalog.store.postgres_reads.PostgresCatalog`), which shares its write lock and its one-line
"cannot reach" error with this module, and imports SQLAlchemy only to upgrade an older or new database.
`SqlAlchemyCatalog` serves any other server URL and SQLite when a test asks for SQLAlchemy (proving the
statements dialect-neutral). A module of its own: every hot command opens a SQLite catalog through `db`, and
creating these classes cost each of them as much as a third of `db`.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

from sessdex.catalog.store.compiled_sql import SCHEMA_REVISION
from sessdex.catalog.store.location import CatalogLocation, create_catalog_engine
from sessdex.catalog.store.machine import host_name, with_machine
from sessdex.catalog.store.postgres_reads import WRITE_LOCK_KEY, refused, unavailable
from sessdex.core.errors import CatalogError, CatalogUnavailableError, UsageError

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence
    from typing import Any

    from sessdex.catalog.store.postgres_reads import PostgresCatalog


class SqlAlchemyCatalog:
    """The SQLAlchemy backend: PostgreSQL (shared by several machines), and SQLite in tests proving the statements
    dialect-neutral.

    On PostgreSQL every write transaction first takes one advisory lock, so writers of every machine take
    turns as SQLite's do (the indexer hands out message ids inside its transaction), and text loses its NUL
    characters (PostgreSQL text cannot hold them). A lost server connection is a `CatalogUnavailableError`;
    the next call connects again.
    """

    def __init__(self, location: CatalogLocation, machine: str | None = None) -> None:
        from sessdex.catalog.store.statements import build_statements

        self.location = location
        self.machine = machine or host_name()
        self._engine = create_catalog_engine(location.url)
        self.dialect = self._engine.dialect.name
        self._statements = build_statements()
        self._connection: Any = None
        self._in_write = False
        self._connect()

    def _connect(self) -> Any:
        if self._connection is None:
            with self._reporting_lost_connection():
                self._connection = self._engine.connect()
        return self._connection

    def _reporting_lost_connection(self) -> contextlib.AbstractContextManager[None]:
        return _reporting_lost_connection(self)

    def revision(self) -> str | None:
        """The Alembic revision of the database, None when it has none (a new, empty database)."""
        from sqlalchemy import inspect, text

        with self._reporting_lost_connection():
            connection = self._connect()
            has_table = inspect(connection).has_table("alembic_version")
            revision = connection.execute(text("SELECT version_num FROM alembic_version")).scalar() if has_table else None
            connection.commit()
        return revision

    def _drop_connection(self) -> None:
        connection, self._connection = self._connection, None
        if connection is not None:
            try:
                connection.invalidate()
                connection.close()
            except Exception:  # noqa: BLE001 - the connection is lost already
                pass

    def _params(self, name: str, params: Mapping[str, Any] | None) -> dict[str, Any]:
        values = dict(with_machine(name, params, self.machine))
        if self.dialect == "postgresql":
            for key, value in values.items():
                if type(value) is str and "\x00" in value:
                    values[key] = value.replace("\x00", "\ufffd")
        return values

    def _execute(self, statement: Any, params: Any) -> Any:
        with self._reporting_lost_connection():
            return self._connect().execute(statement, params)

    def fetchall(self, name: str, params: Mapping[str, Any] | None = None) -> list[Any]:
        return self.fetch_statement(self._statements[name], self._params(name, params))

    def fetch_statement(self, statement: Any, params: Mapping[str, Any]) -> list[Any]:
        """Rows (mappings) of any SQLAlchemy statement; outside `write()` the read ends its transaction."""
        rows = [row._mapping for row in self._execute(statement, dict(params))]
        if not self._in_write:
            with self._reporting_lost_connection():
                self._connect().commit()
        return rows

    def scalar(self, name: str, params: Mapping[str, Any] | None = None) -> Any:
        rows = self.fetchall(name, params)
        return next(iter(rows[0].values())) if rows else None

    def fetch_tuples(self, name: str, params: Mapping[str, Any] | None = None) -> list[tuple[Any, ...]]:
        return [tuple(row.values()) for row in self.fetchall(name, params)]

    def execute(self, name: str, params: Mapping[str, Any] | None = None) -> None:
        self._require_transaction()
        self._execute(self._statements[name], self._params(name, params))

    def executemany(self, name: str, rows: Sequence[Mapping[str, Any]]) -> None:
        self._require_transaction()
        if rows:
            self._execute(self._statements[name], [self._params(name, row) for row in rows])

    def insert_returning_id(self, name: str, params: Mapping[str, Any]) -> int:
        self._require_transaction()
        return self._execute(self._statements[name], self._params(name, params)).inserted_primary_key[0]

    def fts_executemany(self, sql: str, rows: Sequence[tuple[Any, ...]]) -> None:
        self._require_transaction()
        if rows and self.dialect == "sqlite":
            with self._reporting_lost_connection():
                self._connect().exec_driver_sql(sql, list(rows))

    def _require_transaction(self) -> None:
        if not self._in_write:
            raise RuntimeError("catalog writes must happen inside CatalogDatabase.write()")

    def write(self) -> contextlib.AbstractContextManager[None]:
        return _sqlalchemy_transaction(self)

    def sqlite_reader(self) -> None:
        return None

    def sqlite_writer(self) -> None:
        return None

    def integrity_errors(self) -> list[str]:
        return []

    def rebuild_full_text(self) -> bool:
        return False

    def close(self) -> None:
        if self._connection is not None:
            try:
                self._connection.close()
            except Exception:  # noqa: BLE001 - closing is best effort
                pass
            self._connection = None
        self._engine.dispose()


@contextlib.contextmanager
def _reporting_lost_connection(catalog: SqlAlchemyCatalog) -> Iterator[None]:
    """Inside the block, a lost server connection is dropped and raised as CatalogUnavailableError."""
    from sqlalchemy.exc import DBAPIError

    try:
        yield
    except DBAPIError as error:
        if _is_connection_problem(error):
            catalog._drop_connection()
            raise unavailable(catalog.location, error) from error
        raise refused(catalog.location, error) from error


@contextlib.contextmanager
def _sqlalchemy_transaction(catalog: SqlAlchemyCatalog) -> Iterator[None]:
    """`SqlAlchemyCatalog.write()`: on PostgreSQL under the advisory write lock; commit, or roll back on a raise."""
    if catalog._in_write:
        raise RuntimeError("nested catalog write transaction")
    catalog._in_write = True
    try:
        try:
            if catalog.dialect == "postgresql":
                from sqlalchemy import text

                catalog._execute(text("SELECT pg_advisory_xact_lock(:key)"), {"key": WRITE_LOCK_KEY})
            yield
        except BaseException:
            if catalog._connection is not None:
                with catalog._reporting_lost_connection():
                    catalog._connection.rollback()
            raise
        with catalog._reporting_lost_connection():
            catalog._connect().commit()
    finally:
        catalog._in_write = False




def _is_connection_problem(exc: Exception) -> bool:
    """True when a database error means the server cannot be reached or refused us, not a bad statement."""
    from sqlalchemy.exc import InterfaceError, OperationalError

    if getattr(exc, "connection_invalidated", False) or isinstance(exc, InterfaceError):
        return True
    if not isinstance(exc, OperationalError):
        return False
    # No SQLSTATE: the connection could not be made or was cut (refused, reset, closed). Otherwise the classes
    # of a connection exception (08), a server shutting down (57P), a refused login (28) or no such database (3D).
    sqlstate = getattr(exc.orig, "sqlstate", None)
    return sqlstate is None or sqlstate.startswith(_CONNECTION_SQLSTATES)


_CONNECTION_SQLSTATES = ("08", "57P", "28", "3D")


def open_server_catalog(location: CatalogLocation, machine: str | None) -> SqlAlchemyCatalog | PostgresCatalog:
    """A catalog on a database server, upgraded first when its revision is not this package's: PostgreSQL through
    psycopg directly (`sessdex.catalog.store.postgres_reads`), any other server through SQLAlchemy."""
    from sessdex.catalog.store.location import is_postgresql_url

    if is_postgresql_url(location.url):
        return _open_postgres_catalog(location, machine)
    from sqlalchemy.exc import ArgumentError, DBAPIError

    from sessdex.catalog.store.migrate import upgrade_catalog

    try:
        database = SqlAlchemyCatalog(location, machine)
    except ArgumentError as exc:  # an unparseable URL, an unknown kind of database
        lines = str(exc).strip().splitlines()
        raise UsageError(f"--catalog {location.display}: not a usable database URL "
                         f"({lines[0] if lines else type(exc).__name__})") from None
    except ImportError as exc:
        raise _missing_driver(location, exc) from exc
    try:
        if database.revision() != SCHEMA_REVISION:
            upgrade_catalog(location, database.machine)
    except DBAPIError as exc:
        database.close()
        if _is_connection_problem(exc):
            raise unavailable(location, exc) from exc
        raise CatalogError(f"cannot upgrade the catalog {location.display}: {str(exc).splitlines()[0]}") from exc
    except BaseException:
        database.close()
        raise
    return database


def _missing_driver(location: CatalogLocation, exc: ImportError) -> CatalogUnavailableError:
    return CatalogUnavailableError(f"the catalog {location.display} needs a database driver that is not installed "
                                   f"({exc.name}); install it with: pip install 'sessdex[postgres]'")


def _open_postgres_catalog(location: CatalogLocation, machine: str | None) -> PostgresCatalog:
    """The libpq / psycopg backend; the revision is one query, and only an older or new database imports Alembic.
    psycopg is looked for, not imported: the reads of a hot command go through libpq alone."""
    import importlib.util

    from sessdex.catalog.store.postgres_reads import PostgresCatalog, is_connection_problem, is_unusable_url

    if importlib.util.find_spec("psycopg") is None:
        raise _missing_driver(location, ImportError("No module named 'psycopg'", name="psycopg"))
    try:
        database = PostgresCatalog(location, machine)
    except Exception as exc:
        if not is_unusable_url(exc):
            raise
        lines = str(exc).strip().splitlines()
        raise UsageError(f"--catalog {location.display}: not a usable database URL "
                         f"({lines[0] if lines else type(exc).__name__})") from None
    try:
        if database.revision() != SCHEMA_REVISION:
            from sqlalchemy.exc import DBAPIError

            from sessdex.catalog.store.migrate import upgrade_catalog

            try:
                upgrade_catalog(location, database.machine)
            except DBAPIError as exc:
                if _is_connection_problem(exc):
                    raise unavailable(location, exc) from exc
                raise CatalogError(f"cannot upgrade the catalog {location.display}: "
                                   f"{str(exc).splitlines()[0]}") from exc
    except Exception as exc:
        database.close()
        if is_connection_problem(exc):
            raise unavailable(location, exc) from exc
        raise
    except BaseException:
        database.close()
        raise
    return database

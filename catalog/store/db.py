"""Where the catalog lives and how it is opened: SQLite in WAL mode, `busy_timeout` on every connection.

Two backends sit behind one seam, `CatalogDatabase`:
- `SqliteCatalog`, the fast path: the stdlib sqlite3 module running the SQL compiled from
  `sessdex.catalog.store.statements` (cached in `sessdex.catalog.store.compiled_sql`), so that a read command on a current
  catalog imports neither SQLAlchemy nor Alembic. Queries run on a read-only connection; writes
  go through a single read-write connection, one `BEGIN IMMEDIATE` transaction at a time.
- `SqlAlchemyCatalog`, for any other SQLAlchemy URL (PostgreSQL, shared by several machines): the same
  statements executed by SQLAlchemy over psycopg 3. Everything but full-text search is dialect-neutral.

Every statement about session files is about one machine's rows (`machine`, see
`sessdex.catalog.store.machine`): the backends add this machine as the `machine` parameter unless the
caller names another. `open_catalog` checks the schema revision with one query and runs the Alembic
upgrade (under a file lock, in `sessdex.catalog.store.migrate`) only when the database is missing or older
than this package. A database server that cannot be reached is a `CatalogUnavailableError` (exit 2).
"""

from __future__ import annotations

import errno
import os
import sys

from sessdex.catalog.store.compiled_sql import SCHEMA_REVISION, SQL
from sessdex.catalog.store.location import (
    BUSY_TIMEOUT_MS,
    MMAP_BYTES,
    CatalogLocation,
    create_catalog_engine,
)
from sessdex.catalog.store.machine import host_name
from sessdex.core.errors import CatalogError, CatalogUnavailableError, UsageError
from sessdex.core.paths import as_path
from sessdex.core.sqlite_driver import sqlite3

TYPE_CHECKING = False  # typing stays off the hot commands' imports (issue 12)
if TYPE_CHECKING:
    import contextlib
    from collections.abc import Mapping, Sequence
    from pathlib import Path
    from typing import Any, Protocol
else:
    Protocol = object  # the seam is a typing.Protocol for the type checker, a plain base class at run time

# -- the seam ------------------------------------------------------------------------------------------

class CatalogDatabase(Protocol):
    """What the indexer and queries need from a catalog database, whatever the backend."""

    location: CatalogLocation
    dialect: str
    # This machine: the `machine` parameter of every statement unless the caller passes another one.
    machine: str

    def fetchall(self, name: str, params: Mapping[str, Any] | None = None) -> list[Any]:
        """Rows of the named statement; each row is indexable by column name."""

    def scalar(self, name: str, params: Mapping[str, Any] | None = None) -> Any:
        """The first column of the first row of the named statement, or None."""

    def fetch_tuples(self, name: str, params: Mapping[str, Any] | None = None) -> list[tuple[Any, ...]]:
        """Rows of the named statement as plain tuples, in the statement's column order (the fast way)."""

    def execute(self, name: str, params: Mapping[str, Any] | None = None) -> None:
        """Run the named statement (inside `write()`)."""

    def executemany(self, name: str, rows: Sequence[Mapping[str, Any]]) -> None:
        """Run the named statement once per parameter set (inside `write()`)."""

    def insert_returning_id(self, name: str, params: Mapping[str, Any]) -> int:
        """Run a single-row INSERT (inside `write()`) and return the new row's id."""

    def fts_executemany(self, sql: str, rows: Sequence[tuple[Any, ...]]) -> None:
        """Run one SQLite FTS5 statement (from sessdex.catalog.store.fts) per row, inside `write()`; a no-op without FTS5."""

    def write(self) -> contextlib.AbstractContextManager[None]:
        """One write transaction; writes from other processes wait on the database lock."""

    def sqlite_reader(self) -> sqlite3.Connection | None:
        """The read connection when the backend is the stdlib SQLite one (for FTS), else None."""

    def sqlite_writer(self) -> sqlite3.Connection | None:
        """The read-write connection when the backend is the stdlib SQLite one (bulk loads), else None."""

    def integrity_errors(self) -> list[str]:
        """What the database's own integrity checks (and the FTS indexes') report; [] when all is well
        or the backend has no such check."""

    def rebuild_full_text(self) -> bool:
        """Rebuild the FTS indexes from their content tables; False when the backend has none."""

    def close(self) -> None:
        """Close every connection."""


# The statements that take a `machine` parameter (those about session_files rows).
_MACHINE_STATEMENTS = frozenset(name for name, sql in SQL.items() if ":machine" in sql)


def with_machine(name: str, params: Mapping[str, Any] | None, machine: str) -> Mapping[str, Any]:
    """`params` for statement `name`, with `machine` added when the statement takes one and the caller gave none."""
    if name not in _MACHINE_STATEMENTS:
        return params or {}
    if params is None:
        return {"machine": machine}
    return params if "machine" in params else {"machine": machine, **params}


def _uri_path(path: str | os.PathLike[str]) -> str:
    # The characters a SQLite URI filename must escape (urllib.parse would cost the hot path an import).
    return os.fspath(path).replace("%", "%25").replace("?", "%3f").replace("#", "%23")


def connect_sqlite(path: str | os.PathLike[str], *, readonly: bool) -> sqlite3.Connection:
    """A stdlib connection to the catalog file with busy_timeout (and, read-write, WAL + foreign keys)."""
    mode = "ro" if readonly else "rwc"
    if not readonly:
        from sessdex.core.private_files import create_private_file  # writers only: off the read path

        create_private_file(path)  # a catalog SQLite creates would follow the umask (0644)
    connection = sqlite3.connect(f"file:{_uri_path(path)}?mode={mode}", uri=True,
                                 timeout=BUSY_TIMEOUT_MS / 1000, isolation_level=None,
                                 check_same_thread=False)
    try:
        connection.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
        if readonly:
            # A short-lived reader maps the file instead of reading page by page (the writer does not:
            # mapped pages would count in its resident memory).
            connection.execute(f"PRAGMA mmap_size = {MMAP_BYTES}")
        else:
            connection.execute("PRAGMA journal_mode = WAL")
            connection.execute("PRAGMA synchronous = NORMAL")
            connection.execute("PRAGMA foreign_keys = ON")
    except BaseException:
        connection.close()
        raise
    connection.row_factory = sqlite3.Row
    return connection


class SqliteCatalog:
    """The stdlib-sqlite3 backend: a read-only query connection plus one lazily opened writer."""

    dialect = "sqlite"

    def __init__(self, location: CatalogLocation, machine: str | None = None) -> None:
        assert location.sqlite_file is not None
        self.location = location
        self.machine = machine or host_name()
        self._path = location.sqlite_file
        self._reader = connect_sqlite(self._path, readonly=True)
        self._writer: sqlite3.Connection | None = None

    def fetchall(self, name: str, params: Mapping[str, Any] | None = None) -> list[sqlite3.Row]:
        connection = self._writer if self._writer is not None and self._writer.in_transaction else self._reader
        return connection.execute(SQL[name], self._params(name, params)).fetchall()

    def scalar(self, name: str, params: Mapping[str, Any] | None = None) -> Any:
        rows = self.fetchall(name, params)
        return rows[0][0] if rows else None

    def fetch_tuples(self, name: str, params: Mapping[str, Any] | None = None) -> list[tuple[Any, ...]]:
        connection = self._writer if self._writer is not None and self._writer.in_transaction else self._reader
        cursor = connection.cursor()
        cursor.row_factory = None  # plain tuples: the freshness pass reads thousands of rows
        return cursor.execute(SQL[name], self._params(name, params)).fetchall()

    def _params(self, name: str, params: Mapping[str, Any] | None) -> Mapping[str, Any]:
        return with_machine(name, params, self.machine)

    def execute(self, name: str, params: Mapping[str, Any] | None = None) -> None:
        self._require_transaction().execute(SQL[name], self._params(name, params))

    def executemany(self, name: str, rows: Sequence[Mapping[str, Any]]) -> None:
        self._require_transaction().executemany(SQL[name], [self._params(name, row) for row in rows])

    def insert_returning_id(self, name: str, params: Mapping[str, Any]) -> int:
        """Run a single-row INSERT and return the new row's id."""
        row_id = self._require_transaction().execute(SQL[name], self._params(name, params)).lastrowid
        if row_id is None:
            raise CatalogError(f"{name} inserted no row")
        return row_id

    def fts_executemany(self, sql: str, rows: Sequence[tuple[Any, ...]]) -> None:
        if rows:
            self._require_transaction().executemany(sql, rows)

    def _require_transaction(self) -> sqlite3.Connection:
        if self._writer is None or not self._writer.in_transaction:
            raise RuntimeError("catalog writes must happen inside CatalogDatabase.write()")
        return self._writer

    def write(self) -> _SqliteTransaction:
        if self._writer is None:
            self._writer = connect_sqlite(self._path, readonly=False)
        return _SqliteTransaction(self._writer)

    def writer_connection(self) -> sqlite3.Connection:
        """The read-write connection (for maintenance such as FTS optimize and checkpoints)."""
        if self._writer is None:
            self._writer = connect_sqlite(self._path, readonly=False)
        return self._writer

    def sqlite_reader(self) -> sqlite3.Connection:
        return self._reader

    def sqlite_writer(self) -> sqlite3.Connection:
        return self.writer_connection()

    def integrity_errors(self) -> list[str]:
        from sessdex.catalog.store import fts  # doctor and rebuilds only: off the read path

        connection = self.writer_connection()
        result = [row[0] for row in connection.execute("PRAGMA quick_check")]
        errors = [f"sqlite: {line}" for line in result] if result != ["ok"] else []
        for table in fts.FTS_TABLES:
            try:
                connection.execute(fts.integrity_check(table))
            except sqlite3.DatabaseError as exc:
                errors.append(f"{table}: {exc}")
        return errors

    def rebuild_full_text(self) -> bool:
        from sessdex.catalog.store import fts

        connection = self.writer_connection()
        with self.write():
            for table in fts.FTS_TABLES:
                connection.execute(fts.rebuild(table))
            fts.write_backlog(connection, 0, 0, 0)  # rebuilt from every message row: no backlog is left
        return True

    def close(self) -> None:
        for connection in (self._reader, self._writer):
            if connection is not None:
                connection.close()
        self._writer = None


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

    def _reporting_lost_connection(self) -> _ReportingLostConnection:
        return _ReportingLostConnection(self)

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

    def write(self) -> _SqlAlchemyTransaction:
        return _SqlAlchemyTransaction(self)

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


# The context managers of the backends' write transactions are classes rather than contextlib generators: this
# module is on every hot command's path, and contextlib imports functools and collections (issue 12).

class _SqliteTransaction:
    """`SqliteCatalog.write()`: BEGIN IMMEDIATE, then COMMIT, or ROLLBACK when the block raises."""

    __slots__ = ("writer",)

    def __init__(self, writer: sqlite3.Connection) -> None:
        self.writer = writer

    def __enter__(self) -> None:
        if self.writer.in_transaction:
            raise RuntimeError("nested catalog write transaction")
        self.writer.execute("BEGIN IMMEDIATE")

    def __exit__(self, kind: type[BaseException] | None, *exc_info: object) -> None:
        if kind is not None:
            self.writer.rollback()
        else:
            self.writer.commit()


class _ReportingLostConnection:
    """Inside the block, a lost server connection is dropped and raised as CatalogUnavailableError."""

    __slots__ = ("catalog",)

    def __init__(self, catalog: SqlAlchemyCatalog) -> None:
        self.catalog = catalog

    def __enter__(self) -> None:
        return None

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None, traceback: object) -> None:
        from sqlalchemy.exc import DBAPIError

        if isinstance(error, DBAPIError) and _is_connection_problem(error):
            self.catalog._drop_connection()
            raise unavailable(self.catalog.location, error) from error


class _SqlAlchemyTransaction:
    """`SqlAlchemyCatalog.write()`: on PostgreSQL under the advisory write lock; commit, or roll back on a raise."""

    __slots__ = ("catalog",)

    def __init__(self, catalog: SqlAlchemyCatalog) -> None:
        self.catalog = catalog

    def __enter__(self) -> None:
        catalog = self.catalog
        if catalog._in_write:
            raise RuntimeError("nested catalog write transaction")
        catalog._in_write = True
        try:
            if catalog.dialect == "postgresql":
                from sqlalchemy import text

                catalog._execute(text("SELECT pg_advisory_xact_lock(:key)"), {"key": WRITE_LOCK_KEY})
        except BaseException:
            self.__exit__(*sys.exc_info())
            raise

    def __exit__(self, kind: type[BaseException] | None, *exc_info: object) -> None:
        catalog = self.catalog
        try:
            if kind is not None:
                if catalog._connection is not None:
                    with catalog._reporting_lost_connection():
                        catalog._connection.rollback()
            else:
                with catalog._reporting_lost_connection():
                    catalog._connect().commit()
        finally:
            catalog._in_write = False


# The key of the PostgreSQL advisory lock every catalog write transaction holds ("sessdex" in ASCII).
WRITE_LOCK_KEY = 0x73657373646578


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


def unavailable(location: CatalogLocation, exc: BaseException) -> CatalogUnavailableError:
    """A one-line error for a catalog server that cannot be reached (down, wrong password, no such database)."""
    cause = getattr(exc, "orig", None) or exc
    lines = [line.strip() for line in str(cause).splitlines() if line.strip()]
    detail = lines[0] if lines else type(cause).__name__
    for noise in ("connection failed: ", "(psycopg.OperationalError) "):
        detail = detail.replace(noise, "")
    return CatalogUnavailableError(f"cannot reach the catalog {location.display}: {detail}")


# -- opening ---------------------------------------------------------------------------------------------

def _revision(connection: sqlite3.Connection) -> str | None:
    """The Alembic revision stored in the catalog, or None when it has none (a new or empty file)."""
    try:
        row = connection.execute("SELECT version_num FROM alembic_version").fetchone()
    except sqlite3.OperationalError as exc:
        if "no such table" in str(exc):
            return None
        raise
    return row[0] if row else None


def current_sqlite_catalog(location: CatalogLocation, machine: str | None = None) -> SqliteCatalog | None:
    """The catalog opened on the fast path when its file exists at the current revision, else None."""
    if location.sqlite_file is None or not os.path.exists(location.sqlite_file):
        return None
    catalog = SqliteCatalog(location, machine)
    try:
        if _revision(catalog.sqlite_reader()) == SCHEMA_REVISION:
            return catalog
    except BaseException:
        catalog.close()
        raise
    catalog.close()
    return None


def _broken(location: CatalogLocation, exc: Exception) -> CatalogError:
    return CatalogError(f"cannot open the catalog {location.display}: {exc}. The catalog is rebuilt from the "
                        "session files with `sessdex index --rebuild` (session files are never touched)")


def open_catalog(location: CatalogLocation, *, backend: str = "auto", machine: str | None = None) -> CatalogDatabase:
    """Open the catalog at `location`, creating or upgrading its schema first when needed.

    `backend="auto"` uses the stdlib SQLite fast path for SQLite files and SQLAlchemy otherwise;
    `"sqlalchemy"` forces SQLAlchemy (tests use it to run the same queries through both). `machine` is the
    machine whose rows the database reads and writes by default (default: the host name).
    """
    try:
        if location.sqlite_path is not None:
            current = current_sqlite_catalog(location, machine)
            if current is None:
                from sessdex.catalog.store.migrate import upgrade_catalog

                upgrade_catalog(location, machine)
            if backend == "sqlalchemy":
                if current is not None:
                    current.close()
                return SqlAlchemyCatalog(location, machine)
            return current if current is not None else SqliteCatalog(location, machine)
        return _open_server_catalog(location, machine)
    except sqlite3.OperationalError as exc:
        if _not_writable(exc):
            # Not a broken catalog: a read-only folder or file (WAL needs its -shm file). Nothing to rebuild.
            raise CatalogNotWritableError(f"cannot open the catalog {location.display}: {exc} (a read-only "
                                          "folder or file?)") from exc
        raise _broken(location, exc) from exc
    except sqlite3.DatabaseError as exc:
        raise _broken(location, exc) from exc
    except OSError as exc:
        if exc.errno in (errno.EACCES, errno.EPERM, errno.EROFS, errno.ENOENT):
            raise CatalogNotWritableError(f"cannot open the catalog {location.display}: {exc.strerror}") from exc
        raise


class CatalogNotWritableError(CatalogError):
    """A SQLite catalog that cannot be opened for its permissions (a read-only folder or file): nothing to
    repair or move aside; reads fall back to the files."""

    exit_code = 2


def _not_writable(exc: sqlite3.OperationalError) -> bool:
    code = getattr(exc, "sqlite_errorcode", None)
    if code is not None:
        return code & 0xFF in (sqlite3.SQLITE_READONLY, sqlite3.SQLITE_CANTOPEN, sqlite3.SQLITE_PERM)
    text = str(exc)
    return "readonly" in text or "unable to open" in text


def _open_server_catalog(location: CatalogLocation, machine: str | None) -> SqlAlchemyCatalog:
    """A catalog on a database server (PostgreSQL), upgraded first when its revision is not this package's."""
    from sqlalchemy.exc import ArgumentError, DBAPIError

    from sessdex.catalog.store.migrate import upgrade_catalog

    try:
        database = SqlAlchemyCatalog(location, machine)
    except ArgumentError as exc:  # an unparseable URL, an unknown kind of database
        lines = str(exc).strip().splitlines()
        raise UsageError(f"--catalog {location.display}: not a usable database URL "
                         f"({lines[0] if lines else type(exc).__name__})") from None
    except ImportError as exc:
        raise CatalogUnavailableError(f"the catalog {location.display} needs a database driver that is not installed "
                                      f"({exc.name}); install it with: pip install 'sessdex[postgres]'") from exc
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


def remove_catalog_files(location: CatalogLocation) -> list[Path]:
    """Delete a SQLite catalog and its WAL/SHM files (the catalog is derived data); return what was removed."""
    if location.sqlite_path is None:
        raise CatalogError("only a SQLite catalog file can be removed and rebuilt; drop the tables yourself")
    removed = []
    for suffix in ("", "-wal", "-shm"):
        target = as_path(f"{location.sqlite_file}{suffix}")
        try:
            target.unlink()
        except FileNotFoundError:
            continue
        removed.append(target)
    return removed

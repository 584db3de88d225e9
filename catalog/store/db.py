"""Where the catalog lives and how it is opened: SQLite in WAL mode, `busy_timeout` on every connection.

Two backends sit behind one seam, `CatalogDatabase`:
- `SqliteCatalog`, the fast path: the stdlib sqlite3 module running the SQL compiled from
  `sessdex.catalog.store.statements` (cached in `sessdex.catalog.store.compiled_sql`), so that a read command on a current
  catalog imports neither SQLAlchemy nor Alembic. Queries run on a read-only connection; writes
  go through a single read-write connection, one `BEGIN IMMEDIATE` transaction at a time.
- `SqlAlchemyCatalog` (`sessdex.catalog.store.server_db`, loaded only for it), for any other SQLAlchemy URL
  (PostgreSQL, shared by several machines): the same statements executed by SQLAlchemy over psycopg 3.
  Everything but full-text search is dialect-neutral.

Every statement about session files is about one machine's rows (`machine`, see
`sessdex.catalog.store.machine`): the backends add this machine as the `machine` parameter unless the
caller names another. `open_catalog` checks the schema revision with one query and runs the Alembic
upgrade (under a file lock, in `sessdex.catalog.store.migrate`) only when the database is missing or older
than this package. A database server that cannot be reached is a `CatalogUnavailableError` (exit 2).
"""

from __future__ import annotations

import contextlib
import errno
import os
import sqlite3

from sessdex.catalog.store.compiled_sql import SCHEMA_OBJECTS, SCHEMA_REVISION, SQL
from sessdex.catalog.store.location import BUSY_TIMEOUT_MS, MMAP_BYTES, CatalogLocation
from sessdex.catalog.store.machine import host_name, with_machine
from sessdex.core.errors import CatalogError
from sessdex.core.paths import as_path

TYPE_CHECKING = False  # see the README's start-up budget
if TYPE_CHECKING:
    from collections.abc import Iterator, Mapping, Sequence
    from pathlib import Path
    from typing import Any, Protocol

# -- the seam ------------------------------------------------------------------------------------------

if TYPE_CHECKING:
    class CatalogDatabase(Protocol):
        """What the indexer and queries need from a catalog database, whatever the backend.

        Defined for the type checker only (importing `typing` would cost every command a few milliseconds): modules
        import it under TYPE_CHECKING, for their annotations.
        """

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

        def revision(self) -> str | None:
            """The Alembic revision the catalog is at (None: none yet)."""

        def integrity_errors(self) -> list[str]:
            """What the database's own integrity checks (and the FTS indexes') report; [] when all is well
            or the backend has no such check."""

        def rebuild_full_text(self) -> bool:
            """Rebuild the FTS indexes from their content tables; False when the backend has none."""

        def close(self) -> None:
            """Close every connection."""


def _uri_path(path: str | os.PathLike[str]) -> str:
    # The characters a SQLite URI filename must escape (urllib.parse would cost the hot path an import).
    return os.fspath(path).replace("%", "%25").replace("?", "%3f").replace("#", "%23")


def _check_sidecars(path: str) -> None:
    """The checks of sessdex.core.private_files on an existing -wal / -shm (two lstat calls when there is none),
    and no catalog that is a symlink (SQLite would write through it)."""
    if os.path.islink(path):
        from sessdex.core.errors import PrivateFileError

        raise PrivateFileError(f"{path} is a symlink; sessdex will not write through it")
    for suffix in ("-wal", "-shm"):
        if os.path.lexists(path + suffix):
            from sessdex.core.private_files import check_private_file

            check_private_file(path + suffix)


def connect_sqlite(path: str | os.PathLike[str], *, readonly: bool) -> sqlite3.Connection:
    """A stdlib connection to the catalog file with busy_timeout (and, read-write, WAL + foreign keys)."""
    mode = "ro" if readonly else "rwc"
    if not readonly:
        from sessdex.core.private_files import check_private_database  # writers only: off the read path

        check_private_database(path)  # a catalog SQLite creates would follow the umask (0644)
    else:
        # A reader too would take in (and, closing last, truncate) a -wal another user planted.
        _check_sidecars(os.fspath(path))
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

    def write(self) -> contextlib.AbstractContextManager[None]:
        if self._writer is None:
            self._writer = connect_sqlite(self._path, readonly=False)
        return _sqlite_transaction(self._writer)

    def writer_connection(self) -> sqlite3.Connection:
        """The read-write connection (for maintenance such as FTS optimize and checkpoints)."""
        if self._writer is None:
            self._writer = connect_sqlite(self._path, readonly=False)
        return self._writer

    def sqlite_reader(self) -> sqlite3.Connection:
        return self._reader

    def sqlite_writer(self) -> sqlite3.Connection:
        return self.writer_connection()

    def revision(self) -> str | None:
        return _revision(self._reader)

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


@contextlib.contextmanager
def _sqlite_transaction(writer: sqlite3.Connection) -> Iterator[None]:
    """`SqliteCatalog.write()`: BEGIN IMMEDIATE, then COMMIT, or ROLLBACK when the block raises."""
    if writer.in_transaction:
        raise RuntimeError("nested catalog write transaction")
    writer.execute("BEGIN IMMEDIATE")
    try:
        yield
    except BaseException:
        writer.rollback()
        raise
    writer.commit()


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


def schema_damage(connection: sqlite3.Connection) -> str | None:
    """What differs between a catalog's schema objects and those of a catalog at SCHEMA_REVISION (a dropped
    table, a renamed column: damage done by hand or by another program), or None when they are the same."""
    rows = connection.execute("SELECT type, name, sql FROM sqlite_master")
    found = {(kind, name, sql or "") for kind, name, sql in rows if not name.startswith("sqlite_")}
    if found == SCHEMA_OBJECTS:
        return None
    missing = sorted(name for _kind, name, _sql in SCHEMA_OBJECTS - found)
    if missing:
        return f"missing or changed: {', '.join(missing[:3])}{', ...' if len(missing) > 3 else ''}"
    unexpected = sorted(name for _kind, name, _sql in found - SCHEMA_OBJECTS)
    return f"not made by sessdex: {', '.join(unexpected[:3])}{', ...' if len(unexpected) > 3 else ''}"


class CatalogSchemaDamagedError(CatalogError):
    """A SQLite catalog at the current revision whose tables or indexes are not the ones sessdex makes: read
    commands answer from the files, and `sessdex doctor` rebuilds it."""


def current_sqlite_catalog(location: CatalogLocation, machine: str | None = None) -> SqliteCatalog | None:
    """The catalog opened on the fast path when its file exists at the current revision, else None;
    CatalogSchemaDamagedError when it is at the current revision with another schema."""
    if location.sqlite_file is None or not os.path.exists(location.sqlite_file):
        return None
    catalog = SqliteCatalog(location, machine)
    try:
        reader = catalog.sqlite_reader()
        if _revision(reader) == SCHEMA_REVISION:
            damage = schema_damage(reader)
            if damage is None:
                return catalog
            raise CatalogSchemaDamagedError(f"the catalog {location.display} is damaged ({damage}); `sessdex doctor` "
                                            "rebuilds it from the session files")
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
        if location.sqlite_file is not None:
            current = current_sqlite_catalog(location, machine)
            if current is None:
                from sessdex.catalog.store.migrate import upgrade_catalog

                upgrade_catalog(location, machine)
            if backend == "sqlalchemy":
                if current is not None:
                    current.close()
                from sessdex.catalog.store.server_db import SqlAlchemyCatalog

                return SqlAlchemyCatalog(location, machine)
            return current if current is not None else SqliteCatalog(location, machine)
        from sessdex.catalog.store.server_db import open_server_catalog

        return open_server_catalog(location, machine)
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


def remove_catalog_files(location: CatalogLocation) -> list[Path]:
    """Delete a SQLite catalog and its WAL/SHM files (derived data); return what was removed."""
    if location.sqlite_path is None:
        raise CatalogError("only a SQLite catalog file can be removed and rebuilt; drop the tables yourself")
    removed: list[Path] = []
    for suffix in ("", "-wal", "-shm"):
        target = as_path(f"{location.sqlite_file}{suffix}")
        try:
            target.unlink()
        except FileNotFoundError:
            continue
        removed.append(target)
    return removed

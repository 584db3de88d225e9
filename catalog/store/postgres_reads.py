"""The catalog on a PostgreSQL server without SQLAlchemy (libpq and psycopg 3 directly): `PostgresCatalog`.

What `sessdex.catalog.store.db.SqliteCatalog` is for a SQLite file, this is for a server: the statements of
`sessdex.catalog.store.statements`, rendered once for PostgreSQL into `sessdex.catalog.store.postgres_sql`
(regenerate with `python -m sessdex.catalog.store.postgres_reads`), run without SQLAlchemy, so that a hot command
(resume, list, recent, continue, search) imports neither SQLAlchemy nor Alembic and pays one round trip per
statement. Reads go through libpq directly (`sessdex.catalog.store.libpq`: importing psycopg alone costs a hot
command several times the rest of its work) until something writes; from the first write on (and where no usable
libpq is found), one psycopg connection serves reads and writes alike, so that a read inside a write transaction
sees that transaction's rows. Reads run in autocommit mode (no BEGIN / COMMIT around them), and a listing or a
resume is one statement per machine's scope. Writes run in `write()` transactions under the same advisory lock
every writer of every machine takes (`sessdex.catalog.store.server_db.WRITE_LOCK_KEY`); `executemany` runs in
psycopg's pipeline mode (one round trip per batch, not per row).

Text loses its NUL characters (PostgreSQL text cannot hold them), booleans given as 0 / 1 are sent as booleans,
and a lost server connection is a `CatalogUnavailableError` (the next call connects again), as on the
SQLAlchemy backend.
"""

from __future__ import annotations

import contextlib
import re
import sys
from collections.abc import Iterator

from sessdex.catalog.store.libpq import ConninfoError, LibpqError, LibpqReader, load_libpq
from sessdex.catalog.store.location import CONNECT_TIMEOUT_SECONDS, CatalogLocation
from sessdex.catalog.store.machine import host_name, with_machine
from sessdex.catalog.store.postgres_sql import BOOLEAN_PARAMS, SQL
from sessdex.core.errors import CatalogError, CatalogUnavailableError

TYPE_CHECKING = False  # typing stays off the hot commands' imports
if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence
    from typing import Any

# The key of the PostgreSQL advisory lock every catalog write transaction holds ("sessdex" in ASCII).
WRITE_LOCK_KEY = 0x73657373646578
# SQLSTATE classes of a lost or refused connection: connection exception (08), a server shutting down (57P),
# a refused login (28), no such database (3D).
_CONNECTION_SQLSTATES = ("08", "57P", "28", "3D")
# `:name` parameters of hand-written SQL (not `::type` casts).
_NAMED_PARAM = re.compile(r"(?<![:\w]):([A-Za-z_]\w*)")


def libpq_url(url: str) -> str:
    """The catalog URL as libpq takes it (`postgresql+psycopg://` is SQLAlchemy's spelling)."""
    for prefix in ("postgresql+psycopg://", "postgres://"):
        if url.startswith(prefix):
            return "postgresql://" + url[len(prefix):]
    return url


def pyformat(sql: str) -> str:
    """Hand-written SQL with `:name` parameters (as sqlite3 takes it) in psycopg's `%(name)s` style."""
    return _NAMED_PARAM.sub(r"%(\1)s", sql.replace("%", "%%"))


def is_connection_problem(exc: BaseException) -> bool:
    """True when a libpq or psycopg error means the server cannot be reached or refused us, not a bad statement."""
    if isinstance(exc, LibpqError):
        return not isinstance(exc, ConninfoError) and (exc.sqlstate is None
                                                       or exc.sqlstate.startswith(_CONNECTION_SQLSTATES))
    psycopg = sys.modules.get("psycopg")  # not imported: the error is not psycopg's
    if psycopg is None:
        return False
    if isinstance(exc, psycopg.InterfaceError):
        return True
    if not isinstance(exc, psycopg.OperationalError):
        return False
    sqlstate = getattr(exc, "sqlstate", None)
    return sqlstate is None or sqlstate.startswith(_CONNECTION_SQLSTATES)


def is_unusable_url(exc: BaseException) -> bool:
    """True when libpq could not parse the catalog URL (through the libpq reader or psycopg)."""
    psycopg = sys.modules.get("psycopg")
    return isinstance(exc, ConninfoError) or (psycopg is not None and isinstance(exc, psycopg.ProgrammingError))


def unavailable(location: CatalogLocation, exc: BaseException) -> CatalogUnavailableError:
    """A one-line error for a catalog server that cannot be reached (down, wrong password, no such database)."""
    cause = getattr(exc, "orig", None) or exc
    lines = [line.strip() for line in str(cause).splitlines() if line.strip()]
    detail = lines[0] if lines else type(cause).__name__
    for noise in ("connection failed: ", "(psycopg.OperationalError) "):
        detail = detail.replace(noise, "")
    return CatalogUnavailableError(f"cannot reach the catalog {location.display}: {detail}")


# The server's refusals a user can act on: a cancelled statement (statement_timeout), a lock wait given up,
# missing privileges, a read-only transaction or server, and the insufficient-resources class (a full disk).
REFUSAL_SQLSTATES = ("57014", "55P03", "42501", "25006", "53")


def is_refusal(exc: BaseException) -> bool:
    """True when the server refused or cancelled a statement for a reason outside sessdex (see REFUSAL_SQLSTATES)."""
    sqlstate = getattr(getattr(exc, "orig", None) or exc, "sqlstate", None) or ""
    return sqlstate.startswith(REFUSAL_SQLSTATES)


def refused(location: CatalogLocation, exc: BaseException) -> CatalogError:
    """One line for a statement the server refused or cancelled (a statement_timeout, a read-only role, a full
    disk): the driver's first line, never SQLAlchemy's dump of the statement and its parameters."""
    cause = getattr(exc, "orig", None) or exc
    lines = [line.strip() for line in str(cause).splitlines() if line.strip()]
    detail = lines[0] if lines else type(cause).__name__
    sqlstate = getattr(cause, "sqlstate", None)
    hint = {"57014": " (the server's statement_timeout? raise it for sessdex's role)",
            "42501": " (the role lacks a privilege: sessdex needs to write its tables)",
            "25006": " (a read-only transaction or server: sessdex needs to write its tables)"}.get(sqlstate or "", "")
    return CatalogError(f"the catalog {location.display} refused a statement: {detail}{hint}")


class PostgresCatalog:
    """The libpq / psycopg 3 backend of `CatalogDatabase` for a PostgreSQL server (see the module docstring)."""

    dialect = "postgresql"

    def __init__(self, location: CatalogLocation, machine: str | None = None) -> None:
        self.location = location
        self.machine = machine or host_name()
        self._connection: Any = None  # psycopg's, from the first write on
        self._reader: LibpqReader | None = None
        self._in_write = False
        with self._reporting_lost_connection():
            if self._read_connection() is None:
                self._connect()

    # -- the connection --------------------------------------------------------------------------------

    def _read_connection(self) -> LibpqReader | None:
        """The libpq reader while psycopg is not connected; None when psycopg serves the reads."""
        if self._connection is None and self._reader is None:
            libpq = load_libpq()
            if libpq is not None:
                self._reader = LibpqReader(libpq, libpq_url(self.location.url), CONNECT_TIMEOUT_SECONDS)
        return self._reader if self._connection is None else None

    def _connect(self) -> Any:
        if self._connection is None:
            import psycopg

            with self._reporting_lost_connection():
                self._close_reader()  # one connection at a time: psycopg's serves the reads from now on
                # Autocommit: a read is one statement, one round trip; write() opens its own transactions.
                # No prepared statements: a short-lived command runs each statement once or twice.
                self._connection = psycopg.connect(libpq_url(self.location.url), autocommit=True,
                                                   connect_timeout=CONNECT_TIMEOUT_SECONDS, prepare_threshold=None)
        return self._connection

    @contextlib.contextmanager
    def _reporting_lost_connection(self) -> Iterator[None]:
        """Inside the block, a lost server connection is dropped and raised as CatalogUnavailableError, and a refused
        statement is raised as one line (`refused`)."""
        try:
            yield
        except Exception as exc:
            psycopg = sys.modules.get("psycopg")
            if not isinstance(exc, LibpqError) and (psycopg is None or not isinstance(exc, psycopg.Error)):
                raise
            if is_refusal(exc):
                raise refused(self.location, exc) from exc
            if not is_connection_problem(exc):
                raise
            self._drop_connection()
            raise unavailable(self.location, exc) from exc

    def _close_reader(self) -> None:
        reader, self._reader = self._reader, None
        if reader is not None:
            reader.close()

    def _drop_connection(self) -> None:
        self._close_reader()
        connection, self._connection = self._connection, None
        if connection is not None:
            with contextlib.suppress(Exception):  # the connection is lost already
                connection.close()

    def connection(self) -> Any:
        """The psycopg connection (for the bulk writer of a first index)."""
        return self._connect()

    # -- statements ------------------------------------------------------------------------------------

    def _params(self, name: str, params: Mapping[str, Any] | None) -> dict[str, Any]:
        values = dict(with_machine(name, params, self.machine))
        for key, value in values.items():
            if type(value) is str and "\x00" in value:
                values[key] = value.replace("\x00", "\ufffd")
        for key in BOOLEAN_PARAMS.get(name, ()):
            value = values.get(key)
            if value is not None:
                values[key] = bool(value)
        return values

    def _rows(self, sql: str, params: Mapping[str, Any], *, tuples: bool) -> list[Any]:
        with self._reporting_lost_connection():
            reader = self._read_connection()
            if reader is not None:
                return reader.rows(sql, params, tuples=tuples)
            from psycopg.rows import dict_row, tuple_row

            cursor = self._connect().cursor(row_factory=tuple_row if tuples else dict_row)
            cursor.execute(sql, params)
            return cursor.fetchall() if cursor.description is not None else []

    def fetchall(self, name: str, params: Mapping[str, Any] | None = None) -> list[Any]:
        return self._rows(SQL[name], self._params(name, params), tuples=False)

    def scalar(self, name: str, params: Mapping[str, Any] | None = None) -> Any:
        rows = self._rows(SQL[name], self._params(name, params), tuples=True)
        return rows[0][0] if rows else None

    def fetch_tuples(self, name: str, params: Mapping[str, Any] | None = None) -> list[tuple[Any, ...]]:
        return self._rows(SQL[name], self._params(name, params), tuples=True)

    def fetch_sql(self, sql: str, params: Mapping[str, Any]) -> list[Any]:
        """Rows (dicts) of hand-written SQL with `:name` parameters (search, substring search)."""
        return self._rows(pyformat(sql), params, tuples=False)

    def fetch_batch(self, statements: Sequence[tuple[str, Mapping[str, Any] | None]]) -> list[list[tuple[Any, ...]]]:
        """The rows (tuples) of each named statement, all sent in one round trip (pipeline mode)."""
        return self._pipelined([(SQL[name], self._params(name, params)) for name, params in statements], tuples=True)

    def fetch_sql_many(self, statements: Sequence[tuple[str, Mapping[str, Any]]], *,
                       index_scans: bool = False) -> list[list[Any]]:
        """The rows (dicts) of each hand-written statement (`:name` parameters), all in one round trip.

        `index_scans`: the statements run in one read transaction that plans no sequential scan where an index
        serves (full-text matches: the planner prices a row's tsvector as cheap to read, but detoasting every
        row's costs several times the GIN index's bitmap of the matching ones)."""
        prepared = [(pyformat(sql), params) for sql, params in statements]
        if not index_scans:
            return self._pipelined(prepared, tuples=False)
        rows = self._pipelined([("BEGIN READ ONLY", {}), ("SET LOCAL enable_seqscan = off", {}), *prepared,
                                ("COMMIT", {})], tuples=False)
        return rows[2:-1]

    def _pipelined(self, statements: Sequence[tuple[str, Mapping[str, Any]]], *, tuples: bool) -> list[list[Any]]:
        if len(statements) == 1:
            return [self._rows(*statements[0], tuples=tuples)]
        with self._reporting_lost_connection():
            reader = self._read_connection()
            if reader is not None:
                return reader.pipelined(statements, tuples=tuples)
            from psycopg.rows import dict_row, tuple_row

            connection = self._connect()
            cursors = []
            try:
                with connection.pipeline():
                    for sql, params in statements:
                        cursor = connection.cursor(row_factory=tuple_row if tuples else dict_row)
                        cursor.execute(sql, params)
                        cursors.append(cursor)
            except BaseException:
                if connection.info.transaction_status != 0:  # a failed statement inside an explicit transaction
                    with contextlib.suppress(Exception):
                        connection.execute("ROLLBACK")
                raise
            return [cursor.fetchall() if cursor.description is not None else [] for cursor in cursors]

    def execute(self, name: str, params: Mapping[str, Any] | None = None) -> None:
        self._require_transaction()
        with self._reporting_lost_connection():
            self._connect().execute(SQL[name], self._params(name, params))

    def executemany(self, name: str, rows: Sequence[Mapping[str, Any]]) -> None:
        self._require_transaction()
        if rows:
            with self._reporting_lost_connection():
                self._connect().cursor().executemany(SQL[name], [self._params(name, row) for row in rows])

    def insert_returning_id(self, name: str, params: Mapping[str, Any]) -> int:
        self._require_transaction()
        with self._reporting_lost_connection():
            sql = SQL[name] if " RETURNING " in SQL[name] else SQL[name] + " RETURNING id"
            row = self._connect().execute(sql, self._params(name, params)).fetchone()
        return row[0]

    def fts_executemany(self, sql: str, rows: Sequence[tuple[Any, ...]]) -> None:
        """A no-op: PostgreSQL's full-text columns are generated from the rows themselves."""
        self._require_transaction()

    def _require_transaction(self) -> None:
        if not self._in_write:
            raise RuntimeError("catalog writes must happen inside CatalogDatabase.write()")

    def write(self) -> contextlib.AbstractContextManager[None]:
        return self._transaction()

    @contextlib.contextmanager
    def _transaction(self) -> Iterator[None]:
        """One write transaction under the advisory write lock: commit, or roll back on a raise."""
        if self._in_write:
            raise RuntimeError("nested catalog write transaction")
        self._in_write = True
        try:
            with self._reporting_lost_connection():
                connection = self._connect()
                connection.execute("BEGIN")
                try:
                    connection.execute("SELECT pg_advisory_xact_lock(%s)", (WRITE_LOCK_KEY,))
                    yield
                except BaseException:
                    if self._connection is not None:
                        with contextlib.suppress(Exception):
                            connection.execute("ROLLBACK")
                    raise
                connection.execute("COMMIT")
        finally:
            self._in_write = False

    # -- the rest of CatalogDatabase ---------------------------------------------------------------------

    def revision(self) -> str | None:
        """The Alembic revision of the database, None when it has none (a new, empty database)."""
        try:
            rows = self._rows("SELECT version_num FROM alembic_version", {}, tuples=True)
        except Exception as exc:
            if getattr(exc, "sqlstate", None) == "42P01":  # undefined_table (libpq's or psycopg's error)
                return None
            raise
        return rows[0][0] if rows else None

    def sqlite_reader(self) -> None:
        return None

    def sqlite_writer(self) -> None:
        return None

    def integrity_errors(self) -> list[str]:
        return []

    def rebuild_full_text(self) -> bool:
        return False

    def close(self) -> None:
        self._drop_connection()


def render_module() -> str:
    """The source of `catalog/store/postgres_sql.py`: every statement rendered for PostgreSQL (imports SQLAlchemy)."""
    from sqlalchemy import Boolean
    from sqlalchemy.dialects.postgresql import psycopg
    from sqlalchemy.sql.compiler import SQLCompiler

    from sessdex.catalog.store.statements import build_statements

    dialect = psycopg.dialect(paramstyle="pyformat")
    lines = [
        '"""GENERATED by `python -m sessdex.catalog.store.postgres_reads` from catalog/store/statements.py: do not edit.',
        "",
        "The statements of the catalog rendered for PostgreSQL (psycopg's `%(name)s` parameters), which",
        "`sessdex.catalog.store.postgres_reads` runs without importing SQLAlchemy; tests/postgres/test_postgres_reads.py",
        "checks they still match.",
        '"""',
        "",
        "SQL: dict[str, str] = {",
    ]
    booleans: dict[str, tuple[str, ...]] = {}
    for name, statement in build_statements().items():
        compiled = statement.compile(dialect=dialect)
        assert isinstance(compiled, SQLCompiler)
        found = tuple(sorted(key for key, bind in compiled.binds.items() if isinstance(bind.type, Boolean)))
        if found:
            booleans[name] = found
        lines.append(f"    {name!r}: (")
        lines.extend(f"        {part!r}" for part in str(compiled).splitlines(keepends=True))
        lines.append("    ),")
    lines += ["}", "", "# Statement -> its parameters of boolean columns (sent as booleans: PostgreSQL has no 0 / 1 for them).",
              "BOOLEAN_PARAMS: dict[str, tuple[str, ...]] = {"]
    lines.extend(f"    {name!r}: {found!r}," for name, found in booleans.items())
    lines.append("}")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    from pathlib import Path

    target = Path(__file__).with_name("postgres_sql.py")
    target.write_text(render_module(), encoding="utf-8")
    sys.stdout.write(f"wrote {target}\n")

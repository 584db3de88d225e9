"""Reads from a PostgreSQL server through libpq's C API over ctypes: `LibpqReader`.

Why: importing psycopg costs a hot command (resume, list, search) about 150 ms of CPU before its first byte to
the server (its package imports asyncio, ssl, logging, importlib.metadata and its error classes), several times
what the command does besides; ctypes and libpq load in a few milliseconds. psycopg itself runs on libpq, so the
connection is made by the same library, from the same URL, environment variables (PGPASSWORD, PGSSLMODE, ...)
and password file as psycopg's would be. psycopg stays for every write, the first index and the migrations.

Which libpq: the one psycopg's binary build ships (`psycopg_binary.libs/` beside the package on Linux and
Windows, `psycopg_binary/.dylibs/` on macOS: the wheel's layout, not an interface, hence the version pin of the
`postgres` extra), else the system's libpq (what psycopg's pure-Python build runs on). None of them, or a libpq
older than 14 (no pipeline mode): `load_libpq()` is None and psycopg serves the reads.

Statements are psycopg's (`%(name)s` parameters), sent with the parameter types psycopg would send: str as
untyped text (the server infers it from where it stands), int as the smallest of smallint / integer / bigint /
numeric that holds it, float as double precision, bool as boolean, None as an untyped NULL. Results come back in
text format and are loaded as psycopg loads them: integers and oids as int, real and double precision as float,
numeric as Decimal, boolean as bool, text types as str; any other column type is a programming error
(`TypeError`), so that a statement returning something new fails the parity tests instead of answering
differently from psycopg.

A connection is used by one thread at a time, as the catalog is.
"""

from __future__ import annotations

import ctypes
import os
import re
import sys

from sessdex.core.errors import CatalogError

TYPE_CHECKING = False  # typing stays off the hot commands' imports
if TYPE_CHECKING:
    from collections.abc import Callable, Mapping, Sequence
    from typing import Any

# The pipeline mode (several statements, one round trip) came with libpq 14.
MINIMUM_LIBPQ_VERSION = 140000
# PQstatus, PQresultStatus, PQtransactionStatus values (libpq-fe.h).
_CONNECTION_OK = 0
_PGRES_COMMAND_OK, _PGRES_TUPLES_OK, _PGRES_PIPELINE_SYNC = 1, 2, 10
_PQTRANS_IDLE = 0
_PG_DIAG_SQLSTATE, _PG_DIAG_MESSAGE_PRIMARY = ord("C"), ord("M")

_UNTYPED, _BOOL, _INT8, _INT2, _INT4, _FLOAT8, _NUMERIC = 0, 16, 20, 21, 23, 701, 1700
_PSYCOPG_PARAM = re.compile(r"%\((\w+)\)s|%%")


class LibpqError(CatalogError):
    """A refused connection or a failed statement: libpq's message, and the server's SQLSTATE when it sent one (a
    connection that could not be made or was cut has none)."""

    def __init__(self, message: str, sqlstate: str | None = None) -> None:
        super().__init__(message)
        self.sqlstate = sqlstate


class ConninfoError(LibpqError):
    """libpq could not parse the connection URL."""


def _decode_text(value: bytes) -> str:
    return value.decode("utf-8")


def _load_bool(value: bytes) -> bool:
    return value == b"t"


def _load_numeric(value: bytes) -> Any:
    from decimal import Decimal  # rare in the hot reads: imported when a numeric column comes back

    return Decimal(value.decode("ascii"))


# Result column type oid -> the loader of its text form (psycopg's text loaders' results).
_LOADERS: dict[int, Callable[[bytes], Any]] = {
    16: _load_bool,
    20: int, 21: int, 23: int, 26: int,  # bigint, smallint, integer, oid
    700: float, 701: float,  # real, double precision
    1700: _load_numeric,
    18: _decode_text, 19: _decode_text, 25: _decode_text, 705: _decode_text,  # "char", name, text, unknown
    1042: _decode_text, 1043: _decode_text,  # character, character varying
}


def candidate_paths() -> list[str]:
    """Where libpq may be, in order: psycopg's binary build's copy, then the system's."""
    import importlib.util

    found = []
    spec = importlib.util.find_spec("psycopg_binary")  # finds the package without importing it
    if spec is not None and spec.submodule_search_locations:
        package = list(spec.submodule_search_locations)[0]
        for folder in (package + ".libs", os.path.join(package, ".dylibs")):
            if os.path.isdir(folder):
                found += sorted(os.path.join(folder, name) for name in os.listdir(folder) if name.startswith("libpq"))
    system = {"darwin": ["libpq.5.dylib"], "win32": ["libpq.dll"]}.get(sys.platform, ["libpq.so.5"])
    return found + system


_libpq: Any = None
_libpq_looked_for = False


def load_libpq() -> Any:
    """The first usable libpq of `candidate_paths()` (loaded once per process), or None when there is none."""
    global _libpq, _libpq_looked_for
    if not _libpq_looked_for:
        _libpq_looked_for = True
        for path in candidate_paths():
            _libpq = open_libpq(path)
            if _libpq is not None:
                break
    return _libpq


def open_libpq(path: str) -> Any:
    """The libpq at `path` (a file, or a name the dynamic loader looks up) with the signatures this module calls;
    None when it cannot be loaded or is older than MINIMUM_LIBPQ_VERSION."""
    try:
        library = ctypes.CDLL(path)
    except OSError:
        return None
    if not hasattr(library, "PQenterPipelineMode") or library.PQlibVersion() < MINIMUM_LIBPQ_VERSION:
        return None
    return _declare(library)


def _declare(library: Any) -> Any:
    pointer, text, number = ctypes.c_void_p, ctypes.c_char_p, ctypes.c_int
    texts = ctypes.POINTER(ctypes.c_char_p)
    signatures: dict[str, tuple[Any, list[Any]]] = {
        "PQconninfoParse": (pointer, [text, ctypes.POINTER(ctypes.c_void_p)]),
        "PQconninfoFree": (None, [pointer]),
        "PQfreemem": (None, [pointer]),
        "PQconnectdbParams": (pointer, [texts, texts, number]),
        "PQstatus": (number, [pointer]),
        "PQerrorMessage": (text, [pointer]),
        "PQtransactionStatus": (number, [pointer]),
        "PQfinish": (None, [pointer]),
        "PQexec": (pointer, [pointer, text]),
        "PQexecParams": (pointer, [pointer, text, number, ctypes.POINTER(ctypes.c_uint), texts, pointer, pointer,
                                   number]),
        "PQsendQueryParams": (number, [pointer, text, number, ctypes.POINTER(ctypes.c_uint), texts, pointer, pointer,
                                       number]),
        "PQenterPipelineMode": (number, [pointer]),
        "PQexitPipelineMode": (number, [pointer]),
        "PQpipelineSync": (number, [pointer]),
        "PQgetResult": (pointer, [pointer]),
        "PQresultStatus": (number, [pointer]),
        "PQresultErrorField": (text, [pointer, number]),
        "PQresultErrorMessage": (text, [pointer]),
        "PQclear": (None, [pointer]),
        "PQntuples": (number, [pointer]),
        "PQnfields": (number, [pointer]),
        "PQfname": (text, [pointer, number]),
        "PQftype": (ctypes.c_uint, [pointer, number]),
        "PQgetvalue": (text, [pointer, number, number]),
        "PQgetisnull": (number, [pointer, number, number]),
    }
    for name, (restype, argtypes) in signatures.items():
        function = getattr(library, name)
        function.restype, function.argtypes = restype, argtypes
    return library


def _first_line(message: bytes | None, fallback: str) -> str:
    lines = [line.strip() for line in (message or b"").decode("utf-8", "replace").splitlines() if line.strip()]
    return lines[0] if lines else fallback


def _positional(sql: str) -> tuple[bytes, tuple[str, ...]]:
    """psycopg's `%(name)s` statement as libpq takes it (`$1`, ...), and the parameter name of each position."""
    names: list[str] = []

    def number(match: re.Match[str]) -> str:
        name = match.group(1)
        if name is None:
            return "%"
        if name not in names:
            names.append(name)
        return f"${names.index(name) + 1}"

    return _PSYCOPG_PARAM.sub(number, sql).encode("utf-8"), tuple(names)


def _param(value: Any) -> tuple[int, bytes | None]:
    """The type oid and text form psycopg would send for one parameter."""
    kind = type(value)
    if value is None:
        return _UNTYPED, None
    if kind is str:
        return _UNTYPED, value.encode("utf-8")
    if kind is bool:
        return _BOOL, b"t" if value else b"f"
    if kind is int:
        oid = (_INT2 if -(1 << 15) <= value < 1 << 15 else _INT4 if -(1 << 31) <= value < 1 << 31
               else _INT8 if -(1 << 63) <= value < 1 << 63 else _NUMERIC)
        return oid, str(value).encode("ascii")
    if kind is float:
        text = "NaN" if value != value else "Infinity" if value == float("inf") else "-Infinity" \
            if value == float("-inf") else repr(value)
        return _FLOAT8, text.encode("ascii")
    raise TypeError(f"cannot send a {kind.__name__} parameter to PostgreSQL through libpq")


class LibpqReader:
    """One autocommit connection for reads (see the module docstring); `LibpqError` on a failure."""

    def __init__(self, libpq: Any, url: str, connect_timeout: int) -> None:
        self._pq = libpq
        self._statements: dict[str, tuple[bytes, tuple[str, ...]]] = {}
        error = ctypes.c_void_p()
        options = libpq.PQconninfoParse(url.encode("utf-8"), ctypes.byref(error))
        if not options:
            message = ctypes.cast(error, ctypes.c_char_p).value
            if error:
                libpq.PQfreemem(error)
            raise ConninfoError(_first_line(message, "invalid connection URL"))
        libpq.PQconninfoFree(options)
        # The URL is expanded in place of `dbname`; the later keywords override what it says, as psycopg's do.
        keywords = [b"dbname", b"connect_timeout", b"client_encoding", None]
        values = [url.encode("utf-8"), str(connect_timeout).encode("ascii"), b"UTF8", None]
        self._connection = libpq.PQconnectdbParams((ctypes.c_char_p * 4)(*keywords), (ctypes.c_char_p * 4)(*values), 1)
        if not self._connection:
            raise LibpqError("out of memory")
        if libpq.PQstatus(self._connection) != _CONNECTION_OK:
            reason = _first_line(libpq.PQerrorMessage(self._connection), "connection failed")
            self.close()
            raise LibpqError(reason)

    def close(self) -> None:
        connection, self._connection = self._connection, None
        if connection:
            self._pq.PQfinish(connection)

    def rows(self, sql: str, params: Mapping[str, Any], *, tuples: bool) -> list[Any]:
        """The rows of one statement: tuples, or dicts keyed by column name."""
        text, count, types, values = self._prepared(sql, params)
        result = self._pq.PQexecParams(self._connection, text, count, types, values, None, None, 0)
        try:
            return self._loaded(result, tuples=tuples)
        finally:
            self._pq.PQclear(result)

    def pipelined(self, statements: Sequence[tuple[str, Mapping[str, Any]]], *, tuples: bool) -> list[list[Any]]:
        """The rows of each statement, all sent in one round trip (libpq's pipeline mode)."""
        pq, connection = self._pq, self._connection
        if not pq.PQenterPipelineMode(connection):
            raise self._connection_error()
        answers: list[list[Any]] = []
        failure: Exception | None = None
        try:
            for sql, params in statements:
                if not pq.PQsendQueryParams(connection, *self._prepared(sql, params), None, None, 0):
                    raise self._connection_error()
            if not pq.PQpipelineSync(connection):
                raise self._connection_error()
            for _statement in statements:
                result = pq.PQgetResult(connection)
                if not result:
                    raise self._connection_error()
                try:
                    if failure is None:
                        answers.append(self._loaded(result, tuples=tuples))
                except Exception as exc:
                    failure = exc  # the statements after it are aborted: their results are read and dropped
                finally:
                    pq.PQclear(result)
                while extra := pq.PQgetResult(connection):  # the NULL that ends each statement's results
                    pq.PQclear(extra)
            sync = pq.PQgetResult(connection)
            if not sync or pq.PQresultStatus(sync) != _PGRES_PIPELINE_SYNC:
                if sync:
                    pq.PQclear(sync)
                raise self._connection_error()
            pq.PQclear(sync)
        finally:
            if self._connection:
                pq.PQexitPipelineMode(connection)
                if failure is not None and pq.PQtransactionStatus(connection) != _PQTRANS_IDLE:
                    pq.PQclear(pq.PQexec(connection, b"ROLLBACK"))  # a failed statement in an explicit transaction
        if failure is not None:
            raise failure
        return answers

    def _prepared(self, sql: str, params: Mapping[str, Any]) -> tuple[bytes, int, Any, Any]:
        if sql not in self._statements:
            self._statements[sql] = _positional(sql)
        text, names = self._statements[sql]
        sent = [_param(params[name]) for name in names]
        count = len(sent)
        types = (ctypes.c_uint * count)(*(oid for oid, _value in sent))
        values = (ctypes.c_char_p * count)(*(value for _oid, value in sent))
        return text, count, types, values

    def _connection_error(self) -> LibpqError:
        return LibpqError(_first_line(self._pq.PQerrorMessage(self._connection), "lost the server connection"))

    def _loaded(self, result: Any, *, tuples: bool) -> list[Any]:
        pq = self._pq
        if not result:
            raise self._connection_error()
        status = pq.PQresultStatus(result)
        if status == _PGRES_COMMAND_OK:
            return []
        if status != _PGRES_TUPLES_OK:
            sqlstate = pq.PQresultErrorField(result, _PG_DIAG_SQLSTATE)
            message = pq.PQresultErrorField(result, _PG_DIAG_MESSAGE_PRIMARY) or pq.PQresultErrorMessage(result)
            raise LibpqError(_first_line(message, "the statement failed"), sqlstate.decode("ascii") if sqlstate else None)
        columns = range(pq.PQnfields(result))
        loaders = []
        for column in columns:
            oid = pq.PQftype(result, column)
            if oid not in _LOADERS:
                raise TypeError(f"no loader for PostgreSQL type oid {oid} (column {column})")
            loaders.append((column, _LOADERS[oid]))
        getvalue, isnull = pq.PQgetvalue, pq.PQgetisnull
        loaded = [tuple([None if value == b"" and isnull(result, row, column) else load(value)
                         for column, load in loaders for value in (getvalue(result, row, column),)])
                  for row in range(pq.PQntuples(result))]
        if tuples:
            return loaded
        names = [pq.PQfname(result, column).decode("utf-8") for column in columns]
        return [dict(zip(names, row)) for row in loaded]

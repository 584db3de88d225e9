"""sessdex's libpq reader (catalog/store/libpq.py) on the real server: the libpq it finds, values and types equal
to psycopg's, parameters typed as psycopg types them, pipelines, errors (down, refused, lost, a bad URL), the URL
forms users write (TCP with a password, a Unix socket folder, an escaped password, PGPASSWORD), and the catalog's
answers through it equal to the file scan's and to psycopg's."""

from __future__ import annotations

import os
from pathlib import Path

import psycopg
import pytest
from psycopg.rows import dict_row

from sessdex.catalog.queries.sessions import Catalog
from sessdex.catalog.store import postgres_reads
from sessdex.catalog.store.libpq import (
    MINIMUM_LIBPQ_VERSION,
    ConninfoError,
    LibpqError,
    LibpqReader,
    candidate_paths,
    load_libpq,
    open_libpq,
)
from sessdex.catalog.store.location import resolve_location
from sessdex.catalog.store.postgres_reads import PostgresCatalog, is_connection_problem, pyformat
from sessdex.core.errors import CatalogError, CatalogUnavailableError
from tests.catalog.catalog_support import session_fields
from tests.catalog.test_parity import assert_parity
from tests.postgres.test_postgres_parity import SEARCH_WORDS
from tests.postgres.test_postgres_parity import _corpus as parity_corpus
from tests.postgres_server import PASSWORD, USER, PostgresServer, free_port

# The system's libpq (what psycopg's pure-Python build runs on), when this machine has a recent enough one.
SYSTEM_LIBPQ = open_libpq(candidate_paths()[-1])


def _reader(url: str, library=None) -> LibpqReader:
    return LibpqReader(library or load_libpq(), url, 10)


def _socket_url(server: PostgresServer, tcp_url: str) -> str:
    """The database of `tcp_url` over the server's Unix socket (local connections need no password)."""
    return f"postgresql://{USER}@/{tcp_url.rsplit('/', 1)[1]}?host={server.base}&port={server.port}"


def _psycopg_rows(url: str, sql: str, params: dict) -> list[dict]:
    with psycopg.connect(url, autocommit=True, prepare_threshold=None) as connection:
        return connection.cursor(row_factory=dict_row).execute(sql, params).fetchall()


def _typed(rows: list[dict]) -> list[list[tuple[str, type, str]]]:
    """Each value with its type and repr (NaN equals nothing, its repr does)."""
    return [[(name, type(value), repr(value)) for name, value in row.items()] for row in rows]


def test_the_libpq_of_psycopgs_binary_build_is_found_first():
    # The folder is the binary wheel's layout, not an interface: this fails when a psycopg release moves it.
    first = candidate_paths()[0]
    assert os.path.basename(os.path.dirname(first)) in ("psycopg_binary.libs", ".dylibs"), first
    assert load_libpq() is not None
    assert load_libpq().PQlibVersion() >= MINIMUM_LIBPQ_VERSION
    assert open_libpq(str(Path(first).with_name("no-such-libpq.so"))) is None


COLUMNS = ("SELECT 2::int2 AS i2, 3::int4 AS i4, 9007199254740993::int8 AS i8, 26::oid AS oid, "
           "0.1::float4 AS f4, 0.1::float8 AS f8, 'NaN'::float8 AS nan, 'Infinity'::float8 AS inf, "
           "'-Infinity'::float4 AS ninf, 12.50::numeric AS num, 'NaN'::numeric AS num_nan, true AS yes, false AS no, "
           "''::text AS empty, 'x'::varchar AS v, 'y'::char(3) AS c, 'pg_class'::name AS n, 'é 中文 🙂 e\u0301'::text AS u, "
           "NULL::int8 AS null_int, NULL::text AS null_text, NULL::bool AS null_bool, NULL::float8 AS null_float, "
           "'50%%' AS percent, ts_rank(to_tsvector('simple', 'a b a'), to_tsquery('simple', 'a')) AS rank")


@pytest.mark.parametrize("library", ["binary build's", "system's"])
@pytest.mark.parametrize("over", ["tcp", "socket"])
def test_every_column_type_of_the_catalog_loads_as_psycopg_loads_it(postgres_server: PostgresServer,
                                                                      postgres_url: str, over: str, library: str):
    if library == "system's" and SYSTEM_LIBPQ is None:
        pytest.skip("no system libpq 14 or later on this machine")
    url = postgres_url if over == "tcp" else _socket_url(postgres_server, postgres_url)
    reader = _reader(url, SYSTEM_LIBPQ if library == "system's" else None)
    try:
        found = reader.rows(COLUMNS, {}, tuples=False)
        assert _typed(found) == _typed(_psycopg_rows(url, COLUMNS, {}))
        assert [type(value) for value in reader.rows(COLUMNS, {}, tuples=True)[0]] == [
            type(value) for value in found[0].values()]
        # many rows, NULLs among them
        many = "SELECT g, CASE WHEN g %% 3 = 0 THEN NULL ELSE 'r' || g END AS t FROM generate_series(1, 5000) g"
        assert reader.rows(many, {}, tuples=False) == _psycopg_rows(url, many, {})
    finally:
        reader.close()


def test_a_column_of_a_type_without_a_loader_is_a_programming_error(postgres_url: str):
    reader = _reader(postgres_url)
    try:
        with pytest.raises(TypeError, match="oid 1184"):  # timestamptz: the catalog stores times as text and ints
            reader.rows("SELECT now() AS at", {}, tuples=True)
        assert reader.rows("SELECT 1 AS one", {}, tuples=True) == [(1,)]
    finally:
        reader.close()


PARAMS = {"small": 7, "int4": 40_000, "int8": 2**40, "huge": 2**70, "negative": -(2**15), "ratio": 1.5,
          "nan": float("nan"), "inf": float("-inf"), "yes": True, "no": False,
          "text": "é 中文 🙂 e\u0301 ' \" \\ %(x)s", "empty": ""}


def test_parameters_are_sent_with_psycopgs_types_and_come_back_equal(postgres_url: str):
    reader = _reader(postgres_url)
    try:
        for name, value in PARAMS.items():
            sql = f"SELECT pg_typeof(%({name})s)::text AS type, %({name})s AS value, %({name})s AS again"
            if isinstance(value, str):
                sql = f"SELECT %({name})s || '' AS value, %({name})s = %({name})s AS same"
            assert _typed(reader.rows(sql, {name: value}, tuples=False)) == _typed(
                _psycopg_rows(postgres_url, sql, {name: value})), name
        # NULL and text are sent untyped: where nothing tells their type, the server refuses both drivers alike
        for value in (None, "text"):
            with pytest.raises(psycopg.Error) as by_psycopg:
                _psycopg_rows(postgres_url, "SELECT pg_typeof(%(v)s) AS v", {"v": value})
            with pytest.raises(LibpqError) as by_libpq:
                reader.rows("SELECT pg_typeof(%(v)s) AS v", {"v": value}, tuples=True)
            assert by_libpq.value.sqlstate == by_psycopg.value.sqlstate == "42P18"
        assert reader.rows("SELECT %(v)s::int IS NULL AS missing", {"v": None}, tuples=True) == [(True,)]
        # hand-written SQL with `:name` parameters, a cast and a percent sign
        sql = pyformat("SELECT :a::int + :a AS twice, 'x%' AS percent, :b AS b")
        assert reader.rows(sql, {"a": 4, "b": "y", "unused": 1}, tuples=False) == [{"twice": 8, "percent": "x%",
                                                                                   "b": "y"}]
        with pytest.raises(TypeError, match="bytes"):
            reader.rows("SELECT %(v)s AS v", {"v": b"raw"}, tuples=True)
    finally:
        reader.close()


def test_a_pipeline_answers_each_statement_and_a_failed_one_leaves_the_connection_usable(postgres_url: str):
    reader = _reader(postgres_url)
    try:
        statements = [("SELECT %(a)s::int AS a", {"a": 1}), ("SELECT 'two' AS b", {}),
                      ("SELECT g FROM generate_series(1, 3) g", {})]
        assert reader.pipelined(statements, tuples=False) == [[{"a": 1}], [{"b": "two"}], [{"g": 1}, {"g": 2}, {"g": 3}]]
        with pytest.raises(LibpqError) as failed:
            reader.pipelined([("SELECT 1 AS one", {}), ("SELECT 1 / 0 AS no", {}), ("SELECT 2 AS two", {})],
                             tuples=True)
        assert failed.value.sqlstate == "22012" and "division by zero" in str(failed.value)
        assert not is_connection_problem(failed.value)
        # a failed statement inside an explicit transaction: rolled back, the setting with it
        with pytest.raises(LibpqError):
            reader.pipelined([("BEGIN READ ONLY", {}), ("SET LOCAL enable_seqscan = off", {}),
                              ("SELECT 1 / 0 AS no", {}), ("COMMIT", {})], tuples=True)
        assert reader.rows("SHOW enable_seqscan", {}, tuples=True) == [("on",)]
        assert reader.pipelined(statements[:2], tuples=True) == [[(1,)], [("two",)]]
    finally:
        reader.close()


@pytest.mark.parametrize("form", ["password", "postgres scheme", "sqlalchemy scheme", "socket", "socket in host",
                                  "escaped password", "PGPASSWORD", "sslmode disable"])
def test_the_url_forms_users_write_connect(postgres_server: PostgresServer, postgres_url: str, form: str,
                                           tmp_path: Path, monkeypatch):
    database = postgres_url.rsplit("/", 1)[1]
    port, base = postgres_server.port, postgres_server.base
    if form == "escaped password":
        with psycopg.connect(postgres_url, autocommit=True) as admin:
            admin.execute("DROP ROLE IF EXISTS odd_role")
            admin.execute("CREATE ROLE odd_role LOGIN SUPERUSER PASSWORD 'p@ss/w:rd%?#'")
    if form == "PGPASSWORD":
        monkeypatch.setenv("PGPASSWORD", PASSWORD)
    url = {"password": postgres_url,
           "postgres scheme": postgres_url.replace("postgresql://", "postgres://"),
           "sqlalchemy scheme": postgres_url.replace("postgresql://", "postgresql+psycopg://"),
           "socket": f"postgresql://{USER}@/{database}?host={base}&port={port}",
           "socket in host": f"postgresql://{USER}@{str(base).replace('/', '%2F')}:{port}/{database}",
           "escaped password": f"postgresql://odd_role:p%40ss%2Fw%3Ard%25%3F%23@127.0.0.1:{port}/{database}",
           "PGPASSWORD": f"postgresql://{USER}@127.0.0.1:{port}/{database}",
           "sslmode disable": postgres_url + "?sslmode=disable"}[form]
    location = resolve_location(tmp_path / "agent", url)
    database_object = PostgresCatalog(location, "laptop")
    try:
        assert database_object._reader is not None  # the reads go through libpq
        assert database_object.revision() is None  # an empty database: no alembic_version table
        assert database_object.fetch_sql("SELECT current_user AS who, :x::int AS x", {"x": 3}) == [
            {"who": "odd_role" if form == "escaped password" else USER, "x": 3}]
    finally:
        database_object.close()


def test_connection_problems_are_one_line_in_the_exception_tree(postgres_server: PostgresServer, postgres_url: str,
                                                                 tmp_path: Path):
    def problem(url: str) -> LibpqError:
        with pytest.raises(LibpqError) as raised:
            _reader(url)
        assert "\n" not in str(raised.value) and isinstance(raised.value, CatalogError)
        return raised.value

    down = problem(f"postgresql://{USER}:{PASSWORD}@127.0.0.1:{free_port()}/postgres")
    assert down.sqlstate is None and is_connection_problem(down) and "Connection refused" in str(down)
    assert is_connection_problem(problem(postgres_server.url(password="not-the-password")))
    assert is_connection_problem(problem(postgres_server.url("no_such_database")))
    assert "password authentication failed" in str(problem(postgres_server.url(password="wrong")))
    bad_url = problem("postgresql://host:notaport/db?nonsense=1")
    assert isinstance(bad_url, ConninfoError) and not is_connection_problem(bad_url)
    # through the catalog: a server that goes away mid-session is CatalogUnavailableError, then reconnected
    database = PostgresCatalog(resolve_location(tmp_path / "agent", postgres_url), "laptop")
    try:
        assert database.fetch_sql("SELECT 1 AS one", {}) == [{"one": 1}]
        with psycopg.connect(postgres_url, autocommit=True) as admin:
            admin.execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                          "WHERE datname = current_database() AND pid <> pg_backend_pid()")
        with pytest.raises(CatalogUnavailableError, match="cannot reach the catalog"):
            database.fetch_sql("SELECT 1 AS one", {})
        assert database.fetch_sql("SELECT 2 AS two", {}) == [{"two": 2}]
    finally:
        database.close()


def test_the_catalogs_answers_through_libpq_equal_the_file_scan_and_psycopgs(tmp_path: Path, postgres_url: str):
    paths, cwds = parity_corpus(tmp_path)
    location = resolve_location(paths.agent_dir, postgres_url)
    with Catalog(paths, location, machine="laptop") as indexing:
        indexing.list_all_sessions()  # indexes the corpus (through psycopg: it writes)
    with Catalog(paths, location, machine="laptop") as through_libpq, \
            Catalog(paths, location, machine="laptop") as through_psycopg:
        through_psycopg.db.connection()  # psycopg connected: it serves the reads
        assert through_libpq.db._reader is not None and through_psycopg.db._reader is None
        assert assert_parity(paths, through_libpq, cwds) > 50
        assert through_libpq.db._connection is None, "a fresh catalog's reads wrote nothing"
        for catalog in (through_libpq, through_psycopg):
            assert catalog.db.dialect == "postgresql"
        assert ([session_fields(info) for info in through_libpq.list_all_sessions()]
                == [session_fields(info) for info in through_psycopg.list_all_sessions()])
        for word in SEARCH_WORDS:
            for cwd in (None, cwds[1]):
                answers = [[(hit.session.id, hit.field, hit.snippet, hit.score) for hit in catalog.search(word, cwd, limit=50)]
                           for catalog in (through_libpq, through_psycopg)]
                assert answers[0] == answers[1], (word, cwd)
        assert through_libpq.db._connection is None


def test_without_a_usable_libpq_psycopg_serves_the_reads(tmp_path: Path, postgres_url: str, monkeypatch):
    monkeypatch.setattr(postgres_reads, "load_libpq", lambda: None)
    database = PostgresCatalog(resolve_location(tmp_path / "agent", postgres_url), "laptop")
    try:
        assert database._reader is None and database._connection is not None
        assert database.revision() is None
        assert database.fetch_sql_many([("SELECT :a::int AS a", {"a": 1}), ("SELECT 'b' AS b", {})]) == [
            [{"a": 1}], [{"b": "b"}]]
    finally:
        database.close()


def test_the_first_write_moves_every_read_to_psycopgs_connection(tmp_path: Path, postgres_url: str):
    database = PostgresCatalog(resolve_location(tmp_path / "agent", postgres_url), "laptop")
    try:
        with database.write():  # the reads inside see the transaction's own rows: one connection serves both
            assert database._reader is None
            database.connection().execute("CREATE TABLE t (x int)")
            database.connection().execute("INSERT INTO t VALUES (5)")
            assert database.fetch_sql("SELECT x FROM t", {}) == [{"x": 5}]
        assert database.fetch_sql("SELECT x FROM t", {}) == [{"x": 5}] and database._reader is None
    finally:
        database.close()

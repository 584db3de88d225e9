"""A first index into a PostgreSQL catalog goes through the COPY bulk writer: its rows equal SQLite's, two machines
indexing at once get ids of their own, and readers see committed batches while it runs."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import psycopg
from gen_corpus import generate_corpus

from sessdex.catalog.queries.sessions import Catalog
from sessdex.catalog.store.location import resolve_location
from sessdex.core.paths import AgentPaths
from tests.catalog.catalog_support import assistant, header, jsonl, user, write_file
from tests.catalog.test_parity import NOW_MS

# Every column of the tables a first index writes, rows keyed by path (ids differ between catalogs).
FILE_COLUMNS = ("path", "directory", "size", "mtime_ns", "indexed_offset", "head_length", "head_digest",
                "summary_state", "unparseable_lines", "pending_unparseable", "header_valid", "session_id", "cwd",
                "title", "header_title", "short_summary", "parent_session", "created", "message_count",
                "entry_count", "first_message", "prefix_state", "last_entry_id", "last_model", "input_tokens",
                "output_tokens", "cache_read_tokens", "cache_write_tokens", "cost_total")
TABLE_QUERIES = {
    "session_files": f"SELECT {', '.join(FILE_COLUMNS)} FROM session_files WHERE machine = :m ORDER BY path",
    "messages": "SELECT f.path, m.seq, m.pending, m.text FROM messages m JOIN session_files f ON f.id = m.file_id "
                "WHERE f.machine = :m ORDER BY f.path, m.seq",
    "usage_facts": "SELECT f.path, u.pending, u.copied, u.entry_id, u.ts_ms, u.model, u.input_tokens, u.cost_nanos "
                   "FROM usage_facts u JOIN session_files f ON f.id = u.file_id WHERE f.machine = :m "
                   "ORDER BY f.path, u.entry_id, u.ts_ms",
    "usage_rollup": "SELECT f.path, r.day_local, r.model, r.input_tokens, r.cost_nanos, r.messages FROM usage_rollup r "
                    "JOIN session_files f ON f.id = r.file_id WHERE r.machine = :m ORDER BY f.path, r.day_local, r.model",
    # A session row's key is its file's id: its path stands for it.
    "usage_totals": "SELECT t.kind, t.scope, CASE WHEN t.kind = 'session' THEN f.path ELSE t.key END AS k, t.model, "
                    "t.input_tokens, t.cost_nanos, t.messages, t.sessions FROM usage_totals t "
                    "LEFT JOIN session_files f ON f.id = t.file_id WHERE t.machine = :m ORDER BY t.kind, t.scope, k, "
                    "t.model",
}


def _corpus(root: Path, sessions: int, seed: int, total_bytes: int) -> AgentPaths:
    paths = AgentPaths(agent_dir=root / "home" / ".xcsh" / "agent", home=root / "home", tmp_dir=Path("/tmp"))
    generate_corpus(paths.agent_dir, sessions=sessions, projects=3, total_bytes=total_bytes, seed=seed,
                    home=paths.home, now=NOW_MS / 1000)
    return paths


def _normal(value: Any) -> Any:
    """A value as both backends return it (SQLite has no booleans, PostgreSQL sums BIGINTs as Decimals)."""
    if isinstance(value, bool):
        return int(value)
    if type(value).__name__ == "Decimal":
        return int(value)
    return value


def _cli_index(paths: AgentPaths, catalog: str, machine: str, cwd: Path,
               env: dict[str, str] | None = None) -> subprocess.Popen[str]:
    env = {**os.environ, **(env or {}), "SESSDEX_MACHINE": machine}
    env.pop("SESSDEX_CATALOG", None)
    return subprocess.Popen([sys.executable, "-m", "sessdex.catalog", "--agent-dir", str(paths.agent_dir),
                             "--catalog", catalog, "index"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=env, cwd=cwd)


def _indexed(paths: AgentPaths, catalog: str, machine: str, cwd: Path, env: dict[str, str] | None = None) -> None:
    run = _cli_index(paths, catalog, machine, cwd, env)
    _out, err = run.communicate(timeout=120)
    assert run.returncode == 0, err


def _rows(paths: AgentPaths, url: str, machine: str) -> dict[str, list[tuple[Any, ...]]]:
    """Every row a first index of `machine` wrote, without ids (the catalog is read as it is, never indexed)."""
    with Catalog(paths, resolve_location(paths.agent_dir, url), machine=machine) as catalog:
        return _table_rows(catalog, machine)


def _table_rows(catalog: Catalog, machine: str) -> dict[str, list[tuple[Any, ...]]]:
    found = {}
    for table, sql in TABLE_QUERIES.items():
        reader = catalog.db.sqlite_reader()
        if reader is not None:
            rows = reader.execute(sql.replace(":m", "?"), (machine,)).fetchall()
        else:
            rows = catalog.db.fetch_sql(sql, {"m": machine})  # type: ignore[attr-defined]
            rows = [tuple(row.values()) for row in rows]
        found[table] = [tuple(_normal(value) for value in row) for row in rows]
    return found


def test_a_bulk_first_index_writes_the_rows_sqlite_writes_and_reports_its_figures(tmp_path: Path, postgres_url: str):
    paths = _corpus(tmp_path, sessions=40, seed=5, total_bytes=1_200_000)
    folder = paths.sessions_root / "odd"
    write_file(folder / "nul.jsonl", jsonl([header("7777000000000001", "/work/odd", title="nul\x00title"),
                                            user("a NUL \x00 inside"), assistant("fine")]), NOW_MS - 5000)
    stats = tmp_path / "stats.jsonl"
    _indexed(paths, postgres_url, "laptop", tmp_path, {"SESSDEX_INDEX_STATS": str(stats)})
    figures = [json.loads(line) for line in stats.read_text().splitlines()]
    assert [figure["files"] for figure in figures] == [41]  # one bulk run took every file
    sqlite_db = str(tmp_path / "catalog.db")
    _indexed(paths, sqlite_db, "laptop", tmp_path)
    expected = _rows(paths, sqlite_db, "laptop")
    found = _rows(paths, postgres_url, "laptop")
    assert len(expected["messages"]) > 100 and len(expected["usage_totals"]) > 50
    nul_free = {table: [tuple(value.replace("\x00", "\ufffd") if isinstance(value, str) else value for value in row)
                        for row in rows] for table, rows in expected.items()}
    for table in TABLE_QUERIES:
        assert found[table] == nul_free[table], table


def test_two_machines_bulk_index_at_once_and_readers_see_each_committed_batch(tmp_path: Path, postgres_url: str):
    laptop = _corpus(tmp_path / "laptop", sessions=150, seed=21, total_bytes=5_000_000)
    devbox = _corpus(tmp_path / "devbox", sessions=150, seed=22, total_bytes=5_000_000)
    with Catalog(laptop, resolve_location(laptop.agent_dir, postgres_url), machine="laptop") as catalog:
        catalog.db.fetchall("count_files")  # creates the schema before both machines start
    runs = [_cli_index(laptop, postgres_url, "laptop", tmp_path), _cli_index(devbox, postgres_url, "devbox", tmp_path)]
    seen: set[tuple[int, int]] = set()
    with psycopg.connect(postgres_url, autocommit=True) as reader:
        reader.execute("SET lock_timeout = '2s'")  # a reader locked out fails the test instead of waiting
        while any(run.poll() is None for run in runs):
            counts = dict(reader.execute("SELECT machine, count(*) FROM session_files GROUP BY machine").fetchall())
            reader.execute("SELECT count(*) FROM messages").fetchone()
            seen.add((counts.get("laptop", 0), counts.get("devbox", 0)))
            time.sleep(0.02)
    for run in runs:
        _out, err = run.communicate()
        assert run.returncode == 0, err
    assert (150, 150) in seen
    # A reader sees committed work before both runs end: a batch of one machine, or one machine done first (a
    # loaded machine may write a run in one batch).
    assert any(state not in {(0, 0), (150, 150)} for state in seen), seen
    for paths, machine in ((laptop, "laptop"), (devbox, "devbox")):
        sqlite_db = str(tmp_path / f"{machine}.db")
        _indexed(paths, sqlite_db, machine, tmp_path)
        expected = _rows(paths, sqlite_db, machine)
        found = _rows(paths, postgres_url, machine)
        for table in TABLE_QUERIES:
            assert found[table] == expected[table], (machine, table)
    with psycopg.connect(postgres_url, autocommit=True) as connection:
        # The ordinary writer's next file row must not collide with the rows the bulk runs wrote.
        last, largest = connection.execute("SELECT (SELECT last_value FROM session_files_id_seq), "
                                           "(SELECT max(id) FROM session_files)").fetchone()
        assert last >= largest

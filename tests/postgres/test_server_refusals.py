"""A PostgreSQL server that refuses statements (a statement_timeout, a read-only role) gives one clear line,
never a traceback or SQLAlchemy's dump of the statement and its parameters. The suite's real server."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.catalog.catalog_support import BASE_MS, header, jsonl, user, write_file
from tests.postgres_server import PASSWORD, PostgresServer

SESSDEX = Path(sys.executable).with_name("sessdex")


def _sessdex(agent_dir: Path, url: str, cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(SESSDEX), "--agent-dir", str(agent_dir), "--catalog", url, *args], cwd=cwd,
                          capture_output=True, text=True, timeout=60,
                          env={"PATH": "/usr/bin:/bin", "HOME": str(agent_dir.parent),
                               "SESSDEX_AUTOWATCH": "0"})


@pytest.fixture
def indexed(tmp_path: Path, postgres_url: str) -> tuple[Path, Path, str]:
    agent_dir, project = tmp_path / "agent", tmp_path / "proj"
    project.mkdir()
    folder = agent_dir / "sessions" / ("--" + str(project).lstrip("/").replace("/", "-") + "--")
    write_file(folder / "a.jsonl", jsonl([header("4ddd000000000001", str(project)), user("hello world")]), BASE_MS)
    done = _sessdex(agent_dir, postgres_url, project, "index")
    assert done.returncode == 0, done.stderr
    return agent_dir, project, postgres_url


def _assert_one_clean_line(result: subprocess.CompletedProcess[str], expected: str) -> None:
    # A read command may answer from the files instead (and says so on the same line); others fail.
    assert result.returncode != 0 or "the session files directly" in result.stderr, result.stderr
    lines = [line for line in result.stderr.splitlines() if line.startswith("sessdex")]
    assert len(lines) == 1, result.stderr
    assert "Traceback" not in result.stderr and "[SQL" not in result.stderr and "parameters" not in result.stderr
    assert PASSWORD not in result.stderr
    assert expected in lines[0], lines[0]


def _admin(server: PostgresServer, database: str, *statements: str) -> None:
    import psycopg

    with psycopg.connect(server.url(database), autocommit=True) as connection:
        for statement in statements:
            connection.execute(statement)


@pytest.mark.parametrize("command", [("index",), ("list",), ("search", "hello"), ("usage", "daily")])
def test_a_statement_timeout_is_one_line(indexed, postgres_server: PostgresServer, command) -> None:
    agent_dir, project, url = indexed
    database = url.rsplit("/", 1)[1]
    _admin(postgres_server, database, "CREATE ROLE slow LOGIN PASSWORD 'slowpass'",
           f'GRANT ALL ON DATABASE "{database}" TO slow', "GRANT ALL ON ALL TABLES IN SCHEMA public TO slow",
           "GRANT ALL ON ALL SEQUENCES IN SCHEMA public TO slow", "ALTER ROLE slow SET statement_timeout = 1",
           "ALTER ROLE slow SET lock_timeout = 1")
    slow_url = url.replace(f"sessdex:{PASSWORD}@", "slow:slowpass@")
    # A lock the statements wait on, held for the test, makes even the smallest statement time out.
    import psycopg

    holder = psycopg.connect(postgres_server.url(database))
    try:
        holder.execute("LOCK TABLE session_files IN ACCESS EXCLUSIVE MODE")
        result = _sessdex(agent_dir, slow_url, project, *command)
    finally:
        holder.close()
        _admin(postgres_server, database, "DROP OWNED BY slow", "DROP ROLE slow")
    _assert_one_clean_line(result, "refused a statement")
    assert "timeout" in result.stderr


@pytest.mark.parametrize("command", [("index",), ("list",)])
def test_a_read_only_role_is_one_line(indexed, postgres_server: PostgresServer, command, tmp_path: Path) -> None:
    agent_dir, project, url = indexed
    database = url.rsplit("/", 1)[1]
    _admin(postgres_server, database, "CREATE ROLE reader LOGIN PASSWORD 'readpass'",
           f'GRANT CONNECT ON DATABASE "{database}" TO reader', "GRANT USAGE ON SCHEMA public TO reader",
           "GRANT SELECT ON ALL TABLES IN SCHEMA public TO reader")
    write_file(agent_dir / "sessions" / next(p.name for p in (agent_dir / "sessions").iterdir()) / "b.jsonl",
               jsonl([header("4ddd000000000002", str(project)), user("a new one to index")]), BASE_MS + 5)
    try:
        result = _sessdex(agent_dir, url.replace(f"sessdex:{PASSWORD}@", "reader:readpass@"), project, *command)
    finally:
        _admin(postgres_server, database, "DROP OWNED BY reader", "DROP ROLE reader")
    _assert_one_clean_line(result, "refused a statement")
    assert "permission denied" in result.stderr

"""A real PostgreSQL server for this folder's tests: started once per session, a fresh database per test.

Without the server binaries or psycopg these tests are skipped on a developer's machine and FAIL in CI
(`CI=true`), where `scripts/test` installs the server: they are never silently skipped there.
"""

from __future__ import annotations

import itertools
import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.postgres_server import PostgresServer, server_bin_dir

_names = itertools.count(1)


def _unavailable(reason: str) -> None:
    if os.environ.get("CI") == "true":
        pytest.fail(f"PostgreSQL tests cannot run in CI: {reason}")
    pytest.skip(reason)


@pytest.fixture(scope="session")
def postgres_bin_dir() -> Path:
    """The server's bin folder (and psycopg importable), else a skip, or a failure in CI."""
    try:
        import psycopg  # noqa: F401
    except ImportError:
        _unavailable("psycopg is not installed (pip install -e '.[test]')")
    bin_dir = server_bin_dir()
    if bin_dir is None:
        _unavailable("the PostgreSQL server is not installed (apt-get install postgresql)")
    assert bin_dir is not None
    return bin_dir


@pytest.fixture(scope="session")
def postgres_server(postgres_bin_dir: Path) -> Iterator[PostgresServer]:
    """The server of this test session (stopped and removed at its end)."""
    server = PostgresServer(postgres_bin_dir)
    try:
        server.start()
        yield server
    finally:
        server.destroy()


@pytest.fixture
def postgres_url(postgres_server: PostgresServer) -> str:
    """The URL of a new, empty database on the test server."""
    return postgres_server.create_database(f"catalog_{os.getpid()}_{next(_names)}")

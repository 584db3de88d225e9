"""The psycopg backend of a PostgreSQL catalog: its generated statements, what the hot commands import, how many
statements they send, and the CLI's answers equal to SQLite's on the same corpus."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from gen_corpus import generate_corpus

from sessdex.catalog.queries.sessions import Catalog
from sessdex.catalog.store.location import resolve_location
from sessdex.catalog.store.postgres_reads import PostgresCatalog, pyformat, render_module
from sessdex.core.paths import AgentPaths
from tests.catalog.test_parity import NOW_MS

REPO = Path(__file__).resolve().parents[2]


def test_the_generated_statements_match_the_statements_module():
    generated = (REPO / "catalog" / "store" / "postgres_sql.py").read_text(encoding="utf-8")
    assert generated == render_module(), "run: python -m sessdex.catalog.store.postgres_reads"


def test_named_parameters_become_pyformat_and_casts_and_percent_signs_stay():
    assert pyformat("SELECT a::text FROM t WHERE b = :b AND c LIKE '50%' AND d = :d_1") == (
        "SELECT a::text FROM t WHERE b = %(b)s AND c LIKE '50%%' AND d = %(d_1)s")


def _corpus(root: Path) -> AgentPaths:
    paths = AgentPaths(agent_dir=root / "home" / ".xcsh" / "agent", home=root / "home", tmp_dir=Path("/tmp"))
    generate_corpus(paths.agent_dir, sessions=30, projects=3, total_bytes=600_000, seed=11, home=paths.home,
                    now=NOW_MS / 1000)
    return paths


def test_a_postgres_url_opens_the_psycopg_backend_and_writes_booleans_and_nul_free_text(tmp_path: Path,
                                                                                       postgres_url: str):
    paths = _corpus(tmp_path)
    with Catalog(paths, resolve_location(paths.agent_dir, postgres_url), machine="laptop") as catalog:
        assert isinstance(catalog.db, PostgresCatalog)
        assert len(catalog.list_all_sessions()) > 20
        assert catalog.db.scalar("count_files") == 30
        assert {row["header_valid"] for row in catalog.db.fetchall("file_health")} <= {True, False}


def _cli(paths: AgentPaths, catalog: str, *args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "SESSDEX_MACHINE": "laptop", "COLUMNS": "200"}
    env.pop("SESSDEX_CATALOG", None)
    return subprocess.run([sys.executable, "-m", "sessdex.catalog", "--agent-dir", str(paths.agent_dir),
                           "--catalog", catalog, *args], capture_output=True, text=True, cwd=cwd, env=env,
                          timeout=120)


def test_the_hot_commands_answer_as_on_sqlite_without_importing_sqlalchemy_or_psycopg(tmp_path: Path, postgres_url: str):
    paths = _corpus(tmp_path)
    sqlite_db = str(tmp_path / "catalog.db")
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    for catalog in (sqlite_db, postgres_url):
        assert _cli(paths, catalog, "index", cwd=outside).returncode == 0
    ids = [row.split()[0] for row in _cli(paths, sqlite_db, "list", "--all", cwd=outside).stdout.splitlines()[1:]]
    assert len(ids) > 20
    for command in (["list", "--all"], ["list", "--all", "--json"], ["resume", "--no-fork", ids[5]],
                    ["resume", "--no-fork", ids[5][:1]], ["recent"]):
        expected = _cli(paths, sqlite_db, *command, cwd=outside)
        found = _cli(paths, postgres_url, *command, cwd=outside)
        assert (found.returncode, found.stdout, found.stderr) == (expected.returncode, expected.stdout,
                                                                   expected.stderr), command
    probe = ("import runpy, sys; sys.argv = sys.argv[1:]\n"
             "try:\n    runpy.run_module('sessdex.catalog', run_name='__main__')\nexcept SystemExit:\n    pass\n"
             "import json; print(json.dumps(sorted(m for m in sys.modules if m.split('.')[0] in "
             "('sqlalchemy', 'alembic', 'psycopg'))), file=sys.stderr)")
    for command in (["list", "--all"], ["resume", "--no-fork", ids[5]], ["search", "--all", "the"]):
        run = subprocess.run([sys.executable, "-c", probe, "sessdex", "--agent-dir", str(paths.agent_dir),
                              "--catalog", postgres_url, *command], capture_output=True, text=True, cwd=outside,
                             env={**os.environ, "SESSDEX_MACHINE": "laptop"}, timeout=120)
        assert json.loads(run.stderr.splitlines()[-1]) == [], command


class _CountingCatalog(PostgresCatalog):
    """Counts the round trips to the server: one per statement, one per pipeline."""

    round_trips = 0

    def _rows(self, sql, params, *, tuples):
        type(self).round_trips += 1
        return super()._rows(sql, params, tuples=tuples)

    def _pipelined(self, statements, *, tuples):
        if len(statements) == 1:
            return super()._pipelined(statements, tuples=tuples)
        type(self).round_trips += 1
        return super()._pipelined(statements, tuples=tuples)


@pytest.mark.parametrize("folders", [1, 3])
def test_a_resume_costs_two_round_trips_whatever_its_folders(tmp_path: Path, postgres_url: str,
                                                                          folders: int):
    paths = _corpus(tmp_path)
    location = resolve_location(paths.agent_dir, postgres_url)
    with Catalog(paths, location, machine="laptop") as catalog:
        catalog.list_all_sessions()  # indexes the corpus
        info = catalog.list_all_sessions()[3]
    database = _CountingCatalog(location, "laptop")
    with Catalog(paths, location, database=database) as catalog:
        cwd = info.cwd
        extra = [str(tmp_path / f"f{index}") for index in range(folders - 1)]
        catalog.project_dirs = lambda *_args, **_kw: [os.path.dirname(str(info.path)), *extra]  # type: ignore[method-assign]
        _CountingCatalog.round_trips = 0
        assert [found.id for found in catalog.sessions_with_id_prefix(info.id, cwd)] == [info.id]
        # The freshness check (paths, and stats of the ids in range: one pipeline) and the rows.
        assert _CountingCatalog.round_trips == 2


class _RecordingCatalog(PostgresCatalog):
    """Records every statement sent to the server."""

    sent: list[str] = []

    def _rows(self, sql, params, *, tuples):
        type(self).sent.append(sql)
        return super()._rows(sql, params, tuples=tuples)

    def _pipelined(self, statements, *, tuples):
        if len(statements) > 1:
            type(self).sent.extend(sql for sql, _params in statements)
        return super()._pipelined(statements, tuples=tuples)


def test_a_search_whose_sessions_fill_the_limit_ranks_no_messages(tmp_path: Path, postgres_url: str):
    paths = _corpus(tmp_path)
    location = resolve_location(paths.agent_dir, postgres_url)
    with Catalog(paths, location, machine="laptop") as catalog:
        catalog.list_all_sessions()  # indexes the corpus
        with_messages = catalog.search("the", None, limit=1000)
    assert len({hit.field for hit in with_messages}) > 1  # sessions and messages match "the"
    sessions_only = [hit for hit in with_messages if hit.field != "message"]
    database = _RecordingCatalog(location, "laptop")
    with Catalog(paths, location, database=database) as catalog:
        _RecordingCatalog.sent = []
        hits = catalog.search("the", None, limit=3)
    assert [(hit.session.id, hit.field) for hit in hits] == [(hit.session.id, hit.field) for hit in sessions_only[:3]]
    assert not [sql for sql in _RecordingCatalog.sent if "FROM messages" in sql]
    assert [sql for sql in _RecordingCatalog.sent if "enable_seqscan = off" in sql]

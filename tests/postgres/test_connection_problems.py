"""A catalog server that cannot be used is one clear line on stderr and exit status 2, never a traceback,
and a watcher that loses the server catches up when it is back without losing or duplicating rows."""

from __future__ import annotations

import io
import threading
import time
from pathlib import Path

import pytest

from sessdex.catalog.index.content_index import fill_content_index
from sessdex.catalog.index.watcher import Watcher
from sessdex.catalog.queries.sessions import Catalog
from sessdex.catalog.store.location import resolve_location
from sessdex.core.paths import AgentPaths
from sessdex.core.usage_terms import DateRange
from tests.catalog.catalog_support import BASE_MS, append_bytes, assistant, header, jsonl, session_fields, user, write_file
from tests.cli_support import run_cli
from tests.postgres_server import PASSWORD, PostgresServer, free_port


@pytest.fixture
def paths(tmp_path: Path, monkeypatch) -> AgentPaths:
    for variable in ("SESSDEX_CATALOG", "PI_CODING_AGENT_DIR", "SESSDEX_MACHINE", "SESSDEX_MACHINES"):
        monkeypatch.delenv(variable, raising=False)
    paths = AgentPaths(agent_dir=tmp_path / "agent", home=tmp_path)
    project = tmp_path / "proj"
    project.mkdir()
    write_file(paths.project_session_dir(project) / "a.jsonl",
               jsonl([header("4ddd000000000001", project), user("hello")]), BASE_MS)
    monkeypatch.chdir(project)
    return paths


def _bad_urls(server: PostgresServer) -> dict[str, str]:
    return {"server down": f"postgresql://sessdex:{PASSWORD}@127.0.0.1:{free_port()}/postgres",
            "wrong password": server.url(password="not-the-password"),
            "no such database": server.url("no_such_database")}


@pytest.mark.parametrize("problem", ["server down", "wrong password", "no such database"])
@pytest.mark.parametrize("command", [["list"], ["list", "--all"], ["resume", "--keep-marks", "4ddd"],
                                     ["--machines", "all", "resume", "4ddd"], ["search", "hello"], ["index"],
                                     ["recent"], ["doctor", "--check"]])
def test_an_unusable_server_is_one_line_and_exit_2(paths: AgentPaths, postgres_server: PostgresServer, capsys,
                                                   problem: str, command: list[str]):
    url = _bad_urls(postgres_server)[problem]
    outcome = run_cli(["--agent-dir", str(paths.agent_dir), "--catalog", url, *command], capsys)
    assert outcome.code == 2
    assert outcome.out == ""
    lines = outcome.err.splitlines()
    assert len(lines) == 1 and lines[0].startswith("sessdex: cannot reach the catalog postgresql://sessdex:***@"), lines
    assert PASSWORD not in outcome.err and "not-the-password" not in outcome.err
    expected = {"server down": "refused", "wrong password": "password authentication failed",
                "no such database": 'database "no_such_database" does not exist'}[problem]
    assert expected in lines[0]


@pytest.mark.parametrize("problem", ["server down", "wrong password", "no such database"])
def test_resume_of_this_machines_session_answers_from_its_files_whatever_the_server(
        paths: AgentPaths, postgres_server: PostgresServer, capsys, problem: str):
    # Its answer is a function of this machine's files (catalog.queries.resume_files): no server is asked.
    url = _bad_urls(postgres_server)[problem]
    outcome = run_cli(["--agent-dir", str(paths.agent_dir), "--catalog", url, "resume", "4ddd"], capsys)
    assert (outcome.code, outcome.err) == (0, "")
    assert outcome.out == f"{paths.project_session_dir(paths.home / 'proj') / 'a.jsonl'}\n"


def _wait_for(condition, what: str, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.05)


@pytest.mark.slow
def test_a_watcher_that_loses_the_server_catches_up_when_it_is_back(paths: AgentPaths, postgres_bin_dir: Path):
    server = PostgresServer(postgres_bin_dir)  # a server of its own: this test stops and restarts it
    try:
        server.start()
        location = resolve_location(paths.agent_dir, server.create_database("watched"))
        folder = paths.project_session_dir(paths.home / "proj")
        log = io.StringIO()
        watcher = Watcher(paths.sessions_root, location, machine="laptop", log=log, retry_seconds=0.2)
        stop = threading.Event()
        thread = threading.Thread(target=watcher.run, args=(stop,), name="watcher")
        thread.start()
        try:
            assert watcher.ready.wait(30)
            write_file(folder / "b.jsonl", jsonl([header("4ddd000000000002", paths.home / "proj"), user("before")]))
            _wait_for(lambda: watcher.stats.files_indexed >= 1, "the first change")
            server.stop()
            append_bytes(folder / "b.jsonl", jsonl([assistant("while the server was down")]))
            write_file(folder / "c.jsonl", jsonl([header("4ddd000000000003", paths.home / "proj"), user("new")]))
            (folder / "a.jsonl").unlink()
            _wait_for(lambda: "trying again" in log.getvalue(), "the watcher to notice the server is gone")
            server.start()
            _wait_for(lambda: "the catalog is back" in log.getvalue(), "the watcher to catch up")
        finally:
            stop.set()
            thread.join(30)
        assert log.getvalue().count("trying again") == 1  # said once, not once per retry
        with (Catalog(paths, machine="laptop") as own_sqlite,
              Catalog(paths, location, machine="laptop", fresh=lambda db, scope: None) as shared):
            # `fresh` disabled: what the watcher alone wrote is compared with a catalog built from the files.
            expected = [session_fields(i) for i in own_sqlite.list_all_sessions(include_empty=True)]
            assert [session_fields(i) for i in shared.list_all_sessions(include_empty=True)] == expected, log.getvalue()
            assert [i.id for i in shared.list_all_sessions()] == ["4ddd000000000003", "4ddd000000000002"]
            assert fill_content_index(own_sqlite.db)  # its first index left message rows for later (content_index)
            assert shared.db.scalar("count_messages") == own_sqlite.db.scalar("count_messages") == 3
    finally:
        server.destroy()


@pytest.mark.slow
def test_a_watcher_started_while_the_server_is_down_says_so_once_and_catches_up_when_it_comes(
        paths: AgentPaths, postgres_bin_dir: Path):
    from sessdex.catalog.index.reconcile import read_heartbeat

    server = PostgresServer(postgres_bin_dir)  # a server of its own: this test stops and starts it
    try:
        server.start()
        location = resolve_location(paths.agent_dir, server.create_database("watched"))  # empty: no schema yet
        server.stop()
        folder = paths.project_session_dir(paths.home / "proj")
        log = io.StringIO()
        watcher = Watcher(paths.sessions_root, location, machine="laptop", log=log, retry_seconds=0.2)
        stop = threading.Event()
        thread = threading.Thread(target=watcher.run, args=(stop,), name="watcher")
        thread.start()
        try:
            assert watcher.ready.wait(30)
            _wait_for(lambda: "trying again" in log.getvalue(), "the watcher to say the server is down")
            assert thread.is_alive()
            # Files change while nothing can be written: a new session, an append, a removal.
            write_file(folder / "b.jsonl", jsonl([header("4ddd000000000002", paths.home / "proj"), user("meanwhile")]))
            append_bytes(folder / "a.jsonl", jsonl([assistant("an answer while the server was down")]))
            write_file(folder / "c.jsonl", jsonl([header("4ddd000000000003", paths.home / "proj"), user("gone")]))
            time.sleep(0.5)
            (folder / "c.jsonl").unlink()
            time.sleep(0.5)  # several retries, and the events of those changes, while the server is down
            assert read_heartbeat(location) is None  # readers keep their own freshness check meanwhile
            server.start()
            _wait_for(lambda: "the catalog is back" in log.getvalue(), "the watcher to catch up")
            assert read_heartbeat(location) is not None
            write_file(folder / "d.jsonl", jsonl([header("4ddd000000000004", paths.home / "proj"), user("after")]))
            _wait_for(lambda: watcher.stats.files_indexed >= 3, "a change after the catch-up")
        finally:
            stop.set()
            thread.join(30)
        lines = log.getvalue().splitlines()
        assert sum("trying again" in line for line in lines) == 1, lines  # said once, not once per retry
        assert lines[0].startswith("sessdex watch: cannot reach the catalog postgresql://sessdex:***@"), lines
        assert "refused" in lines[0] and PASSWORD not in log.getvalue()
        with (Catalog(paths, machine="laptop") as own_sqlite,
              Catalog(paths, location, machine="laptop", fresh=lambda db, scope: None) as shared):
            # `fresh` disabled: what the watcher alone wrote is compared with a catalog built from the files.
            expected = [session_fields(i) for i in own_sqlite.list_all_sessions(include_empty=True)]
            assert [session_fields(i) for i in shared.list_all_sessions(include_empty=True)] == expected, lines
            assert {i.id for i in shared.list_all_sessions()} == {"4ddd000000000001", "4ddd000000000002",
                                                                   "4ddd000000000004"}
            assert fill_content_index(own_sqlite.db)  # its first index left message rows for later (content_index)
            assert shared.db.scalar("count_messages") == own_sqlite.db.scalar("count_messages") == 4
            assert shared.db.scalar("count_usage_facts") == own_sqlite.db.scalar("count_usage_facts") == 1
            for kind in ("daily", "session"):
                assert shared.usage_report(kind, paths.home, all_projects=True, days=DateRange()).to_json(True) == \
                    own_sqlite.usage_report(kind, paths.home, all_projects=True, days=DateRange()).to_json(True)
            assert shared.db.fetchall("machine_get")[0]["sessions_root"] == str(paths.sessions_root)
    finally:
        server.destroy()


@pytest.mark.parametrize("problem", ["wrong password", "no such database"])
def test_a_watcher_refused_by_the_server_at_start_stops_with_one_line(paths: AgentPaths, postgres_server: PostgresServer,
                                                                      capsys, problem: str):
    url = _bad_urls(postgres_server)[problem]
    outcome = run_cli(["--agent-dir", str(paths.agent_dir), "--catalog", url, "watch"], capsys)
    assert outcome.code == 2 and outcome.out == ""
    lines = outcome.err.splitlines()
    assert len(lines) == 1 and lines[0].startswith("sessdex: cannot reach the catalog postgresql://sessdex:***@"), lines

"""Marks through the CLI on a shared PostgreSQL catalog: two machines mark sessions, every JSON session object of
either machine shows the union, the marks filters see it, and a catalog rebuilt from nothing shows the same."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from sessdex.core.paths import AgentPaths
from tests.catalog.catalog_support import BASE_MS, header, jsonl, user, write_file
from tests.cli_support import run_cli
from tests.core.sessiontree import assistant
from tests.postgres_server import PostgresServer

USAGE = {"input": 10, "output": 5, "cacheRead": 0, "cacheWrite": 0, "cost": {"total": 0.001}}


def _project(paths: AgentPaths, session_id: str, text: str) -> Path:
    project = paths.home / "proj"
    project.mkdir(parents=True, exist_ok=True)
    write_file(paths.project_session_dir(project) / f"{session_id}.jsonl",
               jsonl([header(session_id, project), user(text), assistant("done " + text, usage=USAGE)]), BASE_MS)
    return project


def test_two_machines_marks_everywhere_and_after_a_rebuild(tmp_path: Path, postgres_url: str,
                                                           postgres_server: PostgresServer, capsys: Any,
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    for variable in ("SESSDEX_CATALOG", "PI_CODING_AGENT_DIR", "SESSDEX_MACHINE", "SESSDEX_MACHINES"):
        monkeypatch.delenv(variable, raising=False)
    laptop = AgentPaths(agent_dir=tmp_path / "laptop" / "agent", home=tmp_path / "laptop")
    devbox = AgentPaths(agent_dir=tmp_path / "devbox" / "agent", home=tmp_path / "devbox")
    project = _project(laptop, "1aaa000000000001", "tune the parser")
    _project(devbox, "2bbb000000000001", "deploy the parser")
    machine_of = {laptop: "laptop", devbox: "devbox"}

    def sessdex(paths: AgentPaths, *args: str, url: str = postgres_url) -> Any:
        monkeypatch.chdir(project)
        done = run_cli(["--agent-dir", str(paths.agent_dir), "--catalog", url, "--machine", machine_of[paths],
                        "--machines", "all", *args], capsys)
        assert done.code == 0, (args, done.err)
        return json.loads(done.out) if "--json" in args else done

    for paths in (laptop, devbox):
        sessdex(paths, "index")
    sessdex(laptop, "pin", "1aaa")
    sessdex(laptop, "tag", "1aaa", "+bug")
    sessdex(devbox, "star", "1aaa")  # devbox marks laptop's session: kept in devbox's own marks file
    sessdex(devbox, "note", "2bbb", "on", "the", "devbox")
    sessdex(laptop, "tag", "2bbb", "+ops")
    expected = {"1aaa000000000001": {"pinned": True, "starred": True, "tags": ["bug"], "note": None},
                "2bbb000000000001": {"pinned": False, "starred": False, "tags": ["ops"], "note": "on the devbox"}}

    def marks_seen(paths: AgentPaths, url: str = postgres_url) -> None:
        listed = sessdex(paths, "list", "--all", "--json", url=url)
        assert {row["id"]: row["marks"] for row in listed} == expected
        assert listed[0]["id"] == "1aaa000000000001"  # pinned first
        found = sessdex(paths, "search", "--all", "parser", "--json", url=url)
        assert {row["id"]: row["marks"] for row in found} == expected
        usage = sessdex(paths, "usage", "session", "--all", "--json", url=url)["rows"]
        assert {row["session"]: row["marks"] for row in usage} == expected
        starred = sessdex(paths, "list", "--all", "--starred", "--json", url=url)
        assert [row["id"] for row in starred] == ["1aaa000000000001"]
        assert sessdex(paths, "tags", "--json", url=url) == [{"tag": "bug", "sessions": 1}, {"tag": "ops", "sessions": 1}]

    marks_seen(laptop)
    marks_seen(devbox)
    tagged = sessdex(laptop, "usage", "session", "--all", "--tag", "bug", "--json")  # this machine's files
    assert [row["session"] for row in tagged["rows"]] == ["1aaa000000000001"] and tagged["totals"]["output"] == 5
    # A catalog rebuilt from nothing (a new database) holds the same marks, read from each machine's file.
    fresh = postgres_server.create_database("catalog_marks_rebuilt")
    for paths in (laptop, devbox):
        sessdex(paths, "index", "--rebuild", url=fresh)
    marks_seen(laptop, fresh)
    marks_seen(devbox, fresh)

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


def _two_machines(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[AgentPaths, AgentPaths]:
    """The agent dirs of machines `laptop` and `devbox`, each under its own home, with no sessdex variables set."""
    for variable in ("SESSDEX_CATALOG", "PI_CODING_AGENT_DIR", "SESSDEX_MACHINE", "SESSDEX_MACHINES"):
        monkeypatch.delenv(variable, raising=False)
    return (AgentPaths(agent_dir=tmp_path / "laptop" / "agent", home=tmp_path / "laptop"),
            AgentPaths(agent_dir=tmp_path / "devbox" / "agent", home=tmp_path / "devbox"))


def test_two_machines_marks_everywhere_and_after_a_rebuild(tmp_path: Path, postgres_url: str,
                                                           postgres_server: PostgresServer, capsys: Any,
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    laptop, devbox = _two_machines(tmp_path, monkeypatch)
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


def _reference_usage(*files: Path) -> dict[str, dict[str, float]]:
    """Per session id, the sums of its assistant messages' usage, read from its JSONL by this test."""
    sums: dict[str, dict[str, float]] = {}
    for path in files:
        records = [json.loads(line) for line in path.read_text().splitlines()]
        figures = sums.setdefault(records[0]["id"], {"input": 0, "output": 0, "cost": 0.0, "messages": 0})
        for record in records[1:]:
            message = record.get("message") or {}
            if record.get("type") == "message" and message.get("role") == "assistant" and "usage" in message:
                figures["input"] += message["usage"]["input"]
                figures["output"] += message["usage"]["output"]
                figures["cost"] += message["usage"]["cost"]["total"]
                figures["messages"] += 1
    return sums


def test_usage_of_marked_sessions_counts_every_machines_sessions(tmp_path: Path, postgres_url: str, capsys: Any,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """`usage --tag/--starred` with --machines all counts the other machine's marked sessions too: their files are
    not here, their usage is in the shared catalog."""
    laptop, devbox = _two_machines(tmp_path, monkeypatch)
    project = _project(laptop, "1aaa000000000001", "tune the parser")
    _project(laptop, "1aaa000000000002", "untagged work")
    _project(devbox, "2bbb000000000001", "deploy the parser")
    files = {path.stem: path for paths in (laptop, devbox) for path in paths.sessions_root.rglob("*.jsonl")}
    machine_of = {laptop: "laptop", devbox: "devbox"}

    def sessdex(paths: AgentPaths, *args: str, every: bool = True) -> Any:
        monkeypatch.chdir(project)
        monkeypatch.setenv("HOME", str(paths.home))  # each machine's own home: where a project is on the other
        done = run_cli(["--agent-dir", str(paths.agent_dir), "--catalog", postgres_url, "--machine",
                        machine_of[paths], *(("--machines", "all") if every else ()), *args], capsys)
        assert done.code == 0, (args, done.err)
        return json.loads(done.out) if "--json" in args else done

    for paths in (laptop, devbox):
        sessdex(paths, "index")
    sessdex(laptop, "tag", "1aaa000000000001", "+bug")
    sessdex(laptop, "tag", "2bbb", "+bug")  # the laptop tags the devbox's session (kept in the laptop's marks file)
    sessdex(devbox, "star", "2bbb")
    reference = _reference_usage(*files.values())
    for scope in (("--all",), ()):  # every project, and this project (the same place under each machine's home)
        for filters, sessions in ((("--tag", "bug"), ["1aaa000000000001", "2bbb000000000001"]),
                                  (("--starred",), ["2bbb000000000001"])):
            report = sessdex(laptop, "usage", "session", *scope, *filters, "--json")
            rows = {row["session"]: row for row in report["rows"]}
            assert sorted(rows) == sessions, (scope, filters)
            for session in sessions:
                for name in ("input", "output", "messages"):
                    assert rows[session][name] == reference[session][name], (session, name)
            assert rows.get("2bbb000000000001", {}).get("machine", "devbox") == "devbox"
            assert report["totals"]["sessions"] == len(sessions)
            assert report["totals"]["output"] == sum(reference[session]["output"] for session in sessions)
            daily = sessdex(laptop, "usage", *scope, *filters, "--json")
            assert sum(row["messages"] for row in daily["rows"]) == sum(reference[s]["messages"] for s in sessions)
    # Without --machines all the laptop's own sessions alone.
    alone = sessdex(laptop, "usage", "session", "--all", "--tag", "bug", "--json", every=False)
    assert [row["session"] for row in alone["rows"]] == ["1aaa000000000001"]

"""Two machines share one PostgreSQL catalog: each writes only its own rows, and together they answer the union.

Two agent dirs stand for two machines (laptop, devbox). Each is indexed into one database; the answers
with `--machines all` are compared with what each machine's own SQLite catalog answers.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from gen_corpus import generate_corpus

from sessdex.catalog.queries.sessions import Catalog
from sessdex.catalog.store.location import resolve_location
from sessdex.catalog.store.machine import MACHINE_FILE_NAME, host_name
from sessdex.core.errors import SessionOnOtherMachineError
from sessdex.core.paths import AgentPaths
from tests.catalog.catalog_support import BASE_MS, assistant, header, jsonl, session_fields, user, write_file
from tests.catalog.test_parity import NOW_MS
from tests.cli_support import run_cli


def _machine_dir(root: Path, seed: int) -> AgentPaths:
    paths = AgentPaths(agent_dir=root / "home" / ".xcsh" / "agent", home=root / "home", tmp_dir=root / "tmp")
    generate_corpus(paths.agent_dir, sessions=25, projects=3, total_bytes=600_000, seed=seed, home=paths.home,
                    now=NOW_MS / 1000)
    return paths


def _newest_first(fields: list[dict]) -> list[dict]:
    return sorted(fields, key=lambda info: (-info["modified"].timestamp(), str(info["path"])))


@pytest.fixture
def two_machines(tmp_path: Path) -> tuple[AgentPaths, AgentPaths]:
    return _machine_dir(tmp_path / "laptop", 11), _machine_dir(tmp_path / "devbox", 12)


def test_two_machines_in_one_database_answer_the_union_of_their_own_catalogs(two_machines, postgres_url: str):
    laptop, devbox = two_machines
    shared = {"laptop": resolve_location(laptop.agent_dir, postgres_url),
              "devbox": resolve_location(devbox.agent_dir, postgres_url)}
    with Catalog(laptop, machine="laptop") as own_laptop, Catalog(devbox, machine="devbox") as own_devbox:
        mine = {include_empty: [session_fields(i) for i in own_laptop.list_all_sessions(include_empty=include_empty)]
                for include_empty in (False, True)}
        theirs = {include_empty: [session_fields(i) for i in own_devbox.list_all_sessions(include_empty=include_empty)]
                  for include_empty in (False, True)}
        searches = {word: ({h.session.id for h in own_laptop.search(word, None, limit=1000)}
                           | {h.session.id for h in own_devbox.search(word, None, limit=1000)})
                    for word in ("the", "migration", "test", "fix")}
    assert mine[False] and theirs[False]
    with Catalog(devbox, shared["devbox"], machine="devbox") as devbox_catalog:
        assert [session_fields(i) for i in devbox_catalog.list_all_sessions()] == theirs[False]
    with Catalog(laptop, shared["laptop"], machine="laptop") as laptop_only:
        assert [session_fields(i) for i in laptop_only.list_all_sessions()] == mine[False]  # reads default to this one
    with Catalog(laptop, shared["laptop"], machine="laptop", all_machines=True) as everywhere:
        for include_empty in (False, True):
            union = [session_fields(i) for i in everywhere.list_all_sessions(include_empty=include_empty)]
            assert union == _newest_first(mine[include_empty] + theirs[include_empty])
        remote = [info for info in everywhere.list_all_sessions() if info.remote]
        assert {info.id for info in remote} == {fields["id"] for fields in theirs[False]}
        assert {info.machine for info in remote} == {"devbox"}
        for fields in theirs[True][:5]:
            found = everywhere.find_session_by_id(fields["id"], str(laptop.home))
            assert session_fields(found) == fields  # the file is reachable here: resumed as it is
        for word, expected in searches.items():
            assert {hit.session.id for hit in everywhere.search(word, None, limit=1000)} == expected, word


def test_reindexing_one_machine_never_touches_the_other_machines_rows(two_machines, postgres_url: str):
    laptop, devbox = two_machines
    with Catalog(devbox, resolve_location(devbox.agent_dir, postgres_url), machine="devbox") as devbox_catalog:
        before = [session_fields(i) for i in devbox_catalog.list_all_sessions(include_empty=True)]
    with Catalog(laptop, resolve_location(laptop.agent_dir, postgres_url), machine="laptop") as laptop_catalog:
        assert laptop_catalog.list_all_sessions()
        shutil.rmtree(laptop.sessions_root)  # every laptop file gone: its rows are dropped
        assert laptop_catalog.list_all_sessions(include_empty=True) == []
    # The devbox's files are gone too now, but nothing ran on the devbox: its rows are exactly as they were.
    shutil.rmtree(devbox.sessions_root)
    with Catalog(laptop, resolve_location(laptop.agent_dir, postgres_url), machine="laptop",
                 all_machines=True) as everywhere:
        rows = everywhere.list_all_sessions(include_empty=True)
        assert [session_fields(i) for i in rows] == before
        with pytest.raises(SessionOnOtherMachineError) as refused:
            everywhere.find_session_by_id(before[0]["id"], str(laptop.home))
    assert str(refused.value) == (f'Session "{before[0]["id"]}" is on machine devbox; resume it there with: '
                                  f"ssh {host_name()} xcsh --resume {before[0]['path']}")


def _project(paths: AgentPaths, session_id: str, title: str, text: str) -> Path:
    project = paths.home / "proj"
    project.mkdir(parents=True, exist_ok=True)
    write_file(paths.project_session_dir(project) / f"{session_id}.jsonl",
               jsonl([header(session_id, project, title=title), user(text), assistant("done " + text)]), BASE_MS)
    return project


def test_cli_machines_index_list_search_and_resume_of_another_machines_session(tmp_path: Path, postgres_url: str,
                                                                           capsys, monkeypatch):
    for variable in ("SESSDEX_CATALOG", "PI_CODING_AGENT_DIR", "SESSDEX_MACHINE", "SESSDEX_MACHINES"):
        monkeypatch.delenv(variable, raising=False)
    laptop = AgentPaths(agent_dir=tmp_path / "laptop" / "agent", home=tmp_path / "laptop")
    devbox = AgentPaths(agent_dir=tmp_path / "devbox" / "agent", home=tmp_path / "devbox")
    project = _project(laptop, "1aaa000000000001", "Laptop work", "tune the parser")
    _project(devbox, "2bbb000000000001", "Devbox work", "deploy the parser")

    def sessdex(paths: AgentPaths, *args: str):
        monkeypatch.chdir(project)
        return run_cli(["--agent-dir", str(paths.agent_dir), "--catalog", postgres_url, *args], capsys)

    assert sessdex(laptop, "--machine", "laptop", "index").code == 0
    assert sessdex(devbox, "--machine", "devbox", "index").code == 0
    assert (laptop.agent_dir / MACHINE_FILE_NAME).read_text() == "laptop\n"  # stored once: later runs need no flag
    assert (laptop.agent_dir / MACHINE_FILE_NAME).stat().st_mode & 0o777 == 0o600
    mine = sessdex(laptop, "list", "--all", "--json")
    assert [item["id"] for item in json.loads(mine.out)] == ["1aaa000000000001"]
    everything = sessdex(laptop, "--machines", "all", "list", "--all", "--json")
    listed = {item["id"]: item.get("machine") for item in json.loads(everything.out)}
    assert listed == {"1aaa000000000001": None, "2bbb000000000001": "devbox"}
    table = sessdex(laptop, "--machines", "all", "list", "--all", "--table")
    assert "MACHINE" in table.out and "devbox" in table.out
    found = sessdex(laptop, "--machines", "all", "search", "--all", "--table", "parser")
    # the listing table of `list`: id prefixes, and the MACHINE column for another machine's session
    assert "MACHINE" in found.out.splitlines()[0]
    assert any(line.startswith("2bbb0000 ") and line.endswith("devbox") for line in found.out.splitlines())
    assert "2bbb" not in sessdex(laptop, "search", "--all", "parser").out
    assert sessdex(laptop, "search", "--all", "arse").err == "No matching sessions\n"  # words only
    inside = sessdex(laptop, "--machines", "all", "search", "--all", "--substring", "arse")
    assert "1aaa0000\t" in inside.out and "2bbb0000\t" in inside.out and "p[arse]r" in inside.out

    assert sessdex(laptop, "doctor", "--check").code == 0  # the other machine's rows are no orphans of this one
    assert sessdex(devbox, "doctor", "--check").code == 0
    devbox_file = next(devbox.sessions_root.rglob("*.jsonl"))
    shutil.move(devbox.home, tmp_path / "devbox-elsewhere")  # the devbox's files are not reachable from here
    refused = sessdex(laptop, "--machines", "all", "resume", "2bbb")
    assert refused.code == 1
    assert refused.err == (f'sessdex: Session "2bbb000000000001" is on machine devbox; resume it there with: '
                           f"ssh {host_name()} xcsh --resume {devbox_file}\n")
    assert refused.out == ""
    assert sessdex(laptop, "resume", "2bbb").code == 1  # not even found among this machine's sessions


def test_no_content_keeps_conversation_text_out_of_the_catalog(tmp_path: Path, postgres_url: str, capsys,
                                                               monkeypatch):
    for variable in ("SESSDEX_CATALOG", "PI_CODING_AGENT_DIR", "SESSDEX_MACHINE", "SESSDEX_MACHINES"):
        monkeypatch.delenv(variable, raising=False)
    paths = AgentPaths(agent_dir=tmp_path / "agent", home=tmp_path)
    project = _project(paths, "3ccc000000000001", "Secret plans", "the launch code is swordfish")
    monkeypatch.chdir(project)

    def sessdex(*args: str):
        return run_cli(["--agent-dir", str(paths.agent_dir), "--catalog", postgres_url, *args], capsys)

    assert sessdex("index").code == 0
    assert "swordfish" in sessdex("search", "swordfish").out
    assert sessdex("index", "--no-content").code == 0
    with Catalog(paths, resolve_location(paths.agent_dir, postgres_url)) as catalog:
        assert catalog.db.scalar("count_messages") == 0
        assert [info.first_message for info in catalog.list_all_sessions()] == ["the launch code is swordfish"]
    assert "3ccc" in sessdex("search", "secret").out  # titles and first messages stay searchable
    assert "3ccc" not in sessdex("search", "done").out  # the assistant's answer is nowhere in the catalog
    write_file(paths.project_session_dir(project) / "3ccc000000000002.jsonl",
               jsonl([header("3ccc000000000002", project), user("more secrets"), assistant("kept out")]), BASE_MS + 5)
    assert sessdex("list").code == 0  # a read command's freshness pass keeps the machine's choice
    with Catalog(paths, resolve_location(paths.agent_dir, postgres_url)) as catalog:
        assert catalog.db.scalar("count_messages") == 0
    assert sessdex("index", "--content").code == 0
    assert "3ccc0000 " in sessdex("search", "--table", "done").out  # read again from the start


def test_this_project_on_another_machine_is_the_same_directory_relative_to_its_home(tmp_path: Path, postgres_url: str,
                                                                                    capsys, monkeypatch):
    """The laptop's home is /…/laptop, the devbox's /…/devbox: with the documented folder naming the same
    project `~/proj` has differently named folders on the two machines, yet `--machines all` finds both."""
    for variable in ("SESSDEX_CATALOG", "PI_CODING_AGENT_DIR", "SESSDEX_MACHINE", "SESSDEX_MACHINES"):
        monkeypatch.delenv(variable, raising=False)
    laptop = AgentPaths(agent_dir=tmp_path / "laptop" / ".xcsh" / "agent", home=tmp_path / "laptop")
    devbox = AgentPaths(agent_dir=tmp_path / "devbox" / ".xcsh" / "agent", home=tmp_path / "devbox")
    here = _project(laptop, "1aaa000000000001", "Laptop parser work", "tune the parser")
    there = _project(devbox, "2bbb000000000001", "Devbox parser work", "deploy the parser")
    assert laptop.project_dir_name(here) != devbox.project_dir_name(there)  # named from different homes
    # Look-alikes on the devbox that are other projects: the same repository name elsewhere under its home,
    # and a directory outside its home.
    for session_id, cwd in (("3ccc000000000001", devbox.home / "forks" / "proj"),
                            ("4ddd000000000001", tmp_path / "elsewhere" / "proj")):
        cwd.mkdir(parents=True)
        (cwd / ".git").mkdir()
        write_file(devbox.project_session_dir(cwd) / f"{session_id}.jsonl",
                   jsonl([header(session_id, cwd, title="Other parser"), user("the parser"), assistant("ok")]),
                   BASE_MS)
    (here / ".git").mkdir()

    def sessdex(paths: AgentPaths, machine: str, *args: str):
        monkeypatch.setenv("HOME", str(paths.home))  # each machine records its own home
        monkeypatch.chdir(here if paths is laptop else there)
        return run_cli(["--agent-dir", str(paths.agent_dir), "--catalog", postgres_url, "--machine", machine, *args],
                       capsys)

    assert sessdex(laptop, "laptop", "index").code == 0
    assert sessdex(devbox, "devbox", "index").code == 0
    mine = json.loads(sessdex(laptop, "laptop", "list", "--json").out)
    assert [item["id"] for item in mine] == ["1aaa000000000001"]
    for args in (("list", "--json"), ("search", "parser", "--json")):
        found = json.loads(sessdex(laptop, "laptop", "--machines", "all", *args).out)
        ids = [item["id"] if "id" in item else item["session"]["id"] for item in found]
        assert sorted(ids) == ["1aaa000000000001", "2bbb000000000001"], args
    usage = json.loads(sessdex(laptop, "laptop", "--machines", "all", "usage", "session", "--json").out)
    assert sorted((row["session"], row.get("machine")) for row in usage["rows"]) == [
        ("1aaa000000000001", None), ("2bbb000000000001", "devbox")]  # another machine's session says whose it is
    # From the devbox, the laptop's project is found the same way.
    found = json.loads(sessdex(devbox, "devbox", "--machines", "all", "list", "--json").out)
    assert sorted(item["id"] for item in found) == ["1aaa000000000001", "2bbb000000000001"]
    # Every project of every machine holds the look-alikes too.
    every = json.loads(sessdex(laptop, "laptop", "--machines", "all", "list", "--all", "--json").out)
    assert len(every) == 4

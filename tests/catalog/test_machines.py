"""Machines on a SQLite catalog: the name (option, variable, stored, host), an upgrade in place from before
machines existed, rows of one machine invisible to another, and metadata-only indexing."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from sessdex.catalog.queries.sessions import Catalog
from sessdex.catalog.store import fts
from sessdex.catalog.store.location import resolve_location
from sessdex.catalog.store.machine import (
    MACHINE_FILE_NAME,
    host_name,
    remember_machine,
    resolve_machine,
    stored_machine,
)
from sessdex.core.errors import UsageError
from sessdex.core.paths import AgentPaths
from tests.catalog.catalog_support import BASE_MS, assistant, header, jsonl, sandbox_paths, user, write_file
from tests.cli_support import run_cli


@pytest.fixture
def paths(tmp_path: Path, monkeypatch) -> AgentPaths:
    for variable in ("SESSDEX_CATALOG", "PI_CODING_AGENT_DIR", "SESSDEX_MACHINE", "SESSDEX_MACHINES"):
        monkeypatch.delenv(variable, raising=False)
    paths = sandbox_paths(tmp_path)
    project = paths.home / "proj"
    project.mkdir()
    write_file(paths.project_session_dir(project) / "a.jsonl",
               jsonl([header("5eee000000000001", project, title="Alpha"), user("the quokka question"),
                      assistant("a wombat answer")]), BASE_MS)
    return paths


def test_the_machine_is_the_option_else_the_variable_else_the_stored_name_else_the_host(paths, monkeypatch):
    agent_dir = paths.agent_dir
    assert resolve_machine(agent_dir) == host_name()
    agent_dir.mkdir(parents=True, exist_ok=True)
    remember_machine(agent_dir, "laptop")
    remember_machine(agent_dir, "other")  # stored once: never replaced
    assert stored_machine(agent_dir) == "laptop" == resolve_machine(agent_dir)
    assert (agent_dir / MACHINE_FILE_NAME).stat().st_mode & 0o777 == 0o600
    monkeypatch.setenv("SESSDEX_MACHINE", "from-env")
    assert resolve_machine(agent_dir) == "from-env"
    assert resolve_machine(agent_dir, "from-option") == "from-option"
    for bad in ("all", " padded", "two\nlines", "x" * 300):
        with pytest.raises(UsageError):
            resolve_machine(agent_dir, bad)


def test_a_bad_machine_option_is_a_usage_error(paths, capsys):
    outcome = run_cli(["--agent-dir", str(paths.agent_dir), "--machine", "all", "list"], capsys)
    assert outcome.code == 2
    assert outcome.err.strip() == "sessdex: --machine cannot be `all` (that word selects every machine in --machines)"


def test_one_machines_rows_are_invisible_to_another_on_the_same_file(paths):
    location = resolve_location(paths.agent_dir)
    with Catalog(paths, location, machine="laptop") as laptop:
        assert [i.id for i in laptop.list_all_sessions()] == ["5eee000000000001"]
    other = sandbox_paths(paths.home.parent / "other")
    project = other.home / "proj"
    write_file(other.project_session_dir(project) / "b.jsonl",
               jsonl([header("6fff000000000001", project), user("the quokka again")]), BASE_MS + 1)
    with Catalog(other, location, machine="devbox") as devbox:
        assert [i.id for i in devbox.list_all_sessions()] == ["6fff000000000001"]
        assert [hit.session.id for hit in devbox.search("quokka", None)] == ["6fff000000000001"]
    with Catalog(paths, location, machine="laptop") as picker_catalog:
        # The picker's all-projects scope (its scope key) widens to every machine; the project scope does not.
        project_rows = picker_catalog.picker_rows(str(paths.home / "proj"), None, all_projects=False)
        assert [row.session_id for row in project_rows] == ["5eee000000000001"]
        every_rows = picker_catalog.picker_rows(str(paths.home / "proj"), None, all_projects=True)
        assert [row.session_id for row in every_rows] == ["6fff000000000001", "5eee000000000001"]
        matches = picker_catalog.content_matches("quokka", str(paths.home / "proj"), None, all_projects=True)
        assert len(matches) == 2
        assert picker_catalog.all_machines is False  # widened for those calls only
    with Catalog(paths, location, machine="laptop", all_machines=True) as everywhere:
        listed = everywhere.list_all_sessions()
        assert [(i.id, i.machine, i.remote) for i in listed] == [("6fff000000000001", "devbox", True),
                                                                  ("5eee000000000001", "laptop", False)]
        assert sorted(hit.session.id for hit in everywhere.search("quokka", None)) == ["5eee000000000001",
                                                                                       "6fff000000000001"]


def test_no_content_on_sqlite_deletes_the_text_and_its_full_text_entries(paths, capsys, monkeypatch):
    monkeypatch.chdir(paths.home / "proj")

    def sessdex(*args: str):
        return run_cli(["--agent-dir", str(paths.agent_dir), *args], capsys)

    assert sessdex("list").code == 0  # a first index by a read command: its message-text index comes later
    assert sessdex("index", "--no-content").code == 0
    connection = sqlite3.connect(paths.agent_dir / "catalog.db")
    try:
        assert connection.execute("SELECT count(*) FROM messages").fetchone() == (0,)
        connection.execute(fts.integrity_check("message_fts"))  # no entry left behind for a deleted row
    finally:
        connection.close()
    assert sessdex("search", "wombat").err.strip() == "No matching sessions"
    assert "5eee" in sessdex("search", "quokka").out  # the first message stays in the row
    assert sessdex("doctor", "--check").code == 0


def test_settings_read_the_machine_options_and_their_variables(paths, monkeypatch):
    from sessdex.catalog.store.settings import Settings

    assert Settings.resolve(paths=paths).all_machines is False
    assert Settings.resolve(paths=paths).machine_name == host_name()
    monkeypatch.setenv("SESSDEX_MACHINES", "all")
    monkeypatch.setenv("SESSDEX_MACHINE", "from-env")
    settings = Settings.resolve(paths=paths)
    assert (settings.all_machines, settings.machine_name) == (True, "from-env")
    settings = Settings.resolve(paths=paths, machine="given", machines="this")
    assert (settings.all_machines, settings.machine_name) == (False, "given")
    with pytest.raises(UsageError):
        _ = Settings.resolve(paths=paths, machines="some").all_machines


def test_list_reads_the_stored_machines_rows(paths, tmp_path: Path):
    """`list` without SQLAlchemy or any machine option finds the rows `index --machine laptop` wrote."""
    import os
    import subprocess
    import sys

    env = {key: value for key, value in os.environ.items()
           if key not in ("SESSDEX_CATALOG", "PI_CODING_AGENT_DIR", "SESSDEX_MACHINE", "SESSDEX_MACHINES")}
    runner = ("import atexit, sys\n"
              "atexit.register(lambda: sys.stderr.write('HEAVY=' + str('sqlalchemy' in sys.modules)))\n"
              "from sessdex.catalog.cli.entry import main\nmain()\n")

    def sessdex(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-c", runner, "--agent-dir", str(paths.agent_dir), *args],
                              cwd=paths.home / "proj", env=env, capture_output=True, text=True, timeout=60)

    assert sessdex("--machine", "laptop", "index").returncode == 0
    listed = sessdex("list", "--all", "--json")
    assert listed.returncode == 0 and '"id": "5eee000000000001"' in listed.stdout
    assert listed.stderr.endswith("HEAVY=False")  # the current catalog read as it is
    connection = sqlite3.connect(paths.agent_dir / "catalog.db")
    try:
        assert connection.execute("SELECT machine, count(*) FROM session_files GROUP BY machine").fetchall() == [
            ("laptop", 1)]  # not indexed a second time under the host name
    finally:
        connection.close()


def test_this_projects_folders_on_another_machine():
    from sessdex.catalog.queries.machine_scope import folders_on_machine

    here_root, there_root = "/home/alice/.xcsh/agent/sessions", "/srv/devbox/agent/sessions"
    folders = [f"{here_root}/--home-alice-proj--", f"{here_root}/-proj"]

    def there(cwd: str, *, home: str | None = "/home/alice", machine_home: str | None = "/Users/alice") -> list[str]:
        return folders_on_machine(folders, here_root, machine_root=there_root, cwd=cwd, home=home,
                                  machine_home=machine_home)

    same_names = [f"{there_root}/--home-alice-proj--", f"{there_root}/-proj"]
    # ~/proj here is ~/proj there: the folder of the same name, and the folders named from the devbox's home.
    assert there("/home/alice/proj") == [*same_names, f"{there_root}/--Users-alice-proj--"]
    assert there("/home/alice") == [*same_names, f"{there_root}/--Users-alice--", f"{there_root}/-"]
    # Outside the home, or a home that is not known: the folders of the same name only.
    assert there("/srv/proj") == same_names
    assert there("/home/alice/proj", machine_home=None) == same_names
    assert there("/home/alice/proj", home=None) == same_names
    assert folders_on_machine(folders, here_root, machine_root=there_root) == same_names
    assert folders_on_machine([here_root], here_root, machine_root=there_root) == [there_root]
    assert folders_on_machine(["/elsewhere/--p--"], here_root, machine_root=there_root) == []  # a --session-dir

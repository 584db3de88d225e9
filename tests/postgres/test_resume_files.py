"""`resume ID` on a PostgreSQL catalog, answered from this machine's session files (catalog.queries.resume_files):
the same answers as the SQLite catalog's and the PostgreSQL catalog's own, with the driver never imported,
while other machines' sessions (`--machines all`), marks (`--json`, `--keep-marks`) and lookups that would
read too much of the files still go to the server."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from gen_corpus import generate_corpus

from sessdex.catalog.queries import resume_files
from sessdex.catalog.queries.resume_files import FilesFirst, files_settle_resume
from sessdex.catalog.queries.sessions import Catalog
from sessdex.catalog.store.location import resolve_location
from sessdex.catalog.store.settings import Settings
from sessdex.core.errors import AmbiguousSessionError, SessdexError
from sessdex.core.paths import AgentPaths
from tests.catalog.catalog_support import BASE_MS, header, jsonl, session_fields, user, write_file
from tests.catalog.test_parity import NOW_MS

# Runs the CLI, then prints on stderr's last line which modules of the PostgreSQL driver (and sessdex's libpq reader,
# the sign that the catalog server was asked) it imported.
PROBE = ("import runpy, sys; sys.argv = sys.argv[1:]\n"
         "try:\n    runpy.run_module('sessdex.catalog', run_name='__main__')\nexcept SystemExit as exit:\n"
         "    code = exit.code\nelse:\n    code = 0\n"
         "import json; sys.stdout.flush()\n"
         "print(json.dumps(sorted(m for m in sys.modules if m.split('.')[0] in ('psycopg', 'sqlalchemy') "
         "or m == 'sessdex.catalog.store.libpq')), "
         "file=sys.stderr)\n"
         "sys.exit(code)")
LIBPQ_READER = "sessdex.catalog.store.libpq"


def _machine(root: Path, seed: int) -> AgentPaths:
    paths = AgentPaths(agent_dir=root / "home" / ".xcsh" / "agent", home=root / "home", tmp_dir=Path("/tmp"))
    generate_corpus(paths.agent_dir, sessions=30, projects=3, total_bytes=600_000, seed=seed, home=paths.home,
                    now=NOW_MS / 1000)
    return paths


def _cli(paths: AgentPaths, catalog: str, *args: str, cwd: Path, machine: str = "laptop"
         ) -> tuple[int, str, str, list[str]]:
    """(exit status, stdout, stderr, the driver's modules imported) of one CLI run."""
    env = {**os.environ, "SESSDEX_MACHINE": machine, "COLUMNS": "200"}
    for variable in ("SESSDEX_CATALOG", "SESSDEX_MACHINES", "PI_CODING_AGENT_DIR"):
        env.pop(variable, None)
    run = subprocess.run([sys.executable, "-c", PROBE, "sessdex", "--agent-dir", str(paths.agent_dir),
                          "--catalog", catalog, *args], capture_output=True, text=True, errors="surrogateescape",
                         cwd=cwd, env=env, timeout=120)
    *err, imported = run.stderr.splitlines(keepends=True)
    return run.returncode, run.stdout, "".join(err), json.loads(imported)


@pytest.fixture
def shared(tmp_path: Path, postgres_url: str) -> tuple[AgentPaths, AgentPaths, str, Path, str]:
    """Two machines indexed into one PostgreSQL catalog, the laptop also into its own SQLite catalog; the
    laptop's project and a prefix matching one laptop session and one devbox session of that project."""
    laptop, devbox = _machine(tmp_path / "laptop", 11), _machine(tmp_path / "devbox", 12)
    project = laptop.home / "proj"
    project.mkdir()
    folder = laptop.project_session_dir(project)
    write_file(folder / "2026-01-01T00-00-00-000Z_7e57000000000001.jsonl",
               jsonl([header("7e57000000000001", project), user("the laptop's")]), BASE_MS)
    # named after the session above, holding another id: the files are read by their headers, as the catalog
    write_file(folder / "2026-01-01T00-00-00-000Z_7e57000000000002.jsonl",
               jsonl([header("9a9a000000000001", project), user("misnamed")]), BASE_MS + 1)
    write_file(folder / "no-messages.jsonl", jsonl([header("9b9b000000000001", project)]), BASE_MS + 2)
    # a folder whose name is not valid UTF-8: no catalog holds its files (doctor reports them)
    undecodable = Path(os.fsdecode(os.fsencode(str(laptop.sessions_root)) + b"/bad-\xff-folder"))
    write_file(undecodable / "2026-01-01T00-00-00-000Z_bad0000000000001.jsonl",
               jsonl([header("bad0000000000001", project), user("undecodable")]), BASE_MS + 4)
    (devbox.home / "proj").mkdir()
    write_file(devbox.project_session_dir(devbox.home / "proj") / "2026-01-01T00-00-00-000Z_7e57000000000003.jsonl",
               jsonl([header("7e57000000000003", devbox.home / "proj"), user("the devbox's")]), BASE_MS + 3)
    sqlite_db = str(tmp_path / "catalog.db")
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    for paths, catalog, machine in ((laptop, sqlite_db, "laptop"), (laptop, postgres_url, "laptop"),
                                    (devbox, postgres_url, "devbox")):
        assert _cli(paths, catalog, "index", cwd=outside, machine=machine)[0] == 0
    return laptop, devbox, sqlite_db, project, postgres_url


def test_resume_of_this_machines_sessions_answers_as_sqlite_without_the_driver(shared, tmp_path: Path):
    laptop, _devbox, sqlite_db, project, postgres_url = shared
    outside = tmp_path / "elsewhere"
    listed = _cli(laptop, sqlite_db, "list", "--all", "--json", cwd=outside)[1]
    ids = sorted(item["id"] for item in json.loads(listed))
    assert len(ids) > 25
    folder = laptop.project_session_dir(project)
    values = ["bad0", "7e57", "7e57000000000001", "7e57000000000002", "9a9a", "9b9b000000000001", "9b9b", "zzzz",
              ids[3], ids[3][:4], ids[7][:1], ids[20][:2], str(folder / "no-messages.jsonl"), "missing.jsonl"]
    commands = [["resume", "--no-fork", value] for value in values]
    commands += [["resume", "--own-dir", ids[3][:4]], ["resume", "--shell", "--no-fork", "7e57"],
                 ["resume", "--shell", "--own-dir", ids[3]], ["resume", "--session-dir", str(folder), "--no-fork", "9b9b"],
                 ["resume", "--session-dir", str(folder), "--no-fork", ids[3]]]
    compared = 0
    for cwd in (project, outside):
        for command in commands:
            expected = _cli(laptop, sqlite_db, *command, cwd=cwd)
            found = _cli(laptop, postgres_url, *command, cwd=cwd)
            assert found[:3] == expected[:3], (cwd, command)
            assert found[3] == [], (cwd, command)  # neither psycopg nor SQLAlchemy imported
            compared += expected[0] == 0
    assert compared > 10


def test_other_machines_sessions_and_marks_are_answered_by_the_server(shared, tmp_path: Path):
    laptop, _devbox, sqlite_db, project, postgres_url = shared
    outside = tmp_path / "elsewhere"  # in no project: every project is looked at
    # this machine only: the laptop's session, as the catalog itself answers (the devbox's shares its prefix)
    code, out, err, imported = _cli(laptop, postgres_url, "resume", "--own-dir", "7e57", cwd=outside)
    assert (code, err, imported) == (0, "", [])
    assert out.endswith("7e57000000000001.jsonl\n")
    location = resolve_location(laptop.agent_dir, postgres_url)
    with Catalog(laptop, location, machine="laptop") as catalog:
        assert catalog.find_session_by_id("7e57", outside).id == "7e57000000000001"
    with Catalog(laptop, location, machine="laptop", all_machines=True) as everywhere:
        with pytest.raises(AmbiguousSessionError) as both:
            everywhere.find_session_by_id("7e57", outside)
    assert sorted(info.id for info in both.value.candidates) == ["7e57000000000001", "7e57000000000003"]
    # every machine: ambiguous, from the server
    code, out, err, imported = _cli(laptop, postgres_url, "--machines", "all", "resume", "--own-dir", "7e57",
                                    cwd=outside)
    assert code == 1 and 'Session "7e57" is ambiguous: it matches 2 sessions' in err
    assert imported == [LIBPQ_READER]  # the server answered, through libpq alone
    # marks: the server's answer, equal to SQLite's
    assert _cli(laptop, sqlite_db, "pin", "7e57000000000001", cwd=project)[0] == 0
    for command in (["resume", "--json", "7e57"], ["resume", "--json", "--no-fork", ids_outside(laptop)]):
        expected = _cli(laptop, sqlite_db, *command, cwd=project)
        found = _cli(laptop, postgres_url, *command, cwd=project)
        assert found[:3] == expected[:3], command
        assert LIBPQ_READER in found[3], command  # the server answered (psycopg too, when the freshness check wrote)
    assert json.loads(_cli(laptop, postgres_url, "resume", "--json", "7e57", cwd=project)[1])["marks"]["pinned"] is True


def ids_outside(paths: AgentPaths) -> str:
    """The id of a session of another project than `proj`."""
    return next(path.stem.rpartition("_")[2] for path in sorted(paths.sessions_root.rglob("*.jsonl"))
                if "proj--" not in path.parent.name and "_" in path.stem)


class _Opener:
    """Opens the PostgreSQL catalog for FilesFirst, counting how often it is asked to."""

    def __init__(self, paths: AgentPaths, url: str) -> None:
        self.paths, self.url, self.opened = paths, url, 0

    def __call__(self) -> Catalog:
        self.opened += 1
        return Catalog(self.paths, resolve_location(self.paths.agent_dir, self.url), machine="laptop")


def _answer(source, value: str, cwd: Path):
    try:
        return session_fields(source.find_session_by_id(value, cwd))
    except SessdexError as error:
        return type(error).__name__, str(error)


def test_over_the_read_budget_the_catalog_answers_the_same(shared, monkeypatch):
    laptop, _devbox, _sqlite_db, project, postgres_url = shared
    opener = _Opener(laptop, postgres_url)
    values = ["7e57", "9a9a", "9b9b000000000001", "9b9b", "zzzz", "1", "a"]
    with opener() as catalog:
        expected = [_answer(catalog, value, project) for value in values]
    opener.opened = 0
    with FilesFirst(laptop, opener) as files_first:
        assert [_answer(files_first, value, project) for value in values] == expected
    assert opener.opened == 0
    monkeypatch.setattr(resume_files, "WHOLE_READ_BUDGET", 0)
    with FilesFirst(laptop, opener) as files_first:
        assert [_answer(files_first, value, project) for value in values] == expected
    assert opener.opened == 1  # once, then kept for the other lookups


@pytest.mark.parametrize(("catalog", "machines", "expected"), [
    ("postgresql://u@host/db", None, True), ("postgresql+psycopg://u@host/db", "this", True),
    ("postgresql://u@host/db", "all", False), (None, None, False), ("off", None, False),
    ("/tmp/catalog.db", None, False), ("sqlite:////tmp/catalog.db", None, False)])
def test_the_files_answer_first_only_on_a_server_asked_for_this_machine(catalog, machines, expected, tmp_path: Path):
    assert files_settle_resume(Settings(tmp_path, catalog, machines=machines)) is expected

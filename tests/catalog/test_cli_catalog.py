"""`sessdex index | search | doctor` and the `--catalog` option, run as a user would."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from sessdex.core.paths import AgentPaths
from tests.catalog.catalog_support import (
    BASE_MS,
    append_bytes,
    assistant,
    header,
    jsonl,
    sandbox_paths,
    user,
    write_file,
)
from tests.cli_support import Outcome, run_cli


@pytest.fixture
def paths(tmp_path: Path, monkeypatch) -> AgentPaths:
    monkeypatch.delenv("SESSDEX_CATALOG", raising=False)
    monkeypatch.delenv("PI_CODING_AGENT_DIR", raising=False)
    return sandbox_paths(tmp_path)


@pytest.fixture
def sessdex(paths: AgentPaths, monkeypatch, capsys):
    def run(*args: str, cwd: Path | None = None) -> Outcome:
        monkeypatch.chdir(cwd or paths.home)
        return run_cli(["--agent-dir", str(paths.agent_dir), *args], capsys)
    return run


@pytest.fixture
def proj(paths: AgentPaths) -> Path:
    folder = paths.home / "proj"
    folder.mkdir()
    sessions = paths.project_session_dir(folder)
    write_file(sessions / "a.jsonl", jsonl([header("aaaa000000000001", folder, title="Parser work"),
                                            user("fix the tokenizer"), assistant("the lexer is fixed")]), BASE_MS)
    write_file(sessions / "b.jsonl", jsonl([header("bbbb000000000001", folder), user("deploy the service")]),
               BASE_MS + 1000)
    write_file(sessions / "broken.jsonl", b"\x00\x01 not a session\n", BASE_MS + 2000)
    return folder


def _digests(paths: AgentPaths) -> dict[str, str]:
    return {str(p): hashlib.sha256(p.read_bytes()).hexdigest() for p in paths.sessions_root.rglob("*.jsonl")}


def test_index_builds_then_only_catches_up_and_rebuild_starts_over(sessdex, proj, paths):
    first = sessdex("index")
    assert first.code == 0 and "Indexed 3 file(s)" in first.err and "holds 3 file(s)" in first.err
    assert "Indexed 0 file(s)" in sessdex("index").err
    append_bytes(paths.project_session_dir(proj) / "b.jsonl", jsonl([assistant("deployed")]))
    assert "Indexed 1 file(s)" in sessdex("index").err
    assert "Indexed 3 file(s)" in sessdex("index", "--rebuild").err


def test_search_prints_sessions_with_highlighted_snippets(sessdex, proj):
    result = sessdex("search", "lexer", "--table", cwd=proj)
    assert result.code == 0
    header, first, second = result.out.splitlines()
    assert header.split() == ["ID", "MODIFIED", "MSGS", "COST", "TOKENS", "NAME"]  # the table of `list`
    assert first.startswith("aaaa0000  ") and first.endswith("Parser work")
    assert second == "    message: the [lexer] is fixed"
    hits = json.loads(sessdex("search", "--json", "deploy", cwd=proj).out)
    assert [(h["id"], h["field"]) for h in hits] == [("bbbb000000000001", "first_message")]
    assert hits[0]["snippet"] == "[deploy] the service"
    none = sessdex("search", '"unbalanced (quote', cwd=proj)
    assert (none.code, none.out, none.err.strip()) == (0, "", "No matching sessions")
    assert sessdex("search", "lexer", cwd=proj.parent).err.strip() == "No matching sessions"  # other project
    assert "aaaa0000\t" in sessdex("search", "--all", "lexer", cwd=proj.parent).out
    hit = json.loads(sessdex("search", "--json", "lexer", cwd=proj).out)[0]
    listed = json.loads(sessdex("list", "--json", cwd=proj).out)
    assert {key: hit[key] for key in listed[0]} == next(row for row in listed if row["id"] == hit["id"])


def test_doctor_reports_then_repairs_the_catalog_never_the_files(sessdex, proj, paths):
    sessdex("index")
    clean = sessdex("doctor", "--check")
    assert clean.code == 0 and "the catalog is consistent" in clean.out
    assert "files without a valid session header (listed nowhere): 1" in clean.out
    append_bytes(paths.project_session_dir(proj) / "a.jsonl", jsonl([user("more")]))
    write_file(paths.project_session_dir(proj) / "c.jsonl", jsonl([header("cccc000000000001", proj), user("c")]))
    before = _digests(paths)
    stale = sessdex("doctor", "--check")
    assert stale.code == 1
    assert "not in the catalog: 1" in stale.out and "changed since indexed: 1" in stale.out
    repaired = sessdex("doctor")
    assert repaired.code == 0 and "repaired: indexed 2 file(s)" in repaired.out
    assert sessdex("doctor", "--check").code == 0
    report = json.loads(sessdex("doctor", "--json").out)
    assert report["needs_repair"] is False and report["files"] == 4
    assert _digests(paths) == before


def test_doctor_rebuilds_a_catalog_it_cannot_open(sessdex, proj, paths):
    sessdex("index")
    catalog = paths.agent_dir / "catalog.db"
    for leftover in (Path(f"{catalog}-wal"), Path(f"{catalog}-shm")):
        leftover.unlink(missing_ok=True)
    catalog.write_bytes(b"garbage" * 1000)
    checked = sessdex("doctor", "--check")
    assert checked.code == 1 and "index --rebuild" in checked.err
    repaired = sessdex("doctor")
    assert repaired.code == 0 and "rebuilt the catalog from the session files" in repaired.out
    assert list(paths.agent_dir.glob("catalog.db.corrupt-*"))
    assert "aaaa0000\t" in sessdex("search", "--all", "tokenizer").out


def test_the_catalog_option_and_environment_variable_choose_the_database(sessdex, proj, paths, tmp_path, monkeypatch):
    chosen = tmp_path / "chosen.db"
    assert sessdex("--catalog", str(chosen), "index").code == 0
    assert chosen.exists() and not (paths.agent_dir / "catalog.db").exists()
    monkeypatch.setenv("SESSDEX_CATALOG", f"sqlite:///{tmp_path / 'from-env.db'}")
    assert sessdex("index").code == 0
    assert (tmp_path / "from-env.db").exists() and not (paths.agent_dir / "catalog.db").exists()


def test_list_reads_the_files_when_the_catalog_is_off_or_unusable(sessdex, proj, paths):
    off = sessdex("--catalog", "off", "list", cwd=proj)
    assert off.code == 0 and "aaaa0000" in off.out and off.err == ""
    assert not (paths.agent_dir / "catalog.db").exists()
    (paths.agent_dir / "catalog.db").write_bytes(b"not a database" * 100)
    broken = sessdex("list", cwd=proj)
    assert broken.code == 0 and "aaaa0000" in broken.out
    assert "reading the session files directly" in broken.err
    searched = sessdex("search", "lexer", cwd=proj)  # the files searched instead, after one line
    assert searched.code == 0 and "aaaa0000" in searched.out and "searching the session files directly" in searched.err
    assert sessdex("--catalog", "off", "search", "lexer", cwd=proj).code == 1  # asked for no catalog: refused


HEAVY_IMPORT_PROBE = ("import atexit, sys; atexit.register(lambda: sys.stderr.write("
                      "'HEAVY=' + ','.join(sorted(m for m in ('sqlalchemy', 'alembic', 'watchdog') if m in sys.modules)))); "
                      "from sessdex.catalog.cli.entry import main; main()")


@pytest.mark.parametrize("command", [["list"], ["list", "--all"], ["recent"], ["resume", "aaaa0000"],
                                     ["continue"], ["search", "lexer"]])
def test_reads_of_a_current_catalog_import_neither_sqlalchemy_nor_alembic(sessdex, proj, paths, command):
    assert sessdex("index").code == 0  # creating the catalog does need Alembic; reading it must not
    result = subprocess.run([sys.executable, "-c", HEAVY_IMPORT_PROBE, "--agent-dir", str(paths.agent_dir), *command],
                            cwd=proj, capture_output=True, text=True, env={**os.environ, "HOME": str(paths.home)})
    assert result.returncode == 0, result.stderr
    assert result.stderr.endswith("HEAVY="), result.stderr


def test_catalog_refuses_another_programs_sqlite_database(tmp_path: Path) -> None:
    """`--catalog history.db index --rebuild` must neither delete nor add tables to a database that is not a catalog."""
    import sqlite3
    import subprocess
    import sys

    agent = tmp_path / "agent"
    (agent / "sessions").mkdir(parents=True)
    foreign = agent / "history.db"
    with sqlite3.connect(foreign) as connection:
        connection.execute("CREATE TABLE history (id INTEGER PRIMARY KEY, prompt TEXT)")
        connection.execute("INSERT INTO history (prompt) VALUES ('keep me')")
    connection.close()
    before = foreign.read_bytes()
    for args in (["index", "--rebuild"], ["doctor"], ["list"]):
        result = subprocess.run([sys.executable, "-m", "sessdex.catalog", "--agent-dir", str(agent),
                                 "--catalog", str(foreign), *args], capture_output=True, text=True, check=False)
        assert result.returncode == 2, (args, result.stderr)
        assert result.stderr.count("\n") == 1 and "not a sessdex catalog" in result.stderr, result.stderr
    assert foreign.read_bytes() == before


def test_a_heartbeat_naming_no_real_process_is_not_a_live_watcher(tmp_path: Path) -> None:
    from sessdex.catalog.index.reconcile import read_heartbeat
    from sessdex.catalog.store.location import resolve_location

    location = resolve_location(tmp_path)
    for pid in ("0", "-1", "99999999999999999999"):
        Path(location.sidecar_file(".watcher")).write_text(f"{pid}\n{tmp_path}\n", encoding="utf-8")
        assert read_heartbeat(location) is None, pid


def _damage(catalog: Path, statement: str) -> None:
    import sqlite3

    connection = sqlite3.connect(catalog)
    try:
        connection.execute(statement)
        connection.commit()
    finally:
        connection.close()


@pytest.mark.parametrize("damage", ["DROP TABLE session_fts", "ALTER TABLE session_files RENAME COLUMN title TO t",
                                    "DROP INDEX ix_session_files_machine_path"])
def test_a_catalog_with_a_damaged_schema_answers_from_the_files_in_one_line_and_doctor_rebuilds_it(
        sessdex, proj, paths, damage):
    assert sessdex("index").code == 0
    catalog = paths.agent_dir / "catalog.db"
    _damage(catalog, damage)
    answers = {}
    for command in (("list", "--all"), ("resume", "aaaa"), ("search", "lexer", "--all", "--table"),
                    ("usage", "--all", "--json")):
        result = sessdex(*command, cwd=proj)
        assert result.code == 0, (command, result.err)
        lines = result.err.splitlines()
        assert len(lines) == 1 and "is damaged" in lines[0] and "`sessdex doctor`" in lines[0], (command, lines)
        assert "Traceback" not in result.err
        answers[command] = result.out
    for command in (("list", "--all"), ("resume", "aaaa"), ("usage", "--all", "--json")):
        assert answers[command] == sessdex("--catalog", "off", *command, cwd=proj).out, command
    found = answers[("search", "lexer", "--all", "--table")]
    assert found.splitlines()[1].startswith("aaaa0000  ") and "message: " in found and "the [lexer] is fixed" in found
    check = sessdex("doctor", "--check")
    assert check.code == 1 and "is damaged" in check.err
    repaired = sessdex("doctor")
    assert repaired.code == 0 and "rebuilt the catalog from the session files" in repaired.out
    again = sessdex("list", "--all", cwd=proj)
    assert again.code == 0 and again.err == "" and again.out == answers[("list", "--all")]
    searched = sessdex("search", "lexer", "--all", "--table", cwd=proj)  # the catalog's full-text search again
    assert searched.code == 0 and searched.err == "" and "    message: the [lexer] is fixed" in searched.out
    assert sessdex("doctor", "--check").code == 0

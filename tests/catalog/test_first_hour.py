"""A first hour on an empty catalog: readers never wait for a writer, and `resume PREFIX` looks at file names first.

Another process that indexes is a real process here: it holds the catalog's index lock and a write transaction
(`BEGIN IMMEDIATE`), as a first `sessdex index` or a watcher's initial scan does. Every read command must then
answer at once, exactly as the file scan (`--catalog off`) answers, and write nothing.
"""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

import sessdex.catalog.queries.sessions as sessions_module
from sessdex.catalog.index.reconcile import INDEX_LOCK_SUFFIX, Scope, index_lock, reconcile
from sessdex.catalog.store.db import open_catalog
from sessdex.catalog.store.location import resolve_location
from sessdex.core.errors import PrivateFileError
from tests.cli_support import Outcome, run_cli
from tests.core.sessiontree import BASE_MS, Tree, assistant, header, jsonl, make_tree, user, write_file

HOLDER = """
import fcntl, os, sqlite3, sys
fd = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT, 0o600)
fcntl.flock(fd, fcntl.LOCK_EX)
connection = sqlite3.connect(sys.argv[2], isolation_level=None)
connection.execute("BEGIN IMMEDIATE")
print("holding", flush=True)
sys.stdin.read()
"""


@pytest.fixture
def tree(tmp_path: Path, monkeypatch) -> Tree:
    tree = make_tree(tmp_path)
    monkeypatch.setenv("HOME", str(tree.home))
    monkeypatch.setenv("TMPDIR", str(tree.root / "tmp"))
    monkeypatch.delenv("PI_CODING_AGENT_DIR", raising=False)
    monkeypatch.delenv("SESSDEX_CATALOG", raising=False)
    monkeypatch.setenv("SESSDEX_AUTOWATCH", "0")
    return tree


def populate(tree: Tree) -> dict[str, Path]:
    """Two projects; in `proj` a file whose name holds another id than its header's."""
    proj, other = tree.project("proj"), tree.project("other")
    files = {
        "old": tree.session(proj, "ab12000000000001", [user("fix the parser"), assistant("done")], mtime_ms=BASE_MS),
        "new": tree.session(proj, "ab34000000000002", [user("second task"), assistant("ok")],
                            mtime_ms=BASE_MS + 60_000),
        "other": tree.session(other, "cd78000000000004", [user("elsewhere work"), assistant("fine")],
                              mtime_ms=BASE_MS + 30_000),
    }
    # Renamed by hand: the name says ee00..., the header (the truth) says ef99...
    files["misnamed"] = write_file(tree.project_dir(other) / "2025-01-01T00-00-00-000Z_ee00000000000009.jsonl",
                                   jsonl([header("ef99000000000009", other), user("misnamed"), assistant("yes")]),
                                   BASE_MS + 90_000)
    return files


@pytest.fixture
def sessdex(tree: Tree, monkeypatch, capsys):
    def run(cwd: Path, *args: str) -> Outcome:
        monkeypatch.chdir(cwd)
        return run_cli(["--agent-dir", str(tree.paths.agent_dir), *args], capsys)
    return run


def catalog_file(tree: Tree) -> Path:
    return tree.paths.agent_dir / "catalog.db"


def empty_catalog(tree: Tree) -> None:
    """The catalog created (current schema) with no session rows, as a first command finds it."""
    open_catalog(resolve_location(tree.paths.agent_dir)).close()


@pytest.fixture
def other_indexer(tree: Tree) -> Iterator[subprocess.Popen[str]]:
    """A real process holding the index lock and the catalog's write lock until the test ends."""
    empty_catalog(tree)
    lock = str(catalog_file(tree)) + INDEX_LOCK_SUFFIX
    process = subprocess.Popen([sys.executable, "-c", HOLDER, lock, str(catalog_file(tree))], stdin=subprocess.PIPE,
                               stdout=subprocess.PIPE, text=True)
    try:
        assert process.stdout is not None and process.stdout.readline() == "holding\n"
        yield process
    finally:
        assert process.stdin is not None
        process.stdin.close()
        process.wait(timeout=10)
        assert process.stdout is not None
        process.stdout.close()


def rows_in_catalog(tree: Tree) -> int:
    connection = sqlite3.connect(catalog_file(tree))
    try:
        return connection.execute("SELECT count(*) FROM session_files").fetchone()[0]
    finally:
        connection.close()


def test_while_another_process_indexes_every_read_answers_as_the_file_scan_and_writes_nothing(
        tree: Tree, sessdex, other_indexer) -> None:
    files = populate(tree)
    proj = tree.project("proj")
    for args in (["list", "--all", "--json"], ["list", "--json"], ["recent", "--json"], ["continue", "--json"],
                 ["resume", "ab12", "--json"], ["resume", "ef99", "--json", "--own-dir"]):
        answer = sessdex(proj, *args)
        reference = sessdex(proj, "--catalog", "off", *args)
        assert (answer.code, answer.out) == (reference.code, reference.out), args
        assert answer.code == 0, (args, answer.err)
    assert json.loads(sessdex(proj, "resume", "ef99", "--json", "--own-dir").out)["path"] == str(files["misnamed"])
    assert rows_in_catalog(tree) == 0  # the other process indexes: nothing was written meanwhile


def test_resume_on_an_incomplete_catalog_reads_only_the_files_whose_name_matches(tree: Tree, sessdex,
                                                                              monkeypatch) -> None:
    files = populate(tree)
    empty_catalog(tree)
    read: list[str] = []
    real_read_infos = sessions_module._read_infos

    def counting(paths, include_empty):
        paths = list(paths)
        read.extend(paths)
        return real_read_infos(paths, include_empty)

    monkeypatch.setattr(sessions_module, "_read_infos", counting)
    with index_lock(resolve_location(tree.paths.agent_dir)):  # another indexer: the full rule would not index
        answer = sessdex(tree.project("proj"), "resume", "cd78", "--json", "--own-dir")
    assert answer.code == 0, answer.err
    assert json.loads(answer.out)["path"] == str(files["other"])
    assert read == [str(files["other"])]
    assert rows_in_catalog(tree) == 0


def test_a_name_that_does_not_hold_the_header_id_is_found_by_the_full_rule_and_never_by_its_name(tree: Tree,
                                                                                              sessdex) -> None:
    populate(tree)
    proj = tree.project("proj")
    assert sessdex(proj, "resume", "ee00").code == 1  # only the name says ee00: the header decides
    assert sessdex(proj, "--catalog", "off", "resume", "ee00").code == 1
    assert sessdex(proj, "resume", "ef99", "--own-dir").code == 0  # not by name: the full rule (it indexes)
    assert rows_in_catalog(tree) == 4


def test_a_read_command_alone_on_an_empty_catalog_indexes_it_under_the_lock(tree: Tree) -> None:
    populate(tree)
    location = resolve_location(tree.paths.agent_dir)
    db = open_catalog(location)
    try:
        scope = Scope.of(root=tree.paths.sessions_root)
        with index_lock(location):
            deferred = reconcile(db, scope, wait=False)
        assert deferred.deferred and len(deferred.unindexed) == 4
        assert db.scalar("count_files") == 0
        report = reconcile(db, scope, wait=False)
        assert not report.deferred and len(report.changed) == 4 and db.scalar("count_files") == 4
    finally:
        db.close()
    assert os.stat(str(location.sqlite_path) + INDEX_LOCK_SUFFIX).st_mode & 0o777 == 0o600


def test_the_index_lock_never_follows_a_symlink(tree: Tree, tmp_path: Path) -> None:
    location = resolve_location(tree.paths.agent_dir)
    target = tmp_path / "elsewhere"
    target.write_text("keep")
    os.makedirs(location.lock_folder, exist_ok=True)
    os.symlink(target, location.sidecar_file(INDEX_LOCK_SUFFIX))
    with pytest.raises(PrivateFileError, match="symlink"), index_lock(location, wait=False):
        pass  # refused, as every file of sessdex's planted as a symlink is
    assert target.read_text() == "keep"


def _list_all_with_stderr(tree: Tree, *, terminal: bool, delay: str) -> tuple[str, str]:
    """(stdout, stderr) of a real `sessdex list --all` process, its stderr a pseudo-terminal when `terminal`."""
    import pty
    import select

    env = {**os.environ, "SESSDEX_PROGRESS_AFTER": delay, "PI_CODING_AGENT_DIR": str(tree.paths.agent_dir)}
    env.pop("PYTEST_CURRENT_TEST", None)
    sessdex_script = str(Path(sys.executable).parent / "sessdex")
    controller = None
    if terminal:
        controller, stderr_end = pty.openpty()
    else:
        stderr_end = subprocess.PIPE
    process = subprocess.Popen([sessdex_script, "list", "--all"], env=env, cwd=tree.home, stdin=subprocess.DEVNULL,
                               stdout=subprocess.PIPE, stderr=stderr_end)
    if controller is None:
        out, err = process.communicate(timeout=60)
        return out.decode(), err.decode()
    os.close(stderr_end)
    seen = b""
    while True:
        ready, _, _ = select.select([controller], [], [], 60)
        if not ready:
            break
        try:
            chunk = os.read(controller, 4096)
        except OSError:  # the process ended: the terminal is gone
            break
        if not chunk:
            break
        seen += chunk
    assert process.stdout is not None
    with process.stdout:
        out = process.stdout.read()
    process.wait(timeout=60)
    os.close(controller)
    return out.decode(), seen.decode(errors="replace")


def test_a_read_command_that_indexes_shows_its_progress_on_a_terminal_only_and_erases_it(tree: Tree) -> None:
    populate(tree)
    for index in range(20):
        tree.session(tree.project("proj"), f"f{index:015d}", [user(f"task {index}"), assistant("ok")],
                     mtime_ms=BASE_MS + index)
    out, err = _list_all_with_stderr(tree, terminal=True, delay="0")
    assert "Reading new session files" in err and "of 24 (" in err
    assert err.endswith("\r\x1b[K")  # erased before the answer
    assert "task 7" in out
    catalog_file(tree).unlink()
    out, err = _list_all_with_stderr(tree, terminal=False, delay="0")
    assert "Reading new session files" not in err and "task 7" in out


def test_a_quick_pass_says_nothing_even_on_a_terminal(tree: Tree) -> None:
    populate(tree)
    out, err = _list_all_with_stderr(tree, terminal=True, delay="30")
    assert "Reading new session files" not in err and "fix the parser" in out


def test_files_modified_within_one_millisecond_are_listed_in_the_file_scans_order_while_another_process_indexes(
        tree: Tree, sessdex) -> None:
    proj = tree.project("proj")
    sub_ms = {"aa00000000000001": 100, "bb00000000000002": 500, "cc00000000000003": 200, "dd00000000000004": 900}
    paths = {session_id: tree.session(proj, session_id, [user(f"task {session_id}"), assistant("ok")])
             for session_id in sub_ms}

    def set_times(ids: list[str]) -> None:
        for session_id in ids:  # the same millisecond, apart in its fraction
            nanoseconds = BASE_MS * 1_000_000 + sub_ms[session_id] * 1_000
            os.utime(paths[session_id], ns=(nanoseconds, nanoseconds))

    set_times(["aa00000000000001", "bb00000000000002"])
    for session_id in ("cc00000000000003", "dd00000000000004"):  # written after the catalog's first index
        paths[session_id].rename(paths[session_id].with_suffix(".later"))
    assert sessdex(proj, "index").code == 0
    for session_id in ("cc00000000000003", "dd00000000000004"):
        paths[session_id].with_suffix(".later").rename(paths[session_id])
    set_times(["cc00000000000003", "dd00000000000004"])
    lock = str(catalog_file(tree)) + INDEX_LOCK_SUFFIX
    holder = subprocess.Popen([sys.executable, "-c", HOLDER, lock, str(catalog_file(tree))], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline() == "holding\n"
        answer = sessdex(proj, "list", "--all", "--json")
        reference = sessdex(proj, "--catalog", "off", "list", "--all", "--json")
    finally:
        assert holder.stdin is not None and holder.stdout is not None
        holder.stdin.close()
        holder.wait(timeout=10)
        holder.stdout.close()
    assert [session["id"] for session in json.loads(reference.out)] == [
        "dd00000000000004", "bb00000000000002", "cc00000000000003", "aa00000000000001"]
    listed = [(session["id"], session["path"], session["modified"]) for session in json.loads(answer.out)]
    assert listed == [(session["id"], session["path"], session["modified"]) for session in json.loads(reference.out)]
    assert rows_in_catalog(tree) == 2  # answered from two rows and two files read directly

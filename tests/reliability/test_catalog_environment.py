"""Trials of a hostile environment: a read-only agent dir, a deleted current directory, the catalog's WAL
deleted under a running index, unreadable session files, a symlinked session whose target grows.

Each must end in one clear line (or work, read-only where that makes sense), never a traceback, and the
catalog must agree with what the files say.
"""

from __future__ import annotations

import contextlib
import json
import os
import shlex
import signal
import stat
import subprocess
import time
from pathlib import Path

import pytest

from tests.core.sessiontree import BASE_MS, assistant, jsonl, user
from tests.reliability.catalog_support import (
    SESSDEX,
    Tree,
    make_tree,
    permission_respecting_prefix,
    run_sessdex,
    trial_env,
)

pytestmark = pytest.mark.reliability


def session_id(number: int) -> str:
    return f"ab1200000000000{number}"


@pytest.fixture
def tree(tmp_path: Path) -> Tree:
    tree = make_tree(tmp_path)
    project = tree.project("proj")
    for number in range(3):
        tree.session(project, session_id(number), [user(f"parser task {number}"), assistant("ok")],
                     mtime_ms=BASE_MS + number)
    return tree


def _read_only(folder: Path) -> None:
    """Take write permission away from `folder` and everything below it."""
    for path in [folder, *folder.rglob("*")]:
        mode = stat.S_IMODE(path.stat().st_mode)
        path.chmod(mode & ~0o222)


def _writable_again(folder: Path) -> None:
    for path in [folder, *folder.rglob("*")]:
        path.chmod(stat.S_IMODE(path.stat().st_mode) | 0o200)


@pytest.mark.parametrize("indexed_first", [False, True])
def test_a_read_only_agent_dir_gives_one_line_or_works(tree: Tree, indexed_first: bool) -> None:
    project = tree.project("proj")
    if indexed_first:
        assert run_sessdex(tree, "index").code == 0
    _read_only(tree.paths.agent_dir)
    try:
        for args in (("index", "--rebuild"), ("index",), ("watch",), ("doctor",)):
            result = run_sessdex(tree, *args, cwd=project, obey_permissions=True, timeout=30)
            assert result.code == 2 and result.one_line_error, (args, result.code, result.err)
        added = run_sessdex(tree, "history", "add", "x", obey_permissions=True)
        assert added.code != 0 and added.one_line_error, added.err  # refused, and said so
        for args in (("list",), ("recent",), ("resume", session_id(1)), ("doctor", "--check"),
                     ("history", "recent")):
            result = run_sessdex(tree, *args, cwd=project, obey_permissions=True, timeout=30)
            assert "Traceback" not in result.err and result.err.count("\n") <= 1, (args, result.err)
        listed = run_sessdex(tree, "list", cwd=project, obey_permissions=True)
        assert listed.code == 0 and "ab120000" in listed.out  # reading works, from the catalog or the files
    finally:
        _writable_again(tree.paths.agent_dir)
    if indexed_first:
        assert run_sessdex(tree, "doctor", "--check").code == 0  # nothing was damaged


CWD_COMMANDS = [("list",), ("list", "--all"), ("recent",), ("continue",), ("resume", "ab12"), ("search", "parser"),
                ("history", "recent"), ("history", "search", "parser"), ("history", "add", "from nowhere")]


def test_a_deleted_current_directory_gives_one_line(tree: Tree) -> None:
    assert run_sessdex(tree, "index").code == 0
    assert run_sessdex(tree, "history", "add", "a first prompt").code == 0  # history exists: its commands get as far as the cwd
    gone = tree.root / "gone"
    for args in CWD_COMMANDS:
        gone.mkdir()
        command = [str(SESSDEX), "--agent-dir", str(tree.paths.agent_dir), *args]
        script = f"cd {shlex.quote(str(gone))} && rmdir {shlex.quote(str(gone))} && exec {shlex.join(command)}"
        process = subprocess.run(["sh", "-c", script], env=trial_env(tree), capture_output=True, text=True, timeout=60)
        assert "Traceback" not in process.stderr, (args, process.stderr)
        if process.returncode != 0:
            assert process.stderr.count("\n") == 1, (args, process.stderr)
            assert process.returncode == 2, (args, process.returncode, process.stderr)


def _corpus(tree: Tree, files: int) -> None:
    project = tree.project("big")
    text = "lorem ipsum dolor sit amet " * 400
    records = [user(f"parser {text}")] + [assistant(f"answer {index} {text}", entry_id=f"a{index:07d}")
                                          for index in range(40)]
    data = jsonl(records)
    folder = tree.project_dir(project)
    folder.mkdir(parents=True, exist_ok=True)
    for number in range(files):
        header = jsonl([{"type": "session", "version": 3, "id": f"big{number:013d}", "timestamp":
                         "2025-01-01T00:00:00.000Z", "cwd": str(project)}])
        (folder / f"x_big{number:013d}.jsonl").write_bytes(header + data)


@pytest.mark.slow
def test_the_wal_deleted_under_a_running_index_is_one_line_or_recovered(tree: Tree) -> None:
    _corpus(tree, 120)
    wal = tree.paths.agent_dir / "catalog.db-wal"
    outcomes = []
    for _attempt in range(2):
        index = subprocess.Popen([str(SESSDEX), "--agent-dir", str(tree.paths.agent_dir), "index", "--rebuild"],
                                 env=trial_env(tree), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        deadline = time.monotonic() + 30
        deleted = 0
        while index.poll() is None and time.monotonic() < deadline and deleted < 5:
            with contextlib.suppress(FileNotFoundError):
                if wal.stat().st_size > 0:
                    wal.unlink()
                    deleted += 1
            time.sleep(0.01)
        _, err = index.communicate(timeout=120)
        outcomes.append((index.returncode, err))
        assert "Traceback" not in err, err
        assert err.count("\n") <= 2, err  # the summary, after a one-line error or a note that it indexed again
    # Whatever happened, the next commands work: doctor repairs what needs repairing.
    repaired = run_sessdex(tree, "doctor")
    assert repaired.code == 0 and "Traceback" not in repaired.err, repaired.err
    assert run_sessdex(tree, "doctor", "--check").code == 0


def test_watch_recovers_when_the_catalogs_wal_is_deleted_under_it(tree: Tree) -> None:
    project = tree.project("proj")
    agent_dir = tree.paths.agent_dir
    watch = subprocess.Popen([str(SESSDEX), "--agent-dir", str(agent_dir), "watch"], cwd=project,
                             env=trial_env(tree), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 30
        while not (agent_dir / "catalog.db.watcher").exists():
            assert time.monotonic() < deadline and watch.poll() is None, "watch did not start"
            time.sleep(0.05)
        time.sleep(1.5)  # a heartbeat or two: the watcher notes its -wal file
        for leftover in ("catalog.db-wal", "catalog.db-shm"):
            (agent_dir / leftover).unlink()
        tree.session(project, "cd34000000000009", [user("after the wal was deleted"), assistant("ok")])
        deadline = time.monotonic() + 20
        while True:
            listed = run_sessdex(tree, "list", "--json", cwd=project)
            assert "Traceback" not in listed.err, listed.err
            ids = {item["id"] for item in json.loads(listed.out)} if listed.code == 0 and listed.out else set()
            if ids == {session_id(0), session_id(1), session_id(2), "cd34000000000009"}:
                break
            assert watch.poll() is None, "watch died"
            assert time.monotonic() < deadline, f"the catalog did not recover: {listed.code} {ids} {listed.err}"
            time.sleep(0.3)
    finally:
        watch.send_signal(signal.SIGTERM)
        _, err = watch.communicate(timeout=30)
    assert "Traceback" not in err and watch.returncode == 0, err


def test_unreadable_session_files_are_skipped_alike_by_the_catalog_and_the_file_scan(tree: Tree) -> None:
    project = tree.project("proj")
    hidden = next(path for path in tree.project_dir(project).iterdir() if session_id(1) in path.name)
    hidden.chmod(0)
    try:
        by_catalog = run_sessdex(tree, "list", "--json", cwd=project, obey_permissions=True)
        by_files = run_sessdex(tree, "--catalog", "off", "list", "--json", cwd=project, obey_permissions=True)
        assert by_catalog.code == by_files.code == 0, (by_catalog.err, by_files.err)
        assert "Traceback" not in by_catalog.err + by_files.err
        catalog_ids = sorted(item["id"] for item in json.loads(by_catalog.out))
        file_ids = sorted(item["id"] for item in json.loads(by_files.out))
        assert catalog_ids == file_ids == [session_id(0), session_id(2)]
        report = json.loads(run_sessdex(tree, "doctor", "--json", obey_permissions=True).out)
        assert str(hidden) in report["unreadable"]
        entries = run_sessdex(tree, "entries", str(hidden), obey_permissions=True)
        assert entries.code != 0 and entries.one_line_error, entries.err
    finally:
        hidden.chmod(0o644)
    assert session_id(1)[:8] in run_sessdex(tree, "list", cwd=project).out  # readable again: listed again


def test_a_watched_symlinked_session_whose_target_grows_is_not_left_stale(tree: Tree) -> None:
    project = tree.project("proj")
    target = tree.root / "elsewhere" / "real.jsonl"
    target.parent.mkdir()
    target.write_bytes(jsonl([{"type": "session", "version": 3, "id": "link0000000000001",
                               "timestamp": "2025-01-01T00:00:00.000Z", "cwd": str(project)},
                              user("first message")]))
    (tree.project_dir(project) / "x_link0000000000001.jsonl").symlink_to(target)
    watch = subprocess.Popen([str(SESSDEX), "--agent-dir", str(tree.paths.agent_dir), "watch"], cwd=project,
                             env=trial_env(tree), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 30
        while not (tree.paths.agent_dir / "catalog.db.watcher").exists():
            assert time.monotonic() < deadline and watch.poll() is None, "watch did not start"
            time.sleep(0.05)
        with open(target, "ab") as handle:
            handle.write(jsonl([assistant("a reply", parent="u0000001"),
                                user("second message", entry_id="u0000002", parent="a0000001")]))

        def count() -> int:
            listed = json.loads(run_sessdex(tree, "list", "--json", cwd=project).out)
            return next(item["messageCount"] for item in listed if item["id"] == "link0000000000001")

        deadline = time.monotonic() + 15
        while count() != 3:
            assert time.monotonic() < deadline, "the catalog stayed stale for the symlinked session"
            time.sleep(0.2)
    finally:
        watch.send_signal(signal.SIGTERM)
        watch.communicate(timeout=30)


def test_permission_prefix_is_effective(tree: Tree, tmp_path: Path) -> None:
    """The trials above mean something only if permissions really apply to the child (even as root)."""
    secret = tmp_path / "secret"
    secret.write_text("x")
    secret.chmod(0)
    process = subprocess.run([*permission_respecting_prefix(), "cat", str(secret)], capture_output=True)
    assert process.returncode != 0
    os.chmod(secret, 0o600)

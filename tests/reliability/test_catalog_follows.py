"""Trials of a catalog that must follow every change to the files: a session made readable after it was indexed,
and a running `sessdex watch` whose sessions folder or agent dir is moved, deleted or created again.

Whatever happened, the catalog (`list --all --json`, answered from the catalog) must say what a file scan
(`--catalog off`) says.
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import shlex
import shutil
import subprocess
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from sessdex.catalog.store.location import resolve_location
from tests.core.sessiontree import BASE_MS, assistant, user
from tests.reliability.catalog_support import (
    SESSDEX,
    Tree,
    make_tree,
    run_sessdex,
    trial_env,
)

pytestmark = pytest.mark.reliability


def session_id(number: int) -> str:
    return f"cd3400000000{number:04d}"


@pytest.fixture
def tree(tmp_path: Path) -> Tree:
    tree = make_tree(tmp_path)
    project = tree.project("proj")
    for number in range(3):
        tree.session(project, session_id(number), [user(f"follow task {number}"), assistant("ok")],
                     mtime_ms=BASE_MS + number)
    return tree


def listed_ids(tree: Tree, *extra: str) -> list[str]:
    result = run_sessdex(tree, *extra, "list", "--all", "--json")
    assert result.code == 0 and "Traceback" not in result.err, result.err
    return sorted(item["id"] for item in json.loads(result.out))


def assert_catalog_equals_file_scan(tree: Tree) -> list[str]:
    by_catalog, by_files = listed_ids(tree), listed_ids(tree, "--catalog", "off")
    assert by_catalog == by_files
    return by_catalog


def wait_for(condition: Callable[[], bool], timeout: float = 20.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError("timed out")
        time.sleep(0.1)


def wait_until_catalog_equals_file_scan(tree: Tree, timeout: float = 20.0) -> list[str]:
    """Wait until the catalog says what the file scan says, and return the ids; fail with both when it never does."""
    deadline = time.monotonic() + timeout
    while True:
        by_catalog, by_files = listed_ids(tree), listed_ids(tree, "--catalog", "off")
        if by_catalog == by_files:
            return by_catalog
        if time.monotonic() > deadline:
            raise AssertionError(f"catalog {by_catalog} != file scan {by_files}")
        time.sleep(0.2)


# -- a session unreadable when indexed ----------------------------------------------------------------------

@pytest.mark.parametrize("made_readable_under", ["read command", "watch"])
def test_a_session_made_readable_after_it_was_indexed_is_listed_and_resumed(tree: Tree, made_readable_under: str
                                                                           ) -> None:
    """chmod changes neither size nor mtime: the catalog must notice it by the file's ctime."""
    from tests.reliability.catalog_support import permission_respecting_prefix

    project = tree.project("proj")
    hidden = next(path for path in tree.project_dir(project).iterdir() if session_id(1) in path.name)
    hidden.chmod(0)
    try:
        assert run_sessdex(tree, "index", obey_permissions=True).code == 0
        unreadable = run_sessdex(tree, "list", "--all", "--json", obey_permissions=True)
        assert session_id(1) not in unreadable.out
    finally:
        hidden.chmod(0o644)
    if made_readable_under == "watch":
        with sessdex_watch(tree, prefix=permission_respecting_prefix()):
            wait_until_catalog_equals_file_scan(tree)
    assert assert_catalog_equals_file_scan(tree) == [session_id(n) for n in range(3)]
    resumed = run_sessdex(tree, "resume", session_id(1), cwd=project)
    assert resumed.code == 0 and resumed.out.strip() == str(hidden), resumed.err


# -- a running watcher whose folders go away ------------------------------------------------------------------

@contextlib.contextmanager
def sessdex_watch(tree: Tree, prefix: list[str] | None = None) -> Iterator[subprocess.Popen[str]]:
    """`sessdex watch` as a real process, started once its heartbeat is published; stopped (SIGTERM) after."""
    location = resolve_location(tree.paths.agent_dir)
    process = subprocess.Popen([*(prefix or []), str(SESSDEX), "--agent-dir", str(tree.paths.agent_dir), "watch"],
                               cwd=tree.home, env=trial_env(tree), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               text=True)
    try:
        wait_for(lambda: location.watcher_path.exists() or process.poll() is not None)
        assert process.poll() is None, process.communicate()
        yield process
        assert process.poll() is None, process.communicate()
    finally:
        process.terminate()
        _out, err = process.communicate(timeout=30)
        print(err)  # the watcher's log, shown when a trial fails
        assert "Traceback" not in err, err


def new_sessions(tree: Tree, project_name: str, numbers: range) -> None:
    project = tree.project(project_name)
    for number in numbers:
        tree.session(project, session_id(number), [user(f"follow task {number}"), assistant("ok")],
                     mtime_ms=BASE_MS + number)


def test_watch_follows_its_sessions_folder_moved_away_and_created_anew(tree: Tree) -> None:
    sessions = tree.paths.sessions_root
    with sessdex_watch(tree):
        wait_until_catalog_equals_file_scan(tree)
        sessions.rename(sessions.with_name("sessions.old"))
        new_sessions(tree, "other", range(10, 13))
        ids = wait_until_catalog_equals_file_scan(tree)
        assert ids == [session_id(n) for n in range(10, 13)]
        new_sessions(tree, "other", range(13, 14))  # and it goes on watching the new folder
        assert wait_until_catalog_equals_file_scan(tree) == [session_id(n) for n in range(10, 14)]


def test_watch_follows_its_agent_dir_deleted_and_created_again(tree: Tree) -> None:
    agent_dir = tree.paths.agent_dir
    with sessdex_watch(tree):
        wait_until_catalog_equals_file_scan(tree)
        kept = agent_dir.with_name("agent.kept")
        shutil.copytree(agent_dir / "sessions", kept / "sessions")
        shutil.rmtree(agent_dir)
        time.sleep(1.5)  # three heartbeats
        os.makedirs(agent_dir, exist_ok=True)
        shutil.copytree(kept / "sessions", agent_dir / "sessions")
        new_sessions(tree, "proj", range(20, 22))
        ids = wait_until_catalog_equals_file_scan(tree)
    assert ids == sorted([*(session_id(n) for n in range(3)), session_id(20), session_id(21)])


def test_trashing_and_restoring_twenty_sessions_under_watch_keeps_the_catalog_equal_to_the_file_scan(tree: Tree
                                                                                                      ) -> None:
    new_sessions(tree, "proj", range(3, 20))
    with sessdex_watch(tree):
        wait_until_catalog_equals_file_scan(tree)
        for number in range(20):
            result = run_sessdex(tree, "trash", session_id(number), cwd=tree.project("proj"))
            assert result.code == 0, result.err
        assert wait_until_catalog_equals_file_scan(tree) == []
        for number in range(20):
            result = run_sessdex(tree, "trash", "restore", session_id(number))
            assert result.code == 0, result.err
        assert wait_until_catalog_equals_file_scan(tree) == [session_id(n) for n in range(20)]


# -- a full disk under a running watcher ------------------------------------------------------------------------

def fill(folder: Path) -> Path:
    """Write a file into `folder` until its file system has no room left; return it."""
    filler = folder / "filler"
    with open(filler, "wb") as handle:
        try:
            while True:
                handle.write(b"\0" * 65536)
                handle.flush()
        except OSError as exc:
            assert exc.errno == errno.ENOSPC, exc
    return filler


def test_watch_waits_out_a_full_disk_and_catches_up_once_there_is_room(tree: Tree, tmp_path: Path) -> None:
    """The catalog on its own small file system (a tmpfs mounted in a user and mount namespace): filled up while
    sessions arrive, then given room again."""
    small = tmp_path / "small"
    small.mkdir(mode=0o700)
    probe = subprocess.run(["unshare", "-Urm", "sh", "-c", f"mount -t tmpfs tmpfs {shlex.quote(str(small))}"],
                           capture_output=True)
    if probe.returncode != 0:
        pytest.skip(f"no user and mount namespace for a small file system: {probe.stderr!r}")
    catalog = small / "catalog.db"
    watch = shlex.join([str(SESSDEX), "--agent-dir", str(tree.paths.agent_dir), "--catalog", str(catalog), "watch"])
    process = subprocess.Popen(["unshare", "-Urm", "sh", "-c",
                                f"mount -t tmpfs -o size=8m,mode=0700 tmpfs {shlex.quote(str(small))} && exec {watch}"],
                               cwd=tree.home, env=trial_env(tree), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               text=True)
    view = Path(f"/proc/{process.pid}/root") / small.relative_to("/")  # the watcher's file system, seen from here
    through = ("--catalog", str(view / "catalog.db"))
    try:
        wait_for(lambda: (view / "catalog.db.watcher").exists() or process.poll() is not None)
        assert process.poll() is None, process.communicate()
        wait_for(lambda: listed_ids(tree, *through) == [session_id(n) for n in range(3)])
        time.sleep(1.0)  # the message-text index filled
        filler = fill(view)
        project = tree.project("proj")
        for number in range(30, 50):  # texts that need more room than the catalog's files have left
            tree.session(project, session_id(number), [user(f"text{number}x{line} " * 1000) for line in range(4)],
                         mtime_ms=BASE_MS + number)
        time.sleep(3.0)
        assert process.poll() is None, process.communicate()
        filler.unlink()
        wait_for(lambda: listed_ids(tree, *through) == listed_ids(tree, "--catalog", "off"))
        time.sleep(3.0)  # the watcher's next try (every 2 s)
        assert process.poll() is None, process.communicate()
    finally:
        process.terminate()
        _out, err = process.communicate(timeout=30)
    assert process.returncode == 0 and "Traceback" not in err, err
    assert err.count("sessdex watch: the disk is full") == 1, err  # said once
    assert "the catalog is back; indexed 20 file(s)" in err, err  # and caught up


# -- more project folders than the kernel gives inotify watches ----------------------------------------------

def message_counts(tree: Tree, *extra: str) -> dict[str, int]:
    result = run_sessdex(tree, *extra, "list", "--all", "--json")
    assert result.code == 0 and "Traceback" not in result.err, result.err
    return {item["id"]: item["messageCount"] for item in json.loads(result.out)}


def test_watch_polls_what_the_inotify_limit_leaves_unwatched_and_catches_appends_there(tree: Tree) -> None:
    """The real limit, lowered for the watcher alone: fs.inotify.max_user_watches is per user namespace (Linux
    5.11 and later), so `sessdex watch` runs in a user namespace whose limit is 8 watches, with 30 project
    folders. It says once that it polls, and the catalog follows appends in every folder and a new folder."""
    limit = "/proc/sys/fs/inotify/max_user_watches"
    probe = subprocess.run(["unshare", "-Ur", "sh", "-c", f"echo 8 > {limit} && cat {limit}"], capture_output=True,
                           text=True)
    if probe.returncode != 0 or probe.stdout.strip() != "8":
        pytest.skip(f"the inotify limit cannot be lowered in a user namespace here: {probe.stderr!r}")
    files = []
    for number in range(30):
        project = tree.project(f"proj{number:02d}")
        files.append(tree.session(project, session_id(100 + number), [user(f"task {number}"), assistant("ok")],
                                  mtime_ms=BASE_MS + number))
    watch = shlex.join([str(SESSDEX), "--agent-dir", str(tree.paths.agent_dir), "watch"])
    process = subprocess.Popen(["unshare", "-Ur", "sh", "-c", f"echo 8 > {limit} && exec {watch}"], cwd=tree.home,
                               env=trial_env(tree), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        heartbeat = resolve_location(tree.paths.agent_dir).watcher_path
        wait_for(lambda: heartbeat.exists() or process.poll() is not None)
        assert process.poll() is None, process.communicate()
        from sessdex.catalog.index.reconcile import read_heartbeat

        live = read_heartbeat(resolve_location(tree.paths.agent_dir))
        assert live is not None and live.pid == process.pid  # readers trust the watcher: the catalog answers
        before = message_counts(tree)
        assert len(before) == 33
        for file in (files[0], files[15], files[29]):
            with open(file, "ab") as handle:
                handle.write(json.dumps(user("one more", "u0000002", "a0000001")).encode() + b"\n")
        new_sessions(tree, "late project", range(200, 202))
        expected = message_counts(tree, "--catalog", "off")
        assert expected != before and len(expected) == 35
        wait_for(lambda: message_counts(tree) == expected)
        # The sessions folder moved away and made anew: watched again (polled again), not said again.
        shutil.move(tree.paths.sessions_root, tree.root / "moved-away")
        for number in range(12):  # more folders than watches again
            new_sessions(tree, f"again{number:02d}", range(300 + number, 301 + number))
        wait_for(lambda: message_counts(tree) == message_counts(tree, "--catalog", "off") and
                 len(message_counts(tree)) == 12)
        assert process.poll() is None, process.communicate()
    finally:
        process.terminate()
        _out, err = process.communicate(timeout=30)
    assert process.returncode == 0 and "Traceback" not in err, err
    assert err.count("Falling back to polling") == 1 and "max_user_watches" in err, err

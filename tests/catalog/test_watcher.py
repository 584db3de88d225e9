"""`sessdex watch` end to end: initial scan, appends, new folders, renames, deletions, one watcher, signals."""

from __future__ import annotations

import errno
import io
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from sessdex.catalog.index.reconcile import Scope, covered_by, read_heartbeat
from sessdex.catalog.index.watcher import Watcher
from sessdex.catalog.store.db import open_catalog
from sessdex.catalog.store.location import resolve_location
from sessdex.core.errors import CatalogError
from tests.catalog.catalog_support import append_bytes, assistant, header, jsonl, user, write_file

REPO = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.slow


def wait_for(condition: Callable[[], bool], timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError("condition not reached in time")
        time.sleep(0.02)


class Running:
    """A watcher running in a thread, and a reader on the same catalog."""

    def __init__(self, watcher: Watcher) -> None:
        self.watcher = watcher
        self.stop = threading.Event()
        self.error: BaseException | None = None
        self.thread = threading.Thread(target=self._run, name="test-watcher")
        self.reader = None

    def _run(self) -> None:
        try:
            self.watcher.run(self.stop)
        except BaseException as exc:  # reported by the test
            self.error = exc
            self.watcher.ready.set()

    def watcher_db(self):
        """A reader of the watcher's catalog."""
        if self.reader is None:
            self.reader = open_catalog(self.watcher.location)
        return self.reader

    def row(self, path: Path):
        if self.reader is None:
            self.reader = open_catalog(self.watcher.location)
        rows = self.reader.fetchall("file_by_path", {"path": str(path)})
        return rows[0] if rows else None


@pytest.fixture
def watching(tmp_path: Path) -> Iterator[Callable[..., Running]]:
    started: list[Running] = []

    def start(**options) -> Running:
        location = resolve_location(tmp_path / "agent")
        running = Running(Watcher(tmp_path / "agent" / "sessions", location, quiet=0.02, max_delay=0.1,
                                  heartbeat_interval=0.1, log=options.pop("log", io.StringIO()), **options))
        started.append(running)
        running.thread.start()
        assert running.watcher.ready.wait(20)
        if running.error is not None:
            raise running.error
        return running

    yield start
    for running in started:
        running.stop.set()
        running.thread.join(10)
        if running.reader is not None:
            running.reader.close()


def test_the_watcher_indexes_its_first_scan_listings_first_then_fills_the_text_index(tmp_path: Path, watching,
                                                                                     monkeypatch):
    import sessdex.catalog.index.content_index as content_index

    monkeypatch.setattr(content_index, "CHUNK_ROWS", 3)  # several rounds of filling between looks at events
    sessions = tmp_path / "agent" / "sessions"
    for number in range(6):
        write_file(sessions / "--p--" / f"s{number}.jsonl",
                   jsonl([header(f"s{number}", "/p"), user(f"zeppelin number {number}"), assistant("noted")]))
    running = watching()
    wait_for(lambda: content_index.content_backlog(running.watcher_db()) is None)
    hits = running.watcher_db().sqlite_reader().execute(
        "SELECT count(*) FROM message_fts WHERE message_fts MATCH 'zeppelin'").fetchone()[0]
    assert hits == 6
    late = write_file(sessions / "--p--" / "late.jsonl", jsonl([header("late", "/p"), user("a late zeppelin")]))
    wait_for(lambda: running.row(late) is not None)  # events are still handled

    # Emptied, the catalog takes the next new folder as a first index again: listings first, then text.
    shutil.rmtree(sessions / "--p--")
    wait_for(lambda: running.watcher_db().scalar("count_files") == 0)
    for number in range(4):
        write_file(sessions / "--q--" / f"q{number}.jsonl", jsonl([header(f"q{number}", "/q"), user("an airship")]))

    def airships() -> int:
        return running.watcher_db().sqlite_reader().execute(
            "SELECT count(*) FROM message_fts WHERE message_fts MATCH 'airship'").fetchone()[0]

    wait_for(lambda: airships() == 4 and content_index.content_backlog(running.watcher_db()) is None)


def test_the_watcher_follows_appends_new_folders_renames_and_deletions(tmp_path: Path, watching):
    sessions = tmp_path / "agent" / "sessions"
    early = write_file(sessions / "--p--" / "early.jsonl", jsonl([header("e1", "/p"), user("written before")]))
    running = watching()
    assert running.row(early)["message_count"] == 1  # the initial scan
    append_bytes(early, jsonl([assistant("appended while watched")]))
    wait_for(lambda: running.row(early)["message_count"] == 2)

    fresh = write_file(sessions / "--q--" / "new.jsonl", jsonl([header("n1", "/q"), user("in a new folder")]))
    wait_for(lambda: running.row(fresh) is not None and running.row(fresh)["message_count"] == 1)

    file_id = running.row(fresh)["id"]
    newest = write_file(sessions / "--q--" / "newest.jsonl", jsonl([header("n2", "/q"), user("taking the top id")]))
    wait_for(lambda: running.row(newest) is not None)
    renamed = fresh.with_name("renamed.jsonl")
    os.rename(fresh, renamed)
    wait_for(lambda: running.row(renamed) is not None and running.row(fresh) is None)
    assert running.row(renamed)["id"] == file_id

    early.unlink()
    wait_for(lambda: running.row(early) is None)
    running.stop.set()
    running.thread.join(10)
    assert running.error is None
    assert not running.watcher.location.watcher_path.exists()  # heartbeat cleared on a clean stop


def test_a_moved_folder_keeps_its_rows(tmp_path: Path, watching):
    sessions = tmp_path / "agent" / "sessions"
    before = write_file(sessions / "--p--" / "s.jsonl", jsonl([header("s1", "/p"), user("one")]))
    running = watching()
    later = write_file(sessions / "--q--" / "t.jsonl", jsonl([header("t1", "/q"), user("two")]))
    wait_for(lambda: running.row(later) is not None)  # a higher row id: a re-insert could not reuse this one
    file_id = running.row(before)["id"]
    (sessions / "--p--").rename(sessions / "--moved--")
    after = sessions / "--moved--" / "s.jsonl"
    wait_for(lambda: running.row(after) is not None and running.row(before) is None)
    assert running.row(after)["id"] == file_id


def test_the_heartbeat_tells_readers_the_root_is_covered(tmp_path: Path, watching):
    running = watching()
    heartbeat = read_heartbeat(running.watcher.location)
    assert heartbeat is not None and heartbeat.pid == os.getpid()
    assert covered_by(heartbeat, Scope.of([tmp_path / "agent" / "sessions" / "--p--"]))
    assert not covered_by(heartbeat, Scope.of([tmp_path / "elsewhere"]))
    time.sleep(0.3)
    assert read_heartbeat(running.watcher.location, max_age=0.25) is not None  # refreshed while running


def test_a_second_watcher_on_the_same_catalog_exits_with_a_message(tmp_path: Path, watching):
    watching()
    second = Watcher(tmp_path / "agent" / "sessions", resolve_location(tmp_path / "agent"), log=io.StringIO())
    with pytest.raises(CatalogError, match=r"already keeping .*catalog\.db current"):
        second.run(threading.Event())


def test_a_catalog_upgraded_by_a_newer_sessdex_stops_the_watcher_with_a_message(tmp_path: Path, watching):
    import sqlite3

    running = watching()
    assert read_heartbeat(running.watcher.location) is not None
    connection = sqlite3.connect(running.watcher.location.sqlite_file)
    try:
        with connection:  # what an upgrade by a newer sessdex leaves
            connection.execute("UPDATE alembic_version SET version_num = '9999_from_a_newer_sessdex'")
    finally:
        connection.close()
    running.thread.join(10)
    assert not running.thread.is_alive()
    assert isinstance(running.error, CatalogError)
    assert "9999_from_a_newer_sessdex" in str(running.error) and "start `sessdex watch` again" in str(running.error)
    assert read_heartbeat(running.watcher.location) is None  # readers check freshness themselves again


class _NoWatchesLeft:
    def schedule(self, *args, **kwargs):
        raise OSError(errno.ENOSPC, "inotify watch limit reached")

    def stop(self):
        pass


def test_an_inotify_watch_limit_falls_back_to_polling_with_advice(tmp_path: Path, watching):
    from watchdog.observers.polling import PollingObserver

    log = io.StringIO()
    session = write_file(tmp_path / "agent" / "sessions" / "--p--" / "s.jsonl", jsonl([header("s1", "/p"), user("a")]))
    running = watching(observer_factory=_NoWatchesLeft, polling_factory=lambda: PollingObserver(timeout=0.1), log=log)
    assert running.watcher.stats.polling
    assert "max_user_watches" in log.getvalue() and "polling" in log.getvalue()
    append_bytes(session, jsonl([assistant("seen by polling")]))
    wait_for(lambda: running.row(session)["message_count"] == 2)


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
def test_sessdex_watch_stops_cleanly_on_signals(tmp_path: Path, signum: int):
    agent = tmp_path / "agent"
    write_file(agent / "sessions" / "--p--" / "s.jsonl", jsonl([header("s1", "/p"), user("a")]))
    process = subprocess.Popen([sys.executable, "-c", "from sessdex.catalog.cli.entry import main; main()", "--agent-dir",
                                str(agent), "watch"], cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               text=True)
    try:
        location = resolve_location(agent)
        wait_for(lambda: read_heartbeat(location) is not None or process.poll() is not None, timeout=30)
        process.send_signal(signum)
        _out, err = process.communicate(timeout=20)
    finally:
        if process.poll() is None:
            process.kill()
            process.communicate()
    assert process.returncode == 0, err
    assert "watching" in err and "stopped" in err
    assert not location.watcher_path.exists()


def test_symlinked_sessions_are_read_again_only_when_their_target_changes(tmp_path: Path, watching):
    """Each heartbeat re-stats the symlinked sessions (their targets get no event); it reads only the one
    whose target grew, once, whatever else happened in their folder meanwhile."""
    folder = tmp_path / "agent" / "sessions" / "--p--"
    folder.mkdir(parents=True)
    targets = [write_file(tmp_path / "elsewhere" / f"t{n}.jsonl", jsonl([header(f"s{n}", "/p"), user("a")]))
               for n in range(4)]
    for n, target in enumerate(targets):
        (folder / f"link{n}.jsonl").symlink_to(target)
    running = watching()
    stats = running.watcher.stats

    def heartbeats(count: int) -> None:
        seen = stats.batches
        time.sleep(count * 0.1)
        wait_for(lambda: stats.batches >= seen)  # the watcher is alive and answering

    heartbeats(5)
    assert stats.files_indexed == 0
    (folder / "subfolder").mkdir()  # a folder event: that folder is rescanned, the links are not read again
    write_file(folder / "real.jsonl", jsonl([header("r", "/p"), user("b")]))
    wait_for(lambda: running.row(folder / "real.jsonl") is not None)
    heartbeats(5)
    after_events = stats.files_indexed
    append_bytes(targets[1], jsonl([assistant("grown")]))
    wait_for(lambda: running.row(folder / "link1.jsonl")["message_count"] == 2)
    heartbeats(8)
    assert stats.files_indexed == after_events + 1
    assert running.row(folder / "link0.jsonl")["message_count"] == 1


def test_the_watcher_keeps_the_id_width_of_listings_and_readers_use_it_only_while_current(tmp_path: Path, watching,
                                                                                         monkeypatch):
    from sessdex.catalog.index import id_width

    sessions = tmp_path / "agent" / "sessions"
    write_file(sessions / "--p--" / "a.jsonl", jsonl([header("abcdefgh10000001", "/p"), user("one")]))
    running = watching()
    reader = running.watcher_db().sqlite_reader()
    machine, root = running.watcher_db().machine, str(sessions)
    key = id_width.ID_WIDTH_KEY + machine

    def stored() -> str | None:
        row = reader.execute("SELECT value FROM catalog_meta WHERE key = ?", (key,)).fetchone()
        return row[0].split(" ")[0] if row else None

    assert stored() == "8"  # stored by the initial scan, before its heartbeat
    # A session whose id shares 12 characters with the first one, in another project: 13 tell them apart.
    write_file(sessions / "--q--" / "b.jsonl", jsonl([header("abcdefgh1000xxxx", "/q"), user("two")]))
    wait_for(lambda: stored() == "13")
    computed = []
    real = id_width.catalog_id_width
    monkeypatch.setattr(id_width, "catalog_id_width", lambda *args: computed.append(args) or real(*args))
    assert id_width.watched_id_width(reader, machine, root) == 13
    assert not computed  # the stored width: no id read
    # A file another process indexed since: the stored width is not used until the watcher stores it again.
    catalog = running.watcher_db()
    with catalog.write():
        catalog.execute("meta_delete", {"key": key})
        catalog.execute("meta_insert", {"key": key, "value": "8 0"})
    assert id_width.watched_id_width(reader, machine, root) == 13
    assert computed
    (sessions / "--q--" / "b.jsonl").unlink()
    wait_for(lambda: stored() == "8")


def test_the_watcher_keeps_the_count_and_id_width_of_the_pickers_every_project_scope(tmp_path: Path, watching):
    from sessdex.catalog.index import id_width

    sessions = tmp_path / "agent" / "sessions"
    write_file(sessions / "--p--" / "a.jsonl", jsonl([header("abcdefgh10000001", "/p"), user("one")]))
    write_file(sessions / "--p--" / "empty.jsonl", jsonl([header("abcdefgh10000002", "/p")]))  # no message: not listed
    running = watching()
    reader = running.watcher_db().sqlite_reader()
    machine = running.watcher_db().machine

    def stored() -> tuple[int, int] | None:
        return id_width.stored_every_project_figures(reader, machine)

    assert stored() == (1, 8)  # stored by the initial scan
    # The session without a message gets one (its row is updated, no new row): now listed, 16 tell the two apart.
    append_bytes(sessions / "--p--" / "empty.jsonl", jsonl([user("two")]))
    wait_for(lambda: stored() == (2, 16))
    write_file(sessions / "--q--" / "b.jsonl", jsonl([header("ffff0000", "/q"), user("three")]))
    wait_for(lambda: stored() == (3, 16))
    (sessions / "--p--" / "a.jsonl").unlink()  # a removal raises no stamp: the watcher's own removal stores again
    wait_for(lambda: stored() == (2, 8))

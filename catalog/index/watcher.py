"""`sessdex watch`: keep the catalog current from file-system events.

The watchdog handler only filters events and puts them on a queue. The watcher thread takes them in
debounced batches (`EventBatcher`), reduces each batch with the pure `coalesce` function to one
action per path plus folders to rescan, and hands them to the indexer, which re-stats every path: an
event is a hint, the file is the truth. The observer is started before the initial scan, so nothing
written during the scan is missed (the scan and the queued events overlap harmlessly).

The catalog's files can be pulled from under it (its -wal deleted): the watcher's writes would then go
to a file nobody else sees while readers trust it. At every heartbeat it checks that its WAL file is
still the one it opened, and otherwise reopens the catalog and reconciles everything; a batch that fails
on the catalog itself is handled the same way, so `watch` never dies of it.

A session file that is a symlink gets no event when its target (elsewhere) grows, so the watcher
re-stats the symlinked session files under its root at every heartbeat and indexes those whose target
changed: readers trust a live watcher and would otherwise stay stale.

While it runs, the watcher holds an exclusive lock next to the catalog (a second watcher exits with a
message) and refreshes a heartbeat file there, which tells read commands they may skip their own
freshness check. If inotify runs out of watches it says how to raise the limit and falls back to polling.

The sessions root itself can be moved away, deleted or created anew (and the agent dir with it): inotify
then watches a folder that is no longer the root, or nothing. At every heartbeat the watcher compares the
root's (device, inode) with the one it scheduled its observer on; when it differs it stops that observer,
reconciles the root (a root that is gone holds no session: its rows are dropped) and, once a folder is there
again, watches it anew and reconciles it whole. While the agent dir is gone it publishes no heartbeat and
never creates it again (nor the catalog in it): it waits, and says so once.

A full disk (the catalog's file system out of space or quota) is waited out the same way as a server gone away:
said once, then the watcher stops applying batches and tries again every RETRY_SECONDS, and its first pass once
there is room (a reconcile of the whole root) indexes what changed meanwhile.

A newer sessdex can upgrade the catalog while the watcher runs (it opens and upgrades it on a user's next
command). The watcher's code would then keep writing rows without what the newer revisions derive from them
(their stored texts and cells): at every heartbeat it reads the catalog's revision, and once that is not the one
it was built for it stops with a message saying to start `sessdex watch` again.

A catalog on a server (PostgreSQL) can go away under the watcher. It then says so once, stops applying
batches and tries again every RETRY_SECONDS; once the server answers, one freshness pass over the whole
root catches up: it compares every file's stat with the catalog, so whatever changed meanwhile is
indexed exactly once (a batch cut off mid-way was rolled back as a whole). A watcher started while the
server cannot be reached (refused, timed out, starting up or shutting down) does the same: one line, then
it watches the files and retries, and its first pass once the server answers is its initial scan; it
publishes its heartbeat only then, so readers keep their own freshness check meanwhile. A server that
answers but refuses it (wrong password, no such database) or a missing driver is a mistake waiting will
not fix: the watcher then exits with one line and status 2, like every command.
"""

from __future__ import annotations

import contextlib
import errno
import os
import queue
import signal
import stat as stat_module
import sys
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from enum import Enum
from typing import TYPE_CHECKING, Any, Protocol

from sessdex.catalog.index.content_index import fill_content_index
from sessdex.catalog.index.id_width import (
    ID_WIDTH_KEY,
    PICKER_FIGURES_KEY,
    STAMP_SQL,
    catalog_id_width,
    every_project_figures,
    picker_figures_value,
    picker_stamp,
)
from sessdex.catalog.index.reconcile import (
    ReconcileReport,
    Scope,
    StatKey,
    index_files,
    read_heartbeat,
    reconcile,
    stat_key,
)
from sessdex.catalog.store.compiled_sql import SCHEMA_REVISION
from sessdex.catalog.store.db import open_catalog
from sessdex.catalog.store.location import CatalogLocation, exclusive_lock
from sessdex.core.errors import CatalogError, CatalogUnavailableError
from sessdex.core.paths import SESSION_SUFFIX, is_session_file_name
from sessdex.core.private_files import write_private_text

if TYPE_CHECKING:
    import sqlite3

    from sessdex.catalog.store.db import CatalogDatabase

DEBOUNCE_SECONDS = 0.05
MAX_DELAY_SECONDS = 0.2
HEARTBEAT_INTERVAL_SECONDS = 0.5
CONTENT_FILL_SECONDS = 0.2  # the longest stretch of backlog filling between two looks at the event queue
POLL_INTERVAL_SECONDS = 1.0
INOTIFY_LIMIT_ERRNOS = (errno.ENOSPC, errno.EMFILE)
RETRY_SECONDS = 2.0


def refuse_while_watched(location: CatalogLocation, action: str) -> None:
    """Raise CatalogError when `sessdex watch` keeps `location` current: `action` would pull the catalog from under it."""
    try:
        with exclusive_lock(location.watch_lock_path, blocking=False):
            return
    except BlockingIOError:
        raise CatalogError(f"`sessdex watch` is running on {location.display}; stop it before you {action}") from None


# -- events and their coalescing (pure) ------------------------------------------------------------------

@dataclass(frozen=True)
class FsEvent:
    """A file-system event as the handler enqueues it: kind, path, destination (moves) and whether a folder."""

    kind: str  # "created" | "modified" | "deleted" | "moved"
    path: str
    dest: str | None = None
    is_directory: bool = False


class Action(Enum):
    """What the last event of a path asks for; the indexer still decides from the file's stat."""

    INDEX = "index"
    REMOVE = "remove"


@dataclass
class Changes:
    """A batch of events reduced to one action per file and the folders to rescan."""

    files: dict[str, Action] = field(default_factory=dict)
    rescan: list[str] = field(default_factory=list)

    def __bool__(self) -> bool:
        return bool(self.files or self.rescan)


def _is_session_path(path: str | None) -> bool:
    """True for a path whose name can be a session (`*.jsonl`, not a dot-file such as a rewrite's temp file)."""
    return path is not None and is_session_file_name(os.path.basename(path))


def coalesce(events: Iterable[FsEvent]) -> Changes:
    """Reduce events (in arrival order) to the final action per session file and the folders to rescan.

    The last event of a path decides: a burst of writes is one INDEX, delete-then-recreate is INDEX,
    create-then-delete is REMOVE, a rename is REMOVE of the source and INDEX of the destination
    (a rename over an existing file re-indexes it). A folder created, deleted or moved is rescanned
    (the source and the destination of a move), since events for files inside it may never come.
    """
    files: dict[str, Action] = {}
    rescan: dict[str, None] = {}

    def put(path: str, action: Action) -> None:
        files.pop(path, None)  # keep the order of each path's last event
        files[path] = action

    for event in events:
        if event.is_directory:
            if event.kind in ("created", "deleted"):
                rescan[event.path] = None
            elif event.kind == "moved":
                rescan[event.path] = None
                if event.dest is not None:
                    rescan[event.dest] = None
            continue
        if event.kind == "moved":
            if _is_session_path(event.path):
                put(event.path, Action.REMOVE)
            if _is_session_path(event.dest):
                put(event.dest, Action.INDEX)  # type: ignore[arg-type]
        elif _is_session_path(event.path):
            put(event.path, Action.REMOVE if event.kind == "deleted" else Action.INDEX)
    return Changes(files, list(rescan))


class EventBatcher:
    """Debounce: a batch is ready once no event came for `quiet` seconds, or `max_delay` after its first event."""

    def __init__(self, quiet: float = DEBOUNCE_SECONDS, max_delay: float = MAX_DELAY_SECONDS) -> None:
        self.quiet = quiet
        self.max_delay = max_delay
        self._events: list[FsEvent] = []
        self._first_at = 0.0
        self._last_at = 0.0

    def add(self, event: FsEvent, now: float) -> None:
        if not self._events:
            self._first_at = now
        self._events.append(event)
        self._last_at = now

    def wait_time(self, now: float) -> float | None:
        """Seconds until the current batch is ready (0 when it is), None when there is no batch."""
        if not self._events:
            return None
        ready_at = min(self._last_at + self.quiet, self._first_at + self.max_delay)
        return max(0.0, ready_at - now)

    def take(self) -> list[FsEvent]:
        events, self._events = self._events, []
        return events


# -- the watchdog side: filter and enqueue only ----------------------------------------------------------------

_KINDS = {"created": "created", "modified": "modified", "closed": "modified", "attrib": "modified",
          "deleted": "deleted", "moved": "moved"}


def _text_path(path: str | bytes) -> str:
    return os.fsdecode(path)


def make_handler(events: queue.Queue[FsEvent]) -> Any:
    """A watchdog event handler that keeps session-file and folder events and puts them on `events`."""
    from watchdog.events import FileSystemEventHandler

    class EnqueueHandler(FileSystemEventHandler):
        def on_any_event(self, event: Any) -> None:
            kind = _KINDS.get(event.event_type)
            if kind is None:
                return
            src = _text_path(event.src_path)
            dest = _text_path(event.dest_path) if getattr(event, "dest_path", None) else None
            if event.is_directory:
                if kind != "modified":
                    events.put(FsEvent(kind, src, dest, True))
            elif _is_session_path(src) or _is_session_path(dest):
                events.put(FsEvent(kind, src, dest, False))

    return EnqueueHandler()


def _native_observer() -> Any:
    from watchdog.observers import Observer

    return Observer()


def _polling_observer() -> Any:
    from watchdog.observers.polling import PollingObserver

    return PollingObserver(timeout=POLL_INTERVAL_SECONDS)


INOTIFY_LIMIT_HELP = (
    "sessdex watch: {error}. The kernel's inotify limit is too low for this many folders; raise it with\n"
    "  sudo sysctl fs.inotify.max_user_watches=524288 fs.inotify.max_user_instances=1024\n"
    "(add the same settings to /etc/sysctl.d/ to keep them). Falling back to polling every {interval:g} s."
)


# -- the watcher ------------------------------------------------------------------------------------------------

class LogStream(Protocol):
    """Where the watcher's messages go (stderr by default)."""

    def write(self, text: str, /) -> object: ...

    def flush(self) -> None: ...


@dataclass
class WatchStats:
    """What a watcher did, for its log line and for tests."""

    batches: int = 0
    files_indexed: int = 0
    files_skipped: int = 0  # files whose indexing failed (each said once on the log)
    polling: bool = False


class Watcher:
    """Watches a sessions root and keeps one catalog current; `run(stop)` blocks until `stop` is set."""

    def __init__(self, sessions_root: str | os.PathLike[str], location: CatalogLocation, *,
                 observer_factory: Callable[[], Any] = _native_observer,
                 polling_factory: Callable[[], Any] = _polling_observer,
                 quiet: float = DEBOUNCE_SECONDS, max_delay: float = MAX_DELAY_SECONDS,
                 heartbeat_interval: float = HEARTBEAT_INTERVAL_SECONDS,
                 log: LogStream | None = None, machine: str | None = None, content: bool | None = None,
                 retry_seconds: float = RETRY_SECONDS, home: str | None = None) -> None:
        """`machine` names this agent dir's rows (default: the host name); `content=False` indexes metadata only;
        `home` is recorded as the machine's home directory (see sessdex.catalog.index.machines)."""
        self.root = os.path.abspath(os.fspath(sessions_root))
        self.location = location
        self._observer_factory = observer_factory
        self._polling_factory = polling_factory
        self._batcher = EventBatcher(quiet, max_delay)
        self._heartbeat_interval = heartbeat_interval
        self._log = log if log is not None else sys.stderr
        self._events: queue.Queue[FsEvent] = queue.Queue()
        self.stats = WatchStats()
        self._symlinks: dict[str, StatKey | None] = {}  # symlinked session files -> their target's last stat
        self._db: CatalogDatabase | None = None  # the open catalog (reopened when it fails under the watcher)
        self._wal_identity: tuple[int, int] | None = None  # (device, inode) of the catalog's -wal when opened
        self._file_identity: tuple[int, int] | None = None  # (device, inode) of a SQLite catalog's file when opened
        self._pulled_at_last_beat = False
        # Set once the initial scan is done and the heartbeat published, or the server could not be reached for it.
        self.ready = threading.Event()
        self.machine = machine
        self._content = content
        self._home = home
        self._retry_seconds = retry_seconds
        self._behind_since: float | None = None  # set while the catalog cannot be reached
        self._retry_at = 0.0
        self._reached = False  # the catalog answered once (its machine recorded, its initial scan done)
        self._observer: Any = None
        self._root_identity: tuple[int, int] | None = None  # (device, inode) of the root the observer watches
        self._width_stamp: int | None = None  # the highest session_files id when the id width was last stored
        self._picker_stamp: str | None = None  # id_width.picker_stamp when the picker's figures were last stored

    def _say(self, message: str) -> None:
        self._log.write(message + "\n")
        self._log.flush()

    @contextlib.contextmanager
    def _single_watcher(self) -> Iterator[None]:
        try:
            with exclusive_lock(self.location.watch_lock_path, blocking=False):
                yield
        except BlockingIOError:
            heartbeat = read_heartbeat(self.location, max_age=float("inf"))
            who = f" (pid {heartbeat.pid})" if heartbeat is not None else ""
            raise CatalogError(f"another `sessdex watch`{who} is already keeping {self.location.display} "
                               "current; stop it first or use another --catalog") from None

    def _identity_now(self) -> tuple[int, int] | None:
        """(device, inode) of the sessions root now; None when it is not a folder (moved away, deleted)."""
        try:
            status = os.stat(self.root)
        except OSError:
            return None
        return (status.st_dev, status.st_ino) if stat_module.S_ISDIR(status.st_mode) else None

    def _start_observer(self, *, create_root: bool = True) -> Any:
        handler = make_handler(self._events)
        if create_root:
            os.makedirs(self.root, exist_ok=True)
        self._root_identity = self._identity_now()
        observer = self._observer_factory()
        try:
            observer.schedule(handler, self.root, recursive=True)
            observer.start()
            return observer
        except OSError as exc:
            if exc.errno not in INOTIFY_LIMIT_ERRNOS:
                raise
            with contextlib.suppress(Exception):
                observer.stop()
            if not self.stats.polling:  # said once, not again for a root made anew
                self._say(INOTIFY_LIMIT_HELP.format(error=exc.strerror or exc, interval=POLL_INTERVAL_SECONDS))
        self.stats.polling = True
        observer = self._polling_factory()
        observer.schedule(handler, self.root, recursive=True)
        observer.start()
        return observer

    def _stop_observer(self) -> None:
        if self._observer is not None:
            with contextlib.suppress(Exception):
                self._observer.stop()
                self._observer.join(timeout=5)
            self._observer = None

    def _follow_root(self) -> bool:
        """When the sessions root is not the folder the observer watches (moved, deleted, created anew), watch
        what is there now and reconcile it; True when the catalog was reconciled."""
        current = self._identity_now()
        if current == self._root_identity and (current is None) == (self._observer is None):
            return False
        self._stop_observer()
        self._root_identity = current
        if current is None:
            self._say(f"sessdex watch: {self.root} is gone (moved or deleted); its sessions leave the catalog "
                      "and the watch waits for the folder to come back")
        else:
            try:
                self._observer = self._start_observer(create_root=False)
            except OSError:  # gone again meanwhile: the next heartbeat looks again
                self._root_identity = None
                return False
            self._say(f"sessdex watch: {self.root} is a new folder; watching it and indexing what it holds")
        if self._db is None or self._behind_since is not None:
            return True  # the catch-up's pass reconciles the root
        self._symlinks = {}
        self._note_symlinks(_symlinked_sessions(self.root))
        if current is None:
            self._drop_root_rows()
        elif self._catalog_file_now() != self._file_identity:
            self._reopen()  # the catalog went too (with the agent dir): a new one, reconciled whole
        else:
            self._reconcile_root()
        return True

    def _drop_root_rows(self) -> None:
        """Drop the rows of a root that is gone, writing nothing but the catalog: the agent dir may be going
        away with it (a reconcile would make its lock file there again)."""
        assert self._db is not None
        from sessdex.catalog.index.indexer import Indexer
        from sessdex.catalog.index.reconcile import catalog_paths

        try:
            Indexer(self._db).index_paths(sorted(catalog_paths(self._db, Scope.of(root=self.root))))
        except CatalogUnavailableError as exc:
            self._fall_behind(exc)
        except Exception as exc:  # the catalog went with the agent dir: reopened once the root is back
            self._say(f"sessdex watch: dropping the sessions of {self.root} failed ({type(exc).__name__}: {exc})")

    def _reconcile_root(self) -> None:
        assert self._db is not None
        try:
            self._report_skipped(reconcile(self._db, Scope.of(root=self.root)).failures)
            self._keep_id_width(changed=True)
        except CatalogUnavailableError as exc:
            self._fall_behind(exc)
        except Exception as exc:  # the catalog failed under the watcher: reopened, which reconciles again
            self._say(f"sessdex watch: indexing {self.root} again failed ({type(exc).__name__}: {exc}); "
                      "reopening the catalog and going on")
            self._reopen()

    def _keep_id_width(self, *, changed: bool) -> None:
        """Store the id width of listings (see ID_WIDTH_KEY) when files were indexed since it was last stored: by
        anyone (the highest id grew), or by this watcher when `changed` (a removal lowers no id). Never fatal: a
        stored width that is out of date is not used, readers compute it then."""
        reader = self._db.sqlite_reader() if self._db is not None else None
        if reader is None or self._db is None:
            return
        self._keep_picker_figures(reader, changed=changed)
        try:
            stamp = reader.execute(STAMP_SQL).fetchone()[0]
            if not changed and stamp == self._width_stamp:
                return
            width = catalog_id_width(reader, self._db.machine, self.root)
            with self._db.write():
                self._db.execute("meta_delete", {"key": ID_WIDTH_KEY + self._db.machine})
                self._db.execute("meta_insert", {"key": ID_WIDTH_KEY + self._db.machine,
                                                 "value": f"{'none' if width is None else width} {stamp}"})
            self._width_stamp = stamp
        except Exception as exc:  # the catalog failing under the watcher is handled at the next batch or heartbeat
            self._width_stamp = None
            if not disk_full(exc) and not isinstance(exc, CatalogUnavailableError):
                self._say(f"sessdex watch: storing the id width failed ({type(exc).__name__}: {exc})")

    def _keep_picker_figures(self, reader: sqlite3.Connection, *, changed: bool) -> None:
        """Store the count and id width of the picker's every-project scope (see PICKER_FIGURES_KEY) when a file was
        indexed or appended to since they were last stored, or by this watcher when `changed`. Never fatal: figures
        out of date are not used, the picker computes them then."""
        assert self._db is not None
        try:
            stamp = picker_stamp(reader, self._db.machine)
            if not changed and stamp == self._picker_stamp:
                return
            count, width = every_project_figures(reader, self._db.machine, self.root)
            with self._db.write():
                self._db.execute("meta_delete", {"key": PICKER_FIGURES_KEY + self._db.machine})
                self._db.execute("meta_insert", {"key": PICKER_FIGURES_KEY + self._db.machine,
                                                 "value": picker_figures_value(count, width, stamp)})
            self._picker_stamp = stamp
        except Exception as exc:  # the catalog failing under the watcher is handled at the next batch or heartbeat
            self._picker_stamp = None
            if not disk_full(exc) and not isinstance(exc, CatalogUnavailableError):
                self._say(f"sessdex watch: storing the picker's figures failed ({type(exc).__name__}: {exc})")

    def _publish_heartbeat(self) -> None:
        path = self.location.watcher_path
        temporary = path.with_name(path.name + f".{os.getpid()}.tmp")
        write_private_text(temporary, f"{os.getpid()}\n{self.root}\n")
        os.replace(temporary, path)

    def _clear_heartbeat(self) -> None:
        heartbeat = read_heartbeat(self.location, max_age=float("inf"))
        if heartbeat is not None and heartbeat.pid == os.getpid():
            with contextlib.suppress(FileNotFoundError):
                self.location.watcher_path.unlink()

    def apply(self, db: CatalogDatabase, changes: Changes) -> None:
        """Index what a batch changed: rescanned folders first (so moves are followed), then single files."""
        # The symlinked sessions this batch indexes, with their target's stat taken before it is read: a target
        # changed after that is seen at a heartbeat, one unchanged is never read again.
        for folder in changes.rescan:
            self._note_symlinks(_symlinked_sessions(folder))
        self._note_symlinks(path for path, action in changes.files.items()
                            if action is Action.INDEX and os.path.islink(path))
        # Folders that exist go first: a moved folder's files are then adopted by inode, not read again.
        for folder in sorted(changes.rescan, key=lambda folder: not os.path.isdir(folder)):
            self._report_skipped(reconcile(db, Scope.of(root=folder)).failures)
        ordered = [p for p, a in changes.files.items() if a is Action.INDEX]
        ordered += [p for p, a in changes.files.items() if a is Action.REMOVE]
        for path, action in changes.files.items():
            if action is Action.REMOVE:
                self._symlinks.pop(path, None)
        if ordered:
            # An event for a file that failed before (a chmod, an attribute change) reads it again from the start.
            retry_among = {path for path, action in changes.files.items() if action is Action.INDEX}
            self._report_skipped(index_files(db, ordered, retry_among=retry_among))
        self.stats.batches += 1
        self.stats.files_indexed += len(ordered)

    def _report_skipped(self, failures: Iterable[Any]) -> None:
        for failure in failures:
            self.stats.files_skipped += 1
            self._say(f"sessdex watch: skipped {failure.path}: {failure.reason} (see `sessdex doctor`)")

    def _apply_safely(self, changes: Changes) -> None:
        """apply(), and when the catalog itself fails (WAL deleted, disk error), say so and reopen it.

        A failing batch is not lost: the reconciliation after reopening finds what it missed.
        """
        assert self._db is not None
        try:
            self.apply(self._db, changes)
            self._keep_id_width(changed=bool(changes.rescan) or Action.REMOVE in changes.files.values())
            return
        except CatalogUnavailableError as exc:  # a server gone away: caught up once it is back
            self._fall_behind(exc)
            return
        except Exception as exc:  # anything else would end the watch and leave the catalog stale for everyone
            if disk_full(exc):
                self._fall_behind(exc)  # caught up once there is room again
                return
            self._say(f"sessdex watch: a batch of {len(changes.files)} file(s) failed ({type(exc).__name__}: "
                      f"{exc}); reopening the catalog and going on")
        self._reopen()

    def _fall_behind(self, exc: Exception) -> None:
        """The server cannot be reached or the disk is full: say so once, and try again every RETRY_SECONDS
        (see _catch_up)."""
        self._retry_at = time.monotonic() + self._retry_seconds
        if self._behind_since is not None:
            return  # said already
        self._behind_since = time.monotonic()
        if disk_full(exc):
            self._say(f"sessdex watch: the disk is full ({exc}); waiting for room, trying again every "
                      f"{self._retry_seconds:g} s, changes are caught up then")
        else:
            self._say(f"sessdex watch: {exc}; trying again every {self._retry_seconds:g} s, "
                      "changes are caught up when it is back")

    def _fill_content_safely(self, deadline: float) -> bool:
        """A slice of the message-text backlog (content_index); True when it is complete. A catalog that fails
        under it is reopened, as for a batch."""
        assert self._db is not None
        try:
            return fill_content_index(self._db, deadline=deadline)
        except CatalogUnavailableError as exc:
            self._fall_behind(exc)
            return False
        except Exception as exc:  # the watch goes on: see _apply_safely
            if disk_full(exc):
                self._fall_behind(exc)
                return False
            self._say(f"sessdex watch: filling the message-text index failed ({type(exc).__name__}: {exc}); "
                      "reopening the catalog and going on")
            self._reopen()
            return False

    def _open(self) -> CatalogDatabase:
        """Open the catalog; the -wal file it writes to is noted at the next heartbeat."""
        self._wal_identity = None
        db = self._db = open_catalog(self.location, machine=self.machine)
        self._file_identity = self._catalog_file_now()
        return db

    def _catalog_file_now(self) -> tuple[int, int] | None:
        """(device, inode) of a SQLite catalog's file now; None when there is none (or the catalog is a server)."""
        if self.location.sqlite_file is None:
            return None
        try:
            status = os.stat(self.location.sqlite_file)
        except OSError:
            return None
        return status.st_dev, status.st_ino

    def _connect(self) -> ReconcileReport:
        """Open the catalog (if not open), record this machine in it and reconcile the whole root: the initial
        scan, or the catch-up after the server was away."""
        if self._db is None:
            self._open()
        assert self._db is not None
        if not self._reached:
            from sessdex.catalog.index.machines import register_machine

            register_machine(self._db, self.root, content=self._content, home=self._home)
        report = reconcile(self._db, Scope.of(root=self.root))
        self._report_skipped(report.failures)
        self._keep_id_width(changed=True)  # before the heartbeat: the first listings it serves find it stored
        if not self._reached:
            self._reached = True
            self._publish_heartbeat()
        return report

    def _first_scan(self) -> ReconcileReport | None:
        """The initial scan; None (said once, tried again in the loop) when the server cannot be reached."""
        try:
            return self._connect()
        except CatalogUnavailableError as exc:
            if not server_unreachable(exc):
                raise
            self._close_quietly()
            self._fall_behind(exc)
            return None
        except Exception as exc:
            if not disk_full(exc):
                raise
            self._fall_behind(exc)
            return None

    def _catch_up(self) -> None:
        """Once the catalog answers again, index everything that changed while it did not."""
        try:
            report = self._connect()
        except Exception as exc:
            if not isinstance(exc, CatalogUnavailableError) and not disk_full(exc):
                raise
            if not self._reached and isinstance(exc, CatalogUnavailableError):
                self._close_quietly()  # opened again at the next try
            self._retry_at = time.monotonic() + self._retry_seconds
            return
        self._behind_since = None
        self.stats.batches += 1
        self.stats.files_indexed += len(report.changed) + len(report.vanished)
        self._say(f"sessdex watch: the catalog is back; indexed {len(report.changed) + len(report.vanished)} "
                  "file(s) changed meanwhile")

    def _close_quietly(self) -> None:
        if self._db is not None:
            with contextlib.suppress(Exception):
                self._db.close()
            self._db = None

    def _reopen(self) -> None:
        """Close the catalog (quietly: it may be broken), open it again and reconcile everything.

        Not while the sessions root is gone: the agent dir may be going away with it, and opening would make the
        catalog again there. The root's return reopens it (_follow_root)."""
        if self._identity_now() is None and self._db is not None:
            return
        self._close_quietly()
        try:
            self._report_skipped(reconcile(self._open(), Scope.of(root=self.root)).failures)
            self._keep_id_width(changed=True)
        except CatalogUnavailableError as exc:
            self._fall_behind(exc)
        except Exception as exc:
            if not disk_full(exc):
                raise
            self._fall_behind(exc)

    def _catalog_pulled_away(self) -> bool:
        """Was the -wal file the catalog writes to deleted or replaced? (It lives as long as our connection.)"""
        current = self.location.wal_identity()
        if self._wal_identity is None:
            self._wal_identity = current  # the first look (SQLite makes the file at the first write)
            return False
        return current != self._wal_identity

    def run(self, stop: threading.Event) -> WatchStats:
        """Watch until `stop` is set: observer first, then the initial scan, then debounced batches."""
        with self._single_watcher():
            try:
                # Before the initial scan: nothing written during it is missed.
                self._observer = self._start_observer()
                self._note_symlinks(_symlinked_sessions(self.root))  # their targets' stat before the scan reads them
                report = self._first_scan()
                self.ready.set()
                if report is not None:
                    mode = "polling" if self.stats.polling else "watching"
                    self._say(f"sessdex watch: {mode} {self.root} ({report.scanned} session files, "
                              f"{len(report.changed) + len(report.vanished)} indexed); "
                              f"catalog {self.location.display}")
                self._loop(stop)
            finally:
                self._stop_observer()
                self._clear_heartbeat()
                if self._db is not None:
                    self._db.close()
                    self._db = None
        return self.stats

    def _loop(self, stop: threading.Event) -> None:
        """Handle event batches until `stop` is set (the heartbeat also checks symlinks and the catalog's files)."""
        next_beat = time.monotonic() + self._heartbeat_interval
        content_complete = False
        while not stop.is_set():
            now = time.monotonic()
            wait = self._batcher.wait_time(now)
            if wait == 0:
                changes = coalesce(self._batcher.take())
                if changes and self._behind_since is None:
                    self._apply_safely(changes)
                    content_complete = False  # a batch into an emptied catalog is a first index again
                continue
            if self._behind_since is not None and now >= self._retry_at:
                self._catch_up()
            if now >= next_beat:
                next_beat = now + self._heartbeat_interval
                if self._identity_now() is None:
                    # The sessions root is gone (moved, deleted, maybe with the agent dir): drop its rows and wait,
                    # making nothing again in the agent dir meanwhile (a heartbeat file, a catalog).
                    if self._follow_root():
                        content_complete = False
                    with contextlib.suppress(OSError):
                        os.utime(self.location.watcher_path)
                    continue
                self._beat()
                if self._follow_root():
                    content_complete = False
                # Reopened when still pulled away at the next heartbeat: the agent dir being deleted file by file
                # is then gone, and nothing is made again in it (see _reopen).
                pulled = self._catalog_pulled_away()
                confirmed, self._pulled_at_last_beat = pulled and self._pulled_at_last_beat, pulled
                if confirmed:
                    self._pulled_at_last_beat = False
                    self._say("sessdex watch: the catalog's WAL file was removed; reopening the catalog and "
                              "indexing again what it lost")
                    self._reopen()
                    content_complete = False
                changed = self._changed_symlinks()
                if changed and self._behind_since is None:  # else the catch-up's pass re-stats them
                    self._apply_safely(Changes(dict.fromkeys(changed, Action.INDEX)))
                    content_complete = False
            timeout = min(wait if wait is not None else self._heartbeat_interval, next_beat - now, 0.1)
            if not content_complete and self._behind_since is None:
                # Between batches, a little of the message-text index a first index left (content_index);
                # then only a look at the event queue, without waiting.
                content_complete = self._fill_content_safely(now + CONTENT_FILL_SECONDS)
                timeout = 0.0
            try:
                self._batcher.add(self._events.get(timeout=max(0.0, timeout)), time.monotonic())
            except queue.Empty:
                pass

    def _note_symlinks(self, paths: Iterable[str]) -> None:
        """Remember the target's stat of each symlinked session in `paths`, as about to be indexed."""
        for path in paths:
            self._symlinks[path] = _target_key(path)

    def _changed_symlinks(self) -> list[str]:
        """The symlinked session files whose target's stat changed since last looked at (forgotten when gone)."""
        changed = []
        for path, known in list(self._symlinks.items()):
            current = _target_key(path)
            if not os.path.islink(path):
                del self._symlinks[path]  # replaced by a regular file or removed: events cover it now
            else:
                self._symlinks[path] = current
            if current != known:
                changed.append(path)
        return changed

    def _beat(self) -> None:
        if not self._reached:
            return  # no heartbeat before the initial scan: readers keep their own freshness check
        self._check_revision()
        if self._behind_since is None:
            self._keep_id_width(changed=False)  # files another process indexed
        try:
            os.utime(self.location.watcher_path)
        except FileNotFoundError:
            try:
                self._publish_heartbeat()
            except OSError as exc:  # no room for it: readers check freshness themselves meanwhile
                if not disk_full(exc):
                    raise

    def _check_revision(self) -> None:
        """Stop (CatalogError) once the catalog is at another revision than this code writes: a newer sessdex
        upgraded it meanwhile, and rows written from here would lack what its revisions derive from them."""
        if self._db is None or self._behind_since is not None:
            return
        try:
            revision = self._db.revision()
        except CatalogUnavailableError as exc:
            self._fall_behind(exc)
            return
        except Exception:  # a catalog failing under the watcher is reopened at this heartbeat (_catalog_pulled_away)
            return
        if revision != SCHEMA_REVISION:
            raise CatalogError(f"the catalog {self.location.display} is now at revision {revision}, not "
                               f"{SCHEMA_REVISION}: another sessdex upgraded it; start `sessdex watch` again "
                               "(from that sessdex) to keep it current")


# A server that answers a connection with one of these FATAL errors is on its way up or down, or full: waiting helps.
_PASSING_REFUSALS = ("starting up", "shutting down", "recovery mode", "not yet accepting connections",
                     "too many clients")


def server_unreachable(exc: CatalogUnavailableError) -> bool:
    """True when the catalog's server could not be reached (refused, timed out, starting up or shutting down,
    full), False when it answered with a refusal that waiting will not lift (wrong password, no such database)
    or the database driver is missing. libpq gives no SQLSTATE for a failed connection: the server's own
    answers are the messages it marks FATAL."""
    cause = exc.__cause__
    if cause is None or isinstance(cause, ImportError):
        return False
    error = getattr(cause, "orig", None) or cause
    sqlstate = getattr(error, "sqlstate", None)
    if sqlstate is not None:
        return sqlstate.startswith(("08", "57P", "53300"))
    text = str(error)
    return "FATAL:" not in text or any(words in text for words in _PASSING_REFUSALS)


def disk_full(exc: BaseException) -> bool:
    """True when `exc` (or what caused it) says the disk or the user's quota is full: waiting for room helps."""
    seen: BaseException | None = exc
    for _ in range(8):  # the chain of causes is short; never loop on a cycle
        if seen is None:
            return False
        if isinstance(seen, OSError) and seen.errno in (errno.ENOSPC, errno.EDQUOT):
            return True
        if getattr(seen, "sqlite_errorcode", None) == _SQLITE_FULL or "database or disk is full" in str(seen):
            return True
        seen = seen.__cause__ or seen.__context__
    return False


_SQLITE_FULL = 13  # sqlite3.SQLITE_FULL


def _target_key(path: str) -> StatKey | None:
    """The stat key of what the symlink at `path` points to now (None when it points nowhere)."""
    try:
        return stat_key(os.stat(path))
    except OSError:
        return None


def _symlinked_sessions(root: str) -> list[str]:
    """The session files below `root` that are symlinks (found from directory entries, without a stat each)."""
    found: list[str] = []
    try:
        entries = os.scandir(root)
    except OSError:
        return found
    with entries:
        for entry in entries:
            try:
                if entry.name.endswith(SESSION_SUFFIX) and entry.is_symlink():
                    found.append(entry.path)
                elif entry.is_dir(follow_symlinks=False):
                    found += _symlinked_sessions(entry.path)
            except OSError:
                continue
    return found


@contextlib.contextmanager
def stop_on_signals(stop: threading.Event) -> Iterator[None]:
    """Set `stop` on SIGINT or SIGTERM while inside the block (main thread only); restore handlers after."""
    previous = {}

    def handle(_signum: int, _frame: Any) -> None:
        stop.set()

    for signum in (signal.SIGINT, signal.SIGTERM):
        previous[signum] = signal.signal(signum, handle)
    try:
        yield
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)

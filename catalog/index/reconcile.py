"""Keep the catalog fresh without a watcher: compare the files' stat with the catalog and index the difference.

Every read command calls `ensure_fresh` before answering. It costs one directory scan plus one stat per
file and one catalog query; only new, changed and vanished files are handed to the indexer (imported
lazily, so an unchanged tree never loads it). When a running `sessdex watch` covers the scope and its
heartbeat is fresh, even the scan is skipped: the watcher already keeps the catalog current.

An id-prefix lookup (`ensure_fresh_for_ids`) needs less: the directory listings (no stat) to find new
files, and a stat of the files whose id can match. A vanished file (deleted, renamed, renamed over
another) sends it back to the full pass. What it cannot see is a file rewritten in place under the
same name, keeping its inode, with another session's id: the agent never writes that way (its
rewrites replace the file), and the next full pass or `sessdex watch` catches it.

Readers never wait for a writer. Whoever indexes a pass's files holds the catalog's index lock (an `flock` on
`<catalog>.index.lock`) meanwhile: `sessdex index`, a watcher's scans and a read command that indexes what it
found. A read command that finds the lock taken (another process is indexing, e.g. a first index) does not
index: its report lists the files it would have indexed as `unindexed` and the caller reads those files
themselves (`sessdex.catalog.queries.sessions`), so it answers from the rows already committed plus the files
the catalog does not hold yet. So two processes that both find an empty catalog never both index it.

A file that could not be indexed (unreadable, or its reading raised) is recorded by its stat and not read again
until that stat changes. A `chmod` changes neither size nor mtime, so the paths of such files are also kept in a
small file next to the catalog (`<catalog>.failed`, path -> ctime in ns), and every pass that meets one whose
ctime changed (a mode, owner or content change) indexes it again from the start. The file exists only while
some file failed: a pass without it costs one failed `open`.
"""

from __future__ import annotations

import contextlib
import os
import stat as stat_module
import time

from sessdex.catalog.store.location import CatalogLocation
from sessdex.core.paths import path_from_text, path_to_text, session_file_entries
from sessdex.core.values import Value

TYPE_CHECKING = False  # typing stays off the hot commands' imports
if TYPE_CHECKING:
    from collections.abc import Callable, Container, Iterable, Iterator, Mapping
    from typing import Any

    from sessdex.catalog.store.db import CatalogDatabase

HEARTBEAT_MAX_AGE_SECONDS = 2.0
INDEX_LOCK_SUFFIX = ".index.lock"
FAILED_SUFFIX = ".failed"
_FAILED_MAX_BYTES = 64 * 1024 * 1024  # a larger file of failures is not ours to read: treated as none
_INT64_MAX = 2**63 - 1  # indexer.INT64_MAX (the indexer is imported lazily)

# (device, inode, size, mtime_ns): what decides that a file changed.
StatKey = tuple[int, int, int, int]


class Scope(Value):
    """Which files a query depends on: some folders (their files only) and/or a root (everything below it)."""

    __slots__ = ("directories", "root")

    def __init__(self, directories: tuple[str, ...] = (), root: str | None = None) -> None:
        self.directories = directories
        self.root = root

    @classmethod
    def of(cls, directories: Iterable[str | os.PathLike[str]] = (), root: str | os.PathLike[str] | None = None) -> Scope:
        return cls(tuple(dict.fromkeys(os.path.abspath(os.fspath(d)) for d in directories)),
                   os.path.abspath(os.fspath(root)) if root is not None else None)

    def folders(self) -> list[str]:
        return [*self.directories, *([self.root] if self.root is not None else [])]


class ReconcileReport(Value):
    """What a freshness pass found (and handed to the indexer)."""

    __slots__ = ("scanned", "changed", "vanished", "skipped_for_watcher", "failures", "deferred")

    def __init__(self, scanned: int = 0, changed: list[str] | None = None, vanished: list[str] | None = None,
                 skipped_for_watcher: bool = False, failures: list | None = None, deferred: bool = False) -> None:
        self.scanned = scanned
        self.changed: list[str] = [] if changed is None else changed
        self.vanished: list[str] = [] if vanished is None else vanished
        self.skipped_for_watcher = skipped_for_watcher
        # indexer.FileFailure of the files whose indexing failed (recorded as unreadable)
        self.failures: list = [] if failures is None else failures
        # True when another process held the index lock: `changed` and `vanished` were not indexed, the catalog's
        # rows of those paths are stale (the caller reads the changed files itself and drops the vanished ones).
        self.deferred = deferred

    @property
    def unindexed(self) -> list[str]:
        """The changed files the catalog does not hold as they are now (only when `deferred`)."""
        return self.changed if self.deferred else []

    @property
    def up_to_date(self) -> bool:
        return not self.changed and not self.vanished


def stat_key(result: os.stat_result) -> StatKey:
    """The StatKey of a stat result, its mtime clamped as the catalog stores it (see indexer.FileStat)."""
    mtime_ns = result.st_mtime_ns
    return result.st_dev, result.st_ino, result.st_size, mtime_ns if mtime_ns <= _INT64_MAX else _INT64_MAX


def _scan_directory(directory: str, found: dict[str, StatKey | None], recursive: bool, with_stat: bool) -> None:
    """Add the `*.jsonl` regular files of `directory` (symlinks to files followed; subfolders if recursive).

    With `with_stat`, each gets its stat key; without, None (a listing costs no stat for regular files).
    """
    is_regular = stat_module.S_ISREG
    for entry in session_file_entries(directory, recursive=recursive):
        try:
            if with_stat:
                result = entry.stat()
                if is_regular(result.st_mode):
                    found[entry.path] = stat_key(result)
            elif entry.is_file():
                found[entry.path] = None
        except OSError:
            continue


def scan_files(scope: Scope, *, with_stat: bool = True) -> dict[str, StatKey | None]:
    """The session files on disk in `scope`, by absolute path (a name that is not valid UTF-8 as os.fsdecode
    gives it), with their stat keys (None without `with_stat`)."""
    found: dict[str, StatKey | None] = {}
    for directory in scope.directories:
        _scan_directory(directory, found, False, with_stat)
    if scope.root is not None:
        _scan_directory(scope.root, found, True, with_stat)
    return found


def root_range(root: str) -> dict[str, str]:
    """Parameters selecting every path below the folder `root` by a range on the path column (index friendly)."""
    prefix = path_to_text(root.rstrip("/") + "/")
    return {"root_lo": prefix, "root_hi": prefix + "\U0010ffff"}


def _fetch_all(db: CatalogDatabase, statements: list[tuple[str, dict[str, str]]]) -> list[list[tuple[Any, ...]]]:
    """The rows of each statement; a server catalog that can (PostgreSQL) sends them all in one round trip."""
    batch = getattr(db, "fetch_batch", None)
    if batch is not None:
        return batch(statements)
    return [db.fetch_tuples(name, params) for name, params in statements]


def _files_statements(scope: Scope, id_range: dict[str, str] | None = None) -> list[tuple[str, dict[str, str]]]:
    suffix = "" if id_range is None else "_with_id"
    statements = [("stats_in_directory" + suffix, {"directory": path_to_text(directory), **(id_range or {})})
                  for directory in scope.directories]
    if scope.root is not None:
        statements.append(("stats_under_root" + suffix, {**root_range(scope.root), **(id_range or {})}))
    return statements


def _paths_statements(scope: Scope) -> list[tuple[str, dict[str, str]]]:
    statements = [("paths_in_directory", {"directory": path_to_text(directory)}) for directory in scope.directories]
    if scope.root is not None:
        statements.append(("paths_under_root", root_range(scope.root)))
    return statements


def catalog_files(db: CatalogDatabase, scope: Scope, id_range: dict[str, str] | None = None) -> dict[str, StatKey]:
    """The files the catalog holds in `scope` (only those with an id in `id_range`), with their last stat."""
    return {path_from_text(row[0]): row[1:] for rows in _fetch_all(db, _files_statements(scope, id_range))
            for row in rows}


def catalog_paths(db: CatalogDatabase, scope: Scope) -> set[str]:
    """The paths the catalog holds in `scope`."""
    return {path_from_text(row[0]) for rows in _fetch_all(db, _paths_statements(scope)) for row in rows}


def diff(on_disk: Mapping[str, StatKey | None], in_catalog: Mapping[str, StatKey]) -> tuple[list[str], list[str]]:
    """(new or changed paths, vanished paths) between a disk scan and the catalog."""
    changed = [path for path, key in on_disk.items() if in_catalog.get(path) != key]
    vanished = [path for path in in_catalog if path not in on_disk]
    return changed, vanished


@contextlib.contextmanager
def index_lock(location: CatalogLocation, *, wait: bool = True) -> Iterator[bool]:
    """Hold the catalog's index lock (see the module docstring) for the block; yields False, holding nothing, when
    another process holds it and not `wait`. A lock file that cannot be made or opened (a read-only folder, a
    symlink, another user's file) locks nothing: the block runs as it would without the lock."""
    import fcntl  # only a pass that has something to index locks

    from sessdex.core.private_files import make_private_dirs, open_private

    path = location.sidecar_file(INDEX_LOCK_SUFFIX)
    try:
        if location.sqlite_file is None:
            # A server catalog's lock lives in a local folder that may not exist yet; a SQLite catalog's folder
            # exists while the catalog does (one deleted with the agent dir under a watcher is not made again).
            make_private_dirs(os.path.dirname(path))
        fd = open_private(path, os.O_RDWR | os.O_NOFOLLOW)
    except OSError:
        yield True
        return
    try:
        if os.fstat(fd).st_uid != os.geteuid():
            yield True  # not ours: never locked on (nor written to)
            return
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | (0 if wait else fcntl.LOCK_NB))
        except BlockingIOError:
            yield False
            return
        yield True
    finally:
        os.close(fd)


class FailedFiles:
    """The files the catalog recorded as unreadable or failed, with their ctime then (see the module docstring)."""

    def __init__(self, location: CatalogLocation, entries: dict[str, int]) -> None:
        self.location = location
        self.entries = entries
        self._loaded = dict(entries)

    @classmethod
    def load(cls, location: CatalogLocation) -> FailedFiles:
        """The recorded failures; none when the file is missing, not ours, a symlink or not what we write."""
        entries: dict[str, int] = {}
        try:
            fd = os.open(location.sidecar_file(FAILED_SUFFIX), os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
        except OSError:
            return cls(location, entries)
        try:
            status = os.fstat(fd)
            if (status.st_uid == os.geteuid() and stat_module.S_ISREG(status.st_mode)
                    and status.st_size <= _FAILED_MAX_BYTES):
                import orjson

                with open(fd, "rb", closefd=False) as handle:
                    data = orjson.loads(handle.read())
                if isinstance(data, dict):  # paths in the catalog's stored form (core.paths.path_to_text)
                    entries = {path_from_text(path): ctime for path, ctime in data.items()
                               if isinstance(path, str) and type(ctime) is int}
        except (OSError, ValueError):
            entries = {}
        finally:
            os.close(fd)
        return cls(location, entries)

    def due(self, candidates: Container[str]) -> list[str]:
        """The recorded paths among `candidates` whose ctime changed: to be read again from the start."""
        if not self.entries:
            return []
        due = []
        for path in [path for path in self.entries if path in candidates]:
            try:
                ctime_ns = os.stat(path).st_ctime_ns
            except OSError:
                continue  # gone, or its folder unreadable: the pass that finds it vanished drops it
            if ctime_ns != self.entries[path]:
                due.append(path)
        return due

    def note(self, indexed: Iterable[str], failures: Iterable[Any]) -> None:
        """After indexing `indexed`: remember those now recorded as failed or unreadable, forget the others."""
        failed = {path_from_text(failure.path) for failure in failures}  # the indexer names them by catalog key
        for path in indexed:
            self.entries.pop(path, None)
            try:
                ctime_ns = os.stat(path).st_ctime_ns
            except OSError:
                continue  # vanished: its row is gone
            if path in failed or not os.access(path, os.R_OK):
                self.entries[path] = ctime_ns

    def save(self) -> None:
        """Write the failures back if they changed (the file is removed when none is left); best effort."""
        if self.entries == self._loaded:
            return
        path = self.location.sidecar_file(FAILED_SUFFIX)
        try:
            if not self.entries:
                os.unlink(path)
            else:
                import orjson

                from sessdex.core.private_files import write_private_text

                write_private_text(path, orjson.dumps({path_to_text(failed): ctime
                                                       for failed, ctime in self.entries.items()}).decode())
            self._loaded = dict(self.entries)
        except OSError:
            pass  # a read-only folder, another user's file: the failures are retried when their stat changes


def index_files(db: CatalogDatabase, paths: list[str], *, retry_among: Container[str] = (),
                progress: Callable[[str, object], None] | None = None, defer_content: bool = False,
                defer_text: bool = False) -> list:
    """Index `paths`, and read again from the start the recorded failures among `retry_among` whose ctime
    changed (see FailedFiles); remember which are failures now. Returns the indexer's failures.
    `defer_content`, `defer_text`: as `Indexer` takes them.

    The caller holds the index lock if it needs it."""
    failed = FailedFiles.load(db.location)
    return _index_noting(db, failed, paths, failed.due(retry_among), progress, defer_content, defer_text)


def _index_noting(db: CatalogDatabase, failed: FailedFiles, paths: list[str], retry: list[str],
                  progress: Callable[[str, object], None] | None, defer_content: bool,
                  defer_text: bool = False) -> list:
    if not paths and not retry:
        return []
    from sessdex.catalog.index.indexer import Indexer

    indexer = Indexer(db, defer_content=defer_content, defer_text=defer_text)
    if retry:  # read whole below, even if an event or a changed stat named them too
        paths = [path for path in paths if path not in set(retry)]
    if paths:
        indexer.index_paths(paths, progress=progress)
    for path in retry:
        indexer.index_path(path, force=True)
    failed.note([*paths, *retry], indexer.failures)
    failed.save()
    return indexer.failures


def _index(db: CatalogDatabase, paths: list[str], progress: Callable[[str, object], None] | None = None,
           *, wait: bool = True, retry_among: Container[str] = ()) -> list | None:
    """Index `paths` (and the failures due again among `retry_among`) holding the index lock; return the
    indexer's failures, or None when another process holds the lock and not `wait` (nothing was indexed)."""
    failed = FailedFiles.load(db.location)
    retry = failed.due(retry_among)
    if not paths and not retry:
        return []
    with index_lock(db.location, wait=wait) as locked:
        if not locked:
            return None
        # A first index makes listings visible before the message-text index (see catalog.index.content_index).
        return _index_noting(db, failed, paths, retry, progress, defer_content=True)


def reconcile(db: CatalogDatabase, scope: Scope, *, progress: Callable[[str, object], None] | None = None,
              wait: bool = True) -> ReconcileReport:
    """Index what changed in `scope` since the catalog last saw it; new files first so renames are followed.

    Without `wait`, a pass that finds another process indexing leaves the changes to it (a `deferred` report)."""
    on_disk = scan_files(scope)
    changed, vanished = diff(on_disk, catalog_files(db, scope))
    failures = _index(db, [*sorted(changed), *vanished], progress, wait=wait, retry_among=on_disk)
    return ReconcileReport(len(on_disk), changed, vanished, failures=failures or [], deferred=failures is None)


def reconcile_for_ids(db: CatalogDatabase, scope: Scope, id_range: dict[str, str], *,
                      wait: bool = True) -> ReconcileReport:
    """Freshness for an id lookup: new files by listing, the files whose id is in `id_range` by stat.

    Falls back to `reconcile` when a file vanished (see the module docstring for the one blind spot).
    """
    listed = scan_files(scope, with_stat=False)
    # Both questions at once: one round trip to a catalog server.
    paths_statements = _paths_statements(scope)
    found = _fetch_all(db, [*paths_statements, *_files_statements(scope, id_range)])
    known = {path_from_text(row[0]) for rows in found[:len(paths_statements)] for row in rows}
    if not known.issubset(listed):
        return reconcile(db, scope, wait=wait)
    changed = sorted(path for path in listed if path not in known)
    in_range = {path_from_text(row[0]): row[1:] for rows in found[len(paths_statements):] for row in rows}
    for path, key in in_range.items():
        try:
            result = os.stat(path)
        except OSError:
            return reconcile(db, scope, wait=wait)
        if stat_key(result) != key:
            changed.append(path)
    failures = _index(db, changed, wait=wait, retry_among=listed)
    return ReconcileReport(len(listed), changed, [], failures=failures or [], deferred=failures is None)


# -- the watcher's heartbeat ---------------------------------------------------------------------------

class Heartbeat(Value):
    """What a running watcher publishes next to the catalog: its pid and the root it watches."""

    __slots__ = ("pid", "root")

    def __init__(self, pid: int, root: str) -> None:
        self.pid = pid
        self.root = root


def read_heartbeat(location: CatalogLocation, *, max_age: float = HEARTBEAT_MAX_AGE_SECONDS,
                   now: float | None = None) -> Heartbeat | None:
    """The heartbeat of a live watcher of this catalog, or None when there is none or it went quiet."""
    path = location.sidecar_file(".watcher")  # a string: the hot commands never import pathlib
    try:
        age = (time.time() if now is None else now) - os.stat(path).st_mtime
        if age > max_age:
            return None
        with open(path, encoding="utf-8") as handle:
            pid_text, root = handle.read().split("\n", 2)[:2]
        pid = int(pid_text)
        if pid <= 0:
            return None  # 0 and -1 would ask about a process group, and always find one
        os.kill(pid, 0)
    except (OSError, ValueError, OverflowError):
        return None
    return Heartbeat(pid, root)


def covered_by(heartbeat: Heartbeat | None, scope: Scope) -> bool:
    """True when a live watcher's root contains every folder of `scope`."""
    if heartbeat is None:
        return False
    prefix = heartbeat.root.rstrip("/") + "/"
    return all(folder == heartbeat.root or folder.startswith(prefix) for folder in scope.folders())


def ensure_fresh(db: CatalogDatabase, scope: Scope) -> ReconcileReport:
    """Make the catalog current for `scope` (a read command's pass): trust a live watcher covering it, else
    reconcile by stat, leaving the changes to another process that is indexing (a `deferred` report)."""
    if covered_by(read_heartbeat(db.location), scope):
        return ReconcileReport(skipped_for_watcher=True)
    return reconcile(db, scope, wait=False)


def ensure_fresh_for_ids(db: CatalogDatabase, scope: Scope, id_range: dict[str, str]) -> ReconcileReport:
    """Make the catalog current for an id lookup in `scope`: trust a live watcher, else `reconcile_for_ids`
    (deferred, like `ensure_fresh`, while another process indexes)."""
    if covered_by(read_heartbeat(db.location), scope):
        return ReconcileReport(skipped_for_watcher=True)
    return reconcile_for_ids(db, scope, id_range, wait=False)

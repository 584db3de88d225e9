"""The storage seam: every file-system operation a SessionManager performs goes through here."""

from __future__ import annotations

import contextlib
import dataclasses
import os
import re
import secrets
import stat as stat_module
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol, TypeVar

from sessdex.core.private_files import PRIVATE_FILE_MODE, make_private_dirs
from sessdex.core.regular_files import (
    exclusive_lock,
    flock_exclusive,
    flock_release,
    mode_for_replacement,
    read_regular_file,
    same_inode,
)


@dataclass(frozen=True)
class FileStat:
    """The parts of a stat result sessdex uses (the session manager's storage seam and the catalog's indexer)."""

    size: int
    mtime_ns: int
    inode: int
    device: int
    is_dir: bool

    @classmethod
    def of(cls, result: os.stat_result) -> FileStat:
        """The FileStat of an `os.stat` result."""
        return cls(result.st_size, result.st_mtime_ns, result.st_ino, result.st_dev, stat_module.S_ISDIR(result.st_mode))

    def same_file_and_size(self, other: FileStat | None) -> bool:
        """True when `other` is this file at this length: nobody replaced or extended it in between."""
        return other is not None and (other.device, other.inode, other.size) == (self.device, self.inode, self.size)


class SessionStorageWriter(Protocol):
    """An append-only writer for one session file."""

    def write_line(self, data: bytes) -> None: ...

    def flush(self) -> None: ...

    def fsync(self) -> None: ...

    def close(self) -> None: ...

    def get_error(self) -> BaseException | None: ...

    def written_state(self) -> FileStat | None:
        """The file as this writer left it after its last write (None: unknown, e.g. in memory)."""
        ...


class SessionStorage(Protocol):
    """File operations used by SessionManager: sync ones, plus async twins for event-loop callers."""

    writes_to_disk: bool

    def ensure_dir_sync(self, path: Path) -> None: ...

    def exists_sync(self, path: Path) -> bool: ...

    def write_text_sync(self, path: Path, data: bytes) -> None: ...

    def stat_sync(self, path: Path) -> FileStat | None: ...

    def list_files_sync(self, directory: Path, suffix: str = ".jsonl") -> list[Path]: ...

    def read_bytes(self, path: Path, *, follow_symlinks: bool = True) -> bytes | None:
        """The file's bytes, None when missing; OSError when it is unreadable or not a regular file."""
        ...

    def read_prefix(self, path: Path, size: int) -> bytes | None: ...

    def write_atomic(self, path: Path, data: bytes) -> FileStat | None:
        """Replace the file at `path` with `data` at once; the identity of the new file (None in memory)."""
        ...

    def rename(self, source: Path, target: Path) -> None: ...

    def unlink(self, path: Path) -> None: ...

    def open_writer(self, path: Path) -> SessionStorageWriter:
        """An appender that ends a torn last line before its first write and follows a replaced file."""
        ...

    def exclusive(self, path: Path) -> contextlib.AbstractContextManager[None]:
        """Hold the lock every writer of the session at `path` takes (across processes)."""
        ...

    def remove_stale_temporaries(self, path: Path) -> list[Path]:
        """Remove the temp files a killed rewrite of `path` left behind; call it holding `exclusive(path)`."""
        ...

    def refuse_if_written_elsewhere(self, path: Path) -> None:
        """Raise SessionBusyError when another process keeps `path` open for writing (before a rewrite)."""
        ...

    def hold_replaced(self, path: Path) -> ReplacedFile | None:
        """The file now at `path`, held open before a rewrite reads it (None when there is none, or in memory)."""
        ...

    async def exists(self, path: Path) -> bool: ...

    async def read_text(self, path: Path) -> str | None: ...

    async def read_text_prefix(self, path: Path, size: int) -> str | None: ...

    async def write_text(self, path: Path, data: bytes) -> None: ...


_T = TypeVar("_T")


async def _to_thread(function: Callable[..., _T], *args: Any) -> _T:
    import asyncio

    return await asyncio.to_thread(function, *args)


class _AsyncTwins:
    """Async versions of the sync operations, run in a worker thread (asyncio is imported only here)."""

    async def exists(self, path: Path) -> bool:
        return await _to_thread(self.exists_sync, path)  # type: ignore[attr-defined]

    async def read_text(self, path: Path) -> str | None:
        data = await _to_thread(self.read_bytes, path)  # type: ignore[attr-defined]
        return None if data is None else data.decode("utf-8", "replace")

    async def read_text_prefix(self, path: Path, size: int) -> str | None:
        data = await _to_thread(self.read_prefix, path, size)  # type: ignore[attr-defined]
        return None if data is None else data.decode("utf-8", "replace")

    async def write_text(self, path: Path, data: bytes) -> None:
        await _to_thread(self.write_atomic, path, data)  # type: ignore[attr-defined]


class FileWriter:
    """Appends lines to a real file under the session's writer lock; remembers the first error.

    Every write locks the inode, and when the path now names another file (a rewrite by another
    process renamed a new file over it) the writer re-opens the path first, so no acknowledged line
    goes to a replaced inode. A torn last line (no newline) is ended before the new line.
    """

    def __init__(self, path: Path) -> None:
        self._path = path
        self._error: BaseException | None = None
        self._written: FileStat | None = None
        self._fd: int | None = self._open()

    def _open(self) -> int:
        return os.open(self._path, os.O_RDWR | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC, PRIVATE_FILE_MODE)

    def write_line(self, data: bytes) -> None:
        self._guard(lambda: self._write_locked(data))

    def _write_locked(self, data: bytes) -> None:
        if self._fd is None:
            raise ValueError("write to a closed session writer")
        while True:
            flock_exclusive(self._fd)
            if same_inode(self._fd, self._path):
                break
            os.close(self._fd)
            self._fd = None
            self._fd = self._open()
        try:
            size = os.fstat(self._fd).st_size
            if size and os.pread(self._fd, 1, size - 1) != b"\n":
                data = b"\n" + data
            view = memoryview(data)
            while view:
                view = view[os.write(self._fd, view):]
            # The length as this write left it (the descriptor's offset): a writer without the lock may have
            # appended since, and its line must not look like one of ours to the next rewrite.
            self._written = dataclasses.replace(FileStat.of(os.fstat(self._fd)),
                                                size=os.lseek(self._fd, 0, os.SEEK_CUR))
        finally:
            flock_release(self._fd)

    def written_state(self) -> FileStat | None:
        return self._written

    def flush(self) -> None:
        """Lines go to the kernel as they are written: nothing is buffered here."""
        self._guard(lambda: None)

    def fsync(self) -> None:
        self._guard(lambda: os.fsync(self._fd) if self._fd is not None else None)

    def close(self) -> None:
        """Release the descriptor (always, even after an earlier error)."""
        fd, self._fd = self._fd, None
        if fd is None:
            return
        try:
            os.close(fd)
        except OSError as exc:
            self._error = self._error or exc
            raise

    def get_error(self) -> BaseException | None:
        return self._error

    def _guard(self, action) -> None:  # type: ignore[no-untyped-def]
        if self._error is not None:
            raise self._error
        try:
            action()
        except OSError as exc:
            self._error = exc
            raise


class ReplacedFile:
    """The file a rewrite is about to replace (or a move to unlink), held open from before the rewrite reads it.

    A writer that opens the path for each append (as the agent may, without sessdex's lock) can open the old
    file just before the rename and write into it just after: that line would be in no file with a name.
    `late_appends` waits until no other process has the old file open for writing any more (nobody can open
    it by its name now) and returns its bytes when it grew since it was held, so the rewrite takes them in.
    """

    def __init__(self, fd: int) -> None:
        self._fd = fd
        status = os.fstat(fd)
        self._identity = (status.st_dev, status.st_ino)
        self._size = status.st_size

    def late_appends(self) -> bytes | None:
        """The old file's whole bytes when it grew since held (else None); call after the rename or unlink."""
        from sessdex.core.live_writers import wait_for_writers_to_leave

        wait_for_writers_to_leave(*self._identity, wait_seconds=REWRITE_WAIT_SECONDS)
        size = os.fstat(self._fd).st_size
        if size == self._size:
            return None  # everything it holds was there before the rewrite read the file
        chunks = []
        offset = 0
        while chunk := os.pread(self._fd, 1 << 20, offset):
            chunks.append(chunk)
            offset += len(chunk)
        return b"".join(chunks)

    def close(self) -> None:
        os.close(self._fd)


# How long a rewrite waits for another process to close the file before refusing: enough for a writer that
# opens the file for each append to finish that append.
REWRITE_WAIT_SECONDS = 0.5


def temporary_name(path: Path) -> Path:
    """Where a rewrite of `path` writes first: `.<name>.<8 hex>.tmp` beside it (a dot-file: never a session)."""
    return path.with_name(f".{path.name}.{secrets.token_hex(4)}.tmp")


# A temp file younger than this is left alone even when unlocked: a rewrite takes its lock just after creating it.
STALE_TEMPORARY_SECONDS = 60
_TEMPORARY_NAME = re.compile(r"\..+\.jsonl\.[0-9a-f]{8}\.tmp")


def sweep_stale_temporaries(sessions_root: str | os.PathLike[str], *, now: float | None = None) -> list[Path]:
    """Remove the temp files killed rewrites left in the project folders under `sessions_root`.

    Safe against a rewrite in progress: a live rewrite holds the writers' flock on its temp file (and keeps its
    mtime fresh), so only a temp file of ours that is older than STALE_TEMPORARY_SECONDS and whose lock can be
    taken is removed, while holding that lock and only if the name still names the file locked.
    """
    import fcntl
    import time

    now = time.time() if now is None else now
    removed: list[Path] = []
    try:
        folders = [entry.path for entry in os.scandir(sessions_root) if entry.is_dir(follow_symlinks=False)]
    except OSError:
        return removed
    for folder in folders:
        try:
            names = [entry.name for entry in os.scandir(folder) if entry.name.startswith(".")]
        except OSError:
            continue
        for name in names:
            if not _TEMPORARY_NAME.fullmatch(name):
                continue
            path = os.path.join(folder, name)
            try:
                fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
            except OSError:
                continue
            try:
                result = os.fstat(fd)
                if (not stat_module.S_ISREG(result.st_mode) or result.st_uid != os.geteuid()
                        or now - result.st_mtime < STALE_TEMPORARY_SECONDS):
                    continue
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                except OSError:
                    continue  # a rewrite is writing it
                if same_inode(fd, path):
                    os.unlink(path)
                    removed.append(Path(path))
            except OSError:
                continue
            finally:
                os.close(fd)
    return removed


def fsync_directory(directory: Path) -> None:
    """Make a rename durable by syncing its directory (best effort where unsupported)."""
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


class FileSessionStorage(_AsyncTwins):
    """The real file system."""

    writes_to_disk = True

    def ensure_dir_sync(self, path: Path) -> None:
        make_private_dirs(path)

    def exists_sync(self, path: Path) -> bool:
        return Path(path).exists()

    def write_text_sync(self, path: Path, data: bytes) -> None:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, PRIVATE_FILE_MODE)
        with open(fd, "wb") as handle:
            handle.write(data)

    def stat_sync(self, path: Path) -> FileStat | None:
        try:
            result = os.stat(path)
        except OSError:
            return None
        return FileStat.of(result)

    def list_files_sync(self, directory: Path, suffix: str = ".jsonl") -> list[Path]:
        try:
            names = os.listdir(directory)
        except OSError:
            return []
        return [Path(directory) / name for name in names if name.endswith(suffix)]

    def read_bytes(self, path: Path, *, follow_symlinks: bool = True) -> bytes | None:
        try:
            return read_regular_file(path, follow_symlinks=follow_symlinks)
        except FileNotFoundError:
            return None

    def read_prefix(self, path: Path, size: int) -> bytes | None:
        try:
            return read_regular_file(path, size)
        except FileNotFoundError:
            return None

    def write_atomic(self, path: Path, data: bytes) -> FileStat:
        """Temp file in the same directory, flush + fsync, rename over the target, fsync the directory.

        The new file gets the mode of the file it replaces (0600 when there is none), whatever the umask.
        It carries the writers' lock from before the rename until this returns, so an appender that finds
        it waits, and the stat returned is the file exactly as written.
        """
        path = Path(path)
        mode = mode_for_replacement(path)
        temporary = temporary_name(path)
        try:
            fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, mode)
            with open(fd, "wb") as handle:
                os.fchmod(fd, mode)
                flock_exclusive(fd)
                handle.write(data)
                handle.flush()
                os.fsync(fd)
                written = FileStat.of(os.fstat(fd))  # before the rename: nobody else can have appended yet
                os.replace(temporary, path)
                fsync_directory(path.parent)
                return written
        except BaseException:
            temporary.unlink(missing_ok=True)
            raise

    def rename(self, source: Path, target: Path) -> None:
        os.replace(source, target)
        fsync_directory(Path(target).parent)

    def unlink(self, path: Path) -> None:
        Path(path).unlink(missing_ok=True)

    def open_writer(self, path: Path) -> FileWriter:
        return FileWriter(Path(path))

    def exclusive(self, path: Path) -> contextlib.AbstractContextManager[None]:
        return exclusive_lock(path)

    def refuse_if_written_elsewhere(self, path: Path) -> None:
        from sessdex.core.live_writers import refuse_if_written_elsewhere  # scans /proc: only before rewrites

        refuse_if_written_elsewhere(path, wait_seconds=REWRITE_WAIT_SECONDS)

    def hold_replaced(self, path: Path) -> ReplacedFile | None:
        try:
            fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
        except FileNotFoundError:
            return None
        try:
            if not stat_module.S_ISREG(os.fstat(fd).st_mode):
                os.close(fd)
                return None
            return ReplacedFile(fd)
        except BaseException:
            os.close(fd)
            raise

    def remove_stale_temporaries(self, path: Path) -> list[Path]:
        path = Path(path)
        pattern = re.compile(rf"\.{re.escape(path.name)}\.[0-9a-f]{{8}}\.tmp")
        removed = []
        try:
            names = os.listdir(path.parent)
        except OSError:
            return []
        for name in names:
            if pattern.fullmatch(name):
                leftover = path.parent / name
                try:
                    leftover.unlink()
                except OSError:
                    continue
                removed.append(leftover)
        return removed


class MemoryWriter:
    """Appends lines to a MemorySessionStorage entry."""

    def __init__(self, storage: MemorySessionStorage, path: Path) -> None:
        self._storage = storage
        self._path = Path(path)

    def write_line(self, data: bytes) -> None:
        with self._storage.lock:
            current = self._storage.files.get(self._path, b"")
            if current and not current.endswith(b"\n"):
                data = b"\n" + data  # end a torn last line first
            self._storage.files[self._path] = current + data

    def flush(self) -> None:
        pass

    def fsync(self) -> None:
        pass

    def close(self) -> None:
        pass

    def get_error(self) -> BaseException | None:
        return None

    def written_state(self) -> FileStat | None:
        return None


class MemorySessionStorage(_AsyncTwins):
    """A map from path to bytes: for in-memory sessions and tests; never touches the disk."""

    writes_to_disk = False

    def __init__(self) -> None:
        self.files: dict[Path, bytes] = {}
        self.dirs: set[Path] = set()
        self.lock = threading.Lock()

    def ensure_dir_sync(self, path: Path) -> None:
        self.dirs.add(Path(path))

    def exists_sync(self, path: Path) -> bool:
        return Path(path) in self.files or Path(path) in self.dirs

    def write_text_sync(self, path: Path, data: bytes) -> None:
        self.files[Path(path)] = data

    def stat_sync(self, path: Path) -> FileStat | None:
        path = Path(path)
        if path in self.files:
            return FileStat(len(self.files[path]), 0, 0, 0, False)
        if path in self.dirs:
            return FileStat(0, 0, 0, 0, True)
        return None

    def list_files_sync(self, directory: Path, suffix: str = ".jsonl") -> list[Path]:
        return [path for path in self.files if path.parent == Path(directory) and path.name.endswith(suffix)]

    def read_bytes(self, path: Path, *, follow_symlinks: bool = True) -> bytes | None:
        return self.files.get(Path(path))

    def read_prefix(self, path: Path, size: int) -> bytes | None:
        data = self.files.get(Path(path))
        return None if data is None else data[:size]

    def write_atomic(self, path: Path, data: bytes) -> FileStat | None:
        self.files[Path(path)] = data
        return None

    def rename(self, source: Path, target: Path) -> None:
        self.files[Path(target)] = self.files.pop(Path(source))

    def unlink(self, path: Path) -> None:
        self.files.pop(Path(path), None)

    def open_writer(self, path: Path) -> MemoryWriter:
        return MemoryWriter(self, path)

    def exclusive(self, path: Path) -> contextlib.AbstractContextManager[None]:
        return contextlib.nullcontext()  # one process: the SessionManager's own lock serializes writers

    def remove_stale_temporaries(self, path: Path) -> list[Path]:
        return []

    def refuse_if_written_elsewhere(self, path: Path) -> None:
        return None  # nothing outside this process can hold a file that lives in memory

    def hold_replaced(self, path: Path) -> ReplacedFile | None:
        return None  # only this process writes to memory, under the session manager's lock


class OverlaySessionStorage(MemorySessionStorage):
    """Reads the real files but keeps every write in memory: resuming through it never changes the disk."""

    def _disk(self) -> FileSessionStorage:
        return FileSessionStorage()

    def exists_sync(self, path: Path) -> bool:
        return super().exists_sync(path) or self._disk().exists_sync(path)

    def stat_sync(self, path: Path) -> FileStat | None:
        return super().stat_sync(path) or self._disk().stat_sync(path)

    def list_files_sync(self, directory: Path, suffix: str = ".jsonl") -> list[Path]:
        found = set(self._disk().list_files_sync(directory, suffix)) | set(super().list_files_sync(directory, suffix))
        return sorted(found)

    def read_bytes(self, path: Path, *, follow_symlinks: bool = True) -> bytes | None:
        if Path(path) in self.files:
            return self.files[Path(path)]
        return self._disk().read_bytes(path, follow_symlinks=follow_symlinks)

    def read_prefix(self, path: Path, size: int) -> bytes | None:
        data = self.read_bytes(path)
        return None if data is None else data[:size]

    def rename(self, source: Path, target: Path) -> None:
        self.files[Path(target)] = self.read_bytes(source) or b""
        self.files.pop(Path(source), None)

    def open_writer(self, path: Path) -> MemoryWriter:
        if Path(path) not in self.files:
            self.files[Path(path)] = self._disk().read_bytes(path) or b""
        return MemoryWriter(self, path)

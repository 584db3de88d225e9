"""Safe file primitives: read only regular files without ever blocking, create private files, lock writers.

A FIFO or a link to `/dev/zero` named like a session must neither hang nor exhaust memory: files are
opened with O_NONBLOCK, checked with fstat after opening (the check cannot race a swap of the path),
and read up to the size fstat gave. Everything sessdex creates is private (0600 files, 0700 folders);
a rewrite keeps the mode of the file it replaces. Writers of one session serialize through an
advisory `flock` on the session file itself, taken on the inode the path names *now*.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat as stat_module
from collections.abc import Iterator

from sessdex.core.private_files import PRIVATE_FILE_MODE

_READ_FLAGS = os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC
_CHUNK = 1 << 20


class NotRegularFileError(OSError):
    """The path names a FIFO, device, socket or folder (or, when links are not followed, a symlink)."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        super().__init__(errno.EINVAL, "not a regular file", os.fspath(path))


def open_regular(path: str | os.PathLike[str], *, follow_symlinks: bool = True) -> int:
    """A read-only descriptor of a regular file; NotRegularFileError for anything else. Never blocks."""
    flags = _READ_FLAGS if follow_symlinks else _READ_FLAGS | os.O_NOFOLLOW
    try:
        fd = os.open(path, flags)
    except OSError as exc:
        if exc.errno == errno.ELOOP and not follow_symlinks:
            raise NotRegularFileError(path) from exc
        raise
    try:
        if not stat_module.S_ISREG(os.fstat(fd).st_mode):
            raise NotRegularFileError(path)
    except BaseException:
        os.close(fd)
        raise
    return fd


def read_regular_file(path: str | os.PathLike[str], limit: int | None = None, *,
                      follow_symlinks: bool = True) -> bytes:
    """The bytes of a regular file (at most `limit`), up to the size it had when opened.

    Raises FileNotFoundError, PermissionError, NotRegularFileError (all OSError) as the case may be.
    """
    fd = open_regular(path, follow_symlinks=follow_symlinks)
    try:
        size = os.fstat(fd).st_size
        wanted = size if limit is None else min(size, limit)
        chunks: list[bytes] = []
        remaining = wanted
        while remaining > 0:
            chunk = os.read(fd, min(remaining, _CHUNK))
            if not chunk:
                break
            chunks.append(chunk)
            remaining -= len(chunk)
        return b"".join(chunks)
    finally:
        os.close(fd)


def is_regular_file(path: str | os.PathLike[str]) -> bool:
    """True when `path` (links followed) is an existing regular file; never opens it."""
    try:
        return stat_module.S_ISREG(os.stat(path).st_mode)
    except (OSError, ValueError):
        return False


def mode_for_replacement(path: str | os.PathLike[str]) -> int:
    """The permission bits a file written over `path` gets: those of the file there, else 0600."""
    try:
        current = os.stat(path)
    except OSError:
        return PRIVATE_FILE_MODE
    return stat_module.S_IMODE(current.st_mode) if stat_module.S_ISREG(current.st_mode) else PRIVATE_FILE_MODE


_LOCKS_UNSUPPORTED = {errno.ENOLCK, errno.EOPNOTSUPP, errno.ENOTSUP, errno.EINVAL}


def flock_exclusive(fd: int) -> None:
    """Take the writers' flock on `fd`, waiting for it; where the file system has no locks, go on without."""
    import fcntl  # a shared library to load: readers (`sessdex continue`) never lock

    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
    except OSError as exc:
        if exc.errno not in _LOCKS_UNSUPPORTED:
            raise


def flock_release(fd: int) -> None:
    """Release the flock taken by `flock_exclusive` (nothing to do where there are no locks)."""
    import fcntl

    try:
        fcntl.flock(fd, fcntl.LOCK_UN)
    except OSError as exc:
        if exc.errno not in _LOCKS_UNSUPPORTED:
            raise


def same_inode(fd: int, path: str | os.PathLike[str]) -> bool:
    """True while `path` still names the file open as `fd` (not replaced by a rename, not removed)."""
    try:
        named = os.stat(path)
    except FileNotFoundError:
        return False
    held = os.fstat(fd)
    return (named.st_ino, named.st_dev) == (held.st_ino, held.st_dev)


@contextlib.contextmanager
def exclusive_lock(path: str | os.PathLike[str]) -> Iterator[None]:
    """Hold the writers' lock of the file at `path` (nothing to hold when it does not exist yet).

    The lock is an flock on the file's inode. A rewrite replaces the inode while holding the old one's
    lock, so a waiter that wakes up on a replaced inode lets go and locks the new file instead.
    """
    fd = _lock_current_inode(path)
    try:
        yield
    finally:
        if fd is not None:
            os.close(fd)


def _lock_current_inode(path: str | os.PathLike[str]) -> int | None:
    while True:
        try:
            fd = os.open(path, _READ_FLAGS)
        except FileNotFoundError:
            return None
        try:
            flock_exclusive(fd)
            if same_inode(fd, path):
                return fd
        except BaseException:
            os.close(fd)
            raise
        os.close(fd)

"""Files and folders sessdex creates next to the agent's: never readable by anyone the sessions are not.

The catalog and the prompt history hold the text of every conversation; with the usual umask 022 a file
created the ordinary way would be 0644, readable by every local user even though the session files are
0600. Everything sessdex creates therefore goes through these helpers: files 0600, folders 0700. SQLite
gives a database's -wal and -shm files the database file's own mode, so creating the database file
here first is enough for them.

A file of ours that already exists is checked before anything is written to it (`open_private` does this on
the descriptor it opened, so nothing can be swapped in between): it must be a regular file, not a symlink
(opened with O_NOFOLLOW), owned by the user and not readable or writable by anyone else. One that fails is
refused with one line (PrivateFileError), unless it holds nothing: an empty file is made private (or, if
another user owns it, replaced by one of ours). The folder holding it must be the user's and writable by no
one else (a folder the agent made 0755 is fine: the files in it are 0600); otherwise another user could plant
or swap files there.
"""

from __future__ import annotations

import errno
import os
import stat

from sessdex.core.errors import PrivateFileError

PRIVATE_FILE_MODE = 0o600
PRIVATE_DIR_MODE = 0o700


def make_private_dirs(folder: str | os.PathLike[str]) -> None:
    """Create `folder` and any missing parents with mode 0700 (existing ones are left as they are)."""
    missing = []
    current = os.path.abspath(os.fspath(folder))  # strings, not pathlib: writers on the hot path import this
    while not os.path.exists(current) and current != os.path.dirname(current):
        missing.append(current)
        current = os.path.dirname(current)
    for path in reversed(missing):
        try:
            os.mkdir(path, PRIVATE_DIR_MODE)
        except FileExistsError:
            continue  # another process made it meanwhile


def check_private_folder(folder: str | os.PathLike[str]) -> None:
    """Raise PrivateFileError unless `folder` is a folder owned by the user that no one else can write into."""
    try:
        result = os.stat(folder)
    except FileNotFoundError:
        return
    if not stat.S_ISDIR(result.st_mode):
        raise PrivateFileError(f"{os.fspath(folder)} is not a folder; sessdex will not keep its files there")
    if result.st_uid != os.geteuid():
        raise PrivateFileError(f"{os.fspath(folder)} belongs to another user (uid {result.st_uid}); "
                               "sessdex keeps its files only in folders of yours")
    if result.st_mode & 0o022:
        raise PrivateFileError(f"{os.fspath(folder)} can be written by other users (mode "
                               f"{stat.S_IMODE(result.st_mode):04o}); make it 0700 (chmod 700) to use it")


def _refuse_or_repair(fd: int, path: str) -> bool:
    """Check the file open as `fd`: True when it is private (or was made so), False when it is an empty file
    of another user's that the caller should replace; raise PrivateFileError for anything else."""
    result = os.fstat(fd)
    if not stat.S_ISREG(result.st_mode):
        raise PrivateFileError(f"{path} is not a regular file; sessdex will not write to it")
    mine = result.st_uid == os.geteuid()
    wide = bool(result.st_mode & 0o077)
    if mine and not wide:
        return True
    if result.st_size == 0:
        if not mine:
            return False  # holds nothing: replaced by a file of ours
        os.fchmod(fd, PRIVATE_FILE_MODE)
        return True
    if not mine:
        raise PrivateFileError(f"{path} belongs to another user (uid {result.st_uid}); sessdex will not "
                               "write session text into it (remove it, or choose another place)")
    raise PrivateFileError(f"{path} can be read by other users (mode {stat.S_IMODE(result.st_mode):04o}); "
                           "make it private (chmod 600) before sessdex writes to it")


def open_private(path: str | os.PathLike[str], flags: int = os.O_RDWR) -> int:
    """os.open(path, flags | O_CREAT) where a file created by the call gets mode 0600, whatever the umask.

    Never through a symlink (O_NOFOLLOW); an existing file must pass the checks of this module's docstring
    (an empty one of another user's is replaced) or PrivateFileError is raised.
    """
    name = os.fspath(path)
    check_private_folder(os.path.dirname(os.path.abspath(name)))
    base = flags | os.O_CREAT | os.O_CLOEXEC | os.O_NOFOLLOW
    try:
        fd = os.open(name, base & ~os.O_TRUNC, PRIVATE_FILE_MODE)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise PrivateFileError(f"{name} is a symlink; sessdex will not write through it") from None
        raise
    try:
        if not _refuse_or_repair(fd, name):
            os.close(fd)
            fd = -1
            os.unlink(name)
            fd = os.open(name, base | os.O_EXCL, PRIVATE_FILE_MODE)
        elif flags & os.O_TRUNC:
            os.ftruncate(fd, 0)
    except BaseException:
        if fd >= 0:
            os.close(fd)
        raise
    return fd


def _already_private(path: str) -> bool:
    """True when `path` is a regular file (not a symlink) of the user's that no one else can read or write, and
    its folder passes check_private_folder; False when it is missing or needs `open_private` to decide.

    Looked at with lstat, never opened: a SQLite database (or its -wal, -shm) may already be open through a
    connection of this process, and closing any descriptor of a file drops every POSIX lock the process holds on
    it. SQLite's locks would then be gone while its connection goes on: another process's connection, closing,
    would take itself for the last one and delete the -wal and -shm, and what this process writes afterwards
    would go to the deleted -wal, seen by no one else. (A check on a descriptor that is closed before SQLite
    opens the path protects no more than this one.)"""
    try:
        result = os.lstat(path)
    except FileNotFoundError:
        return False
    if not stat.S_ISREG(result.st_mode) or result.st_uid != os.geteuid() or result.st_mode & 0o077:
        return False
    check_private_folder(os.path.dirname(os.path.abspath(path)))
    return True


def create_private_file(path: str | os.PathLike[str]) -> None:
    """Create `path` as an empty 0600 file unless it exists (its parents 0700), e.g. before SQLite opens it;
    an existing one must pass `open_private`'s checks (one already private is only looked at, not opened)."""
    name = os.fspath(path)
    make_private_dirs(os.path.dirname(os.path.abspath(name)))
    if not _already_private(name):
        os.close(open_private(name, os.O_RDONLY))


def check_private_file(path: str | os.PathLike[str]) -> None:
    """Apply `open_private`'s checks to `path` if it exists (a database's -wal or -shm, which SQLite creates
    with the database's own mode and would otherwise open as it finds it); one already private is only
    looked at, not opened (see _already_private)."""
    name = os.fspath(path)
    if os.path.lexists(name) and not _already_private(name):
        os.close(open_private(name, os.O_RDONLY))


def check_private_database(path: str | os.PathLike[str]) -> None:
    """Create the SQLite file `path` private unless it exists, and check it, its folder, -wal and -shm."""
    create_private_file(path)
    for suffix in ("-wal", "-shm"):
        check_private_file(f"{os.fspath(path)}{suffix}")


def write_private_text(path: str | os.PathLike[str], text: str) -> None:
    """Write `text` to a new or truncated file that is created 0600."""
    fd = open_private(path, os.O_WRONLY | os.O_TRUNC)
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        handle.write(text)

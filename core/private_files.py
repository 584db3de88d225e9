"""Files and folders sessdex creates next to the agent's: never readable by anyone the sessions are not.

The catalog and the prompt history hold the text of every conversation; with the usual umask 022 a file
created the ordinary way would be 0644, readable by every local user even though the session files are
0600. Everything sessdex creates therefore goes through these helpers: files 0600, folders 0700. SQLite
gives a database's -wal and -shm files the database file's own mode, so creating the database file
here first is enough for them.
"""

from __future__ import annotations

import os

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


def open_private(path: str | os.PathLike[str], flags: int = os.O_RDWR) -> int:
    """os.open(path, flags | O_CREAT) where a file created by the call gets mode 0600, whatever the umask."""
    return os.open(path, flags | os.O_CREAT | os.O_CLOEXEC, PRIVATE_FILE_MODE)


def create_private_file(path: str | os.PathLike[str]) -> None:
    """Create `path` as an empty 0600 file unless it exists (its parents 0700), e.g. before SQLite opens it."""
    make_private_dirs(os.path.dirname(os.path.abspath(os.fspath(path))))
    try:
        os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, PRIVATE_FILE_MODE))
    except FileExistsError:
        pass


def write_private_text(path: str | os.PathLike[str], text: str) -> None:
    """Write `text` to a new or truncated file that is created 0600."""
    fd = open_private(path, os.O_WRONLY | os.O_TRUNC)
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        handle.write(text)

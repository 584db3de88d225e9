"""Which other processes hold a file open for writing (so a whole-file rewrite would lose their appends).

The agent appends to its session file without sessdex's lock and may keep its descriptor open; replacing the
file under it sends its later appends into the unlinked inode. Before a rewrite sessdex asks the kernel who has
the file open: on Linux by reading `/proc/<pid>/fd` (the inode each descriptor points to) and
`/proc/<pid>/fdinfo` (its access mode). Processes of other users are not readable and are skipped (they cannot
write to a 0600 file of ours). Where there is no `/proc` (macOS, BSD) nothing can be found cheaply, so no writer
is reported and only the lock and the adopt-before-rewrite step protect the file.

sessdex's own appenders open the file read-write in append mode, take the writers' lock for every append and
re-open the path when a rewrite replaced it, so they lose nothing and are not counted. The agent opens its
file write-only (append mode), which is what is looked for; so is any read-write descriptor not in append mode.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterator

from sessdex.core.errors import SessionBusyError

PROC = "/proc"
_ACCESS_MODE = 0o3  # O_ACCMODE: 0 read-only, 1 write-only, 2 read-write


def _descriptors_of_others(proc: str) -> Iterator[tuple[int, os.stat_result, str]]:
    """(pid, the stat of the open file, its fdinfo path) of every descriptor of every other process this user
    can see in `proc`; nothing where there is no /proc."""
    try:
        pids = [name for name in os.listdir(proc) if name.isdigit()]
    except OSError:
        return
    own = str(os.getpid())
    for pid in pids:
        if pid == own:
            continue
        fd_dir = f"{proc}/{pid}/fd"
        try:
            fds = os.listdir(fd_dir)
        except OSError:  # another user's process, or it just exited
            continue
        for fd in fds:
            try:
                info = os.stat(f"{fd_dir}/{fd}")
            except OSError:
                continue
            yield int(pid), info, f"{proc}/{pid}/fdinfo/{fd}"


def writers_of(path: str | os.PathLike[str], *, proc: str = PROC) -> list[int]:
    """Pids of other processes that have the file at `path` open for writing (empty when it does not exist)."""
    try:
        target = os.stat(path)
    except OSError:
        return []
    return writers_of_file(target.st_dev, target.st_ino, proc=proc)


def writers_of_file(device: int, inode: int, *, proc: str = PROC) -> list[int]:
    """Pids of other processes that have the file (device, inode) open for writing, even once it has no name
    any more (a file a rewrite replaced)."""
    found: list[int] = []
    for pid, info, fdinfo in _descriptors_of_others(proc):
        if info.st_ino == inode and info.st_dev == device and pid not in found and _opened_for_writing(fdinfo):
            found.append(pid)
    return found


# An open() of a path that looked the file up just before it was renamed or unlinked may show its descriptor a
# moment later.
OPEN_IN_FLIGHT_SECONDS = 0.01


def wait_for_writers_to_leave(device: int, inode: int, *, wait_seconds: float) -> bool:
    """Wait until no other process has the file (device, inode) open for writing; False when one still has it
    after `wait_seconds`. For a file that has just lost its name (replaced or unlinked): nobody can open it any
    more, so once its writers have closed it, it holds all it will ever hold."""
    time.sleep(OPEN_IN_FLIGHT_SECONDS)
    deadline = time.monotonic() + wait_seconds
    while writers_of_file(device, inode):
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.01)
    return True


def _opened_for_writing(fdinfo_path: str) -> bool:
    """Whether the descriptor writes without following a replaced file (see the module's docstring)."""
    try:
        with open(fdinfo_path, encoding="ascii", errors="replace") as handle:
            for line in handle:
                if line.startswith("flags:"):
                    flags = int(line.split()[1], 8)
                    mode = flags & _ACCESS_MODE
                    return mode == os.O_WRONLY or (mode == os.O_RDWR and not flags & os.O_APPEND)
    except (OSError, ValueError, IndexError):
        return False
    return False


REWRITE_RISK = "rewriting it now would lose what that process writes next"


def refuse_if_written_elsewhere(path: str | os.PathLike[str], *, wait_seconds: float = 0.0,
                                risk: str = REWRITE_RISK) -> None:
    """Raise SessionBusyError when another process keeps `path` open for writing after `wait_seconds`.

    The wait lets a writer that opens the file for each append finish; an agent that keeps the file open
    is still running, and the user is told (`risk`: what would go wrong) to retry once it has exited.
    """
    deadline = time.monotonic() + wait_seconds
    while True:
        pids = writers_of(path)
        if not pids:
            return
        if time.monotonic() >= deadline:
            listed = ", ".join(str(pid) for pid in pids[:5])
            raise SessionBusyError(
                f"{os.fspath(path)} is open for writing by process {listed} (the agent?); {risk}. "
                "Retry once it has exited.")
        time.sleep(0.05)


def files_open_for_writing(*, proc: str = PROC) -> set[tuple[int, int]]:
    """The (device, inode) of every file another process of this user has open for writing, found in one walk
    of /proc (for checking many files at once; `writers_of` asks about one). Empty where there is no /proc."""
    found: set[tuple[int, int]] = set()
    for _pid, info, fdinfo in _descriptors_of_others(proc):
        if (info.st_dev, info.st_ino) not in found and _opened_for_writing(fdinfo):
            found.add((info.st_dev, info.st_ino))
    return found

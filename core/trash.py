"""The session trash: `<agent dir>/trash/` mirrors `<agent dir>/sessions/`, so a trashed file goes back exactly
where it was. Trashing and restoring are renames that refuse to overwrite; the one deletion sessdex makes is
`trash empty` (`files_to_empty`, then `delete_from_trash`), of files already in the trash."""

from __future__ import annotations

import errno
import os
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

from sessdex.core.errors import AmbiguousSessionError, SessdexError, SessionNotFoundError
from sessdex.core.paths import AgentPaths, session_file_entries
from sessdex.core.private_files import make_private_dirs
from sessdex.core.summary import SessionInfo

TRASH_DIR_NAME = "trash"


def trash_root(paths: AgentPaths) -> Path:
    """`<agent dir>/trash`."""
    return paths.agent_dir / TRASH_DIR_NAME


def _relative_to_sessions(path: Path, paths: AgentPaths) -> Path:
    try:
        return Path(os.path.abspath(path)).relative_to(os.path.abspath(paths.sessions_root))
    except ValueError:
        raise SessdexError(f"{path} is not under {paths.sessions_root}: only the agent's sessions can be trashed") \
            from None


def _refuse_symlinked_folders(target: Path, root: Path) -> None:
    """Refuse when a folder between `root` and `target` is a symlink (or not a folder): a link planted in place
    of a project folder would put the file outside the agent dir. `root` itself may be a link (a sessions
    folder kept on another disk)."""
    current = root
    for part in target.parent.relative_to(root).parts:
        current = current / part
        try:
            result = os.lstat(current)
        except FileNotFoundError:
            return  # created by make_private_dirs as a real folder
        if not stat.S_ISDIR(result.st_mode):
            raise SessdexError(f"{current} is a symlink or not a folder; sessdex will not move a session through "
                               "it (nothing was moved)")


def _copy_across_devices(source: Path, target: Path) -> None:
    """Move `source` to `target` on another file system: copy into a new file (never replacing one), fsync it
    and its folder, take in what was appended meanwhile, and only then unlink `source`; what a writer that had
    opened `source` before the unlink writes into it after is added to `target` once that writer closed it."""
    from sessdex.core.live_writers import wait_for_writers_to_leave
    from sessdex.core.storage import fsync_directory

    mode = stat.S_IMODE(os.stat(source).st_mode) & 0o700 or 0o600
    try:
        out = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, mode)
    except FileExistsError:
        raise SessdexError(f"{target} already exists; nothing was moved") from None
    unlinked = False

    def copy_rest(reader: BinaryIO) -> None:
        for chunk in iter(lambda: reader.read(1 << 20), b""):
            view = memoryview(chunk)
            while view:
                view = view[os.write(out, view):]
        os.fsync(out)

    try:
        with open(source, "rb") as reader:
            copy_rest(reader)
            copy_rest(reader)  # appended while copying (a last append of a writer that opens the file each time)
            fsync_directory(target.parent)
            os.unlink(source)
            unlinked = True
            fsync_directory(source.parent)
            identity = os.fstat(reader.fileno())
            wait_for_writers_to_leave(identity.st_dev, identity.st_ino, wait_seconds=MOVE_WAIT_SECONDS)
            copy_rest(reader)
    except BaseException:
        if not unlinked:
            os.close(out)
            out = -1
            target.unlink(missing_ok=True)
        raise
    finally:
        if out >= 0:
            os.close(out)


# How long a move waits for a process that has the session open for writing to close it before refusing.
MOVE_WAIT_SECONDS = 0.5
MOVE_RISK = ("moving it now would leave that process writing into the moved file, or into a new file holding only "
             "its next lines if it opens the path for each write (nothing was moved)")


def _move_without_overwriting(source: Path, target: Path, target_root: Path) -> None:
    """Rename `source` to `target`, refusing when `target` exists (link + unlink: never replaces a file) or a
    folder on the way under `target_root` is a symlink; across file systems the file is copied.

    Refused too while another process (the agent) has `source` open for writing: the move itself would lose
    nothing (the inode moves, with what is written into it), but the agent would go on writing a session the
    user put away, and an agent that opens the path for each write would start a headless file there."""
    from sessdex.core.live_writers import refuse_if_written_elsewhere

    refuse_if_written_elsewhere(source, wait_seconds=MOVE_WAIT_SECONDS, risk=MOVE_RISK)
    _refuse_symlinked_folders(target, target_root)
    make_private_dirs(target.parent)
    _refuse_symlinked_folders(target, target_root)  # a link planted while the folders were made
    try:
        os.link(source, target)
    except FileExistsError:
        raise SessdexError(f"{target} already exists; nothing was moved") from None
    except OSError as exc:
        if exc.errno == errno.EXDEV:
            _copy_across_devices(source, target)
            return
        # a file system without hard links: check, then rename
        if os.path.lexists(target):
            raise SessdexError(f"{target} already exists; nothing was moved") from None
        os.rename(source, target)
        return
    os.unlink(source)


def trash_session(path: str | os.PathLike[str], paths: AgentPaths) -> Path:
    """Move a session file from the sessions folder to the trash; return where it went."""
    source = Path(path)
    if not source.is_file():
        raise SessionNotFoundError(f"{source} does not exist")
    target = trash_root(paths) / _relative_to_sessions(source, paths)
    _move_without_overwriting(source, target, trash_root(paths))
    return target


@dataclass(frozen=True)
class TrashedSession:
    """A session in the trash: what it was, and where `restore` puts it back."""

    info: SessionInfo
    restore_to: Path
    trashed_ms: float
    sessions_root: Path


def trashed_sessions(paths: AgentPaths) -> list[TrashedSession]:
    """Every session file in the trash, most recently trashed first."""
    from sessdex.core.discovery import read_session_info

    root = trash_root(paths)
    found: list[TrashedSession] = []
    for entry in session_file_entries(root, recursive=True):
        file = Path(entry.path)
        info = read_session_info(file)
        try:
            trashed_ms = entry.stat().st_ctime * 1000
        except OSError:
            continue  # restored or removed by another process meanwhile
        if info is not None:
            found.append(TrashedSession(info, paths.sessions_root / file.relative_to(root), trashed_ms,
                                       paths.sessions_root))
    return sorted(found, key=lambda item: item.trashed_ms, reverse=True)


def find_trashed(value: str, paths: AgentPaths, items: list[TrashedSession] | None = None) -> TrashedSession:
    """The one trashed session whose id starts with `value` (or whose trash path is `value`), among `items`
    (default: the trash as it is now; a caller looking up several ids reads it once)."""
    items = trashed_sessions(paths) if items is None else items
    matches = [item for item in items if item.info.id == value or str(item.info.path) == value] or \
              [item for item in items if item.info.id.startswith(value)]
    if not matches:
        raise SessionNotFoundError(f'No session "{value}" in the trash ({trash_root(paths)}).')
    if len(matches) > 1:
        raise AmbiguousSessionError(f'"{value}" matches {len(matches)} sessions in the trash: type more of the id',
                                    [item.info for item in matches])
    return matches[0]


def restore_session(item: TrashedSession) -> Path:
    """Move a trashed session back where it was; return that path."""
    _move_without_overwriting(Path(item.info.path), item.restore_to, item.sessions_root)
    return item.restore_to


@dataclass(frozen=True)
class TrashFile:
    """A session file `trash empty` would delete: where it is, its size, when it was trashed, and its identity
    (device, inode) so that a file put at the same path since it was listed is never the one deleted."""

    path: str
    size: int
    trashed_s: float
    identity: tuple[int, int]


def _check_trash_root(root: Path) -> bool:
    """Whether there is a trash to empty: a real folder of this user (a symlink or someone else's is refused)."""
    try:
        result = os.lstat(root)
    except FileNotFoundError:
        return False
    if not stat.S_ISDIR(result.st_mode):
        raise SessdexError(f"{root} is a symlink or not a folder; sessdex will not delete through it")
    if hasattr(os, "getuid") and result.st_uid != os.getuid():
        raise SessdexError(f"{root} belongs to another user; sessdex leaves it alone")
    return True


def files_to_empty(paths: AgentPaths, older_than: float | None = None, now: float | None = None) -> list[TrashFile]:
    """The session files in the trash that `trash empty` deletes: every one, or (`older_than`, seconds) those
    trashed at least that long ago (by the time the move changed them, their ctime), oldest first. Only this
    user's regular files: a symlink, a FIFO or another user's file in the trash is never touched."""
    import time

    root = trash_root(paths)
    if not _check_trash_root(root):
        return []
    moment = time.time() if now is None else now
    found = []
    for entry in session_file_entries(root, recursive=True):
        try:
            result = os.lstat(entry.path)
        except OSError:
            continue  # restored meanwhile
        if not stat.S_ISREG(result.st_mode) or (hasattr(os, "getuid") and result.st_uid != os.getuid()):
            continue
        if older_than is not None and moment - result.st_ctime < older_than:
            continue
        found.append(TrashFile(entry.path, result.st_size, result.st_ctime, (result.st_dev, result.st_ino)))
    return sorted(found, key=lambda item: (item.trashed_s, item.path))


def delete_from_trash(paths: AgentPaths, files: list[TrashFile]) -> list[TrashFile]:
    """Delete `files` (from `files_to_empty`) for good: the only deletion sessdex makes. A file restored or
    replaced since it was listed is left alone; folders of the trash left empty are removed. Returns the files
    deleted."""
    from sessdex.core.storage import fsync_directory

    root = trash_root(paths)
    if not files or not _check_trash_root(root):
        return []
    deleted: list[TrashFile] = []
    folders = set()
    for item in files:
        try:
            result = os.lstat(item.path)
        except FileNotFoundError:
            continue
        if (result.st_dev, result.st_ino) != item.identity or not stat.S_ISREG(result.st_mode):
            continue
        try:
            os.unlink(item.path)
        except FileNotFoundError:
            continue
        deleted.append(TrashFile(item.path, result.st_size, item.trashed_s, item.identity))
        folders.add(os.path.dirname(item.path))
    for folder in folders:
        fsync_directory(Path(folder))
    _remove_empty_folders(root)
    return deleted


def _remove_empty_folders(root: Path) -> None:
    """Remove the folders below `root` that hold nothing any more (deepest first; never `root`, never a link)."""
    for folder, _subfolders, _files in sorted(os.walk(root, followlinks=False), key=lambda item: -len(item[0])):
        if os.path.abspath(folder) == os.path.abspath(root):
            continue
        try:
            os.rmdir(folder)  # fails unless empty
        except OSError:
            continue

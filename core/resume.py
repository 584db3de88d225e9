"""`--resume <value>` resolution: a path is opened as given, anything else is an id prefix.

An id prefix is looked up in this project first, then (unless a session dir was given) in every
project. A match in another project is forked into this one when `confirm_fork(info)` says yes and
refused otherwise. sessdex goes further than the agent: a prefix matching several sessions is an
error listing them instead of silently taking the first, and an exact full id also finds a session
that has no messages yet.
"""

from __future__ import annotations

import os

from sessdex.core.discovery import sanitize_display_name, sessions_with_id_prefix, truncate_name
from sessdex.core.errors import (
    AmbiguousSessionError,
    ForkSourceNotFoundError,
    NotASessionError,
    PersistenceError,
    SessionFileError,
    SessionInOtherProjectError,
    SessionNotFoundError,
    UsageError,
)
from sessdex.core.paths import AgentPaths, absolute_path, as_path
from sessdex.core.summary import SessionInfo

TYPE_CHECKING = False  # typing and dataclasses stay off the hot commands' imports
if TYPE_CHECKING:
    from collections.abc import Callable, Sequence
    from pathlib import Path
    from typing import Literal

    ResumeAction = Literal["open", "fork"]
    # (source session file, target cwd, session dir or None, paths) -> the new session file in the target project
    ForkSession = Callable[[Path, str, Path | None, AgentPaths], Path]
    # (value, cwd, session dir or None, *, paths) -> the one matching session; the catalog provides another one
    FindSession = Callable[..., SessionInfo]
    # (id prefix, cwd or None for every project, session dir or None) -> the sessions whose id starts with it
    IdLookup = Callable[[str, str | os.PathLike[str] | None, str | os.PathLike[str] | None], list[SessionInfo]]
CANDIDATE_LABEL_CHARS = 60
CANDIDATES_SHOWN = 20  # the error lists at most this many; `candidates` holds them all
HEADER_PROBE_BYTES = 1 << 20  # enough for any header line (a title is at most a few KB)


class ResumeResult:
    """What to resume: `path` is the file to open; for a fork it is the new copy and `session` the source.

    Immutable and compared by its fields (a plain class, not a dataclass: `resume` is a hot command).
    """

    __slots__ = ("action", "_path", "session")
    action: ResumeAction
    _path: str | os.PathLike[str]
    session: SessionInfo | None

    def __init__(self, action: ResumeAction, path: str | os.PathLike[str], session: SessionInfo | None = None) -> None:
        object.__setattr__(self, "action", action)
        object.__setattr__(self, "_path", path)
        object.__setattr__(self, "session", session)

    @property
    def path(self) -> Path:
        """The file, as a Path (made on first read: `sessdex resume` prints `path_text` without pathlib)."""
        path = as_path(self._path)
        if path is not self._path:
            object.__setattr__(self, "_path", path)
        return path

    @property
    def path_text(self) -> str:
        return os.fspath(self._path)

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError(f"cannot assign to field {name!r}: ResumeResult is immutable")

    def __eq__(self, other: object) -> bool:
        if other.__class__ is not self.__class__:
            return NotImplemented
        return (self.action, self.path, self.session) == (other.action, other.path, other.session)

    def __hash__(self) -> int:
        return hash((self.action, self.path, self.session))

    def __repr__(self) -> str:
        return f"ResumeResult(action={self.action!r}, path={self.path!r}, session={self.session!r})"


def is_path_like(value: str) -> bool:
    """A `--resume` value names a file when it holds `/` or `\\` or ends in `.jsonl`."""
    return "/" in value or "\\" in value or value.endswith(".jsonl")


def check_resumable_path(path: str | os.PathLike[str]) -> None:
    """Refuse a path that names an existing file which is not a session, so it is never handed to the agent.

    A missing file or an empty one is fine (opening it starts a new session there); a regular file
    whose first record is a valid header is fine. Anything else raises NotASessionError (exit 1); a
    file that cannot be read raises SessionFileError.
    """
    if not os.path.lexists(path):
        return
    # Lazy: only an existing file needs the reader (orjson); the other values stay on the light hot path.
    from sessdex.core.jsonl import parse_jsonl
    from sessdex.core.records import split_session_records
    from sessdex.core.regular_files import NotRegularFileError, read_regular_file

    try:
        head = read_regular_file(path, HEADER_PROBE_BYTES)
    except FileNotFoundError:
        if os.path.islink(path):
            raise NotASessionError(f"{path} is a dangling link, not a session file") from None
        return
    except NotRegularFileError:
        raise NotASessionError(f"{path} is not a session file (not a regular file)") from None
    except OSError as exc:
        raise SessionFileError(f"{path}: cannot read it ({exc.strerror or exc})") from exc
    if not head.strip():
        return
    if len(head) == HEADER_PROBE_BYTES and b"\n" in head:
        head = head[:head.rindex(b"\n") + 1]  # a line cut by the probe is no evidence either way
    if split_session_records(parse_jsonl(head).values) is None:
        raise NotASessionError(f"{path} is not a session file (no valid session header); refusing to resume it")


def _same_directory(first: str, second: str) -> bool:
    return os.path.realpath(absolute_path(first)) == os.path.realpath(absolute_path(second))


def match_session_id(value: str, sessions: Sequence[SessionInfo]) -> list[SessionInfo]:
    """Sessions whose id is exactly `value` (any message count), else non-empty ones whose id starts with it."""
    exact = [info for info in sessions if info.id == value]
    if exact:
        return exact
    return [info for info in sessions if info.message_count > 0 and info.id.startswith(value)]


def describe_candidate(info: SessionInfo) -> str:
    """One line naming a candidate session: id, modification time, cwd and title or first message."""
    modified = info.modified.astimezone().strftime("%Y-%m-%d %H:%M")
    label = truncate_name(sanitize_display_name((info.title or info.first_message)[:2 * CANDIDATE_LABEL_CHARS]),
                          CANDIDATE_LABEL_CHARS)
    return f"{info.id}  {modified}  {info.cwd}  {label}"


def single_match(value: str, matches: list[SessionInfo]) -> SessionInfo:
    """The one session in `matches`, or an AmbiguousSessionError listing the candidates."""
    if len(matches) == 1:
        return matches[0]
    lines = [f'Session "{value}" is ambiguous: it matches {len(matches)} sessions:']
    lines += [f"  {describe_candidate(info)}" for info in matches[:CANDIDATES_SHOWN]]
    if len(matches) > CANDIDATES_SHOWN:
        lines.append(f"  ... and {len(matches) - CANDIDATES_SHOWN} more; type more of the id")
    raise AmbiguousSessionError("\n".join(lines), matches)


def find_session_by_id(value: str, cwd: str | os.PathLike[str], session_dir: str | os.PathLike[str] | None = None,
                       *, paths: AgentPaths, lookup: IdLookup | None = None) -> SessionInfo:
    """The one session `value` names: this project first, then all projects unless `session_dir` is given.

    Raises SessionNotFoundError when nothing matches and AmbiguousSessionError (with the candidates,
    newest first) when a prefix matches several sessions in the first scope that has any match.
    `lookup(prefix, cwd or None for every project, session_dir)` gives a scope's sessions whose id starts with
    the prefix (default: `sessdex.core.discovery.sessions_with_id_prefix`, read from the files).
    """
    def in_scope(scope_cwd: str | os.PathLike[str] | None) -> list[SessionInfo]:
        if lookup is not None:
            return lookup(value, scope_cwd, session_dir)
        return sessions_with_id_prefix(value, scope_cwd, session_dir, paths=paths)

    local = match_session_id(value, in_scope(cwd))
    if local:
        return single_match(value, local)
    if session_dir is None:
        everywhere = match_session_id(value, in_scope(None))
        if everywhere:
            return single_match(value, everywhere)
    raise SessionNotFoundError(f'Session "{value}" not found.')


def fork_with_session_manager(source: Path, cwd: str, session_dir: Path | None, paths: AgentPaths) -> Path:
    """Fork `source` into the project at `cwd` with SessionManager.fork_from and return the new file.

    A source gone since it was found is a ForkSourceNotFoundError: fork_from would make an empty session of it.
    """
    from sessdex.core.runtime import SessionRuntime
    from sessdex.core.session_manager import SessionManager  # lazy: discovery must not pay for the writer

    if not os.path.isfile(source):
        raise ForkSourceNotFoundError(f"{source}: the session file is gone; nothing to fork")
    manager = SessionManager.fork_from(source, cwd, session_dir, runtime=SessionRuntime(paths=paths))
    try:
        manager.flush()
        forked = manager.get_session_file()
    finally:
        manager.close()
    if forked is None:
        raise PersistenceError(f"forking {source} produced no session file")
    return as_path(forked)


def resolve_resume(value: str, cwd: str | os.PathLike[str], session_dir: str | os.PathLike[str] | None = None, *,
                   paths: AgentPaths, confirm_fork: Callable[[SessionInfo], bool],
                   fork_session: ForkSession = fork_with_session_manager,
                   find_session: FindSession | None = None) -> ResumeResult:
    """Resolve a `--resume` value to the session file to open, forking a session from another project on yes.

    Path-like values are returned as absolute paths (relative ones against `cwd`); a missing or empty
    file is fine (opening it starts a new session there), an existing file that is not a session
    is refused with NotASessionError (`check_resumable_path`). A session from another
    project is forked on `confirm_fork(info) -> True`; on False SessionInOtherProjectError is raised.
    """
    if not value:
        raise UsageError("--resume needs a session id prefix or a session file path")
    cwd = absolute_path(cwd)
    if is_path_like(value):
        path = absolute_path(os.path.join(cwd, os.path.expanduser(value)))
        check_resumable_path(path)
        return ResumeResult("open", path)
    info = (find_session or find_session_by_id)(value, cwd, session_dir, paths=paths)
    if not info.cwd or _same_directory(info.cwd, cwd):
        return ResumeResult("open", info.path_text, info)
    if not confirm_fork(info):
        raise SessionInOtherProjectError(f'Session "{value}" is in another project ({info.cwd})')
    target_dir = as_path(session_dir) if session_dir is not None else None
    return ResumeResult("fork", fork_session(info.path, cwd, target_dir, paths), info)

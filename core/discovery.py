"""File-scan session discovery: recent sessions, the newest session, `list()` and `list_all()`.

These read the session files directly. They are the reference answers and the fallback of the
catalog, which must return exactly the same results. A file whose first record (after an optional
title line) is not a valid header is not a session: it is listed nowhere and never breaks a listing.
Zero-message sessions are left out of `list()`/`list_all()` unless `include_empty=True` (the exact
full-id lookup of `--resume` uses that). Which files are sessions at all is `records.is_listable_session`:
never a dot-file, never a header with an empty or non-string id. Only regular files are read (links to
them followed), never blocking; a file that cannot be read is skipped and, when the caller passes a
`skipped` list, recorded there with the reason.
"""

from __future__ import annotations

import os
import stat as stat_module
import time
from datetime import datetime

from sessdex.core.paths import SESSION_SUFFIX, AgentPaths, as_path, session_file_entries
from sessdex.core.records import is_listable_session
from sessdex.core.summary import SessionInfo, SessionSummary, clamp_epoch_ms, session_info

TYPE_CHECKING = False  # pathlib stays off the hot commands' imports: Paths are made by as_path
if TYPE_CHECKING:
    from collections.abc import Iterable
    from pathlib import Path

    # (path, reason) of files that look like sessions but could not be read; callers may pass a list to fill.
    SkippedFiles = list[tuple[Path, str]]

RECENT_PREFIX_BYTES = 4096
HEADER_PROBE_LINES = 8  # an id lookup reads this many of a file's first lines at most to find its header
DEFAULT_RECENT_LIMIT = 3
MIN_ID_PREFIX = 8  # listings show at least this many characters of a session id
NAME_MAX_CHARS = 40
ELLIPSIS = "…"

_LINE_BREAKS = "\r\n\u2028\u2029"
# C0, DEL and C1 control characters -> a space (str.translate: no `re` on the hot commands).
_CONTROL_TO_SPACE = {code: " " for code in [*range(0x20), *range(0x7f, 0xa0)]}


# -- shared file-level helpers -------------------------------------------------------------------

def _mtime_ms(stat: os.stat_result) -> float:
    """Modification time in epoch milliseconds, fractional like the agent's `mtimeMs`."""
    return stat.st_mtime_ns / 1_000_000


def _regular_mtime_ms(entry: os.DirEntry[str] | Path) -> float | None:
    """The mtime (ms) of a regular file (links followed); None for anything else or a vanished file."""
    try:
        result = entry.stat()
    except (OSError, ValueError):
        return None
    return _mtime_ms(result) if stat_module.S_ISREG(result.st_mode) else None


def session_files(directory: str | os.PathLike[str], *, recursive: bool = False) -> list[tuple[Path, float]]:
    """The session files directly inside `directory` (with `recursive`, below it) with their mtimes (ms).

    [] if it is missing. Only regular files (links to them followed) named like sessions count: dot-files,
    FIFOs, devices and dangling links are left out.
    """
    found: list[tuple[Path, float]] = []
    for entry in session_file_entries(directory, recursive=recursive):
        mtime = _regular_mtime_ms(entry)
        if mtime is not None:
            found.append((as_path(entry.path), mtime))
    return found


def _newest_first(files: Iterable[tuple[Path, float]]) -> list[tuple[Path, float]]:
    """Distinct files sorted by mtime descending, ties in path order."""
    distinct = dict(files)
    return sorted(distinct.items(), key=lambda item: (-item[1], str(item[0])))


def _read_bytes(path: Path, limit: int | None = None, skipped: SkippedFiles | None = None) -> bytes | None:
    """The file's bytes (at most `limit`), or None when it cannot be read (recorded in `skipped`)."""
    from sessdex.core.regular_files import read_regular_file  # lazy: the catalog's listings never read files

    try:
        return read_regular_file(path, limit)
    except OSError as exc:
        if skipped is not None and not isinstance(exc, FileNotFoundError):
            skipped.append((path, exc.strerror or str(exc)))
        return None


def summarize_bytes(data: bytes) -> tuple[SessionSummary, str]:
    """Fold a session file's bytes; return the summary and the joined searchable text of its messages."""
    summary = SessionSummary()
    # Imported here: the catalog's hot read paths use this module without parsing JSONL (orjson costs start-up).
    from sessdex.core.jsonl import parse_jsonl

    return summary, " ".join(summary.feed_all(parse_jsonl(data).values))


def _summarize_file(path: Path, skipped: SkippedFiles | None) -> tuple[SessionSummary, str] | None:
    """`summarize_bytes` of the whole file, read by chunks (memory bounded whatever its size); None when it
    cannot be read (recorded in `skipped`)."""
    from sessdex.core.jsonl import stream_jsonl
    from sessdex.core.regular_files import open_regular

    summary = SessionSummary()
    texts: list[str] = []
    try:
        fd = open_regular(path)
        try:
            size = os.fstat(fd).st_size  # up to the size it had when opened, as a whole read
            for parsed in stream_jsonl(fd, size):
                texts += summary.feed_all(parsed.values)
        finally:
            os.close(fd)
    except OSError as exc:
        if skipped is not None and not isinstance(exc, FileNotFoundError):
            skipped.append((path, exc.strerror or str(exc)))
        return None
    return summary, " ".join(texts)


def read_session_info(path: str | os.PathLike[str], modified_ms: float | None = None, *,
                      skipped: SkippedFiles | None = None) -> SessionInfo | None:
    """The SessionInfo of one file read whole, or None when it is unreadable or not a session."""
    path = as_path(path)
    if modified_ms is None:
        modified_ms = _regular_mtime_ms(path)
        if modified_ms is None:
            return None
    folded = _summarize_file(path, skipped)
    if folded is None:
        return None
    summary, all_messages_text = folded
    if not is_listable_session(path.name, summary.session_id if summary.header_valid else None):
        return None
    return session_info(path, summary, all_messages_text, modified_ms)


def _infos(files: Iterable[tuple[Path, float]], include_empty: bool,
           skipped: SkippedFiles | None) -> list[SessionInfo]:
    infos = []
    for path, mtime in _newest_first(files):
        info = read_session_info(path, mtime, skipped=skipped)
        if info is not None and (include_empty or info.message_count > 0):
            infos.append(info)
    return infos


# -- list() / list_all() ---------------------------------------------------------------------------

def project_session_dirs(cwd: str | os.PathLike[str], session_dir: str | os.PathLike[str] | None,
                         paths: AgentPaths) -> list[Path]:
    """The folders a project's sessions are read from: `session_dir` alone, else both naming schemes."""
    if session_dir is not None:
        return [as_path(session_dir)]
    return paths.project_session_dirs(cwd)


def list_sessions(cwd: str | os.PathLike[str], session_dir: str | os.PathLike[str] | None = None, *,
                  paths: AgentPaths, include_empty: bool = False,
                  skipped: SkippedFiles | None = None) -> list[SessionInfo]:
    """`list(cwd, session_dir)`: the project's sessions, newest modification first.

    Without `session_dir` the project is the union of its documented `--…--` folder and the agent's
    home-relative one. Zero-message sessions are left out unless `include_empty`.
    """
    files = [item for folder in project_session_dirs(cwd, session_dir, paths) for item in session_files(folder)]
    return _infos(files, include_empty, skipped)


def list_all_sessions(*, paths: AgentPaths, include_empty: bool = False,
                      skipped: SkippedFiles | None = None) -> list[SessionInfo]:
    """`list_all()`: every session below the sessions root, nested folders too, newest first."""
    return _infos(session_files(paths.sessions_root, recursive=True), include_empty, skipped)


# -- sessions by id prefix (`--resume <id prefix>`) -----------------------------------------------

def _may_have_id_prefix(path: str, prefix: str) -> bool:
    """False when the first lines of the file settle that it is no session whose id starts with `prefix`: it
    cannot be read, or its header (after an optional title line) is invalid or has another id.

    The JSONL reader's values for a file's first complete lines are the first values it reads from the whole
    file, and the header fold is settled by its first one or two values, so a file ruled out here is one the
    whole read would rule out too. Anything unsettled (a header beyond the first RECENT_PREFIX_BYTES, a
    damaged first line) is left to the whole read.
    """
    from sessdex.core.jsonl import parse_jsonl
    from sessdex.core.regular_files import read_regular_file

    try:
        head = read_regular_file(path, RECENT_PREFIX_BYTES)
    except OSError:  # unreadable, gone, or not a regular file: the whole read would skip it too
        return False

    # The lines from the file's start, one more each time, until the header is settled (by its first value or
    # two, mostly the first line): blank lines hold no value, damaged ones may run on.
    line_start = line_end = 0
    for _line in range(HEADER_PROBE_LINES):
        line_end = head.find(b"\n", line_start)
        if line_end < 0:
            return True
        if head[line_start:line_end].strip():
            summary = SessionSummary()
            summary.feed_all(parse_jsonl(head[:line_end + 1]).values, texts_wanted=False)
            if summary.header_decided:
                break
        line_start = line_end + 1
    else:
        return True
    if not summary.header_valid or summary.session_id is None:
        return False
    from sessdex.core.text import without_lone_surrogates  # lazy: off the catalog's hot paths

    return without_lone_surrogates(summary.session_id).startswith(prefix)


def id_prefix_files(prefix: str, cwd: str | os.PathLike[str] | None, session_dir: str | os.PathLike[str] | None = None,
                    *, paths: AgentPaths) -> list[tuple[Path, float, int]]:
    """The files that may hold a session whose id starts with `prefix`, each with its mtime (ms) and size: of the
    project (`list_sessions`' folders), or with `cwd` None of every folder below the sessions root.

    Each file's first lines are read (`_may_have_id_prefix`); the files returned are to be read whole
    (`sessions_in_files`) to know their sessions."""
    if cwd is None:
        entries = list(session_file_entries(paths.sessions_root, recursive=True))
    else:
        entries = [entry for folder in project_session_dirs(cwd, session_dir, paths)
                   for entry in session_file_entries(folder)]
    files = []
    for entry in entries:
        if not _may_have_id_prefix(entry.path, prefix):
            continue
        try:
            result = entry.stat()
        except (OSError, ValueError):
            continue
        if stat_module.S_ISREG(result.st_mode):  # as session_files counts files
            files.append((as_path(entry.path), _mtime_ms(result), result.st_size))
    return files


def sessions_in_files(files: Iterable[tuple[Path, float, int]], prefix: str) -> list[SessionInfo]:
    """The sessions (any message count) of `files` (from `id_prefix_files`) whose id starts with `prefix`, newest
    first, as `list_sessions` / `list_all_sessions` order them."""
    infos = _infos([(path, mtime) for path, mtime, _size in files], True, None)
    return [info for info in infos if info.id.startswith(prefix)]


def sessions_with_id_prefix(prefix: str, cwd: str | os.PathLike[str] | None,
                            session_dir: str | os.PathLike[str] | None = None, *,
                            paths: AgentPaths) -> list[SessionInfo]:
    """The sessions (any message count) whose id starts with `prefix`: the project's (`list_sessions` with
    `include_empty`, filtered by id), or with `cwd` None every one below the sessions root (`list_all_sessions`);
    newest first. Only the files whose first lines leave such an id possible are read whole."""
    return sessions_in_files(id_prefix_files(prefix, cwd, session_dir, paths=paths), prefix)


# -- find_most_recent_session() --------------------------------------------------------------------

def _prefix_summary(path: Path, skipped: SkippedFiles | None) -> SessionSummary | None:
    """The fold of the file's first 4 KB when it is a session by `is_listable_session`, else None."""
    prefix = _read_bytes(path, RECENT_PREFIX_BYTES, skipped)
    if prefix is None:
        return None
    summary = summarize_bytes(prefix)[0]
    return summary if is_listable_session(path.name, summary.session_id if summary.header_valid else None) else None


def most_recent_session_in(directories: Iterable[str | os.PathLike[str]], *,
                           skipped: SkippedFiles | None = None) -> Path | None:
    """The newest (by mtime) session file across `directories`, or None."""
    files = [item for folder in directories for item in session_files(folder)]
    for path, _mtime in _newest_first(files):
        if _prefix_summary(path, skipped) is not None:
            return path
    return None


def find_most_recent_session(session_dir: str | os.PathLike[str]) -> Path | None:
    """`findMostRecentSession(dir)`: the newest session file of one folder by mtime, or None."""
    return most_recent_session_in([session_dir])


# -- get_recent_sessions() -------------------------------------------------------------------------

def id_prefix_length(ids: Iterable[str]) -> int:
    """The shortest length >= MIN_ID_PREFIX at which the ids have as many distinct prefixes as distinct values
    (how much of each id a listing shows).

    Sorted, two ids share a prefix only if neighbours between them do: the length is one more than the longest
    prefix two neighbours share. A hundred thousand ids: only the neighbours whose first MIN_ID_PREFIX characters
    are the same (a few, for ids made from the time) are compared in Python; the rest is sorting and comparing in
    C (sorted, map, list.index)."""
    import operator

    ordered = sorted(ids)  # a set first would hash every id: sorting alone is cheaper, and equal ids are neighbours
    if len(ordered) < 2:
        return MIN_ID_PREFIX
    prefixes = list(map(operator.itemgetter(slice(None, MIN_ID_PREFIX)), ordered))
    same_as_next = list(map(operator.eq, prefixes, prefixes[1:]))
    length = MIN_ID_PREFIX
    position = 0
    while True:
        try:
            position = same_as_next.index(True, position) + 1
        except ValueError:
            return length
        one, other = ordered[position - 1], ordered[position]
        if one == other:
            continue
        shared = MIN_ID_PREFIX  # the two differ before the shorter one ends, or it is the first and shorter
        while shared < len(one) and one[shared] == other[shared]:
            shared += 1
        length = max(length, shared + 1)


def sanitize_display_name(text: str) -> str:
    """A one-line display form: trimmed, first line only, control characters turned into spaces."""
    first_line = text.strip()
    if first_line.isprintable():  # the common case: no line break (none is printable), nothing to replace
        return first_line
    for line_break in _LINE_BREAKS:
        first_line = first_line.split(line_break, 1)[0]
    if first_line.isprintable():  # no control character to replace (a listing names hundreds of sessions)
        return first_line.strip()
    return first_line.translate(_CONTROL_TO_SPACE).strip()


def truncate_name(name: str, max_chars: int = NAME_MAX_CHARS) -> str:
    """Cut to `max_chars` characters: the first `max_chars - 1` plus `…` when longer."""
    return name if len(name) <= max_chars else name[:max_chars - 1] + ELLIPSIS


def time_ago(mtime_ms: float, now_ms: float) -> str:
    """"just now", "5m ago", "3h ago", "3d ago" (under a week), then the local date as M/D/YYYY."""
    elapsed_ms = now_ms - mtime_ms
    minutes = int(elapsed_ms // 60_000)
    if minutes < 1:
        return "just now"
    if minutes < 60:
        return f"{minutes}m ago"
    hours = minutes // 60
    if hours < 24:
        return f"{hours}h ago"
    days = hours // 24
    if days < 7:
        return f"{days}d ago"
    local = datetime.fromtimestamp(clamp_epoch_ms(mtime_ms) / 1000)
    return f"{local.month}/{local.day}/{local.year}"


class RecentSessionInfo:
    """A light recent-session record built from a file's first 4 KB; `name` and `time_ago` are lazy."""

    def __init__(self, path: str | os.PathLike[str], mtime: float, _summary: SessionSummary,
                 _now_ms: float | None = None) -> None:
        self._path = path  # a Path on first read of `path`: `sessdex recent` prints without pathlib
        self.mtime = mtime
        self._summary = _summary
        self._now_ms = _now_ms

    def __eq__(self, other: object) -> bool:
        if other.__class__ is not self.__class__:
            return NotImplemented
        return (self.path, self.mtime, self._summary, self._now_ms) == (
            other.path, other.mtime, other._summary, other._now_ms)

    __hash__ = None  # type: ignore[assignment]  # mutable, as the dataclass was

    def __repr__(self) -> str:
        return f"RecentSessionInfo(path={self.path!r}, mtime={self.mtime!r})"

    @property
    def path(self) -> Path:
        path = as_path(self._path)
        self._path = path
        return path

    @property
    def session_id(self) -> str | None:
        """The header id read from the prefix."""
        return self._summary.session_id

    @property
    def full_name(self) -> str:
        """title -> first user prompt -> header id -> file name, the first that is non-empty once cleaned."""
        name: str | None = self.__dict__.get("_full_name")  # computed once (no functools on the hot path)
        if name is None:
            name = self.__dict__["_full_name"] = self._first_clean_name()
        return name

    def _first_clean_name(self) -> str:
        from sessdex.core.text import without_lone_surrogates  # lazy: off the catalog's hot paths

        candidates = (self._summary.header_title, self._summary.first_message, self._summary.session_id,
                      self._file_name.removesuffix(SESSION_SUFFIX))
        for candidate in candidates:
            cleaned = sanitize_display_name(without_lone_surrogates(candidate)) if candidate else ""
            if cleaned:
                return cleaned
        return without_lone_surrogates(self._file_name)

    @property
    def _file_name(self) -> str:
        return os.path.basename(os.fspath(self._path))

    @property
    def name(self) -> str:
        """`full_name` cut to 40 characters."""
        return truncate_name(self.full_name)

    @property
    def time_ago(self) -> str:
        """How long ago the file changed, relative to the injected clock or the time of access."""
        now_ms = self._now_ms if self._now_ms is not None else time.time() * 1000
        return time_ago(self.mtime, now_ms)

    def to_agent_json(self) -> dict[str, object]:
        """The agent's RecentSessionInfo shape: path, mtime (epoch ms), fullName, name, timeAgo."""
        mtime: float | int = int(self.mtime) if self.mtime.is_integer() else self.mtime
        return {"path": os.fspath(self._path), "mtime": mtime, "fullName": self.full_name,
                "name": self.name, "timeAgo": self.time_ago}


def recent_sessions_in(directories: Iterable[str | os.PathLike[str]], limit: int | None = DEFAULT_RECENT_LIMIT, *,
                       now_ms: float | None = None, skipped: SkippedFiles | None = None) -> list[RecentSessionInfo]:
    """The `limit` (default 3) newest sessions across `directories`, each read from its first 4 KB only."""
    if limit is None:
        limit = DEFAULT_RECENT_LIMIT
    files = [item for folder in directories for item in session_files(folder)]
    recent: list[RecentSessionInfo] = []
    for path, mtime in _newest_first(files):
        if len(recent) >= limit:
            break
        summary = _prefix_summary(path, skipped)
        if summary is not None:
            recent.append(RecentSessionInfo(path, mtime, summary, now_ms))
    return recent


def get_recent_sessions(session_dir: str | os.PathLike[str], limit: int | None = DEFAULT_RECENT_LIMIT, *,
                        now_ms: float | None = None) -> list[RecentSessionInfo]:
    """`getRecentSessions(dir, limit)`: newest first by mtime, sessions with zero messages included."""
    return recent_sessions_in([session_dir], limit, now_ms=now_ms)

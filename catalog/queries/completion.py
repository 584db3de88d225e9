"""Sessions a word typed at a shell prompt may name, for tab completion (`sessdex complete-sessions`).

Runs on every Tab press, so it reads the catalog as it is (no freshness pass, no schema work, nothing created):
a catalog that is missing or not current falls back to reading the session files; no agent dir gives nothing.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, NamedTuple

if TYPE_CHECKING:
    from sessdex.catalog.store.settings import Settings

_ROWS_SQL = ("SELECT session_id, title, substr(first_message, 1, 200), message_count, path FROM session_files "
             "WHERE header_valid = 1 AND message_count >= 1 AND path > ? AND path < ? AND {match} "
             "ORDER BY mtime_ns DESC, path LIMIT ?")
_BY_ID_SQL = "session_id >= ? AND session_id < ?"
_BY_TEXT_SQL = "(instr(lower(title), ?) > 0 OR instr(lower(first_message), ?) > 0)"


class Completion(NamedTuple):
    """One completable session: its id and what names it."""

    session_id: str
    title: str | None
    first_message: str
    message_count: int
    path: str


def _matching(rows: list[Completion], word: str, limit: int) -> list[Completion]:
    """Sessions whose id starts with `word`, else whose title or first message holds it (case-insensitive)."""
    by_id = [row for row in rows if row.session_id.startswith(word)]
    if by_id or not word:
        return by_id[:limit]
    folded = word.casefold()
    return [row for row in rows
            if folded in (row.title or "").casefold() or folded in row.first_message.casefold()][:limit]


def session_completions(settings: Settings, word: str, limit: int) -> list[Completion]:
    """Sessions whose id starts with `word`, else whose title or first message holds it (case-insensitive);
    newest first, at most `limit`."""
    from sessdex.catalog.queries.open_source import open_session_source
    from sessdex.catalog.queries.sessions import Catalog

    if not os.path.isdir(settings.paths.sessions_root):
        return []
    source = open_session_source(settings, only_if_ready=True)
    if source is None:
        from sessdex.catalog.queries.file_scan import FileScan

        source = FileScan(settings.paths)
    with source:
        reader = source.db.sqlite_reader() if isinstance(source, Catalog) and source.db is not None else None
        if reader is None:
            rows = [Completion(info.id, info.title, info.first_message, info.message_count, str(info.path))
                    for info in source.list_all_sessions()]
            return _matching(rows, word, limit)
        prefix = os.path.abspath(settings.paths.sessions_root).rstrip("/") + "/"
        under_root = (prefix, prefix + "\U0010ffff")
        found = reader.execute(_ROWS_SQL.format(match=_BY_ID_SQL), (*under_root, word, word + "\U0010ffff", limit))
        rows = [Completion(*row) for row in found]
        if rows or not word:
            return rows
        # The catalog may not hold every file yet (a first index is running): the ids are in the file names.
        named = _named_by_id(settings.paths.sessions_root_text, word, limit)
        if named:
            return named
        lowered = word.lower()
        found = reader.execute(_ROWS_SQL.format(match=_BY_TEXT_SQL), (*under_root, lowered, lowered, limit))
        return [Completion(*row) for row in found]


def _named_by_id(sessions_root: str, word: str, limit: int) -> list[Completion]:
    """The sessions whose file name (`<timestamp>_<sessionId>.jsonl`) carries an id starting with `word`, newest
    first, at most `limit`: the names and mtimes pick them, then only those files are read, each kept when its
    header's id starts with `word` too."""
    from sessdex.core.discovery import read_session_info
    from sessdex.core.paths import session_file_entries

    named = []
    for entry in session_file_entries(sessions_root, recursive=True):
        if entry.name[:-len(".jsonl")].rpartition("_")[2].startswith(word):
            try:
                named.append((entry.stat().st_mtime_ns, entry.path))
            except OSError:
                continue
    found = []
    for _mtime, path in sorted(named, reverse=True):
        info = read_session_info(path)
        if info is not None and info.id.startswith(word) and info.message_count >= 1:
            found.append(Completion(info.id, info.title, info.first_message[:200], info.message_count,
                                    info.path_text))
            if len(found) == limit:
                break
    return found

"""Where the session picker's rows and content matches come from: a small protocol and its two implementations.

`CatalogPickerSource` answers from the SQLite catalog (listing plus FTS5 over every message), which is what
makes the picker instant at 10,000 sessions. `FileScanPickerSource` reads the session files through
`sessdex.core.discovery` (the reference path of S10) and searches message text by substring; it is the fallback
when the catalog cannot be opened. Both may be called from a worker thread (content search runs off the UI
thread), so each serializes its own state behind a lock.

Snippets mark matched words with MATCH_OPEN / MATCH_CLOSE (control characters that never reach the screen).
"""

from __future__ import annotations

import os
import re
import threading
from collections.abc import Callable
from typing import Any, Literal, NamedTuple, Protocol

from sessdex.core.paths import AgentPaths
from sessdex.core.summary import NO_MESSAGES, SessionInfo

Scope = Literal["project", "all"]
SCOPES: tuple[Scope, Scope] = ("project", "all")
MATCH_OPEN = "\x02"
MATCH_CLOSE = "\x03"
CONTENT_MATCH_LIMIT = 200
SNIPPET_BEFORE_CHARS = 30
SNIPPET_AFTER_CHARS = 70
SNIPPET_TOKENS = 14
MIN_CONTENT_QUERY_CHARS = 2
PICKER_FIRST_MESSAGE_CHARS = 200  # rows keep the start of the first message: enough to show and to match

# The picker's rows straight from the catalog's session_files table (SQLite): the listing rule of
# Catalog.list_sessions / list_all_sessions (valid header, a message or more), the file scan's order.
_PICKER_ROWS_SQL = (
    "SELECT path, session_id, cwd, title, substr(first_message, 1, ?), message_count, mtime_ns "
    "FROM session_files WHERE header_valid = 1 AND message_count >= 1 AND {where} "
    "ORDER BY mtime_ns DESC, path")
_UNDER_ROOT_SQL = "path > ? AND path < ?"
_IN_FOLDERS_SQL = "directory IN ({marks})"

_WHITESPACE = re.compile(r"\s+")
_WORD = re.compile(r"\w")


class PickerRow(NamedTuple):
    """One session as the picker shows and searches it (the cheap fields; message text stays in the source).

    A NamedTuple: tens of thousands are built at start-up, and tuples are the cheapest to build.
    `first_message` holds its first PICKER_FIRST_MESSAGE_CHARS characters (the rest is searched as message text).
    """

    path: str
    session_id: str
    cwd: str
    title: str | None
    first_message: str
    message_count: int
    modified_ms: float

    @classmethod
    def from_info(cls, info: SessionInfo) -> PickerRow:
        """The row of a `SessionInfo` (file-scan or catalog)."""
        return cls(path=str(info.path), session_id=info.id, cwd=info.cwd, title=info.title,
                   first_message=info.first_message[:PICKER_FIRST_MESSAGE_CHARS], message_count=info.message_count,
                   modified_ms=info.modified.timestamp() * 1000)


class PickerSource(Protocol):
    """What the picker needs: rows per scope (newest first) and the sessions whose messages match a query.

    `cwd` is the project the "project" scope lists; `sessions_root` is stripped from paths before matching.
    `rows` may answer from a snapshot (so the first frame comes fast) that `refresh` then brings up to date.
    """

    cwd: str
    sessions_root: str

    def rows(self, scope: Scope) -> list[PickerRow]:
        """Sessions with at least one message in `scope`, newest modification first."""

    def refresh(self, scope: Scope) -> bool:
        """Bring `scope` up to date with the files; True when that changed its rows (`rows` reads them again)."""

    def content_matches(self, query: str, scope: Scope) -> dict[str, str]:
        """Session path -> snippet (matches marked) for sessions in `scope` whose message text matches `query`."""

    def close(self) -> None:
        """Release what the source holds open."""


def content_terms(query: str) -> list[str]:
    """The words of `query` a content search requires (lower-cased; words without a letter or digit dropped)."""
    return [word for word in query.lower().split() if _WORD.search(word)]


def should_search_content(query: str) -> bool:
    """True when `query` is worth a content search: some word, and at least MIN_CONTENT_QUERY_CHARS characters."""
    return bool(content_terms(query)) and len(query.strip()) >= MIN_CONTENT_QUERY_CHARS


def substring_snippet(text: str, lowered: str, terms: list[str]) -> str:
    """A one-line excerpt of `text` around the first occurrence of `terms[0]`, every term occurrence marked."""
    first = lowered.find(terms[0])
    start = max(0, first - SNIPPET_BEFORE_CHARS)
    end = min(len(text), first + len(terms[0]) + SNIPPET_AFTER_CHARS)
    window = text[start:end].replace(MATCH_OPEN, " ").replace(MATCH_CLOSE, " ")
    pattern = re.compile("|".join(re.escape(term) for term in sorted(terms, key=len, reverse=True)), re.IGNORECASE)
    marked = pattern.sub(lambda found: MATCH_OPEN + found.group(0) + MATCH_CLOSE, window)
    excerpt = _WHITESPACE.sub(" ", marked).strip()
    return ("…" if start > 0 else "") + excerpt + ("…" if end < len(text) else "")


class FileScanPickerSource:
    """Rows from `sessdex.core.discovery` (reads every file of the scope); content search by substring over message text."""

    def __init__(self, paths: AgentPaths, cwd: str | os.PathLike[str],
                 session_dir: str | os.PathLike[str] | None = None) -> None:
        self.paths = paths
        self.cwd = os.fspath(cwd)
        self.session_dir = session_dir
        self.sessions_root = os.path.abspath(paths.sessions_root)
        self._lock = threading.Lock()
        self._infos: dict[Scope, list[SessionInfo]] = {}
        self._rows: dict[Scope, list[PickerRow]] = {}
        self._lowered_text: dict[str, str] = {}

    def _scope_infos(self, scope: Scope) -> list[SessionInfo]:
        from sessdex.core.discovery import list_all_sessions, list_sessions

        if scope not in self._infos:
            self._infos[scope] = (list_all_sessions(paths=self.paths) if scope == "all"
                                  else list_sessions(self.cwd, self.session_dir, paths=self.paths))
        return self._infos[scope]

    def rows(self, scope: Scope) -> list[PickerRow]:
        """The scope's sessions, read once and then kept."""
        with self._lock:
            if scope not in self._rows:
                self._rows[scope] = [PickerRow.from_info(info) for info in self._scope_infos(scope)]
            return self._rows[scope]

    def refresh(self, scope: Scope) -> bool:
        """Always False: the rows were read from the files themselves."""
        return False

    def content_matches(self, query: str, scope: Scope) -> dict[str, str]:
        """Sessions whose message text holds every word of `query` (case-insensitive substrings), newest first."""
        terms = content_terms(query)
        if not terms:
            return {}
        matches: dict[str, str] = {}
        with self._lock:
            for info in self._scope_infos(scope):
                key = str(info.path)
                lowered = self._lowered_text.get(key)
                if lowered is None:
                    lowered = self._lowered_text[key] = info.all_messages_text.lower()
                if all(term in lowered for term in terms):
                    matches[key] = substring_snippet(info.all_messages_text, lowered, terms)
                    if len(matches) >= CONTENT_MATCH_LIMIT:
                        break
        return matches

    def close(self) -> None:
        """Nothing is held open; drop the cached text."""
        with self._lock:
            self._lowered_text.clear()


class CatalogPickerSource:
    """Rows from the catalog's listing statements; content matches from its FTS5 search over every message.

    `rows` answers from the catalog as it is (falling back to a freshness pass first only when that gives
    nothing), so that the picker paints at once; the picker then calls `refresh`, which runs the catalog's
    freshness pass (a stat of every file in scope, skipped while `sessdex watch` runs) once per scope.
    """

    def __init__(self, paths: AgentPaths, cwd: str | os.PathLike[str],
                 session_dir: str | os.PathLike[str] | None = None, catalog: str | None = None) -> None:
        from sessdex.catalog.queries.sessions import Catalog

        self.cwd = os.fspath(cwd)
        self.session_dir = session_dir
        self.sessions_root = os.path.abspath(paths.sessions_root)
        self._lock = threading.Lock()
        self._rows: dict[Scope, list[PickerRow]] = {}
        self._verified: set[Any] = set()
        self._catalog = Catalog.open(paths, catalog, fresh=self._fresh_once)

    def _fresh_once(self, db: Any, freshness_scope: Any) -> Any:
        """The catalog's freshness function, run at most once per scope: the picker reads one snapshot."""
        from sessdex.catalog.index.reconcile import ReconcileReport, ensure_fresh

        if freshness_scope in self._verified:
            return ReconcileReport()
        report = ensure_fresh(db, freshness_scope)
        self._verified.add(freshness_scope)
        return report

    def _freshness_scope(self, scope: Scope) -> Any:
        from sessdex.catalog.index.reconcile import Scope as FreshnessScope

        if scope == "all":
            return FreshnessScope.of(root=self._catalog.sessions_root)
        return FreshnessScope.of(self._catalog.project_dirs(self.cwd, self.session_dir))

    def rows(self, scope: Scope) -> list[PickerRow]:
        """The scope's sessions as the catalog holds them (made fresh first if it holds none), then kept."""
        with self._lock:
            if scope not in self._rows:
                rows = self._read_rows(scope)
                if not rows and self._refresh(scope):
                    rows = self._read_rows(scope)
                self._rows[scope] = rows
            return self._rows[scope]

    def refresh(self, scope: Scope) -> bool:
        """Run the freshness pass for `scope` (once); True when it changed the catalog."""
        with self._lock:
            return self._refresh(scope)

    def _refresh(self, scope: Scope) -> bool:
        report = self._catalog.refresh(self._freshness_scope(scope))
        if report.up_to_date:
            return False
        self._rows.clear()  # a change in one scope is a change in the other
        return True

    def _read_rows(self, scope: Scope) -> list[PickerRow]:
        """The scope's listable sessions (valid header, at least one message) as the catalog holds them.

        On SQLite this is one lean query: only the picker's columns and the start of the first message,
        ordered as the file scan orders them, built straight into tuples (several times faster at 10,000
        sessions than `Catalog.picker_sessions`, which builds full SessionInfo values). Other databases
        use `picker_sessions` itself.
        """
        catalog = self._catalog
        reader = catalog.db.sqlite_reader() if catalog.db is not None else None
        params: tuple[str, ...]
        if reader is None:
            return [PickerRow.from_info(info) for info in catalog.picker_sessions(
                self.cwd, all_projects=scope == "all", session_dir=self.session_dir)]
        if scope == "all":
            prefix = catalog.sessions_root.rstrip("/") + "/"
            where, params = _UNDER_ROOT_SQL, (prefix, prefix + "\U0010ffff")
        else:
            folders = catalog.project_dirs(self.cwd, self.session_dir)
            where, params = _IN_FOLDERS_SQL.format(marks=", ".join("?" * len(folders))), tuple(folders)
        found = reader.execute(_PICKER_ROWS_SQL.format(where=where), (PICKER_FIRST_MESSAGE_CHARS, *params))
        return [PickerRow(path, session_id, cwd or "", title, first_message or NO_MESSAGES, message_count,
                          mtime_ns / 1_000_000)
                for path, session_id, cwd, title, first_message, message_count, mtime_ns in found]

    def content_matches(self, query: str, scope: Scope) -> dict[str, str]:
        """Up to CONTENT_MATCH_LIMIT sessions whose title, first message or a message matches every word (FTS5)."""
        with self._lock:
            hits = self._catalog.search(query, None if scope == "all" else self.cwd, self.session_dir,
                                        limit=CONTENT_MATCH_LIMIT, highlight=(MATCH_OPEN, MATCH_CLOSE),
                                        snippet_tokens=SNIPPET_TOKENS)
        return {str(hit.session.path): _WHITESPACE.sub(" ", hit.snippet).strip() for hit in hits}

    def close(self) -> None:
        """Close the catalog's connections."""
        with self._lock:
            self._catalog.close()


def open_picker_source(paths: AgentPaths, cwd: str | os.PathLike[str],
                       session_dir: str | os.PathLike[str] | None = None, catalog: str | None = None,
                       warn: Callable[[str], None] | None = None) -> PickerSource:
    """The catalog source; the file-scan one on request (`--catalog off`) or, after `warn`ing why, when the
    catalog cannot be opened."""
    from sessdex.catalog.store.location import CATALOG_ENV, CATALOG_OFF
    from sessdex.core.errors import CatalogError

    if (catalog or os.environ.get(CATALOG_ENV)) == CATALOG_OFF:
        return FileScanPickerSource(paths, cwd, session_dir)
    try:
        return CatalogPickerSource(paths, cwd, session_dir, catalog)
    except CatalogError as error:
        if warn is not None:
            warn(f"{error}; reading the session files directly")
        return FileScanPickerSource(paths, cwd, session_dir)

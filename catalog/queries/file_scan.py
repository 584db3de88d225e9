"""`FileScan`: the `SessionSource` that reads the session files themselves, through `sessdex.core`.

The reference answers (the catalog must give the same), and the fallback when the catalog is turned off
(`--catalog off`) or cannot be opened. For the picker it reads each scope once and then keeps it, and
searches message text by case-insensitive substring (`sessdex.catalog.queries.picker_source.PickerSource`
serializes the picker's calls, which come from a worker thread too).
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sessdex.catalog.queries.source import (
    CONTENT_MATCH_LIMIT,
    MATCH_CLOSE,
    MATCH_OPEN,
    PickerRow,
    content_terms,
    substring_snippet,
)
from sessdex.core.discovery import DEFAULT_RECENT_LIMIT
from sessdex.core.paths import AgentPaths
from sessdex.core.summary import SessionInfo

if TYPE_CHECKING:
    from sessdex.core.usage import UsageReport
    from sessdex.core.usage_terms import DateRange, ReportKind

_ScopeKey = tuple[bool, str, str | None]


class FileScan:
    """Sessions read from the files on every call (the picker's scopes: once, then kept)."""

    def __init__(self, paths: AgentPaths) -> None:
        self.paths = paths
        self._picker_infos: dict[_ScopeKey, list[SessionInfo]] = {}
        self._lowered_text: dict[str, str] = {}

    def __enter__(self) -> FileScan:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def close(self) -> None:
        """Nothing is held open; drop the picker's cached text."""
        self._lowered_text.clear()

    def list_sessions(self, cwd: str | os.PathLike[str], session_dir: str | os.PathLike[str] | None = None, *,
                      include_empty: bool = False) -> list[SessionInfo]:
        """sessdex.core.discovery.list_sessions."""
        from sessdex.core.discovery import list_sessions

        return list_sessions(cwd, session_dir, paths=self.paths, include_empty=include_empty)

    def list_all_sessions(self, *, include_empty: bool = False) -> list[SessionInfo]:
        """sessdex.core.discovery.list_all_sessions."""
        from sessdex.core.discovery import list_all_sessions

        return list_all_sessions(paths=self.paths, include_empty=include_empty)

    def recent_sessions_in(self, directories: Iterable[str | os.PathLike[str]],
                           limit: int | None = DEFAULT_RECENT_LIMIT, *, now_ms: float | None = None) -> list[Any]:
        """sessdex.core.discovery.recent_sessions_in."""
        from sessdex.core.discovery import recent_sessions_in

        return recent_sessions_in(directories, limit, now_ms=now_ms)

    def most_recent_session_in(self, directories: Iterable[str | os.PathLike[str]]) -> Path | None:
        """sessdex.core.discovery.most_recent_session_in."""
        from sessdex.core.discovery import most_recent_session_in

        return most_recent_session_in(directories)

    def most_recent_session_file(self, directories: Iterable[str | os.PathLike[str]]) -> str | None:
        """`most_recent_session_in` as a string."""
        found = self.most_recent_session_in(directories)
        return None if found is None else os.fspath(found)

    def find_session_by_id(self, value: str, cwd: str | os.PathLike[str],
                           session_dir: str | os.PathLike[str] | None = None) -> SessionInfo:
        """sessdex.core.resume.find_session_by_id."""
        from sessdex.core.resume import find_session_by_id

        return find_session_by_id(value, cwd, session_dir, paths=self.paths)

    def search(self, text: str, cwd: str | os.PathLike[str] | None = None,
               session_dir: str | os.PathLike[str] | None = None, *, limit: int,
               highlight: tuple[str, str] = ("[", "]"), substring_fallback: bool = True) -> list[Any]:
        """`Catalog.search` read from the files, for a catalog that cannot answer: the sessions whose title, first
        message and message text hold every word (case-insensitive substrings, so `substring_fallback` changes
        nothing), newest first, each with the first field holding the first word and its snippet."""
        from sessdex.catalog.queries.sessions import SearchHit

        terms = content_terms(text)
        if not terms or limit <= 0:
            return []
        infos = (self.list_all_sessions() if cwd is None and session_dir is None
                 else self.list_sessions(cwd or os.getcwd(), session_dir))
        hits = []
        for info in infos:
            fields = (("title", info.title or ""), ("first_message", info.first_message or ""),
                      ("message", info.all_messages_text))
            lowered = "\n".join(value for _name, value in fields).lower()
            if not all(term in lowered for term in terms):
                continue
            field, value = next(((name, value) for name, value in fields if terms[0] in value.lower()), fields[2])
            snippet = substring_snippet(value, value.lower(), terms) if terms[0] in value.lower() else ""
            marked = snippet.replace(MATCH_OPEN, highlight[0]).replace(MATCH_CLOSE, highlight[1])
            hits.append(SearchHit(info, field, marked, 0.0))
            if len(hits) >= limit:
                break
        return hits

    # -- the picker ----------------------------------------------------------------------------------------

    def _scope_infos(self, cwd: str, session_dir: str | os.PathLike[str] | None, all_projects: bool
                     ) -> list[SessionInfo]:
        key = (all_projects, cwd, None if session_dir is None else os.fspath(session_dir))
        if key not in self._picker_infos:
            self._picker_infos[key] = self.list_all_sessions() if all_projects else self.list_sessions(cwd, session_dir)
        return self._picker_infos[key]

    def picker_rows(self, cwd: str, session_dir: str | os.PathLike[str] | None, *,
                    all_projects: bool) -> list[PickerRow]:
        """The scope's sessions, read from the files once and then kept."""
        return [PickerRow.from_info(info) for info in self._scope_infos(cwd, session_dir, all_projects)]

    def bring_up_to_date(self, cwd: str, session_dir: str | os.PathLike[str] | None, *, all_projects: bool) -> bool:
        """Always False: the rows were read from the files themselves."""
        return False

    def content_matches(self, query: str, cwd: str, session_dir: str | os.PathLike[str] | None, *,
                        all_projects: bool) -> dict[str, str]:
        """Sessions whose message text holds every word of `query` (case-insensitive substrings), newest first."""
        terms = content_terms(query)
        if not terms:
            return {}
        matches: dict[str, str] = {}
        for info in self._scope_infos(cwd, session_dir, all_projects):
            key = str(info.path)
            lowered = self._lowered_text.get(key)
            if lowered is None:
                lowered = self._lowered_text[key] = info.all_messages_text.lower()
            if all(term in lowered for term in terms):
                matches[key] = substring_snippet(info.all_messages_text, lowered, terms)
                if len(matches) >= CONTENT_MATCH_LIMIT:
                    break
        return matches

    def check_freshness_once(self) -> None:
        """Nothing to do: the picker's scopes are read once anyway."""

    def marks(self) -> dict[str, Any]:
        """The marks file of this agent dir, read directly (none from a file sessdex may not read: a symlink, another
        user's file)."""
        from sessdex.core.marks import MarksFileError, current_marks

        try:
            return current_marks(self.paths)
        except (MarksFileError, OSError):
            return {}

    def content_index_progress(self, *, text: bool = True) -> None:
        """Files are read whole: nothing is ever left for later."""
        return None

    def usage_report(self, kind: ReportKind, cwd: str | os.PathLike[str], *, all_projects: bool,
                     days: DateRange) -> UsageReport:
        """`sessdex usage KIND` read from the files (the reference the catalog's answer is tested against)."""
        from sessdex.catalog.queries.usage import scan_usage_report

        folders = None if all_projects else [str(folder) for folder in self.paths.project_session_dirs(cwd)]
        return scan_usage_report(kind, os.path.abspath(self.paths.sessions_root), folders, days)

    def session_usage(self, cwd: str | os.PathLike[str], *, all_projects: bool) -> None:
        """Nothing is kept ahead: the session report is `usage_report`'s."""
        return None

    def timed_usage_facts(self, since_ms: int | None) -> list[tuple[Any, str]]:
        """The 5-hour blocks' facts read from the files (`catalog.queries.usage.timed_facts`)."""
        from sessdex.catalog.queries.usage import timed_facts

        return timed_facts(os.path.abspath(self.paths.sessions_root), since_ms)

    def remote_file_usage(self, info: SessionInfo) -> None:
        """The files here are this machine's: no session is another's."""
        return None

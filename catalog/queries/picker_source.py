"""What the session picker reads: `PickerSource`, one project's (or every project's) rows over a `SessionSource`.

The picker asks a `SessionSource` (the catalog, else the file scan; see
`sessdex.catalog.queries.open_source`) and never opens a database itself. This keeps, per scope, the rows
the picker shows: the first `rows` answers from the source as it is (so that the picker paints at once,
with a freshness pass first only when that gives nothing); the picker then calls `refresh`, which brings
the scope up to date once. The picker calls it from a worker thread (content search runs off the UI
thread), so its state sits behind a lock.

`headers_first_screen` is the first screen of a catalog that holds nothing of the scope yet (a first run): the
newest files by mtime, each read from its first 4 KB only, so the first paint never waits for a first index.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterable
from typing import Any

from sessdex.catalog.queries.git_repo import repository_dirs, under_any
from sessdex.catalog.queries.source import PickerRow, Scope, SessionSource
from sessdex.core.discovery import RECENT_PREFIX_BYTES, session_files, summarize_bytes
from sessdex.core.paths import SESSION_SUFFIX
from sessdex.core.records import is_listable_session
from sessdex.core.regular_files import read_regular_file
from sessdex.core.summary import session_info


def headers_first_screen(folders: Iterable[str | os.PathLike[str]], *, recursive: bool,
                         limit: int) -> tuple[list[PickerRow], list[str]]:
    """The picker's first screen from the files alone (`recursive`: every folder below `folders`): the `limit`
    newest sessions by mtime that show a message within their first 4 KB, each built from those 4 KB only, and
    the session id of every session file by its name (`<timestamp>_<id>.jsonl`: the count and the id prefix
    length, without opening the files).

    For a catalog that holds nothing of the scope yet: reading grows with the files listed, not with their
    size or their number of messages. A row's counts and usage are those of its first 4 KB until the picker's
    own rows (read once the scope is indexed) replace the screen.
    """
    files = [item for folder in folders for item in session_files(folder, recursive=recursive)]
    files.sort(key=lambda item: (-item[1], str(item[0])))
    rows: list[PickerRow] = []
    for path, mtime_ms in files:
        if len(rows) >= limit:
            break
        try:
            prefix = read_regular_file(path, RECENT_PREFIX_BYTES)  # refuses what became a FIFO or a device
        except OSError:
            continue  # gone or unreadable since it was listed: the full rows will say
        summary = summarize_bytes(prefix)[0]
        if not is_listable_session(path.name, summary.session_id if summary.header_valid else None):
            continue
        if summary.message_count:
            rows.append(PickerRow.from_info(session_info(path, summary, "", mtime_ms)))
    ids = [path.name.removesuffix(SESSION_SUFFIX).rsplit("_", 1)[-1] for path, _mtime in files]
    return rows, ids


class PickerSource:
    """Rows per scope (newest first) and content matches for the picker, from one `SessionSource`.

    `cwd` is the project the "project" scope lists (`session_dir` replaces its folders); `repo_dirs` are the
    worktree roots of the git repository holding `cwd` (None outside one), whose sessions (in any subfolder)
    the "repo" scope lists; `sessions_root` is stripped from paths before matching. Closing it closes the source.
    """

    def __init__(self, source: SessionSource, cwd: str | os.PathLike[str],
                 session_dir: str | os.PathLike[str] | None = None) -> None:
        self.source = source
        self.cwd = os.fspath(cwd)
        self.session_dir = session_dir
        self.sessions_root = os.path.abspath(source.paths.sessions_root)
        self.repo_dirs = repository_dirs(self.cwd)
        self._lock = threading.Lock()
        self._search_state = threading.Lock()  # guards _searching and _interrupted (taken without _lock)
        self._searching = False  # a content search is running (in a worker thread)
        self._interrupted = False  # interrupt_content_search aborted it
        self._rows: dict[Scope, list[PickerRow]] = {}
        source.check_freshness_once()

    def rows(self, scope: Scope) -> list[PickerRow]:
        """Sessions with at least one message in `scope`, newest modification first (read once, then kept)."""
        with self._lock:
            if scope not in self._rows:
                rows = self._read_rows(scope)
                if not rows and self._refresh(scope):
                    rows = self._read_rows(scope)
                self._rows[scope] = rows
            return self._rows[scope]

    def refresh(self, scope: Scope) -> bool:
        """Bring `scope` up to date with the files (once); True when that changed its rows (`rows` reads them again)."""
        with self._lock:
            return self._refresh(scope)

    def content_matches(self, query: str, scope: Scope) -> dict[str, str]:
        """Session path -> snippet (matches marked) for sessions in `scope` whose message text matches `query`;
        {} when `interrupt_content_search` stopped it."""
        with self._lock:
            with self._search_state:
                self._searching, self._interrupted = True, False
            try:
                matches = self.source.content_matches(query, self.cwd, self.session_dir,
                                                      all_projects=scope != "project")
            except Exception:
                if self._interrupted:  # the statement was aborted on purpose: an answer nobody waits for
                    return {}
                raise
            finally:
                with self._search_state:
                    self._searching = False
            if scope == "repo":
                listed = {row.path for row in self._rows.get("repo", [])}
                matches = {path: snippet for path, snippet in matches.items() if path in listed}
            return matches

    def marks(self) -> dict[str, Any]:
        """Session id -> its marks (`sessdex.core.marks.Marks`), as the source has them now."""
        with self._lock:
            return self.source.marks()

    def interrupt_content_search(self) -> None:
        """Abort a content search running in another thread (the picker's query moved on: its answer would be
        dropped, and its CPU time is better spent on the keystrokes). Only SQLite catalogs can abort a statement;
        with other sources the search runs to its end."""
        database = getattr(self.source, "db", None)  # a Catalog's database, once opened
        reader = database.sqlite_reader() if database is not None else None
        if reader is None:
            return
        with self._search_state:  # held while interrupting: the search cannot finish and another statement start
            if self._searching:
                self._interrupted = True
                reader.interrupt()

    def close(self) -> None:
        """Close the source."""
        with self._lock:
            self.source.close()

    def _read_rows(self, scope: Scope) -> list[PickerRow]:
        rows = self.source.picker_rows(self.cwd, self.session_dir, all_projects=scope != "project")
        if scope == "repo":
            return [row for row in rows if under_any(row.cwd, self.repo_dirs or [])]
        return rows

    def _refresh(self, scope: Scope) -> bool:
        if not self.source.bring_up_to_date(self.cwd, self.session_dir, all_projects=scope != "project"):
            return False
        self._rows.clear()  # a change in one scope is a change in the other
        return True

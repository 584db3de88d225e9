"""What the session picker reads: `PickerSource`, one project's (or every project's) rows over a `SessionSource`.

The picker asks a `SessionSource` (the catalog, else the file scan; see
`sessdex.catalog.queries.open_source`) and never opens a database itself. This keeps, per scope, the rows
the picker shows: the first `rows` answers from the source as it is (so that the picker paints at once,
with a freshness pass first only when that gives nothing); the picker then calls `refresh`, which brings
the scope up to date once. The picker calls it from a worker thread (content search runs off the UI
thread), so its state sits behind a lock.
"""

from __future__ import annotations

import os
import threading

from sessdex.catalog.queries.git_repo import repository_dirs, under_any
from sessdex.catalog.queries.source import PickerRow, Scope, SessionSource


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
        """Session path -> snippet (matches marked) for sessions in `scope` whose message text matches `query`."""
        with self._lock:
            matches = self.source.content_matches(query, self.cwd, self.session_dir, all_projects=scope != "project")
            if scope == "repo":
                listed = {row.path for row in self._rows.get("repo", [])}
                matches = {path: snippet for path, snippet in matches.items() if path in listed}
            return matches

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

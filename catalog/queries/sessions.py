"""Listings, id-prefix resume, recent sessions and search answered from the catalog.

Each function here has the signature of its file-scan counterpart in `sessdex.core.discovery` / `sessdex.core.resume`
(plus an optional `catalog`: a `--catalog` value or an open `Catalog`) and returns the same
`SessionInfo` / `RecentSessionInfo` values, field for field: the rows were produced by the same
`SessionSummary` fold and are ordered by the same key. Before answering, the catalog is made fresh for
the folders the answer depends on (`sessdex.catalog.index.reconcile.ensure_fresh`). `SessionInfo.all_messages_text`
is loaded from the catalog only when read, so a listing never pulls every message's text.

While another process indexes (a first index, a watcher's initial scan) a read never waits for it: the freshness
pass then leaves the changed files unindexed (a `deferred` report), and the answer is the committed rows of the
files that did not change plus those files read directly, as the file scan reads them. `resume PREFIX` on a
catalog that does not hold every file of its scope looks at file names first (`<timestamp>_<sessionId>.jsonl`):
the files whose name holds a matching id are read and confirmed by their header's id, exactly as the file scan's
rule does; only when no name matches does the full rule run. `recent` and `continue` then read the newest files'
heads, as the file scan does.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
import time
from collections.abc import Iterator

from sessdex.catalog.index.reconcile import (
    ReconcileReport,
    Scope,
    catalog_paths,
    covered_by,
    ensure_fresh,
    ensure_fresh_for_ids,
    read_heartbeat,
    root_range,
    scan_files,
)
from sessdex.catalog.store.compiled_sql import SQL
from sessdex.catalog.store.db import open_catalog as open_database
from sessdex.catalog.store.location import CatalogLocation, resolve_location
from sessdex.catalog.store.machine import resolve_machine, wants_all_machines
from sessdex.catalog.store.settings import Settings
from sessdex.core.errors import CatalogError
from sessdex.core.paths import AgentPaths, as_path, path_from_text, path_to_text
from sessdex.core.values import Value

TYPE_CHECKING = False  # typing stays off the hot commands' imports
if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Sequence
    from pathlib import Path
    from typing import Any

    from sessdex.catalog.index.content_index import ContentProgress
    from sessdex.catalog.queries.source import PickerRow
    from sessdex.catalog.queries.usage import SessionUsage
    from sessdex.catalog.store.db import CatalogDatabase
    from sessdex.core.summary import SessionInfo
    from sessdex.core.usage import FileUsage, UsageReport
    from sessdex.core.usage_terms import DateRange, ReportKind

ID_PREFIX_CEILING = "\U0010ffff"
SEARCH_SESSION_LIMIT = 20
# How long a search may spend completing the message-text index of a first index before it answers.
SEARCH_FILL_SECONDS = 1.0
# Control characters -> spaces (str.translate: no `re` on the hot commands).
_CONTROL_TO_SPACE = {code: " " for code in [*range(0x20), 0x7f]}
# Snippets are marked with private-use characters, then given the caller's markers: a title that itself
# holds "[" cannot be mistaken for a match.
_MATCH_OPEN, _MATCH_CLOSE = "\ue000", "\ue001"


def _json_loads(text: str) -> Any:
    import json  # only `recent` reads stored JSON: the other hot commands skip the import

    return json.loads(text)


def _newest_first_key(row: Any) -> tuple[float, str]:
    # The file scan sorts on (-mtime in ms as a float, path); the same key gives the same order and ties.
    return (-(row["mtime_ns"] / 1_000_000), row["path"])


def _scope_params(directories: Sequence[str]) -> dict[str, str]:
    if not 1 <= len(directories) <= 3:
        raise ValueError("a project scope has one to three folders")
    padded = [path_to_text(directory) for directory in [*directories, *[directories[0]] * (3 - len(directories))]]
    return {"dir0": padded[0], "dir1": padded[1], "dir2": padded[2]}


def _scope_directories(part: dict[str, str]) -> list[str]:
    """The distinct folders of a scope part made by `_scope_params` (it repeats the first to fill three)."""
    return list(dict.fromkeys((part["dir0"], part["dir1"], part["dir2"])))


def _id_range(prefix: str) -> dict[str, str]:
    return {"id_lo": prefix, "id_hi": prefix + ID_PREFIX_CEILING}


def _name_id(path: str) -> str:
    """The session id a session file's name holds (`<timestamp>_<sessionId>.jsonl`), "" when it holds none."""
    name = os.path.basename(path)
    if name.endswith(".jsonl"):
        name = name[:-len(".jsonl")]
    _timestamp, separator, session_id = name.partition("_")
    return session_id if separator else ""


def _read_infos(paths: Iterable[str], include_empty: bool) -> list[SessionInfo]:
    """The SessionInfo values of files read directly (as the file scan reads them), of the listable sessions."""
    from sessdex.core.discovery import read_session_info

    infos = []
    for path in paths:
        info = read_session_info(path_from_text(path))  # a catalog key: the path in its stored form
        if info is not None and (include_empty or info.message_count > 0):
            infos.append(info)
    return infos


def _newest_first(infos: list[SessionInfo]) -> list[SessionInfo]:
    """`infos` in the file scan's order: newest modification first, ties by path.

    The file scan orders by the fractional milliseconds of the files' mtimes, finer than `modified` (whole
    milliseconds): files modified within the same millisecond are ordered by their stat, looked at for those
    files only."""
    ordered = sorted(infos, key=lambda info: (-info.modified.timestamp(), info.path_text))
    start = 0
    while start < len(ordered):
        end = start + 1
        while end < len(ordered) and ordered[end].modified == ordered[start].modified:
            end += 1
        if end - start > 1:
            ordered[start:end] = sorted(ordered[start:end], key=lambda info: (-_mtime_ms(info), info.path_text))
        start = end
    return ordered


def _mtime_ms(info: SessionInfo) -> float:
    """The file's mtime in fractional milliseconds, as the file scan orders by; `modified` when it cannot be read."""
    try:
        return os.stat(info.path_text).st_mtime_ns / 1_000_000
    except OSError:
        return info.modified.timestamp() * 1000


class SearchHit(Value):
    """One session matching a search, with where it matched and a highlighted snippet."""

    __slots__ = ("session", "field", "snippet", "score")

    def __init__(self, session: SessionInfo, field: str, snippet: str, score: float) -> None:
        self.session = session
        self.field = field  # "title", "first_message" or "message"
        self.snippet = snippet
        self.score = score


def fts_query(text: str) -> str | None:
    """User text as an FTS5 query that cannot be a syntax error: every word quoted, prefix-matched, ANDed.

    None when the text holds nothing searchable (only punctuation or spaces).
    """
    # FTS5 reads the query as a C string: a NUL would end it inside a quote, so control characters separate words.
    # A word holding a word character (what `\w` matches: alphanumerics and the underscore).
    words = [word for word in text.translate(_CONTROL_TO_SPACE).split()
             if any(char.isalnum() or char == "_" for char in word)]
    if not words:
        return None
    return " ".join('"' + word.replace('"', '""') + '"*' for word in words)


# The picker's rows straight from the catalog's session_files table (SQLite): the listing rule of
# list_sessions / list_all_sessions (valid header, a message or more), the file scan's order.
_PICKER_COLUMNS_SQL = (
    "SELECT path, session_id, cwd, title, substr(first_message, 1, ?), message_count, mtime_ns, cost_total, "
    "input_tokens + output_tokens + cache_read_tokens + cache_write_tokens "
    "FROM session_files WHERE header_valid = 1 AND message_count >= 1 AND machine = ? AND {where}")
_PICKER_ROWS_SQL = _PICKER_COLUMNS_SQL + " ORDER BY mtime_ns DESC, path"
# The first screen's rows in the order of an index on mtime (newest first, no sort), then the rows sharing the last
# one's mtime: the path order among equal mtimes is made in Python (SQLite would sort them in a temporary B-tree).
_PICKER_NEWEST_SQL = _PICKER_COLUMNS_SQL + " ORDER BY mtime_ns DESC LIMIT ?"
_PICKER_SAME_MTIME_SQL = _PICKER_COLUMNS_SQL + " AND mtime_ns = ?"
_PICKER_IDS_SQL = ("SELECT session_id FROM session_files "
                   "WHERE header_valid = 1 AND message_count >= 1 AND machine = ? AND {where}")
# The same ids in one string with their number (no row object made for each: a hundred thousand rows in a quarter of
# the time), split by sessdex.catalog.index.id_width.joined_ids, whose separator this is.
_PICKER_JOINED_IDS_SQL = ("SELECT count(*), group_concat(session_id, '\x1f') FROM session_files "
                          "WHERE header_valid = 1 AND message_count >= 1 AND machine = ? AND {where}")
_UNDER_ROOT_SQL = "path > ? AND path < ?"
# The same for the first screen's rows: the unary plus keeps SQLite from walking the path index (and sorting every
# row of the root by mtime) instead of the mtime index, newest first, up to the screen's last row.
_UNDER_ROOT_NEWEST_SQL = "+path > ? AND +path < ?"
_IN_FOLDERS_SQL = "directory IN ({marks})"
_INFOS_BY_ID_SQL = ("SELECT id, machine, path, mtime_ns, session_id, cwd, title, message_count, first_message, "
                    "created, parent_session, input_tokens, output_tokens, cache_read_tokens, cache_write_tokens, "
                    "cost_total FROM session_files WHERE id IN ({placeholders})")


def _picker_rows(found: Iterable[Any]) -> list[PickerRow]:
    """The picker's rows from the rows of _PICKER_ROWS_SQL, built straight into tuples."""
    from sessdex.catalog.queries.source import PickerRow
    from sessdex.core.summary import NO_MESSAGES

    return [PickerRow(path, session_id, cwd or "", title, first_message or NO_MESSAGES, message_count,
                      mtime_ns / 1_000_000, cost, tokens)
            for path, session_id, cwd, title, first_message, message_count, mtime_ns, cost, tokens in found]


def _snippets(reader: sqlite3.Connection, sql: str, marks: tuple[Any, ...], query: str,
              rowids: list[int]) -> list[Any]:
    """The snippet rows of `rowids` (see fts.SNIPPETS_OF_SESSIONS): one MATCH over their rowid range."""
    if not rowids:
        return []
    return reader.execute(sql.format(marks=", ".join("?" * len(rowids))),
                          (*marks, query, min(rowids), max(rowids), *rowids)).fetchall()


# How many more of the best title/first-message matches than asked for are ranked at a time (see
# fts.RANKED_SESSIONS): a few may be out of scope (no message, another machine's).
RANKED_PAGE_MARGIN = 16


def _best_sessions_in_scope(reader: sqlite3.Connection, query: str, scope_sql: str, scope_params: dict[str, Any],
                            limit: int) -> list[dict[str, Any]]:
    """The `limit` best title/first-message matches in the scope, best first, as fts.SEARCH_SESSIONS finds them:
    ranked in the full-text index a page at a time, each page's rows kept when session_files puts them in scope."""
    from sessdex.catalog.store import fts

    found: list[dict[str, Any]] = []
    page, skip = limit + RANKED_PAGE_MARGIN, 0
    while len(found) < limit:
        ranked = reader.execute(fts.RANKED_SESSIONS, {"query": query, "rows": page, "skip": skip}).fetchall()
        if not ranked:
            break
        marks = {f"file{index}": row["file_id"] for index, row in enumerate(ranked)}
        in_scope = {file_id for file_id, in reader.execute(
            fts.SESSIONS_IN_SCOPE.format(marks=", ".join(f":{name}" for name in marks), scope=scope_sql),
            {**marks, **scope_params}).fetchall()}
        found += [{"file_id": row["file_id"], "score": row["score"]} for row in ranked if row["file_id"] in in_scope]
        if len(ranked) < page:
            break
        skip += page
        page *= 4  # a scope that holds few of the matches: larger pages
    return found[:limit]


class Catalog:
    """An open catalog for one agent dir: freshness, listings, resume lookups, recent sessions and search."""

    def __init__(self, paths: AgentPaths, location: CatalogLocation | None = None, *, backend: str = "auto",
                 fresh: Callable[[CatalogDatabase, Scope], ReconcileReport] | None = None,
                 database: CatalogDatabase | None = None, machine: str | None = None,
                 all_machines: bool | None = None) -> None:
        """`fresh` replaces the freshness pass run before every answer (default: ensure_fresh by stat);
        `database` is the catalog at `location` already opened (default: open it, creating or upgrading it).
        `machine` is this agent dir's machine (default: sessdex.catalog.store.machine.resolve_machine); answers
        hold its sessions only, unless `all_machines` (default: `$SESSDEX_MACHINES` is `all`)."""
        self.paths = paths
        self.location = location or resolve_location(paths.agent_dir_text)
        self.machine = database.machine if database is not None else resolve_machine(paths.agent_dir_text, machine)
        self.all_machines = wants_all_machines() if all_machines is None else all_machines
        self._backend = backend
        self._fresh = fresh
        self.db: CatalogDatabase | None = database if database is not None else open_database(
            self.location, backend=backend, machine=self.machine)
        self._machines_known = False

    @classmethod
    def from_settings(cls, settings: Settings, **options: Any) -> Catalog:
        """Open the catalog the settings name (`--catalog`, else `<agent dir>/catalog.db`), creating or upgrading it."""
        return cls(settings.paths, settings.location(), **{"machine": settings.machine_name,
                                                            "all_machines": settings.all_machines, **options})

    def __enter__(self) -> Catalog:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def close(self) -> None:
        if self.db is not None:
            self.db.close()
            self.db = None

    def _database(self) -> CatalogDatabase:
        if self.db is None:
            self.db = open_database(self.location, backend=self._backend, machine=self.machine)
        return self.db

    def refresh(self, scope: Scope, id_range: dict[str, str] | None = None) -> ReconcileReport:
        """Make the catalog current for `scope`, or only for the ids in `id_range` (see catalog.reconcile).

        A pass that wrote rows records this machine too (a read that writes nothing never writes that either).
        """
        if self._fresh is not None:
            report = self._fresh(self._database(), scope)
        elif id_range is not None:
            report = ensure_fresh_for_ids(self._database(), scope, id_range)
        else:
            report = ensure_fresh(self._database(), scope)
        if report is not None and not report.up_to_date and not report.deferred:
            self._register_machine()
        return report

    def _with_unindexed(self, infos: list[SessionInfo], report: ReconcileReport | None, *, include_empty: bool,
                        id_prefix: str | None = None) -> list[SessionInfo]:
        """`infos` (from the catalog's rows) made current after a `deferred` freshness pass: the rows of changed or
        vanished files dropped, the changed files read directly (those whose id starts with `id_prefix`), newest
        first. (No report: the caller's own freshness answered nothing, as a watcher's does.)"""
        if report is None or not report.deferred:
            return infos
        stale = {*report.changed, *report.vanished}
        kept = [info for info in infos if info.path_text not in stale]
        read = _read_infos(report.unindexed, include_empty)
        if id_prefix is not None:
            read = [info for info in read if info.id.startswith(id_prefix)]
        return _newest_first(kept + read)

    @property
    def sessions_root(self) -> str:
        return os.path.abspath(self.paths.sessions_root_text)

    # -- machines ------------------------------------------------------------------------------------------

    def _register_machine(self) -> None:
        """Record this machine (its sessions root and host) in the catalog once, before its rows are written."""
        if not self._machines_known:
            from sessdex.catalog.index.machines import register_machine

            register_machine(self._database(), self.sessions_root, home=os.path.abspath(self.paths.home))
            self._machines_known = True

    def other_machines(self) -> list[Any]:
        """The other machines whose rows the answers include: every one with `all_machines`, else none."""
        if not self.all_machines:
            return []
        return [row for row in self._database().fetchall("machines_all") if row["name"] != self.machine]

    def machine_folders(self, machine: Any, folders: Sequence[str], cwd: str | os.PathLike[str] | None = None) -> list[str]:
        """Where `folders` (of this machine; the project at `cwd`, if known) are on `machine`: the same place
        relative to its sessions root and, with `cwd`, the same directory relative to its home
        (sessdex.catalog.queries.machine_scope)."""
        from sessdex.catalog.queries.machine_scope import folders_on_machine

        return folders_on_machine(folders, self.sessions_root, machine_root=machine["sessions_root"],
                                  cwd=None if cwd is None else os.fspath(cwd), home=os.fspath(self.paths.home),
                                  machine_home=machine["home"])

    def machine_scopes(self, folders: Sequence[str], cwd: str | os.PathLike[str] | None = None) -> list[dict[str, str]]:
        """The project scope as statement parameters (`machine`, `dir0..dir2`): `folders` of this machine and,
        with all_machines, the same project's folders on every other machine, three folders at most a part."""
        parts = [{**_scope_params(folders), "machine": self.machine}]
        for machine in self.other_machines():
            theirs = self.machine_folders(machine, folders, cwd)
            for start in range(0, len(theirs), 3):
                parts.append({**_scope_params(theirs[start:start + 3]), "machine": machine["name"]})
        return parts

    def _rows_in_folders(self, name: str, folders: Sequence[str], params: dict[str, Any],
                         cwd: str | os.PathLike[str] | None = None) -> list[tuple[Any, ...]]:
        """Rows (INFO_COLUMNS tuples) of a listing statement over `folders` of this machine and, with all_machines,
        the same project (at `cwd`, if known) elsewhere."""
        db = self._database()
        rows: list[tuple[Any, ...]] = []
        for part in self.machine_scopes(folders, cwd):
            rows += db.fetch_tuples(name, {**params, **part})
        return rows

    def _rows_under_roots(self, name: str, params: dict[str, Any]) -> list[tuple[Any, ...]]:
        """Rows (INFO_COLUMNS tuples) of a listing statement over this machine's sessions root and, with
        all_machines, every other machine's."""
        db = self._database()
        rows = db.fetch_tuples(name, {**root_range(self.sessions_root), **params})
        for machine in self.other_machines():
            rows += db.fetch_tuples(name, {**root_range(machine["sessions_root"]), **params,
                                           "machine": machine["name"]})
        return rows

    # -- rows -> values ---------------------------------------------------------------------------------

    def messages_text(self, file_id: int) -> str:
        """Every searchable message text of a file, in file order, joined by spaces (all_messages_text)."""
        rows = self._database().fetchall("message_texts", {"file_id": file_id})
        if not rows:  # perhaps a first index left the file's content for later: then it is read from the file
            from sessdex.catalog.index.content_index import backlog_messages_text

            text = backlog_messages_text(self._database(), file_id)
            if text is not None:
                return text
        return " ".join(row["text"] for row in rows)

    def _session_info(self, row: Any) -> SessionInfo:
        from sessdex.catalog.queries.session_infos import catalog_session_info, info_columns

        return catalog_session_info(info_columns(row)(row), self.machine, self.messages_text)

    def _infos(self, rows: Sequence[tuple[Any, ...]], limit: int | None = None) -> list[SessionInfo]:
        """The SessionInfo values of INFO_COLUMNS tuples, newest first (the first `limit`)."""
        # Ties by path, as the file scan orders: mtime_ns is column 3, path column 2.
        from sessdex.catalog.queries.session_infos import catalog_session_info

        ordered = sorted(rows, key=lambda values: (-(values[3] / 1_000_000), values[2]))
        here, messages_text = self.machine, self.messages_text
        return [catalog_session_info(values, here, messages_text) for values in ordered[:limit]]

    # -- list() / list_all() ------------------------------------------------------------------------------

    def project_dirs(self, cwd: str | os.PathLike[str], session_dir: str | os.PathLike[str] | None) -> list[str]:
        """The folders `list(cwd, session_dir)` reads (as core.discovery.project_session_dirs), absolute."""
        folders = [session_dir] if session_dir is not None else self.paths.project_session_folders(cwd)
        return list(dict.fromkeys(os.path.abspath(os.fspath(folder)) for folder in folders))

    def list_sessions(self, cwd: str | os.PathLike[str], session_dir: str | os.PathLike[str] | None = None, *,
                      include_empty: bool = False, limit: int | None = None) -> list[SessionInfo]:
        """`list(cwd, session_dir)` from the catalog: the project's sessions, newest first (the first `limit`)."""
        folders = self.project_dirs(cwd, session_dir)
        report = self.refresh(Scope.of(folders))
        params = {"min_messages": 0 if include_empty else 1}
        project_cwd = cwd if session_dir is None else None
        if report.deferred:
            infos = self._infos(self._rows_in_folders("infos_in_directories", folders, params, project_cwd))
            return self._with_unindexed(infos, report, include_empty=include_empty)[:limit]
        if limit is not None and limit > 0:
            newest = self._newest_rows_in_folders(folders, params, project_cwd, limit)
            if newest is not None:
                return self._infos(newest, limit)
        return self._infos(self._rows_in_folders("infos_in_directories", folders, params, project_cwd), limit)

    def _newest_rows_in_folders(self, folders: Sequence[str], params: dict[str, Any],
                                cwd: str | os.PathLike[str] | None, limit: int) -> list[tuple[Any, ...]] | None:
        """Rows holding the `limit` newest sessions of the folders by the file scan's key (`_infos` orders them),
        with only about `limit` rows per statement read from the database; None when a tie at the cut makes
        that unsure (the caller then reads every row).

        SQL orders by the exact mtime_ns (and the database's collation of paths), the file scan by mtime in
        milliseconds as a float (then the path): a statement's rows beyond its `limit + 1` newest have an mtime
        at or below its last row's, so they rank after the `limit`-th row whenever that one's float key is
        newer than the last row's.
        """
        db = self._database()
        rows: list[Any] = []
        cut_ms: list[float] = []  # the oldest mtime (ms) of each statement that had more rows than it returned
        for part in self.machine_scopes(folders, cwd):
            for directory in _scope_directories(part):
                found = db.fetch_tuples("newest_infos_in_directory", {**params, "machine": part["machine"],
                                                                      "directory": directory,
                                                                      "limit": limit + 1, "offset": 0})
                if len(found) > limit:
                    cut_ms.append(found[-1][3] / 1_000_000)  # (mtime_ns: column 3 of INFO_COLUMNS)
                rows += found
        if cut_ms:
            last_kept_ms = sorted(row[3] / 1_000_000 for row in rows)[-limit]
            if max(cut_ms) >= last_kept_ms:
                return None
        return rows

    def list_all_sessions(self, *, include_empty: bool = False) -> list[SessionInfo]:
        """`list_all()` from the catalog: every session below the sessions root, newest first."""
        report = self.refresh(Scope.of(root=self.sessions_root))
        infos = self._infos(self._rows_under_roots("infos_under_root", {"min_messages": 0 if include_empty else 1}))
        return self._with_unindexed(infos, report, include_empty=include_empty)

    # -- --resume <id prefix> ---------------------------------------------------------------------------------

    def sessions_with_id_prefix(self, prefix: str, cwd: str | os.PathLike[str] | None,
                                session_dir: str | os.PathLike[str] | None = None) -> list[SessionInfo]:
        """Sessions (any message count) whose id starts with `prefix`: in the project, or everywhere when cwd is None."""
        if cwd is None:
            report = self.refresh(Scope.of(root=self.sessions_root), _id_range(prefix))
            params = {**_id_range(prefix), "min_messages": 0}
            reader = self._database().sqlite_reader()
            if reader is not None and not self.all_machines:
                cursor = reader.cursor()
                cursor.row_factory = None  # INFO_COLUMNS tuples, as fetch_tuples gives them
                rows = cursor.execute(SQL["infos_by_id_under_root"], {**root_range(self.sessions_root), **params,
                                                                     "machine": self.machine}).fetchall()
            else:
                rows = self._rows_under_roots("infos_by_id_under_root", params)
        else:
            folders = self.project_dirs(cwd, session_dir)
            report = self.refresh(Scope.of(folders), _id_range(prefix))
            rows = self._rows_in_folders("infos_by_id_in_directories", folders,
                                         {**_id_range(prefix), "min_messages": 0},
                                         cwd if session_dir is None else None)
        infos = self._infos([row for row in rows if row[4].startswith(prefix)])  # (session_id: column 4)
        return self._with_unindexed(infos, report, include_empty=True, id_prefix=prefix)

    def _matches_by_name(self, value: str, scope: Scope) -> list[SessionInfo] | None:
        """On a catalog that does not hold every file of `scope`: the sessions whose file name holds an id starting
        with `value`, read from the files and kept when their header's id matches (core.resume.match_session_id).
        None when the catalog holds every file of the scope, a live watcher keeps it, or other machines' sessions
        are asked for too (their files are not here): the catalog answers then."""
        from sessdex.core.resume import match_session_id

        db = self._database()
        if covered_by(read_heartbeat(db.location), scope) or self.other_machines():
            return None
        listed = scan_files(scope, with_stat=False)
        if catalog_paths(db, scope).issuperset(listed):
            return None
        marker = "_" + value  # in every path whose name's id starts with `value`: a cheap first filter
        named = [path for path in listed if marker in path and _name_id(path).startswith(value)]
        infos = sorted(_read_infos(named, include_empty=True), key=lambda info: info.modified, reverse=True)
        return match_session_id(value, infos)  # newest first, as every listing of candidates

    def find_session_by_id(self, value: str, cwd: str | os.PathLike[str],
                           session_dir: str | os.PathLike[str] | None = None) -> SessionInfo:
        """sessdex.core.resume.find_session_by_id from the catalog: this project first, then every project.

        Where the catalog is incomplete, file names are looked at first (see the module docstring)."""
        from sessdex.core.errors import SessionNotFoundError
        from sessdex.core.resume import match_session_id, single_match

        here = self._matches_by_name(value, Scope.of(self.project_dirs(cwd, session_dir)))
        if here:
            return self._reachable(single_match(value, here))
        everywhere_named: list[SessionInfo] | None = None
        if here is not None and session_dir is None:  # this project is incomplete and no name matched: names first
            everywhere_named = self._matches_by_name(value, Scope.of(root=self.sessions_root))
            if everywhere_named:
                return self._reachable(single_match(value, everywhere_named))
        local = match_session_id(value, self.sessions_with_id_prefix(value, cwd, session_dir))
        if local:
            return self._reachable(single_match(value, local))
        if session_dir is None:
            if here is None:
                everywhere_named = self._matches_by_name(value, Scope.of(root=self.sessions_root))
                if everywhere_named:
                    return self._reachable(single_match(value, everywhere_named))
            everywhere = match_session_id(value, self.sessions_with_id_prefix(value, None))
            if everywhere:
                return self._reachable(single_match(value, everywhere))
        raise SessionNotFoundError(f'Session "{value}" not found.')

    def _reachable(self, info: SessionInfo) -> SessionInfo:
        """`info` when its file can be opened here; a session only on another machine says where and how to resume it."""
        machine = getattr(info, "machine", None)
        if machine is None or machine == self.machine or os.path.isfile(info.path):
            return info
        import shlex

        from sessdex.core.errors import SessionOnOtherMachineError

        host = next((row["host"] for row in self.other_machines() if row["name"] == machine), machine)
        raise SessionOnOtherMachineError(f'Session "{info.id}" is on machine {machine}; resume it there with: '
                                         f"ssh {shlex.quote(host)} xcsh --resume {shlex.quote(str(info.path))}")

    # -- the id width of listings ---------------------------------------------------------------------------

    def watched_id_width(self) -> int | None:
        """The id width at which every session `resume` looks at (this machine's, every project's) has its own
        prefix, from the catalog's rows: the ids of their headers, and for a file whose header holds none the id
        its name holds (core.paths.session_ids_of_names). A listing of this catalog shows some of these ids.

        None unless a live watcher keeps the whole sessions root current (only then does the catalog hold every
        project's files), the catalog is SQLite, it answers for this machine only and holds no file outside the
        sessions root: the caller then reads the file names.
        """
        reader = self._database().sqlite_reader()
        if reader is None or self.all_machines:
            return None
        if not covered_by(read_heartbeat(self.location), Scope.of(root=self.sessions_root)):
            return None
        from sessdex.catalog.index.id_width import watched_id_width  # kept current by that watcher

        return watched_id_width(reader, self.machine, self.sessions_root)

    # -- recent sessions / newest session -------------------------------------------------------------------

    def recent_sessions_in(self, directories: Iterable[str | os.PathLike[str]],
                           limit: int | None = None, *, now_ms: float | None = None) -> list[Any]:
        """sessdex.core.discovery.recent_sessions_in from the catalog: the newest sessions by mtime, from their first 4 KB
        (None: DEFAULT_RECENT_LIMIT)."""
        from sessdex.core.discovery import DEFAULT_RECENT_LIMIT, RecentSessionInfo
        from sessdex.core.summary import SessionSummary

        if limit is None:
            limit = DEFAULT_RECENT_LIMIT
        rows = self._recent_rows(directories, limit)
        if rows is None:
            from sessdex.core.discovery import recent_sessions_in

            return recent_sessions_in(directories, limit, now_ms=now_ms)
        return [RecentSessionInfo(path_from_text(row["path"]), row["mtime_ns"] / 1_000_000,
                                  SessionSummary.from_state(_json_loads(row["prefix_state"])), now_ms)
                for row in rows]

    def _recent_rows(self, directories: Iterable[str | os.PathLike[str]], limit: int) -> list[Any] | None:
        """The rows of the newest files with a valid header in `directories`, newest first (at most `limit`); None
        when another process is indexing files of theirs (the caller then reads the newest files' heads, as the
        file scan does)."""
        folders = list(dict.fromkeys(os.path.abspath(os.fspath(folder)) for folder in directories))
        if not folders or limit <= 0:
            return []
        if self.refresh(Scope.of(folders)).deferred:
            return None
        rows: list[Any] = []
        for folder in folders:
            params = {"directory": path_to_text(folder), "limit": limit, "offset": 0}
            rows += self._database().fetchall("recent_in_directory", params)
        rows.sort(key=_newest_first_key)
        return rows[:limit]

    def most_recent_session_in(self, directories: Iterable[str | os.PathLike[str]]) -> Path | None:
        """sessdex.core.discovery.most_recent_session_in from the catalog: the newest file with a valid header."""
        found = self.most_recent_session_file(directories)
        return None if found is None else as_path(found)

    def most_recent_session_file(self, directories: Iterable[str | os.PathLike[str]]) -> str | None:
        """`most_recent_session_in` as a string (no pathlib, no stored state decoded: `sessdex continue`)."""
        rows = self._recent_rows(directories, 1)
        if rows is None:
            from sessdex.core.discovery import most_recent_session_in

            found = most_recent_session_in(directories)
            return None if found is None else os.fspath(found)
        return path_from_text(rows[0]["path"]) if rows else None

    # -- search -----------------------------------------------------------------------------------------

    def search(self, text: str, cwd: str | os.PathLike[str] | None = None,
               session_dir: str | os.PathLike[str] | None = None, *, limit: int = SEARCH_SESSION_LIMIT,
               highlight: tuple[str, str] = ("[", "]"), snippet_tokens: int = 12,
               check_freshness: bool = True, substring_fallback: bool = False) -> list[SearchHit]:
        """Sessions whose title, first message or any message text matches `text`, best first.

        Scoped to the project of `cwd` (or `session_dir`), or to every project when `cwd` is None (and to
        every machine with all_machines). The text is quoted word by word, so no input is a syntax error.
        SQLite (FTS5) and PostgreSQL (tsvector) catalogs. `check_freshness=False` skips the freshness pass
        (the picker searches as you type, over rows it loaded, freshly, when it opened). With
        `substring_fallback`, a search full text answers with nothing is retried with every word as a
        substring (sessdex.catalog.queries.substring_search).
        """
        db = self._database()
        if db.sqlite_reader() is None and db.dialect != "postgresql":
            raise CatalogError("full-text search needs a SQLite or PostgreSQL catalog")
        from sessdex.core.text import bounded_query

        text = bounded_query(text)[0]  # any length answers in bounded time; lone surrogates become U+FFFD
        query = fts_query(text)
        if query is None or limit <= 0:
            return []
        scopes = self._search_scopes(cwd, session_dir, check_freshness)
        reader = db.sqlite_reader()
        if reader is not None:
            found = self._search_sqlite(reader, query, scopes, limit, snippet_tokens)
        else:
            from sessdex.catalog.queries.postgres_search import search_postgres, word_runs

            found = search_postgres(db, word_runs(text.translate(_CONTROL_TO_SPACE)), scopes, limit,
                                    (_MATCH_OPEN, _MATCH_CLOSE), snippet_tokens)
        if not found and substring_fallback:
            found = self._search_substrings(text, scopes, limit)
        found = found[:limit]
        if reader is not None:
            infos = {row["id"]: row for row in reader.execute(
                _INFOS_BY_ID_SQL.format(placeholders=", ".join("?" * len(found))), [hit[0] for hit in found])}
        elif found and hasattr(db, "fetch_sql"):  # PostgreSQL: every hit's row in one statement
            infos = {row["id"]: row for row in db.fetch_sql(
                _INFOS_BY_ID_SQL.format(placeholders=", ".join(f":id{index}" for index in range(len(found)))),
                {f"id{index}": hit[0] for index, hit in enumerate(found)})}
        else:
            infos = {hit[0]: rows[0] for hit in found if (rows := db.fetchall("file_by_id", {"file_id": hit[0]}))}
        hits = []
        for file_id, field, snippet, score in found:
            info_row = infos.get(file_id)
            if info_row is not None:
                marked = (snippet or "").replace(_MATCH_OPEN, highlight[0]).replace(_MATCH_CLOSE, highlight[1])
                hits.append(SearchHit(self._session_info(info_row), field, marked, score))
        return hits

    def _search_substrings(self, text: str, scopes: list[tuple[str, dict[str, Any]]],
                           limit: int) -> list[tuple[int, str, str, float]]:
        from sessdex.catalog.queries import source
        from sessdex.catalog.queries.substring_search import substring_matches

        db = self._database()
        terms = source.content_terms(text.translate(_CONTROL_TO_SPACE))
        if not terms:
            return []

        def run(sql: str, params: dict[str, Any]) -> list[Any]:
            reader = db.sqlite_reader()
            if reader is not None:
                return reader.execute(sql, params).fetchall()
            if hasattr(db, "fetch_sql"):  # PostgreSQL through psycopg
                return db.fetch_sql(sql, params)
            from sqlalchemy import text as sql_text

            return db.fetch_statement(sql_text(sql), params)  # type: ignore[attr-defined]

        def snippet_of(found_in: str, words: Sequence[str]) -> str:
            marked = source.substring_snippet(found_in, found_in.lower(), list(words))
            return marked.replace(source.MATCH_OPEN, _MATCH_OPEN).replace(source.MATCH_CLOSE, _MATCH_CLOSE)

        return substring_matches(run, db.dialect, terms, scopes, limit, snippet_of)

    def _search_scopes(self, cwd: str | os.PathLike[str] | None, session_dir: str | os.PathLike[str] | None,
                       check_freshness: bool = True) -> list[tuple[str, dict[str, Any]]]:
        """(kind, parameters) of each part of a search's scope: this machine's, then each other machine's."""
        if cwd is None:
            if check_freshness:
                self.refresh(Scope.of(root=self.sessions_root))
            scopes = [("root", {**root_range(self.sessions_root), "machine": self.machine})]
            for machine in self.other_machines():
                scopes.append(("root", {**root_range(machine["sessions_root"]), "machine": machine["name"]}))
            return scopes
        folders = self.project_dirs(cwd, session_dir)
        if check_freshness:
            self.refresh(Scope.of(folders))
        return [("directories", part)
                for part in self.machine_scopes(folders[:3], cwd if session_dir is None else None)]

    def _search_sqlite(self, reader: sqlite3.Connection, query: str, scopes: list[tuple[str, dict[str, Any]]],
                       limit: int, snippet_tokens: int) -> list[tuple[int, str, str, float]]:
        """FTS5 matches over `scopes`, best per session, title/first-message matches first, each best first.

        Ranks first (bounded by `limit` sessions whatever the number of matches), then cuts snippets for
        the sessions shown only.
        """
        # A common word walks much of the index: read through SQLite's small page cache rather than the
        # memory map, whose touched pages would all count in this process's resident memory.
        from sessdex.catalog.store import fts  # search only: the listings never use it

        reader.execute("PRAGMA mmap_size = 0")
        self._fill_content_index(text=True)
        ranked: dict[int, tuple[str, int, float]] = {}  # file id -> (kind, FTS rowid, score), best first
        session_rows: list[Any] = []
        for kind, scope_params in scopes:
            if kind == "root":
                session_rows += _best_sessions_in_scope(reader, query, fts.SCOPE_ROOT, scope_params, limit)
            else:
                session_rows += reader.execute(fts.SEARCH_SESSIONS.format(scope=fts.SCOPE_DIRECTORIES),
                                               {"query": query, "rows": limit, **scope_params}).fetchall()
        for row in sorted(session_rows, key=lambda row: row["score"])[:limit]:
            ranked[row["file_id"]] = ("session", row["file_id"], row["score"])
        if len(ranked) < limit:
            message_rows: list[Any] = []
            for kind, scope_params in scopes:
                scope_sql = fts.SCOPE_ROOT if kind == "root" else fts.SCOPE_DIRECTORIES
                message_rows += reader.execute(fts.SEARCH_MESSAGES.format(scope=scope_sql),
                                               {"query": query, "rows": limit + len(ranked), **scope_params}).fetchall()
            for row in sorted(message_rows, key=lambda row: row["score"]):
                if len(ranked) < limit:
                    ranked.setdefault(row["file_id"], ("message", row["message_id"], row["score"]))
        marks = (_MATCH_OPEN, _MATCH_CLOSE, snippet_tokens)
        session_ids = [rowid for kind, rowid, _score in ranked.values() if kind == "session"]
        message_ids = [rowid for kind, rowid, _score in ranked.values() if kind == "message"]
        session_snippets = {row["id"]: row for row in _snippets(reader, fts.SNIPPETS_OF_SESSIONS, (*marks, *marks),
                                                                 query, session_ids)}
        message_snippets = {row["id"]: row["snippet"] for row in _snippets(reader, fts.SNIPPETS_OF_MESSAGES, marks,
                                                                           query, message_ids)}
        found = []
        for file_id, (kind, rowid, score) in ranked.items():
            if kind == "session":
                snippets = session_snippets.get(rowid)
                in_title = snippets is not None and _MATCH_OPEN in (snippets["title_snippet"] or "")
                field = "title" if in_title else "first_message"
                snippet = (snippets["title_snippet"] if in_title else snippets["first_snippet"]) if snippets else ""
            else:
                field, snippet = "message", message_snippets.get(rowid, "")
            found.append((file_id, field, snippet or "", score))
        return found

    def _fill_content_index(self, *, text: bool) -> None:
        """Spend up to SEARCH_FILL_SECONDS on the content a first index left for later (files read again for
        their message rows and usage facts); with `text` (a search), then complete the message-text index if
        only that is left: its rows are in the catalog already, and copying them into the full-text index is
        what a search needs to answer exactly as it will once the index is complete.

        At least one chunk is indexed, so a small backlog is always completed. A catalog that cannot be
        written to (read-only file, a busy writer) is searched as it is: `content_index_progress` says how far.
        """
        if not self._content_incomplete(text=text):
            return
        from sessdex.catalog.index import pass_progress
        from sessdex.catalog.index.content_index import content_backlog, fill_content_index, fill_message_text

        db = self._database()
        try:
            if fill_content_index(db, deadline=time.monotonic() + SEARCH_FILL_SECONDS) or not text:
                return
            backlog = content_backlog(db)
            if backlog is None or backlog.unit != "messages":
                return  # files are still to be read: searched as they are, and said so
            done = [backlog.done]
            with pass_progress.reporting("Indexing message text", backlog.total - backlog.done) as advance:

                def report(progress: ContentProgress) -> None:
                    if advance is not None:
                        advance(progress.done - done[0])
                    done[0] = progress.done

                fill_message_text(db, progress=report)
        except sqlite3.Error:
            pass

    def marks(self) -> dict[str, Any]:
        """Every machine's marks, this machine's marks file indexed first if it changed (one stat when not)."""
        from sessdex.catalog.index.marks_index import fresh_marks

        return fresh_marks(self._database(), self.paths)

    def content_index_progress(self, *, text: bool = True) -> ContentProgress | None:
        """How far the content index (message text, usage facts) is while it is still being filled, else None.
        `text=False` (usage): only the files whose usage facts are still to be read count."""
        if not self._content_incomplete(text=text):
            return None
        from sessdex.catalog.index.content_index import content_backlog

        return content_backlog(self._database(), text=text)

    def _content_incomplete(self, *, text: bool = True) -> bool:
        """Whether a first index left content for later (catalog.index.content_index), asked without importing it:
        `usage` and `search` ask on every run. `text=False`: files still to be read (not message text only)."""
        from sessdex.catalog.store import fts

        reader = self._database().sqlite_reader()
        keys = (fts.BACKLOG_KEY, fts.FILES_BACKLOG_KEY) if text else (fts.FILES_BACKLOG_KEY, fts.FILES_BACKLOG_KEY)
        return reader is not None and reader.execute(
            "SELECT 1 FROM catalog_meta WHERE key IN (?, ?)", keys).fetchone() is not None

    # -- the picker --------------------------------------------------------------------------------------

    def check_freshness_once(self) -> None:
        """From now on run the freshness pass at most once per scope: a picker reads one snapshot."""
        verified: set[Scope] = set()

        def fresh_once(db: CatalogDatabase, scope: Scope) -> ReconcileReport:
            if scope in verified:
                return ReconcileReport()
            report = ensure_fresh(db, scope)
            verified.add(scope)
            return report

        self._fresh = fresh_once

    def _picker_scope(self, cwd: str, session_dir: str | os.PathLike[str] | None, all_projects: bool) -> Scope:
        if all_projects:
            return Scope.of(root=self.sessions_root)
        return Scope.of(self.project_dirs(cwd, session_dir))

    def picker_rows(self, cwd: str, session_dir: str | os.PathLike[str] | None, *,
                    all_projects: bool) -> list[PickerRow]:
        """The scope's listable sessions (valid header, at least one message) as the catalog holds them.

        On SQLite this is one lean query without a freshness pass: only the picker's columns and the start
        of the first message, ordered as the file scan orders them, built straight into tuples (several
        times faster at 10,000 sessions than full SessionInfo values). Other databases list the sessions.
        """
        # The picker's vocabulary is imported here, not at the top: the fast path never shows a picker.
        from sessdex.catalog.queries.source import PICKER_FIRST_MESSAGE_CHARS, PickerRow

        reader = self._database().sqlite_reader()
        with self._widened(all_projects):
            if reader is None or self.other_machines():
                infos = self.list_all_sessions() if all_projects else self.list_sessions(cwd, session_dir)
                return [PickerRow.from_info(info) for info in infos]
        where, params = self._picker_where(cwd, session_dir, all_projects)
        return _picker_rows(reader.execute(_PICKER_ROWS_SQL.format(where=where),
                                           (PICKER_FIRST_MESSAGE_CHARS, self.machine, *params)))

    def picker_first_screen(self, cwd: str, session_dir: str | os.PathLike[str] | None, *, all_projects: bool,
                            limit: int) -> tuple[list[PickerRow], int, int] | None:
        """The first `limit` rows of `picker_rows`, how many rows it holds and the id prefix length that tells their
        ids apart: what the picker's first frame shows, read without reading every row. None where `picker_rows`
        would not read SQLite directly.

        Every project's count and width are those the watcher keeps (sessdex.catalog.index.id_width) when nothing
        was indexed since, else read from the ids (an index alone); one project's from its ids."""
        from sessdex.catalog.index.id_width import every_project_figures, joined_ids, stored_every_project_figures
        from sessdex.core.discovery import id_prefix_length

        reader = self._database().sqlite_reader()
        with self._widened(all_projects):
            if reader is None or self.other_machines():
                return None
        where, params = self._picker_where(cwd, session_dir, all_projects)
        rows = _picker_rows(self._newest_picker_rows(reader, _UNDER_ROOT_NEWEST_SQL if where == _UNDER_ROOT_SQL
                                                     else where, params, limit))
        if all_projects:
            count, width = (stored_every_project_figures(reader, self.machine)
                            or every_project_figures(reader, self.machine, self.sessions_root))
            return rows, count, width
        ids = joined_ids(reader, _PICKER_JOINED_IDS_SQL.format(where=where), _PICKER_IDS_SQL.format(where=where),
                         (self.machine, *params))
        return rows, len(ids), id_prefix_length(ids)

    def _newest_picker_rows(self, reader: sqlite3.Connection, where: str, params: tuple[str, ...],
                            limit: int) -> list[tuple[Any, ...]]:
        """The first `limit` rows of _PICKER_ROWS_SQL read from an index on mtime up to the last one, with the rows
        sharing its mtime (ordered by path among themselves as the full query orders them)."""
        from sessdex.catalog.queries.source import PICKER_FIRST_MESSAGE_CHARS

        found = reader.execute(_PICKER_NEWEST_SQL.format(where=where),
                               (PICKER_FIRST_MESSAGE_CHARS, self.machine, *params, limit)).fetchall()
        if found and len(found) == limit:
            last = found[-1][6]
            found = [row for row in found if row[6] != last] + reader.execute(
                _PICKER_SAME_MTIME_SQL.format(where=where), (PICKER_FIRST_MESSAGE_CHARS, self.machine, *params, last)
            ).fetchall()
        found.sort(key=lambda row: (-row[6], row[0]))
        return found[:limit]

    def _picker_where(self, cwd: str, session_dir: str | os.PathLike[str] | None,
                      all_projects: bool) -> tuple[str, tuple[str, ...]]:
        if all_projects:
            prefix = self.sessions_root.rstrip("/") + "/"
            return _UNDER_ROOT_SQL, (prefix, prefix + ID_PREFIX_CEILING)
        folders = self.project_dirs(cwd, session_dir)
        return _IN_FOLDERS_SQL.format(marks=", ".join("?" * len(folders))), tuple(folders)

    @contextlib.contextmanager
    def _widened(self, all_projects: bool) -> Iterator[None]:
        """Inside the block, the picker's "all" scope holds every machine's sessions (its scope key widens to
        them); the project scope holds what --machines says."""
        previous = self.all_machines
        self.all_machines = previous or all_projects
        try:
            yield
        finally:
            self.all_machines = previous

    def bring_up_to_date(self, cwd: str, session_dir: str | os.PathLike[str] | None, *, all_projects: bool) -> bool:
        """Run the freshness pass for the scope; True when it changed the catalog."""
        return not self.refresh(self._picker_scope(cwd, session_dir, all_projects)).up_to_date

    def content_matches(self, query: str, cwd: str, session_dir: str | os.PathLike[str] | None, *,
                        all_projects: bool) -> dict[str, str]:
        """Up to CONTENT_MATCH_LIMIT sessions whose title, first message or a message matches every word (FTS5)."""
        from sessdex.catalog.queries.source import (
            CONTENT_MATCH_LIMIT,
            MATCH_CLOSE,
            MATCH_OPEN,
            SNIPPET_TOKENS,
            one_line,
        )

        with self._widened(all_projects):
            hits = self.search(query, None if all_projects else cwd, session_dir, limit=CONTENT_MATCH_LIMIT,
                               highlight=(MATCH_OPEN, MATCH_CLOSE), snippet_tokens=SNIPPET_TOKENS,
                               check_freshness=False)  # the picker searches as you type, over rows loaded fresh
        return {str(hit.session.path): one_line(hit.snippet) for hit in hits}

    # -- usage ------------------------------------------------------------------------------------------

    def usage_report(self, kind: ReportKind, cwd: str | os.PathLike[str], *, all_projects: bool,
                     days: DateRange) -> UsageReport:
        """`sessdex usage KIND` from the catalog's rollup: this project's sessions, or every project's (of this
        machine, or of every machine with all_machines)."""
        from sessdex.catalog.queries.usage import catalog_usage_report

        scope_name, parts = self._usage_scope(cwd, all_projects)
        return catalog_usage_report(self._database(), kind, scope_name, parts, days)

    def session_usage(self, cwd: str | os.PathLike[str], *, all_projects: bool) -> SessionUsage | None:
        """The session report over every day from the rows the indexer keeps ahead (`usage_sessions`), made fresh
        as `usage_report` does; None when the catalog holds files outside the sessions root (see there)."""
        from sessdex.catalog.queries.usage import catalog_session_usage

        scope_name, parts = self._usage_scope(cwd, all_projects)
        return catalog_session_usage(self._database(), scope_name, parts)

    def remote_file_usage(self, info: SessionInfo) -> FileUsage | None:
        """Another machine's session (`info` from this catalog) with its counted usage facts as the catalog holds
        them (its fork copies already left out, by the rule of its own machine); None for one of this machine."""
        from sessdex.core.summary import NO_MESSAGES
        from sessdex.core.usage import FileUsage, UsageFact

        file_id = getattr(info, "file_id", None)
        if not getattr(info, "remote", False) or file_id is None:
            return None
        facts = [UsageFact._make((*values[:-1], int(values[-1])))  # (a server may give nano-dollars as a Decimal)
                 for values in self._database().fetch_tuples("counted_usage_facts_of_file", {"file_id": file_id})]
        path = info.path_text
        return FileUsage(path, os.path.dirname(path), info.id, info.cwd, info.title,
                         None if info.first_message == NO_MESSAGES else info.first_message, None, facts,
                         machine=getattr(info, "machine", None))

    def timed_usage_facts(self, since_ms: int | None) -> list[tuple[Any, str]]:
        """The 5-hour blocks' facts of every project (of this machine, or of every machine with all_machines),
        from the catalog made fresh as for `usage --all` (`catalog.queries.usage.catalog_timed_facts`)."""
        from sessdex.catalog.queries.usage import catalog_timed_facts

        _scope_name, parts = self._usage_scope(self.sessions_root, True)
        return catalog_timed_facts(self._database(), parts, since_ms)

    def _usage_scope(self, cwd: str | os.PathLike[str], all_projects: bool) -> tuple[str, list[dict[str, str]]]:
        """A usage report's scope, made fresh: ("under_root", every project's root on each machine) or
        ("in_directories", the project's folders); its content index filled a little first (a first index's
        usage facts: content_index_progress says how far)."""
        if all_projects:
            self.refresh(Scope.of(root=self.sessions_root))
            scope_name, parts = "under_root", [{**root_range(self.sessions_root), "machine": self.machine}]
            parts += [{**root_range(machine["sessions_root"]), "machine": machine["name"]}
                      for machine in self.other_machines()]
        else:
            folders = self.project_dirs(cwd, None)
            self.refresh(Scope.of(folders))
            scope_name, parts = "in_directories", self.machine_scopes(folders, cwd)
        self._fill_content_index(text=False)
        return scope_name, parts


def open_catalog(agent_dir: str | os.PathLike[str] | None = None, catalog: str | None = None) -> Catalog:
    """Open the catalog of an agent dir (default: the agent's own) for library use, creating or upgrading it.

    `catalog` is what `--catalog` takes: a file path or a SQLAlchemy URL; by default `$SESSDEX_CATALOG`,
    else `<agent dir>/catalog.db`.
    """
    return Catalog.from_settings(Settings.resolve(agent_dir, catalog))

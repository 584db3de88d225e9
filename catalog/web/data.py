"""What the pages of `sessdex serve` show, asked of the one catalog the CLI reads.

Listings and search go through `sessdex.catalog.queries.sessions.Catalog` (the catalog's full-text search with
snippets, the project listings), usage through its `usage_report` (the computation `sessdex usage --json`
prints), transcripts through the export's `load_transcript`, prompt history through the history search of
`sessdex history search`. Nothing here writes a session file.

Freshness: a request never waits for a stat pass over every file. A background thread brings the whole catalog
up to date every FRESH_SECONDS (by stat, as every read command does, and not at all while a `sessdex watch`
heartbeat says the watcher keeps it current), so the pages are at most that far behind the files. `sessdex serve`
starts the watcher as the read commands do (catalog.index.autostart), so the pass is then one stat of the
heartbeat: a stat pass over 10,000 files takes some 200 ms of the interpreter the requests need.
The requests' connection is shared by the server's worker threads, one request at a time (a lock): the app is
for one person, and SQLite answers each page in milliseconds. The background pass has a connection of its own.
"""

from __future__ import annotations

import dataclasses
import os
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import orjson

from sessdex.catalog.export.transcript import EntryStream, Transcript, load_transcript
from sessdex.catalog.history.search import HISTORY_DB_NAME, HistoryEntry, search_history_file
from sessdex.catalog.index.reconcile import ReconcileReport, Scope
from sessdex.catalog.queries.git_repo import repository_dirs, under_any
from sessdex.catalog.queries.naming import display_name
from sessdex.catalog.queries.sessions import Catalog, SearchHit
from sessdex.catalog.secrets import redact, redact_value
from sessdex.catalog.store.settings import Settings
from sessdex.core.context import build_session_context
from sessdex.core.marks import marks_match
from sessdex.core.runtime import SessionRuntime
from sessdex.core.summary import SessionInfo
from sessdex.core.usage import UsageReport, model_name
from sessdex.core.usage_terms import DateRange, ReportKind

if TYPE_CHECKING:
    from sessdex.catalog.store.db import CatalogDatabase

FRESH_SECONDS = 2.0
# How long one background pass may spend on the message-text index a first index left unfinished (the lock is
# held meanwhile, so a request waits at most this long).
FILL_SECONDS = 0.3
SESSIONS_PER_PAGE = 50
# A search shows this many sessions at first (what search as you type renders on every keystroke), up to
# MAX_SEARCH_RESULTS when the reader asks for more.
SEARCH_RESULTS = 20
MAX_SEARCH_RESULTS = 200
# A search is asked for this many sessions, so that filters applied to the hits still leave a full page.
SEARCH_CANDIDATES = 200
TRANSCRIPTS_KEPT = 4
# The transcript's first screen: this many entries rendered with the page, the rest fetched as the reader scrolls.
ENTRIES_PER_CHUNK = 150
# ...and at most about this many bytes of entries (as JSON; at least one entry): detecting secrets in them is what a
# chunk costs, so a session of huge tool outputs shows a few entries at once rather than a hundred megabytes.
CHUNK_BYTES = 200_000
MATCH_OPEN, MATCH_CLOSE = "\ue000", "\ue001"  # around matched words in snippets (never in session text shown)
SORTS = {"date": "modified", "cost": "cost", "messages": "message_count"}
# The projects page's sort keys: Project attributes.
PROJECT_SORTS = {"date": "last_modified_ms", "sessions": "sessions", "cost": "cost", "messages": "messages",
                 "name": "cwd"}
PROJECTS_PER_PAGE = 100


@dataclass(slots=True)
class Project:
    """One project (a working directory) with its sessions' count, summed cost and last activity."""

    cwd: str
    sessions: int = 0
    cost: float = 0.0
    messages: int = 0
    last_modified_ms: float = 0.0

    @property
    def last_modified(self) -> datetime:
        return datetime.fromtimestamp(self.last_modified_ms / 1000, UTC)


@dataclass(slots=True)
class ProjectPage:
    """One page of the projects, in the order asked for."""

    projects: list[Project]
    page: int
    pages: int
    total: int


@dataclass(slots=True)
class SessionPage:
    """One page of a project's sessions, in the order asked for."""

    sessions: list[SessionInfo]
    page: int
    pages: int
    total: int


@dataclass(slots=True)
class SearchFilters:
    """What a search is narrowed to: a project (cwd), a git repository (a folder inside it), a machine, local
    days of last activity (inclusive, YYYY-MM-DD), a model the session used (named as the usage reports name it:
    `sessdex.core.usage.model_name`), and marks: pinned, starred, a tag."""

    project: str | None = None
    repo: str | None = None
    machine: str | None = None
    since: str | None = None
    until: str | None = None
    model: str | None = None
    pinned: bool = False
    starred: bool = False
    tag: str | None = None

    @property
    def narrowed(self) -> bool:
        """Whether anything beyond the project narrows the hits (they are then filtered after the search)."""
        return bool(self.repo or self.machine or self.since or self.until or self.model or self.pinned
                    or self.starred or self.tag)

    @property
    def shown(self) -> bool:
        """Whether any filter is set (the page opens its filters then)."""
        return bool(self.project) or self.narrowed


def session_name(info: SessionInfo) -> str:
    """The one display name of every command: title, else first message, else id, else file name."""
    return display_name(info.title, info.first_message, info.message_count, info.id, info.path_text)


def leaves(transcript: Transcript) -> list[dict[str, Any]]:
    """The entries no other entry continues (each ends a branch), in file order; only those are read from the file."""
    parents = set(transcript.parent_ids)
    assert transcript.entry_at is not None
    return [transcript.entry_at(index) for index, entry_id in enumerate(transcript.ids)
            if isinstance(entry_id, str) and entry_id not in parents]


def context_entries(transcript: Transcript) -> list[dict[str, Any]]:
    """What the model sees at the transcript's leaf (as the agent builds its context), as message entries for the
    export's renderer."""
    context = build_session_context(list(transcript.entries), transcript.leaf_id)
    entries = []
    for number, message in enumerate(context["messages"]):
        if message.get("role") in ("compactionSummary", "branchSummary") and isinstance(message.get("summary"), str):
            message = {**message, "content": [{"type": "text", "text": message["summary"]}]}  # the text it reads
        entries.append({"type": "message", "id": f"context-{number}", "message": message})
    return entries


class WebCatalog:
    """The catalog as the pages read it: one shared connection behind a lock, kept fresh by a background pass."""

    def __init__(self, settings: Settings, *, redact: bool = True, fresh_seconds: float = FRESH_SECONDS,
                 start_watcher: bool = False) -> None:
        self.settings = settings
        # Whether each pass first makes sure a watcher runs (as the read commands do; see index.autostart): its
        # heartbeat then lets the pass skip the stat of every file, work that would otherwise share this
        # process's interpreter with the requests every FRESH_SECONDS.
        self.start_watcher = start_watcher
        self.redact = redact
        self.fresh_seconds = fresh_seconds
        self.lock = threading.RLock()
        # Requests skip the freshness pass: the background thread makes it, on its own connection (`_writer`).
        self.catalog = Catalog.from_settings(settings, fresh=_no_pass)
        self._writer: Catalog | None = None
        self._refresh_lock = threading.Lock()
        self.runtime = SessionRuntime(paths=settings.paths)
        self._transcripts: OrderedDict[tuple[Any, ...], Transcript] = OrderedDict()
        # Figures derived from the whole catalog (the models, who used them), kept until the catalog changes.
        self._derived: dict[str, tuple[Any, Any]] = {}
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.refresh()

    # -- freshness ---------------------------------------------------------------------------------------

    def refresh(self) -> None:
        """One freshness pass over every project of this machine (skipped while a watcher keeps it current), then
        a little more of the message-text index a first index left for later (as `sessdex index` completes it).

        It runs on a connection of its own, so requests (reading through theirs) never wait for it."""
        with self._refresh_lock:
            if self._writer is None:
                self._writer = Catalog.from_settings(self.settings)
            writer = self._writer
            if self.start_watcher:
                from sessdex.catalog.index.autostart import ensure_watcher

                ensure_watcher(writer.location, writer.sessions_root, writer.paths.agent_dir_text, writer.machine)
            writer.refresh(Scope.of(root=writer.sessions_root))
            if writer.db is not None and writer.content_index_progress() is not None:
                from sessdex.catalog.index.content_index import fill_content_index

                fill_content_index(writer.db, deadline=time.monotonic() + FILL_SECONDS)

    def start(self) -> None:
        """Start the background freshness pass (every `fresh_seconds`)."""
        if self._thread is None:
            self._stop.clear()
            self._thread = threading.Thread(target=self._keep_fresh, name="sessdex-serve-fresh", daemon=True)
            self._thread.start()

    def stop(self) -> None:
        """Stop the background pass and close the catalog."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
            self._thread = None
        with self.lock:
            self.catalog.close()
        with self._refresh_lock:
            if self._writer is not None:
                self._writer.close()
                self._writer = None

    def _keep_fresh(self) -> None:
        while not self._stop.wait(self.fresh_seconds):
            try:
                self.refresh()
            except Exception:  # a busy or vanished catalog: the next pass tries again, the pages keep answering
                continue

    # -- listings ------------------------------------------------------------------------------------------

    def projects(self) -> list[Project]:
        """Every project with a listable session, most recently active first."""
        with self.lock:
            rows = self.catalog.picker_rows("", None, all_projects=True)
        found: dict[str, Project] = {}
        for row in rows:
            project = found.setdefault(row.cwd, Project(row.cwd))
            project.sessions += 1
            project.cost += row.cost
            project.messages += row.message_count
            project.last_modified_ms = max(project.last_modified_ms, row.modified_ms)
        return sorted(found.values(), key=lambda item: (-item.last_modified_ms, item.cwd))

    def project_page(self, *, sort: str = "date", descending: bool = True, page: int = 1,
                     per_page: int = PROJECTS_PER_PAGE) -> ProjectPage:
        """The projects sorted by last activity (default), session count, cost, messages or folder name, one page."""
        projects = self.projects()
        attribute = PROJECT_SORTS.get(sort, "last_modified_ms")
        projects.sort(key=lambda item: (getattr(item, attribute), item.cwd), reverse=descending)
        pages = max(1, -(-len(projects) // per_page))
        page = min(max(1, page), pages)
        start = (page - 1) * per_page
        return ProjectPage(projects[start:start + per_page], page, pages, len(projects))

    def project_sessions(self, cwd: str, *, sort: str = "date", descending: bool = True, page: int = 1,
                         per_page: int = SESSIONS_PER_PAGE) -> SessionPage:
        """The project's sessions sorted by date (default), cost or messages, one page of them."""
        with self.lock:
            sessions = self.catalog.list_sessions(cwd)
        attribute = SORTS.get(sort, "modified")
        sessions.sort(key=lambda info: (getattr(info, attribute), info.modified), reverse=descending)
        pages = max(1, -(-len(sessions) // per_page))
        page = min(max(1, page), pages)
        start = (page - 1) * per_page
        return SessionPage(sessions[start:start + per_page], page, pages, len(sessions))

    def session(self, session_id: str) -> SessionInfo | None:
        """The session with exactly this id (any project of this machine's catalog), or None."""
        if not session_id:
            return None
        with self.lock:
            found = self.catalog.sessions_with_id_prefix(session_id, None)
        return next((info for info in found if info.id == session_id), None)

    # -- search --------------------------------------------------------------------------------------------

    def search(self, text: str, filters: SearchFilters | None = None, limit: int = SEARCH_RESULTS) -> list[SearchHit]:
        """The catalog's full-text search (titles, first messages, message text) with snippets, best first; the
        matched words are between MATCH_OPEN and MATCH_CLOSE."""
        filters = filters or SearchFilters()
        with self.lock:
            hits = self.catalog.search(text, filters.project or None,
                                       limit=max(SEARCH_CANDIDATES, 4 * limit) if filters.narrowed else limit,
                                       highlight=(MATCH_OPEN, MATCH_CLOSE), snippet_tokens=16,
                                       check_freshness=False)
            marks = self.catalog.marks() if filters.pinned or filters.starred or filters.tag else {}
        with_model = self.sessions_with_model(filters.model) if filters.model else None
        roots = repository_dirs(filters.repo) if filters.repo else None
        kept = []
        for hit in hits:
            info = hit.session
            if not marks_match(marks.get(info.id), pinned=filters.pinned, starred=filters.starred,
                               tags=(filters.tag,) if filters.tag else ()):
                continue
            if with_model is not None and info.path_text not in with_model:
                continue
            day = info.modified.astimezone().date().isoformat()
            if filters.since and day < filters.since or filters.until and day > filters.until:
                continue
            if filters.machine and (getattr(info, "machine", None) or self.catalog.machine) != filters.machine:
                continue
            if filters.repo is not None and not under_any(info.cwd, roots or [os.path.abspath(filters.repo)]):
                continue
            kept.append(hit)
        return kept[:limit]

    def _catalog_state(self) -> Any:
        """What changes whenever the catalog's rows do: SQLite's data_version of the requests' connection (another
        connection's commit, the background pass's or a watcher's, changes it); on PostgreSQL, the time, by
        freshness period."""
        with self.lock:
            reader = self.catalog.db.sqlite_reader() if self.catalog.db is not None else None
            if reader is not None:
                return reader.execute("PRAGMA data_version").fetchone()[0]
        return int(time.monotonic() // self.fresh_seconds)

    def _derived_value(self, name: str, compute: Callable[[], Any]) -> Any:
        """`compute()`, remembered under `name` until the catalog changes."""
        state = self._catalog_state()
        found = self._derived.get(name)
        if found is not None and found[0] == state:
            return found[1]
        value = compute()
        self._derived[name] = (state, value)
        return value

    def sessions_with_model(self, model: str) -> set[str]:
        """The paths of the sessions with a reply by `model`: the usage report per session (every project), the
        one computation of `sessdex usage session --all`, made once per change of the catalog."""
        def by_model() -> dict[str, set[str]]:
            found: dict[str, set[str]] = {}
            for row in self.usage("session", None, DateRange(None, None)).rows:
                if row.session:
                    for name in row.models:
                        found.setdefault(model_name(name), set()).add(str(row.session["path"]))
            return found

        return self._derived_value("sessions by model", by_model).get(model, set())

    def models(self) -> list[str]:
        """Every model with a reply in the catalog (by `model_name`), the most used (by cost) first."""
        return self._derived_value("models", lambda: list(dict.fromkeys(model_name(row.key) for row in self.usage(
            "model", None, DateRange(None, None)).rows)))

    def tags(self) -> list[str]:
        """Every tag a session carries, sorted."""
        with self.lock:
            marks = self.catalog.marks()
        return sorted({tag for found in marks.values() for tag in found.tags})

    def content_progress(self) -> Any:
        with self.lock:
            return self.catalog.content_index_progress()

    def machines(self) -> list[str]:
        """This machine's name, then the other machines of a shared catalog (when --machines all)."""
        with self.lock:
            return [self.catalog.machine, *(row["name"] for row in self.catalog.other_machines())]

    # -- usage ---------------------------------------------------------------------------------------------

    def usage(self, kind: ReportKind, project: str | None, days: DateRange) -> UsageReport:
        """`sessdex usage KIND [--all]` for a project (its cwd) or every project: the same report, the same figures."""
        with self.lock:
            return self.catalog.usage_report(kind, project or self.catalog.sessions_root,
                                             all_projects=project is None, days=days)

    # -- transcripts ---------------------------------------------------------------------------------------

    def transcript(self, info: SessionInfo, *, leaf: str | None = None, all_branches: bool = False) -> Transcript:
        """The session loaded as the export loads it; the last few are kept, so the chunks of a long transcript are
        cut from one read of its file. Secrets are redacted in what `shown` hands the renderer (only the entries a
        page shows: detecting secrets costs more than reading), except for every branch at once, redacted here."""
        path = Path(info.path)
        status = path.stat()
        eager = all_branches and self.redact
        key = (os.fspath(path), status.st_size, status.st_mtime_ns, leaf, all_branches, eager)
        with self.lock:
            cached = self._transcripts.get(key)
            if cached is not None:
                self._transcripts.move_to_end(key)
                return cached
        transcript = load_transcript(path, self.runtime, leaf_id=leaf, all_branches=all_branches,
                                     redact_secrets=eager)
        with self.lock:
            self._transcripts[key] = transcript
            while len(self._transcripts) > TRANSCRIPTS_KEPT:
                self._transcripts.popitem(last=False)
        return transcript

    def shown(self, transcript: Transcript, entries: Iterable[dict[str, Any]]) -> Transcript:
        """The transcript to render with `entries` shown (its totals still those of its whole branch), its header,
        title and those entries redacted unless the server shows secrets."""
        if not self.redact or transcript.all_branches:  # (every branch at once was redacted when loaded)
            return dataclasses.replace(transcript, shown=EntryStream.of(list(entries)))
        return dataclasses.replace(transcript, header=redact_value(transcript.header), title=redact(transcript.title),
                                   shown=EntryStream.of(self.shown_entries(entries)))

    def chunk(self, transcript: Transcript, start: int) -> tuple[list[dict[str, Any]], int | None]:
        """The shown entries from `start`: at most ENTRIES_PER_CHUNK of them and about CHUNK_BYTES (always one at
        least), not yet redacted, and where the next chunk starts (None after the last entry)."""
        entries: list[dict[str, Any]] = []
        size, end, total = 0, start, len(transcript.shown)
        while end < total and len(entries) < ENTRIES_PER_CHUNK and (not entries or size < CHUNK_BYTES):
            # A few at a time (each slice is one read of the file): as many as the entries so far say still fit.
            fitting = (CHUNK_BYTES - size) // max(1, size // len(entries)) if entries else 16
            step = min(total, end + max(1, min(ENTRIES_PER_CHUNK - len(entries), 16, fitting)))
            for entry in transcript.shown[end:step]:
                entries.append(entry)
                end += 1
                size += len(orjson.dumps(entry, default=str))
                if size >= CHUNK_BYTES:
                    break
        return entries, end if end < total else None

    def shown_entries(self, entries: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
        """Entries as a page may show them: redacted unless the server shows secrets."""
        return [redact_value(entry) for entry in entries] if self.redact else list(entries)

    # -- prompt history ------------------------------------------------------------------------------------

    def history(self, text: str, limit: int = SEARCH_RESULTS) -> list[HistoryEntry] | None:
        """Prompts of the agent's history.db matching `text` (None when there is no history.db to read)."""
        agent_dir = self.settings.paths.agent_dir_text
        return search_history_file(os.path.join(agent_dir, HISTORY_DB_NAME), text, limit, None)


def _no_pass(_db: CatalogDatabase, _scope: Scope) -> ReconcileReport:
    return ReconcileReport()



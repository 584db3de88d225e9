"""The one catalog-or-files seam: what the CLI, the session picker and the viewer ask of their sessions.

`SessionSource` is implemented twice: `sessdex.catalog.queries.sessions.Catalog` answers from the SQL catalog
(kept fresh by stat, or by `sessdex watch`), `sessdex.catalog.queries.file_scan.FileScan` reads the session
files through `sessdex.core` (the reference answers, and the fallback when the catalog is off or unusable).
Both return the same values, field for field. `sessdex.catalog.queries.open_source.open_session_source` picks
one from the command's settings; callers only ever see the protocol.

The picker's vocabulary lives here too: `PickerRow` (one session as the picker shows and searches it) and
the marks around matched words in content-search snippets (control characters that never reach the screen).
"""

from __future__ import annotations

import os
import re
from collections import namedtuple

from sessdex.core.discovery import DEFAULT_RECENT_LIMIT

# typing, pathlib and the protocol's other types stay off the run-time imports: the picker's first frame needs
# this module before anything heavy is imported.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterable
    from pathlib import Path
    from typing import Any, Literal, Protocol

    from sessdex.core.paths import AgentPaths
    from sessdex.core.summary import SessionInfo
    from sessdex.core.usage import UsageReport
    from sessdex.core.usage_terms import DateRange, ReportKind

    # The picker's scopes: "repo" only inside a git repository; "pinned" and "starred" are every project's pinned
    # (starred) sessions, read as "all".
    Scope = Literal["project", "repo", "all", "pinned", "starred"]
else:
    Scope = str
    Protocol = object
SCOPES: tuple[Scope, ...] = ("project", "repo", "all")  # Tab's order
MATCH_OPEN = "\x02"
MATCH_CLOSE = "\x03"
CONTENT_MATCH_LIMIT = 200
SNIPPET_BEFORE_CHARS = 30
SNIPPET_AFTER_CHARS = 70
SNIPPET_TOKENS = 14
MIN_CONTENT_QUERY_CHARS = 2
PICKER_FIRST_MESSAGE_CHARS = 200  # rows keep the start of the first message: enough to show and to match

_WHITESPACE = re.compile(r"\s+")
_WORD = re.compile(r"\w")


class PickerRow(namedtuple("PickerRow", "path session_id cwd title first_message message_count modified_ms cost "
                           "total_tokens", defaults=(0, 0))):
    """One session as the picker shows and searches it (the cheap fields; message text stays in the source).

    A named tuple: tens of thousands are built at start-up, and tuples are the cheapest to build.
    `first_message` holds its first PICKER_FIRST_MESSAGE_CHARS characters (the rest is searched as message text).
    """

    __slots__ = ()
    # The fields' types, for the type checker (annotations only: no class attributes).
    path: str
    session_id: str
    cwd: str
    title: str | None
    first_message: str
    message_count: int
    modified_ms: float
    cost: float  # the session file's summed usage cost (default 0)
    total_tokens: float  # and tokens (input + output + cache read + cache write) (default 0)

    @classmethod
    def from_info(cls, info: SessionInfo) -> PickerRow:
        """The row of a `SessionInfo` (file-scan or catalog)."""
        return cls(path=str(info.path), session_id=info.id, cwd=info.cwd, title=info.title,
                   first_message=info.first_message[:PICKER_FIRST_MESSAGE_CHARS], message_count=info.message_count,
                   modified_ms=info.modified.timestamp() * 1000, cost=info.cost, total_tokens=info.total_tokens)


class SessionSource(Protocol):
    """Sessions of one agent dir, from the catalog or from the files: the same answers either way.

    The listing methods have the signatures and results of their `sessdex.core.discovery` /
    `sessdex.core.resume` counterparts. The picker methods answer for a project (`cwd`, or `session_dir`
    instead of the project's folders) or, with `all_projects`, for every project.
    """

    paths: AgentPaths

    def __enter__(self) -> SessionSource: ...

    def __exit__(self, *exc_info: object) -> None: ...

    def close(self) -> None:
        """Release what the source holds open."""

    def list_sessions(self, cwd: str | os.PathLike[str], session_dir: str | os.PathLike[str] | None = None, *,
                      include_empty: bool = False) -> list[SessionInfo]:
        """The project's sessions (with a message, unless `include_empty`), newest first."""

    def list_all_sessions(self, *, include_empty: bool = False) -> list[SessionInfo]:
        """Every project's sessions (with a message, unless `include_empty`), newest first."""

    def recent_sessions_in(self, directories: Iterable[str | os.PathLike[str]],
                           limit: int | None = DEFAULT_RECENT_LIMIT, *, now_ms: float | None = None) -> list[Any]:
        """The newest sessions of `directories` by modification time (RecentSessionInfo values)."""

    def most_recent_session_in(self, directories: Iterable[str | os.PathLike[str]]) -> Path | None:
        """The newest session file with a valid header in `directories`, or None."""

    def most_recent_session_file(self, directories: Iterable[str | os.PathLike[str]]) -> str | None:
        """`most_recent_session_in` as a string."""

    def find_session_by_id(self, value: str, cwd: str | os.PathLike[str],
                           session_dir: str | os.PathLike[str] | None = None) -> SessionInfo:
        """The one session whose id starts with `value`: this project first, then every project."""

    def picker_rows(self, cwd: str, session_dir: str | os.PathLike[str] | None, *,
                    all_projects: bool) -> list[PickerRow]:
        """The scope's sessions with a message, newest first, as the source holds them (no freshness pass)."""

    def bring_up_to_date(self, cwd: str, session_dir: str | os.PathLike[str] | None, *, all_projects: bool) -> bool:
        """Make the scope current with the files; True when that changed what `picker_rows` answers."""

    def content_matches(self, query: str, cwd: str, session_dir: str | os.PathLike[str] | None, *,
                        all_projects: bool) -> dict[str, str]:
        """Session path -> one-line snippet (matches between MATCH_OPEN/MATCH_CLOSE) for the scope's sessions
        whose text matches every word of `query`; at most CONTENT_MATCH_LIMIT."""

    def check_freshness_once(self) -> None:
        """From now on check each scope against the files at most once: a picker reads one snapshot."""

    def usage_report(self, kind: ReportKind, cwd: str | os.PathLike[str], *, all_projects: bool,
                     days: DateRange) -> UsageReport:
        """`sessdex usage KIND`: tokens and cost of the project's sessions (or every project's) per row of KIND."""

    def session_usage(self, cwd: str | os.PathLike[str], *, all_projects: bool) -> Any:
        """The session report over every day as the rows the source keeps ahead (a
        `sessdex.catalog.queries.usage.SessionUsage`), or None when it keeps none: then it is `usage_report`'s."""

    def remote_file_usage(self, info: SessionInfo) -> Any:
        """Another machine's session (a `sessdex.core.usage.FileUsage` with its counted facts, from a shared
        catalog), or None for a session of this machine, whose file is read here."""

    def timed_usage_facts(self, since_ms: int | None) -> list[tuple[Any, str]]:
        """Every project's counted usage facts (`sessdex.core.usage.UsageFact`) with their session, in time order,
        from `since_ms` on and before it from the last block's first message (`catalog.queries.usage.chained_facts`):
        what the 5-hour billing blocks are made of."""

    def content_index_progress(self, *, text: bool = True) -> Any:
        """How far the content (message text, usage facts) a first index left for later is, while it is
        incomplete (a `catalog.index.content_index.ContentProgress`), else None. `text=False` (usage): None once
        only the message-text index is left (usage facts are complete)."""

    def marks(self) -> dict[str, Any]:
        """Session id -> its current marks (`sessdex.core.marks.Marks`): pins, stars, tags, notes."""


class ResumeSource(Protocol):
    """What `resume` asks of its source: a `SessionSource`, or the files first
    (`sessdex.catalog.queries.resume_files.FilesFirst`)."""

    def __enter__(self) -> ResumeSource: ...

    def __exit__(self, *exc_info: object) -> None: ...

    def find_session_by_id(self, value: str, cwd: str | os.PathLike[str],
                           session_dir: str | os.PathLike[str] | None = None) -> SessionInfo:
        """The one session whose id starts with `value`: this project first, then every project."""

    def marks(self) -> dict[str, Any]:
        """Session id -> its current marks (`sessdex.core.marks.Marks`)."""


def content_terms(query: str) -> list[str]:
    """The words of `query` a content search requires (lower-cased; words without a letter or digit dropped)."""
    return [word for word in query.lower().split() if _WORD.search(word)]


def should_search_content(query: str) -> bool:
    """True when `query` is worth a content search: some word, and at least MIN_CONTENT_QUERY_CHARS characters."""
    return bool(content_terms(query)) and len(query.strip()) >= MIN_CONTENT_QUERY_CHARS


def one_line(text: str) -> str:
    """`text` with every run of whitespace made one space, trimmed."""
    return _WHITESPACE.sub(" ", text).strip()


def substring_snippet(text: str, lowered: str, terms: list[str]) -> str:
    """A one-line excerpt of `text` around the first occurrence of `terms[0]`, every term occurrence marked."""
    first = lowered.find(terms[0])
    start = max(0, first - SNIPPET_BEFORE_CHARS)
    end = min(len(text), first + len(terms[0]) + SNIPPET_AFTER_CHARS)
    window = text[start:end].replace(MATCH_OPEN, " ").replace(MATCH_CLOSE, " ")
    pattern = re.compile("|".join(re.escape(term) for term in sorted(terms, key=len, reverse=True)), re.IGNORECASE)
    marked = pattern.sub(lambda found: MATCH_OPEN + found.group(0) + MATCH_CLOSE, window)
    excerpt = one_line(marked)
    return ("…" if start > 0 else "") + excerpt + ("…" if end < len(text) else "")

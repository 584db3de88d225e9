"""What each `sessdex mcp` tool answers, computed from one session source the server keeps open.

Plain Python on purpose: the server (`sessdex.catalog.mcp.server`) only declares these methods to the MCP SDK, and
the benchmark calls them the same way. Every answer is JSON-ready, bounded in size and passed through the secret
detector (`sessdex.catalog.secrets`) last, so nothing a session holds leaves unredacted. Errors are sessdex's own
one-line errors (`SessdexError`); the server turns them into MCP tool errors.

The session objects, search hits and prompts have the shapes of the CLI's `--json` output: the CLI hands its
shaping functions in (`Shapes`), so there is one definition of each.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

from sessdex.catalog.queries.source import MATCH_CLOSE, MATCH_OPEN, content_terms, substring_snippet
from sessdex.catalog.secrets import keywords_in, redact, redact_value
from sessdex.catalog.store.settings import Settings
from sessdex.core.errors import SessionFileError, SessionNotFoundError, UsageError
from sessdex.core.marks import NO_MARKS, Marks
from sessdex.core.summary import SessionInfo
from sessdex.core.usage_terms import REPORT_KINDS, DateRange, ReportKind, parse_day

# Bounds of every answer: row counts an agent may ask for, and the characters a text answer holds per call.
MAX_SEARCH_RESULTS = 50
MAX_LIST_RESULTS = 100
MAX_PROMPT_RESULTS = 100
DEFAULT_SEARCH_RESULTS = 10
DEFAULT_LIST_RESULTS = 20
DEFAULT_PROMPT_RESULTS = 20
DEFAULT_READ_CHARS = 20_000
MAX_READ_CHARS = 100_000
# The most a JSON answer may hold; rows past it are left out and the answer says so (`truncated`).
MAX_ANSWER_CHARS = 200_000
# A session object's first message is cut to this many characters (read_session gives the whole text).
FIRST_MESSAGE_CHARS = 500
SUMMARY_PROMPT_CHARS = 400
SUMMARY_PROMPTS = 50
# Sessions read before the date filters of search_sessions (the catalog ranks first, then dates are checked).
SEARCH_OVERFETCH = 4
VIEWS = ("summary", "context", "transcript")
HISTORY_DB_NAME = "history.db"
ELLIPSIS = "…"


@dataclass(frozen=True, slots=True)
class Shapes:
    """The CLI's `--json` shaping functions, so the answers are the objects `sessdex list/search/history --json`
    print: a session and a search hit (each with its marks), a prompt; the bound check of a search query; and the
    order of `list` (pinned sessions first)."""

    session_json: Callable[[SessionInfo, Marks], dict[str, Any]]
    hit_json: Callable[[Any, Marks], dict[str, Any]]
    history_json: Callable[[Any], dict[str, Any]]
    search_query: Callable[[Sequence[str]], str]
    pinned_first: Callable[[list[SessionInfo], dict[str, Marks], Callable[[SessionInfo], str]], list[SessionInfo]]


def one_line(text: str) -> str:
    """`text` as one line (an error message for a tool error): its lines joined by "; " (by a space after a
    colon: an ambiguous prefix's heading and its candidates)."""
    joined = ""
    for part in (line.strip() for line in str(text).splitlines()):
        if part:
            joined += part if not joined else (" " if joined.endswith(":") else "; ") + part
    return joined


def cut(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[:limit] + ELLIPSIS


def day_of(value: str | None, name: str) -> str | None:
    """A `since`/`until` argument as YYYY-MM-DD (None stays None); UsageError for anything else."""
    if value is None or value == "":
        return None
    try:
        return parse_day(value)
    except ValueError:
        raise UsageError(f"{name} takes a date as YYYY-MM-DD or YYYYMMDD, not {cut(value, 40)!r}") from None


def date_range(since: str | None, until: str | None) -> DateRange:
    first, last = day_of(since, "since"), day_of(until, "until")
    if first is not None and last is not None and first > last:
        raise UsageError(f"since {first} is after until {last}")
    return DateRange(first, last)


def _local_day(info: SessionInfo) -> str:
    return info.modified.astimezone().strftime("%Y-%m-%d")


def _in_range(info: SessionInfo, days: DateRange) -> bool:
    day = _local_day(info)
    return (days.since is None or day >= days.since) and (days.until is None or day <= days.until)


def page(text: str, offset: int, max_chars: int) -> dict[str, Any]:
    """One page of `text`: `max_chars` characters from `offset`, and where the next page starts (None at the end)."""
    if offset < 0:
        raise UsageError("offset must be 0 or more")
    if offset > len(text):
        raise UsageError(f"offset {offset} is past the end of the text ({len(text)} characters)")
    end = min(len(text), offset + max_chars)
    return {"text": text[offset:end], "offset": offset, "totalChars": len(text),
            "nextOffset": end if end < len(text) else None}


def bounded(answer: dict[str, Any], rows_key: str) -> dict[str, Any]:
    """`answer` redacted, with rows of `answer[rows_key]` left out from the end until it fits MAX_ANSWER_CHARS."""
    answer = redact_value(answer)
    rows = answer[rows_key]
    while rows and len(orjson.dumps(answer)) > MAX_ANSWER_CHARS:
        del rows[max(1, len(rows) * 3 // 4):]
        answer["truncated"] = True
        if len(rows) == 1:
            break
    return answer


class SessionTools:
    """The tools, answered from one session source (the catalog, else the files) opened on first use.

    Not thread-safe: the server calls every method from one worker thread, which also opened the source (a
    SQLite connection belongs to the thread that made it).
    """

    def __init__(self, settings: Settings, shapes: Shapes, project: str,
                 open_source: Callable[[], Any] | None = None) -> None:
        self.settings = settings
        self.shapes = shapes
        self.project = project  # the default project: the directory the server was started in
        self._open_source = open_source
        self._source: Any = None

    # -- the source ------------------------------------------------------------------------------------

    @property
    def source(self) -> Any:
        if self._source is None:
            if self._open_source is not None:
                self._source = self._open_source()
            else:
                from sessdex.catalog.queries.open_source import open_session_source

                self._source = open_session_source(self.settings)
        return self._source

    def close(self) -> None:
        if self._source is not None:
            self._source.close()
            self._source = None

    def _project(self, project: str | None) -> str:
        if project is None or project == "":
            return self.project
        if "\x00" in project:
            raise UsageError("project must be a directory path")
        return os.path.abspath(os.path.expanduser(project))

    def _marks_of(self, session_id: str) -> Marks:
        return self.source.marks().get(session_id, NO_MARKS)

    def _session_json(self, info: SessionInfo, marks: Marks | None = None) -> dict[str, Any]:
        data = self.shapes.session_json(info, self._marks_of(info.id) if marks is None else marks)
        if isinstance(data.get("firstMessage"), str):
            data["firstMessage"] = cut(data["firstMessage"], FIRST_MESSAGE_CHARS)
        return data

    def find_session(self, value: str) -> SessionInfo:
        """The session `value` names: an id prefix (this project first, then every project, as `resume` looks it up)
        or the path of a session file under the agent's sessions folder."""
        from sessdex.core.resume import is_path_like

        value = value.strip()
        if not value or "\x00" in value:
            raise UsageError("session must be a session id, an id prefix or a session file path")
        if is_path_like(value):
            return self._session_at_path(value)
        return self.source.find_session_by_id(value, self.project, None)

    def _session_at_path(self, value: str) -> SessionInfo:
        from sessdex.core.discovery import read_session_info

        root = os.path.realpath(self.settings.paths.sessions_root_text)
        path = os.path.realpath(os.path.join(self.project, os.path.expanduser(value)))
        if not path.startswith(root + os.sep):
            raise UsageError(f"only session files under {root} can be read")
        info = read_session_info(path)
        if info is None:
            raise SessionFileError(f"{value}: not a readable session file")
        return info

    # -- search_sessions / list_sessions ---------------------------------------------------------------

    def search_sessions(self, query: str, project: str | None = None, all_projects: bool = False,
                        since: str | None = None, until: str | None = None,
                        limit: int = DEFAULT_SEARCH_RESULTS) -> dict[str, Any]:
        text = self.shapes.search_query([query])
        if not content_terms(text):
            raise UsageError("the query has no word to look for")
        days = date_range(since, until)
        cwd = None if all_projects else self._project(project)
        dated = days.since is not None or days.until is not None
        fetch = min(limit * SEARCH_OVERFETCH, MAX_SEARCH_RESULTS * SEARCH_OVERFETCH) if dated else limit
        hits = self.source.search(text, cwd, None, limit=fetch, highlight=("[", "]"))
        hits = [hit for hit in hits if _in_range(hit.session, days)][:limit]
        results = []
        marks = self.source.marks() if hits else {}
        for hit in hits:
            result = self.shapes.hit_json(type(hit)(hit.session, hit.field, self._safe_snippet(hit, text), hit.score),
                                          marks.get(hit.session.id, NO_MARKS))
            if isinstance(result.get("firstMessage"), str):
                result["firstMessage"] = cut(result["firstMessage"], FIRST_MESSAGE_CHARS)
            results.append(result)
        answer: dict[str, Any] = {"project": cwd, "sessions": results}
        progress = self.source.content_index_progress()
        if progress is not None:
            answer["note"] = (f"the message-text index is {progress.percent}% built: matches in message text may be "
                              "missing until `sessdex index` completes it")
        return bounded(answer, "sessions")

    def _safe_snippet(self, hit: Any, query: str) -> str:
        """The hit's snippet, cut from the redacted text when the matched text may hold a secret.

        A snippet is a window of the text: one that starts inside a token (a key whose `ghp_` prefix fell outside
        the window) would no longer be recognised as a secret, so the window is cut again from the redacted text.
        """
        info = hit.session
        found_in = info.title if hit.field == "title" else info.first_message if hit.field == "first_message" \
            else info.all_messages_text
        found_in = found_in or ""
        if not keywords_in(found_in):
            return str(hit.snippet)
        clean = redact(found_in)
        lowered = clean.lower()
        terms = [term for term in content_terms(query) if term in lowered]
        if not terms:
            return cut(" ".join(clean.split()), 100)
        marked = substring_snippet(clean, lowered, terms)
        return marked.replace(MATCH_OPEN, "[").replace(MATCH_CLOSE, "]")

    def list_sessions(self, project: str | None = None, all_projects: bool = False, since: str | None = None,
                      limit: int = DEFAULT_LIST_RESULTS) -> dict[str, Any]:
        days = date_range(since, None)
        cwd = None if all_projects else self._project(project)
        sessions = self.source.list_all_sessions() if cwd is None else self.source.list_sessions(cwd)
        marks = self.source.marks()
        chosen = self.shapes.pinned_first([info for info in sessions if _in_range(info, days)], marks,
                                          lambda info: info.id)
        answer = {"project": cwd,
                  "sessions": [self._session_json(info, marks.get(info.id, NO_MARKS)) for info in chosen[:limit]],
                  "total": len(chosen)}
        return bounded(answer, "sessions")

    # -- read_session ------------------------------------------------------------------------------------

    def read_session(self, session: str, view: str = "summary", max_chars: int = DEFAULT_READ_CHARS,
                     offset: int = 0) -> dict[str, Any]:
        if view not in VIEWS:
            raise UsageError(f"view must be one of {', '.join(VIEWS)}")
        info = self.find_session(session)
        text = redact(self.session_text(info, view))  # redacted whole, so no page boundary splits a secret
        answer = {"session": self._session_json(info), "view": view, **page(text, offset, max_chars)}
        return redact_value(answer)

    def session_text(self, info: SessionInfo, view: str) -> str:
        """The session as text an agent reads: a summary, the context the model saw, or the whole transcript."""
        from sessdex.catalog.export.markdown import render_transcript_markdown

        transcript = self._transcript(info)
        if view == "transcript":
            return render_transcript_markdown(transcript)
        if view == "context":
            return _context_text(transcript)
        return self._summary_text(info, transcript)

    def _transcript(self, info: SessionInfo) -> Any:
        from sessdex.catalog.export.transcript import load_transcript
        from sessdex.core.runtime import SessionRuntime

        try:
            return load_transcript(Path(info.path_text), SessionRuntime(paths=self.settings.paths))
        except FileNotFoundError:
            raise SessionFileError(f"{info.path_text}: the session file is gone") from None
        except ValueError as exc:
            raise SessionFileError(str(exc)) from None

    def _summary_text(self, info: SessionInfo, transcript: Any) -> str:
        data = self._session_json(info)
        lines = [f"# {transcript.title or data.get('name') or info.id}", "",
                 f"- session: {info.id}", f"- project: {info.cwd}", f"- created: {data.get('created')}",
                 f"- modified: {data.get('modified')}", f"- messages: {info.message_count}",
                 f"- cost: ${info.cost:.4f}, tokens: {data.get('totalTokens')}"]
        for name, totals in sorted(transcript.models.items()):
            lines.append(f"- {name}: {totals.messages} replies, {totals.input:,} in / {totals.output:,} out tokens, "
                         f"${totals.cost:.4f}")
        prompts = [text for entry in transcript.shown if (text := _user_text(entry))]
        lines += ["", f"## Prompts ({len(prompts)})", ""]
        for number, prompt in enumerate(prompts[:SUMMARY_PROMPTS], 1):
            lines.append(f"{number}. {cut(' '.join(prompt.split()), SUMMARY_PROMPT_CHARS)}")
        if len(prompts) > SUMMARY_PROMPTS:
            lines.append(f"… and {len(prompts) - SUMMARY_PROMPTS} more (view=transcript shows them all)")
        return "\n".join(lines) + "\n"

    def session_resource(self, session_id: str) -> str:
        """`session://<id>`: the transcript's first MAX_READ_CHARS characters (read_session pages through the rest)."""
        answer = self.read_session(session_id, "transcript", MAX_READ_CHARS, 0)
        text: str = answer["text"]
        if answer["nextOffset"] is not None:
            text += (f"\n\n*… cut at {MAX_READ_CHARS:,} of {answer['totalChars']:,} characters: call read_session "
                     f"with view=transcript and offset={answer['nextOffset']} for the rest*\n")
        return text

    # -- search_prompts ------------------------------------------------------------------------------------

    def search_prompts(self, query: str, here: bool = False, limit: int = DEFAULT_PROMPT_RESULTS) -> dict[str, Any]:
        from sessdex.catalog.history.search import search_history_file

        text = self.shapes.search_query([query])
        path = os.path.join(self.settings.paths.agent_dir_text, HISTORY_DB_NAME)
        cwd = self.project if here else None
        entries = search_history_file(path, text, limit, cwd)
        if entries is None:  # missing or not the agent's: read-only, so nothing is created or repaired here
            raise SessionNotFoundError(f"no prompt history ({path} is missing or unreadable)")
        prompts = []
        for entry in entries:
            shaped = self.shapes.history_json(entry)
            redacted = redact_value(shaped)
            if redacted.get("snippet") != shaped.get("snippet"):
                redacted["highlights"] = []  # the spans pointed into the unredacted snippet
            prompts.append(redacted)
        return bounded({"cwd": cwd, "prompts": prompts}, "prompts")

    # -- usage_report ---------------------------------------------------------------------------------------

    def usage_report(self, kind: str = "daily", since: str | None = None, until: str | None = None,
                     project: str | None = None, all_projects: bool = False) -> dict[str, Any]:
        report_kind = _report_kind(kind)
        days = date_range(since, until)
        cwd = self._project(project)
        report = self.source.usage_report(report_kind, cwd, all_projects=all_projects, days=days)
        if report_kind == "session":
            from sessdex.catalog.queries.usage import add_session_marks

            add_session_marks(report, self.source.marks())  # as `sessdex usage session --json` gives them
        answer = report.to_json(False)
        answer["project"] = None if all_projects else cwd
        return bounded(answer, "rows")


def _report_kind(value: str) -> ReportKind:
    for kind in REPORT_KINDS:
        if value == kind:
            return kind
    raise UsageError(f"kind must be one of {', '.join(REPORT_KINDS)}")


def _user_text(entry: dict[str, Any]) -> str:
    """The text of a user message entry ('' for anything else)."""
    message = entry.get("message") if entry.get("type") == "message" else None
    if not isinstance(message, dict) or message.get("role") != "user":
        return ""
    content = message.get("content")
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return " ".join(block["text"] for block in content
                        if isinstance(block, dict) and block.get("type") == "text" and isinstance(block.get("text"), str))
    return ""


def _context_text(transcript: Any) -> str:
    """The context the model saw at the shown leaf (as the agent builds it), rendered as the Markdown export
    renders entries: each context message, a compaction or branch summary as those entries."""
    from sessdex.catalog.export.markdown import render_entry_markdown
    from sessdex.core.context import build_session_context

    context = build_session_context(list(transcript.entries), transcript.leaf_id)
    models = ", ".join(f"{role}={model}" for role, model in context["models"].items()) or "none"
    parts = [f"# Context of {transcript.header.get('id', '')}", "",
             f"thinking {context['thinkingLevel']} · models {models} · mode {context['mode']} · "
             f"{len(context['messages'])} messages", ""]
    for message in context["messages"]:
        role = message.get("role")
        if role == "compactionSummary":
            entry = {"type": "compaction", "summary": message.get("summary")}
        elif role == "branchSummary":
            entry = {"type": "branch_summary", "summary": message.get("summary")}
        else:
            entry = {"type": "message", "message": message}
        rendered = render_entry_markdown(entry)
        if rendered:
            parts.append(rendered)
    return "\n".join(parts)

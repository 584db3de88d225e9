"""What `sessdex list | recent | resume | continue` print: tables, JSON, and the line writer they share.

Click-free on purpose: the click commands (`sessdex.catalog.cli.session_group`) and the fast path (`sessdex.catalog.cli.fastpath`)
both print through these functions, so the two produce the same bytes by construction.
"""

from __future__ import annotations

import codecs
import os
import re
import sys
import time
from datetime import UTC, datetime

from sessdex.catalog.tui.terminal_text import HIGHLIGHT_END, HIGHLIGHT_START, terminal_json, terminal_text
from sessdex.catalog.tui.width import ELLIPSIS, display_width, fit

TYPE_CHECKING = False  # typing, dataclasses and json stay off the hot commands' imports (issue 12)
if TYPE_CHECKING:
    from collections.abc import Sequence
    from typing import Any

    from sessdex.core.discovery import RecentSessionInfo
    from sessdex.core.resume import ResumeResult
    from sessdex.core.summary import SessionInfo

MAX_COUNT = 1_000_000_000  # the largest -n / --limit accepted: larger values are usage errors, not overflows
BOLD, NORMAL = "\x1b[1m", "\x1b[22m"
LABEL_MAX_CHARS = 200  # titles and first messages are cut here before any width is measured
# The escape sequences click.echo removes from text written to a non-terminal (click's own pattern).
_ANSI_SEQUENCE = r"\033\[[0-?]*[ -/]*[@-~]"


MAX_QUERY_CHARS = 1000
MAX_QUERY_WORDS = 64
_SURROGATES = re.compile("[\ud800-\udfff]")


def search_query(words: Sequence[str]) -> str:
    """The words of a `search` / `history search` as one query; UsageError when it is longer than anyone types.

    The bound keeps a search's work small whatever is pasted; bytes that are not UTF-8 in an argument
    (lone surrogates once decoded) become U+FFFD, which searches as a word separator.
    """
    text = " ".join(words)
    if len(text) > MAX_QUERY_CHARS or len(text.split()) > MAX_QUERY_WORDS:
        from sessdex.core.errors import UsageError

        raise UsageError(f"the search query is too long: at most {MAX_QUERY_WORDS} words and {MAX_QUERY_CHARS} "
                         "characters")
    return _SURROGATES.sub("\ufffd", text)


def current_directory() -> str:
    """The current directory, for the commands that answer about "this project"; UsageError when it was deleted."""
    try:
        return os.getcwd()
    except FileNotFoundError:
        from sessdex.core.errors import UsageError

        raise UsageError("the current directory no longer exists: cd to an existing one and try again") from None


def echo(text: str, *, err: bool = False, markup: bool = False) -> None:
    """Write `text` and a newline to stdout (stderr with `err`) and flush, as click.echo does.

    Every line sessdex prints comes through here, so this is where text from sessions, the catalog
    and the history is made terminal-safe: control characters and lone surrogates become U+FFFD
    (`terminal_text`). With `markup`, HIGHLIGHT_START/END around a match become bold on/off after
    that. Like click.echo, escape sequences are removed when the stream is not a terminal.
    """
    stream = sys.stderr if err else sys.stdout
    if stream is None:
        return
    line = terminal_text(text, keep_newlines=True) + "\n"
    if markup:
        line = line.replace(HIGHLIGHT_START, BOLD).replace(HIGHLIGHT_END, NORMAL)
    if "\033" in line and not stream.isatty():
        import re  # only text holding an escape character needs it

        line = re.sub(_ANSI_SEQUENCE, "", line)
    if _ascii_only(stream) and hasattr(stream, "buffer"):
        # click's recovery for a stream set to ASCII (PYTHONIOENCODING=ascii): UTF-8 bytes, errors replaced.
        stream.flush()
        stream.buffer.write(line.encode("utf-8", "replace"))
        stream.buffer.flush()
        return
    stream.write(line)
    stream.flush()


def _ascii_only(stream: Any) -> bool:
    try:
        return codecs.lookup(getattr(stream, "encoding", None) or "ascii").name == "ascii"
    except LookupError:
        return False


def echo_json(value: Any) -> None:
    """Print `value` as indented JSON, non-ASCII characters kept (those a terminal acts on escaped)."""
    import json  # only --json output needs it

    echo(terminal_json(json.dumps(value, ensure_ascii=False, indent=2)))


def iso_utc(moment: datetime) -> str:
    """`moment` as the agent writes dates in JSON: ISO-8601 UTC with milliseconds and a Z."""
    moment = moment.astimezone(UTC)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"


def session_json(info: SessionInfo) -> dict[str, Any]:
    """A session for `--json` output, with the agent's field names and ISO-8601 UTC dates (and `machine` for a
    session of another machine sharing the catalog)."""
    result = {"id": info.id, "path": info.path_text, "cwd": info.cwd, "title": info.title,
              "messageCount": info.message_count, "firstMessage": info.first_message,
              "created": iso_utc(info.created), "modified": iso_utc(info.modified),
              "cost": info.cost, "totalTokens": whole(info.total_tokens)}
    if getattr(info, "remote", False):
        result["machine"] = info.machine  # type: ignore[attr-defined]
    return result


def whole(value: float) -> float | int:
    """A token count as an integer when it is one (they always are, unless a file holds odd figures)."""
    return int(value) if isinstance(value, float) and value.is_integer() else value


def on_other_machine(info: SessionInfo) -> str:
    """` on MACHINE` for a session of another machine sharing the catalog, else nothing."""
    if not getattr(info, "remote", False):
        return ""
    from sessdex.core.discovery import sanitize_display_name

    return f" on {sanitize_display_name(info.machine)}"  # type: ignore[attr-defined]


def recent_json(item: RecentSessionInfo) -> dict[str, Any]:
    """A recent session for `--json`: the agent's RecentSessionInfo fields plus the session id."""
    return {"id": item.session_id, **item.to_agent_json()}


def resume_json(result: ResumeResult) -> dict[str, Any]:
    """A `resume --json` answer: what to do (open / fork), the file, and the session when one was looked up."""
    return {"action": result.action, "path": result.path_text,
            "session": session_json(result.session) if result.session is not None else None}


# -- tables ----------------------------------------------------------------------------------------------

def output_width() -> int | None:
    """Columns available on stdout: $COLUMNS, else the terminal's width; None (no limit) when not a terminal."""
    if os.environ.get("COLUMNS", "").isdigit():
        return int(os.environ["COLUMNS"])
    if sys.stdout.isatty():
        import shutil  # only a terminal needs it; a pipe (the common scripted case) skips the import

        return shutil.get_terminal_size().columns
    return None


class Column:
    """A table column: its header, whether it shrinks to fit the width, and its alignment."""

    __slots__ = ("header", "flexible", "align_right")

    def __init__(self, header: str, flexible: bool = False, align_right: bool = False) -> None:
        self.header = header
        self.flexible = flexible  # flexible columns share what the fixed ones leave of the width
        self.align_right = align_right


def render_table(columns: Sequence[Column], rows: Sequence[Sequence[str]], width: int | None) -> str:
    """A plain-text table whose lines fit in `width` columns (no limit when None); flexible columns shrink.

    Each cell is one line (a line break or tab in a cwd or title becomes a space), so rows stay rows.
    """
    rows = [[terminal_text(cell) for cell in row] for row in rows]
    natural = [max([display_width(col.header)] + [display_width(row[i]) for row in rows])
               for i, col in enumerate(columns)]
    widths = list(natural)
    gaps = 2 * (len(columns) - 1)
    if width is not None and sum(widths) + gaps > width:
        flexible = [i for i, col in enumerate(columns) if col.flexible]
        fixed_total = sum(w for i, w in enumerate(widths) if i not in flexible) + gaps
        room = max(width - fixed_total, 8 * len(flexible))
        # Give each flexible column its fair share; what a short one does not use goes to the others.
        remaining = sorted(flexible, key=lambda i: natural[i])
        for position, index in enumerate(remaining):
            share = room // (len(remaining) - position)
            widths[index] = min(natural[index], share)
            room -= widths[index]
    lines = []
    for cells in [[col.header for col in columns], *rows]:
        parts = []
        for i, (col, cell) in enumerate(zip(columns, cells)):
            if col.align_right:
                parts.append(" " * (widths[i] - display_width(cell)) + cell)
            else:
                parts.append(fit(cell, widths[i]) if i < len(columns) - 1 else fit(cell, widths[i]).rstrip())
        lines.append("  ".join(parts).rstrip())
    return "\n".join(lines)


def _short_cwd(cwd: str, home: str | None = None) -> str:
    """`cwd` with the home folder (`home`, else looked up: pass it when shortening many) written as `~`."""
    home = (os.path.expanduser("~") if home is None else home).rstrip("/")
    if home and (cwd == home or cwd.startswith(home + "/")):
        return "~" + cwd[len(home):]
    return cwd


def session_label(info: SessionInfo) -> str:
    """One line naming a session: its title, else its first message, cleaned and cut to 200 characters."""
    from sessdex.core.discovery import sanitize_display_name

    label = sanitize_display_name((info.title or info.first_message)[:LABEL_MAX_CHARS * 2])
    return label if len(label) <= LABEL_MAX_CHARS else label[:LABEL_MAX_CHARS - 1] + ELLIPSIS


def sessions_table(sessions: Sequence[SessionInfo], width: int | None, now_ms: float | None = None) -> str:
    """The human listing: id prefix, modified ago, message count, cost, tokens, title or first message, cwd."""
    from sessdex.core.discovery import id_prefix_length, time_ago
    from sessdex.core.usage import format_cost, format_tokens

    now_ms = time.time() * 1000 if now_ms is None else now_ms
    prefix = id_prefix_length([info.id for info in sessions])
    home = os.path.expanduser("~")  # once: each lookup decodes the whole environment's mapping entry again
    rows = [[info.id[:prefix], time_ago(info.modified.timestamp() * 1000, now_ms), str(info.message_count),
             format_cost(info.cost), format_tokens(info.total_tokens), session_label(info), _short_cwd(info.cwd, home)]
            for info in sessions]
    columns = [Column("ID"), Column("MODIFIED"), Column("MSGS", align_right=True), Column("COST", align_right=True),
               Column("TOKENS", align_right=True), Column("TITLE", flexible=True), Column("CWD", flexible=True)]
    if any(getattr(info, "remote", False) for info in sessions):
        # Sessions of other machines sharing the catalog: every row says whose it is.
        from sessdex.core.discovery import sanitize_display_name

        columns.append(Column("MACHINE"))
        for row, info in zip(rows, sessions):
            row.append(sanitize_display_name(getattr(info, "machine", None) or ""))
    return render_table(columns, rows, width)


def recent_table(recent: Sequence[RecentSessionInfo], width: int | None) -> str:
    """The human `recent` listing: id prefix, modified ago, name."""
    from sessdex.core.discovery import id_prefix_length

    prefix = id_prefix_length([item.session_id or "" for item in recent])
    rows = [[(item.session_id or "")[:prefix], item.time_ago, item.name] for item in recent]
    return render_table([Column("ID"), Column("MODIFIED"), Column("NAME", flexible=True)], rows, width)

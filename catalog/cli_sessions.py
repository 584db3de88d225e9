"""`sessdex list | recent | resume | continue`: find and resume sessions from the shell (S10, S12, S13, S16).

These commands use the file-scan functions of `core` directly. `resume` and `continue` print only the
resolved session file on stdout, so that `xcsh --resume "$(sessdex resume ab12)"` works; every other
message goes to stderr.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import time
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import click

from catalog.queries import Catalog, FileScan, open_session_source
from core.discovery import (
    RecentSessionInfo,
    project_session_dirs,
    sanitize_display_name,
    time_ago,
)
from core.errors import UsageError
from core.paths import AgentPaths
from core.resume import ResumeResult, resolve_resume
from core.summary import SessionInfo

MIN_ID_PREFIX = 8
LABEL_MAX_CHARS = 200  # titles and first messages are cut here before any width is measured
DEFAULT_RECENT_COUNT = 10
ELLIPSIS = "…"


# -- helpers ---------------------------------------------------------------------------------------

def _session_source(ctx: click.Context) -> Catalog | FileScan:
    """The catalog (kept fresh by stat or by `sessdex watch`), or the file scan if the catalog is unusable."""
    return open_session_source(_agent_paths(ctx), (ctx.find_root().obj or {}).get("catalog"),
                               warn=lambda message: click.echo(message, err=True))


def _agent_paths(ctx: click.Context) -> AgentPaths:
    obj = ctx.find_root().obj or {}
    return AgentPaths.from_env(obj.get("agent_dir"))


def _iso(moment: datetime) -> str:
    moment = moment.astimezone(timezone.utc)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"


def session_json(info: SessionInfo) -> dict[str, Any]:
    """A session for `--json` output, with the agent's field names and ISO-8601 UTC dates."""
    return {"id": info.id, "path": str(info.path), "cwd": info.cwd, "title": info.title,
            "messageCount": info.message_count, "firstMessage": info.first_message,
            "created": _iso(info.created), "modified": _iso(info.modified)}


def _echo_json(value: Any) -> None:
    click.echo(json.dumps(value, ensure_ascii=False, indent=2))


def _char_width(char: str) -> int:
    if unicodedata.combining(char):
        return 0
    return 2 if unicodedata.east_asian_width(char) in ("W", "F") else 1


def display_width(text: str) -> int:
    """Terminal columns `text` occupies (wide East Asian characters count twice)."""
    if text.isascii():
        return len(text)  # every ASCII character is one column: skip the per-character lookup
    return sum(_char_width(char) for char in text)


def fit(text: str, width: int) -> str:
    """`text` cut to at most `width` columns (ending in `…` when cut) and padded to exactly `width`."""
    if text.isascii() and len(text) > width:
        text = text[:width - 1] + ELLIPSIS
    elif display_width(text) > width:
        kept, used = [], 0
        for char in text:
            char_width = _char_width(char)
            if used + char_width > width - 1:
                break
            kept.append(char)
            used += char_width
        text = "".join(kept) + ELLIPSIS
    return text + " " * (width - display_width(text))


def output_width() -> int | None:
    """Columns available on stdout: $COLUMNS, else the terminal's width; None (no limit) when not a terminal."""
    if os.environ.get("COLUMNS", "").isdigit():
        return int(os.environ["COLUMNS"])
    if sys.stdout.isatty():
        return shutil.get_terminal_size().columns
    return None


@dataclass(frozen=True)
class Column:
    header: str
    flexible: bool = False  # flexible columns share what the fixed ones leave of the width
    align_right: bool = False


def render_table(columns: Sequence[Column], rows: Sequence[Sequence[str]], width: int | None) -> str:
    """A plain-text table whose lines fit in `width` columns (no limit when None); flexible columns shrink."""
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


def id_prefix_length(ids: Sequence[str]) -> int:
    """The shortest length >= 8 at which every id of `ids` has a distinct prefix."""
    length = MIN_ID_PREFIX
    longest = max((len(i) for i in ids), default=MIN_ID_PREFIX)
    while length < longest and len({i[:length] for i in ids}) < len(set(ids)):
        length += 1
    return length


def _short_cwd(cwd: str) -> str:
    home = os.path.expanduser("~").rstrip("/")
    if home and (cwd == home or cwd.startswith(home + "/")):
        return "~" + cwd[len(home):]
    return cwd


def session_label(info: SessionInfo) -> str:
    """One line naming a session: its title, else its first message, cleaned and cut to 200 characters."""
    label = sanitize_display_name((info.title or info.first_message)[:LABEL_MAX_CHARS * 2])
    return label if len(label) <= LABEL_MAX_CHARS else label[:LABEL_MAX_CHARS - 1] + ELLIPSIS


def sessions_table(sessions: Sequence[SessionInfo], width: int | None, now_ms: float | None = None) -> str:
    """The human listing: id prefix, modified ago, message count, title or first message, cwd."""
    now_ms = time.time() * 1000 if now_ms is None else now_ms
    prefix = id_prefix_length([info.id for info in sessions])
    rows = [[info.id[:prefix], time_ago(info.modified.timestamp() * 1000, now_ms), str(info.message_count),
             session_label(info), _short_cwd(info.cwd)] for info in sessions]
    columns = [Column("ID"), Column("MODIFIED"), Column("MSGS", align_right=True),
               Column("TITLE", flexible=True), Column("CWD", flexible=True)]
    return render_table(columns, rows, width)


def _session_dir_option(function: Any) -> Any:
    return click.option("--session-dir", type=click.Path(file_okay=False, path_type=Path),
                        help="Read this session folder instead of the project's folders.")(function)


# -- commands --------------------------------------------------------------------------------------

@click.command("list")
@click.option("--all", "all_projects", is_flag=True, help="Sessions of every project, not only this one.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON instead of a table.")
@_session_dir_option
@click.pass_context
def list_command(ctx: click.Context, all_projects: bool, as_json: bool, session_dir: Path | None) -> None:
    """List sessions with at least one message, newest first (this project, or all with --all)."""
    if all_projects and session_dir is not None:
        raise UsageError("--all and --session-dir cannot be combined")
    with _session_source(ctx) as source:
        sessions = source.list_all_sessions() if all_projects else source.list_sessions(os.getcwd(), session_dir)
    if as_json:
        _echo_json([session_json(info) for info in sessions])
    elif not sessions:
        click.echo("No sessions found", err=True)
    else:
        click.echo(sessions_table(sessions, output_width()))


def recent_json(item: RecentSessionInfo) -> dict[str, Any]:
    """A recent session for `--json`: the agent's RecentSessionInfo fields plus the session id."""
    return {"id": item.session_id, **item.to_agent_json()}


@click.command("recent")
@click.option("-n", "--limit", type=click.IntRange(min=1), default=DEFAULT_RECENT_COUNT, show_default=True,
              help="How many sessions to show.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON instead of a table.")
@_session_dir_option
@click.pass_context
def recent_command(ctx: click.Context, limit: int, as_json: bool, session_dir: Path | None) -> None:
    """The project's most recently changed sessions (read from each file's first 4 KB), newest first."""
    paths = _agent_paths(ctx)
    with _session_source(ctx) as source:
        recent = source.recent_sessions_in(project_session_dirs(os.getcwd(), session_dir, paths), limit)
    if as_json:
        _echo_json([recent_json(item) for item in recent])
        return
    if not recent:
        click.echo("No sessions found", err=True)
        return
    prefix = id_prefix_length([item.session_id or "" for item in recent])
    rows = [[(item.session_id or "")[:prefix], item.time_ago, item.name] for item in recent]
    click.echo(render_table([Column("ID"), Column("MODIFIED"), Column("NAME", flexible=True)], rows,
                            output_width()))


def _fork_confirmation(assume: bool | None) -> Any:
    """The confirm_fork callback: the --yes/--no-fork choice, else ask on a terminal, else decline."""
    def confirm(info: SessionInfo) -> bool:
        if assume is not None:
            return assume
        if not sys.stdin.isatty():
            click.echo("Pass --yes to fork a session from another project into this one.", err=True)
            return False
        return click.confirm(f"Session {info.id} ({session_label(info)}) is in another project ({info.cwd}). "
                             "Fork it into this project?", default=False, err=True)
    return confirm


def _result_json(result: ResumeResult) -> dict[str, Any]:
    return {"action": result.action, "path": str(result.path),
            "session": session_json(result.session) if result.session is not None else None}


@click.command("resume")
@click.argument("value", required=False)
@click.option("--yes", "-y", "assume_yes", is_flag=True, help="Fork a session from another project without asking.")
@click.option("--no-fork", is_flag=True, help="Refuse sessions from another project without asking.")
@click.option("--json", "as_json", is_flag=True, help="Print the resolution as JSON.")
@_session_dir_option
@click.pass_context
def resume_command(ctx: click.Context, value: str | None, assume_yes: bool, no_fork: bool, as_json: bool,
                   session_dir: Path | None) -> None:
    """Print the session file VALUE (an id prefix or a path) resolves to, for `xcsh --resume`.

    An id is looked up in this project first, then in every project; a session from another
    project is forked into this one on confirmation. Without VALUE, opens the session picker.
    """
    if assume_yes and no_fork:
        raise UsageError("--yes and --no-fork cannot be combined")
    paths = _agent_paths(ctx)
    cwd = os.getcwd()
    if not value:
        from catalog.cli_pick import resume_without_value

        resume_without_value(ctx, session_dir)
    assume = True if assume_yes else False if no_fork else None
    with _session_source(ctx) as source:
        result = resolve_resume(value, cwd, session_dir, paths=paths, confirm_fork=_fork_confirmation(assume),
                                find_session=lambda v, c, d, *, paths: source.find_session_by_id(v, c, d))
    if result.action == "open" and not result.path.is_file():
        click.echo(f"{result.path} does not exist yet: opening it starts a new session there.", err=True)
    if result.action == "fork" and result.session is not None:
        click.echo(f"Forked {result.session.id} from {result.session.cwd} into {result.path}", err=True)
    if as_json:
        _echo_json(_result_json(result))
    else:
        click.echo(str(result.path))


@click.command("continue")
@click.option("--json", "as_json", is_flag=True, help="Print the resolution as JSON.")
@_session_dir_option
@click.pass_context
def continue_command(ctx: click.Context, as_json: bool, session_dir: Path | None) -> None:
    """Print the session `xcsh --continue` would resume here: this terminal's last one, else the newest."""
    paths = _agent_paths(ctx)
    from core.breadcrumbs import resolve_continue_target  # lazy: it pulls in the runtime/storage modules

    with _session_source(ctx) as source:
        target = resolve_continue_target(os.getcwd(), session_dir, paths=paths, most_recent=source.most_recent_session_in)
    if target is None:
        if as_json:
            _echo_json({"path": None})
        click.echo("No session to continue in this project: xcsh --continue starts a new one.", err=True)
        ctx.exit(1)
    if as_json:
        _echo_json({"path": str(target)})
    else:
        click.echo(str(target))

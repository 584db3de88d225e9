"""`sessdex search`, and the output of `sessdex history search` (whose options are in `history_commands`).

Output goes through `sessdex.catalog.cli.output.echo`, which drops escape sequences when stdout is not a terminal.
"""

from __future__ import annotations

import os
from datetime import datetime

from sessdex.catalog.cli.commands import agent_dir_named, directory, positive_count
from sessdex.catalog.cli.marks_filters import MarksFilter, add_marks_filter_options
from sessdex.catalog.cli.output import (
    SEARCH_FIELDS,
    add_json_option,
    add_table_option,
    color_enabled,
    current_directory,
    echo,
    echo_json,
    iso_utc_from_seconds,
    output_width,
    search_query,
    session_json,
    sessions_table,
    tab_separated,
)
from sessdex.catalog.tui.terminal_text import (
    EMPHASIS_END,
    EMPHASIS_START,
    HIGHLIGHT_END,
    HIGHLIGHT_START,
    terminal_json,
    terminal_text,
)
from sessdex.catalog.tui.width import char_width, display_width, graphemes

TYPE_CHECKING = False
if TYPE_CHECKING:
    import argparse
    from collections.abc import Sequence
    from typing import Any

    from sessdex.catalog.history.search import HistoryEntry
    from sessdex.catalog.queries.file_scan import FileScan
    from sessdex.catalog.queries.sessions import Catalog, SearchHit
    from sessdex.catalog.store.settings import Settings
    from sessdex.core.marks import Marks

DEFAULT_SEARCH_COUNT = 20
# How many matches a search with --pinned/--starred/--tag reads before it keeps the marked ones.
MARKED_SEARCH_LIMIT = 1000
DEFAULT_HISTORY_COUNT = 20
_LINE_BREAKS = str.maketrans({"\r": " ", "\n": " ", "\t": " ", "\v": " ", "\f": " ",
                              "\x85": " ", "\u2028": " ", "\u2029": " "})
_ELLIPSIS = "…"


# -- sessdex search -----------------------------------------------------------------------------------

def hit_json(hit: SearchHit, marks: Marks | None = None) -> dict[str, Any]:
    """A search hit for `--json`: the session object of every listing plus where it matched and the snippet."""
    return {**session_json(hit.session, marks), "machine": getattr(hit.session, "machine", None), "field": hit.field,
            "snippet": hit.snippet}


def _one_line(text: str) -> str:
    return " ".join(text.split())


def add_search_arguments(parser: argparse.ArgumentParser) -> None:
    parser.description = """\
Sessions whose title, first message or any message matches WORDS (every word, as a prefix).

The words are taken literally: quotes, parentheses, AND/OR/NEAR and * have no special meaning."""
    parser.add_argument("words", metavar="WORDS", nargs="+", help="The words to look for.")
    parser.add_argument("--all", dest="all_projects", action="store_true", help="Search every project, not only this one.")
    add_json_option(parser, "Print JSON (matches marked with [ and ]).", SEARCH_FIELDS)
    add_table_option(parser)
    parser.add_argument("-n", "--limit", type=positive_count, default=DEFAULT_SEARCH_COUNT,
                        help=f"At most this many sessions (default {DEFAULT_SEARCH_COUNT}).")
    parser.add_argument("--session-dir", metavar="DIR", type=directory,
                        help="Search this session folder instead of the project's folders.")
    parser.add_argument("--substring", action="store_true",
                        help="When no session matches, look for the words inside words (`mit` finds `commit`).")
    add_marks_filter_options(parser)


def run_search(args: argparse.Namespace, settings: Settings) -> int:
    from sessdex.catalog.cli.read_guard import json_refusal, require_agent_dir
    from sessdex.catalog.queries.open_source import ready_catalog
    from sessdex.catalog.queries.sessions import Catalog
    from sessdex.core.errors import CatalogError, CatalogUnavailableError, UsageError

    if args.all_projects and args.session_dir is not None:
        raise UsageError("--all and --session-dir cannot be combined")
    wanted = MarksFilter.of(args)
    with json_refusal(args.as_json):
        require_agent_dir(settings.paths, agent_dir_named(args))
    text, cwd = " ".join(args.words), None if args.all_projects else current_directory()
    try:
        # A current SQLite catalog opens as it is; anything else is checked (and created or upgraded) by from_settings.
        catalog = ready_catalog(settings) or Catalog.from_settings(settings)
    except CatalogUnavailableError:
        raise
    except CatalogError as exc:
        if settings.catalog_off:
            raise  # asked for: full-text search is the catalog's
        from sessdex.catalog.queries.file_scan import FileScan

        echo(f"sessdex: {exc}; searching the session files directly", err=True)
        with FileScan(settings.paths) as scan:
            return print_search(scan, text, cwd=cwd, session_dir=args.session_dir, limit=args.limit,
                                as_json=args.as_json, json_fields=args.json_fields, table=args.table,
                                wanted=wanted)
    with catalog:
        return print_search(catalog, text, cwd=cwd, session_dir=args.session_dir, limit=args.limit,
                            as_json=args.as_json, substring=args.substring, json_fields=args.json_fields,
                            table=args.table, wanted=wanted)


def print_search(catalog: Catalog | FileScan, text: str, *, cwd: str | None,
                 session_dir: str | os.PathLike[str] | None, limit: int, as_json: bool, substring: bool = False,
                 json_fields: Sequence[str] = (), table: bool = False,
                 wanted: MarksFilter | None = None) -> int:
    """`sessdex search`: the best `limit` sessions matching `text` (this project, or every one when cwd is None);
    `substring`: when no session matches, every word as a substring; `wanted`: only sessions with these marks
    (the best `limit` of the first MARKED_SEARCH_LIMIT matches).

    UsageError for a query longer than anyone types (`search_query`). Matches are bold on a terminal,
    else marked with [ and ]; everything printed is made terminal-safe by `echo`. `json_fields`: the fields
    `--json FIELDS` keeps; `table`: the aligned table even when stdout is not a terminal.
    """
    text = search_query([text])
    styled = not as_json and color_enabled()
    highlight = (HIGHLIGHT_START, HIGHLIGHT_END) if styled else ("[", "]")
    filtered = wanted is not None and wanted.active
    hits = catalog.search(text, cwd, session_dir, limit=max(limit, MARKED_SEARCH_LIMIT) if filtered else limit,
                          highlight=highlight, substring_fallback=substring)
    marks = catalog.marks()
    if wanted is not None:
        hits = wanted.select(hits, marks, lambda hit: hit.session.id)[:limit]
    progress = catalog.content_index_progress()
    if progress is not None:
        echo(f"sessdex: the message-text index is {progress.percent}% built ({progress.done} of {progress.total} "
             f"{progress.unit}); matches in message text may be missing until `sessdex index` or `sessdex watch` "
             "completes it", err=True)
    if as_json:
        from sessdex.core.marks import NO_MARKS

        echo_json([hit_json(hit, marks.get(hit.session.id, NO_MARKS)) for hit in hits], fields=json_fields)
        return 0
    if not hits:
        echo("No matching sessions", err=True)
        return 0
    from sessdex.catalog.queries.session_ids import resume_id_width

    id_width = resume_id_width(catalog, [hit.session.id for hit in hits])
    echo(search_table(hits, styled, id_width=id_width, tsv=tab_separated(table),
                      marks=marks), markup=styled)
    return 0


_MARKERS = HIGHLIGHT_START + HIGHLIGHT_END + EMPHASIS_START + EMPHASIS_END


def search_table(hits: list[SearchHit], color: bool, *, id_width: int | None = None, tsv: bool = False,
                 marks: dict[str, Marks] | None = None) -> str:
    """The listing table of `list` (same columns and id width, $COLUMNS), each row followed by where it matched;
    with `tsv`, tab-separated lines whose last two cells are the field and the snippet."""
    from sessdex.catalog.cli.output import Column
    from sessdex.catalog.tui.width import cut, cut_marked

    sessions = [hit.session for hit in hits]
    if tsv:
        extra = [(Column("FIELD"), [hit.field for hit in hits]),
                 (Column("SNIPPET"), [_one_line(hit.snippet) for hit in hits])]
        return sessions_table(sessions, None, tsv=True, id_width=id_width, extra=extra, marks=marks)
    width = output_width()
    table = sessions_table(sessions, width, color=color, id_width=id_width, marks=marks).split("\n")
    lines = table[:1]
    for row, hit in zip(table[1:], hits):
        snippet = f"    {hit.field}: {_one_line(hit.snippet)}"
        lines += [row, snippet if width is None else cut_marked(snippet, width, _MARKERS) if color else cut(snippet, width)]
    return "\n".join(lines)


# -- sessdex history search ---------------------------------------------------------------------------

def _short_cwd(cwd: str | None) -> str:
    if not cwd:
        return "-"
    home = os.path.expanduser("~").rstrip("/")
    if home and (cwd == home or cwd.startswith(home + "/")):
        return "~" + cwd[len(home):]
    return cwd


def _cut(text: str, spans: Sequence[tuple[int, int]], columns: int | None) -> tuple[str, list[tuple[int, int]]]:
    """`text` cut to `columns` display columns (with an ellipsis), and the spans that still fit."""
    if columns is None or display_width(text) <= columns:
        return text, list(spans)
    used = index = 0
    for cluster in graphemes(text):  # never split a cluster (a joined emoji, a letter and its accent)
        used += char_width(cluster)
        if used > columns - 1:
            break
        index += len(cluster)
    return text[:index] + _ELLIPSIS, [(a, min(b, index)) for a, b in spans if a < index]


def render_history_entry(entry: HistoryEntry, width: int | None) -> str:
    """One line: local time, cwd, then the prompt (or a search hit's snippet, its matches in bold)."""
    prefix = f"{datetime.fromtimestamp(entry.created_at):%Y-%m-%d %H:%M}  {terminal_text(_short_cwd(entry.cwd))}  "
    text: str
    spans: Sequence[tuple[int, int]]
    text, spans = (entry.snippet, entry.highlights) if entry.snippet is not None else \
        (entry.prompt.translate(_LINE_BREAKS), ())
    room = None if width is None else max(width - display_width(prefix), 10)
    text, spans = _cut(text, spans, room)
    pieces, position = [prefix], 0
    for start, end in spans:
        pieces.append(text[position:start])
        pieces.append(HIGHLIGHT_START + text[start:end] + HIGHLIGHT_END)
        position = end
    pieces.append(text[position:])
    return "".join(pieces)


def history_json(entry: HistoryEntry) -> dict[str, Any]:
    """A prompt for `--json`: its time as `created`, ISO 8601 UTC like every session date (not epoch seconds)."""
    data = entry.to_json()
    del data["created_at"]
    return {"id": data.pop("id"), "prompt": data.pop("prompt"), "created": iso_utc_from_seconds(entry.created_at),
            **data}


def print_history(entries: list[HistoryEntry], as_json: bool) -> None:
    """Prompts as JSON, or one line each, cut to the terminal's width (matches in bold on a terminal)."""
    if as_json:
        import orjson

        echo(terminal_json(orjson.dumps([history_json(entry) for entry in entries],
                                        option=orjson.OPT_INDENT_2).decode()))
        return
    width = output_width()
    for entry in entries:
        echo(render_history_entry(entry, width), markup=True)

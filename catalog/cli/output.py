"""What `sessdex list | recent | resume | continue` print: tables, JSON, and the line writer every command shares."""

from __future__ import annotations

import argparse  # (loaded by the command line's parser already)
import codecs
import os
import sys
import time

from sessdex.catalog.tui.terminal_text import (
    EMPHASIS_END,
    EMPHASIS_START,
    HIGHLIGHT_END,
    HIGHLIGHT_START,
    terminal_json,
    terminal_text,
)
from sessdex.catalog.tui.width import ELLIPSIS, cut_middle, display_width, fit

TYPE_CHECKING = False  # see the README's start-up budget
if TYPE_CHECKING:
    from collections.abc import Sequence
    from datetime import datetime
    from typing import Any

    from sessdex.core.marks import Marks
    from sessdex.core.resume import ResumeResult
    from sessdex.core.summary import SessionInfo

MAX_COUNT = 1_000_000_000  # the largest -n / --limit accepted: larger values are usage errors, not overflows
BOLD, NORMAL = "\x1b[1m", "\x1b[22m"
BOLD_CYAN, RESET = "\033[1;36m", "\033[0m"


def search_query(words: Sequence[str]) -> str:
    """The words of a `search` / `history search` as one query, bounded (sessdex.core.text.bounded_query).

    A pasted stack trace is searched by its most selective words, and stderr says which were used; bytes
    that are not UTF-8 in an argument (lone surrogates once decoded) become U+FFFD, a word separator.
    """
    from sessdex.core.text import MAX_QUERY_WORDS, bounded_query

    text, reduced = bounded_query(" ".join(words))
    if reduced:
        from sessdex.catalog.tui.terminal_text import terminal_text

        echo(terminal_text(f"sessdex: a long query: searching for its {len(text.split())} most selective words "
                           f"(at most {MAX_QUERY_WORDS}): {text}"), err=True)
    return text


def current_directory() -> str:
    """The current directory, for the commands that answer about "this project"; UsageError when it was deleted.

    A name of bytes that are not UTF-8 is read as the agent reads it (each invalid sequence is U+FFFD): that is
    the directory its sessions name, and text the catalog can hold."""
    try:
        cwd = os.getcwd()
    except FileNotFoundError:
        from sessdex.core.errors import UsageError

        raise UsageError("the current directory no longer exists: cd to an existing one and try again") from None
    if cwd.isascii():
        return cwd
    return os.fsencode(cwd).decode("utf-8", "replace")


def echo(text: str, *, err: bool = False, markup: bool = False, sanitized: bool = False) -> None:
    """Write `text` and a newline to stdout (stderr with `err`) and flush.

    Every line sessdex prints comes through here, so this is where text from sessions, the catalog
    and the history is made terminal-safe: control characters and lone surrogates become U+FFFD
    (`terminal_text`). With `markup`, HIGHLIGHT_START/END around a match become bold on/off after
    that, and EMPHASIS_START/END (an id's unique prefix) bold colour, on a terminal; no escape
    sequence is written to a stream that is not one. `sanitized`: every character of `text` already went through
    `terminal_text` (a table: its cells, laid out with spaces and newlines), so the pass over the whole of it,
    which would change nothing, is left out.
    """
    stream = sys.stderr if err else sys.stdout
    if stream is None:
        return
    line = (text if sanitized else terminal_text(text, keep_newlines=True)) + "\n"
    if markup:
        if stream.isatty():
            line = (line.replace(HIGHLIGHT_START, BOLD).replace(HIGHLIGHT_END, NORMAL)
                    .replace(EMPHASIS_START, BOLD_CYAN).replace(EMPHASIS_END, RESET))
        else:
            # Not a terminal: no escape sequence, the markers dropped. (They are the only escape
            # sequences a line can hold: terminal_text replaced every escape character of the text itself.)
            line = (line.replace(HIGHLIGHT_START, "").replace(HIGHLIGHT_END, "")
                    .replace(EMPHASIS_START, "").replace(EMPHASIS_END, ""))
    if _ascii_only(stream) and hasattr(stream, "buffer"):
        # A stream set to ASCII (PYTHONIOENCODING=ascii) still gets every character: UTF-8 bytes, errors replaced.
        stream.flush()
        stream.buffer.write(line.encode("utf-8", "replace"))
        stream.buffer.flush()
        return
    stream.write(line)
    stream.flush()


def confirm(question: str) -> bool:
    """Ask `question` on stderr (`[y/N]`: no unless answered y or yes) and read the answer from stdin."""
    sys.stderr.write(terminal_text(question) + " [y/N]: ")
    sys.stderr.flush()
    answer = sys.stdin.readline()
    if not answer:  # stdin closed: nobody answered
        sys.stderr.write("\n")
        return False
    return answer.strip().lower() in ("y", "yes")


def _ascii_only(stream: Any) -> bool:
    try:
        return codecs.lookup(getattr(stream, "encoding", None) or "ascii").name == "ascii"
    except LookupError:
        return False


def echo_paths(*paths: str) -> None:
    """Write file paths, one a line, for a program to open (`resume`, `continue`, a shell function).

    A name that is not valid UTF-8 holds bytes that `echo` would show as U+FFFD, naming another file. When stdout
    is not a terminal and those bytes are all that `echo` would change, the paths' own bytes are written; on a
    terminal, or with control characters in a path, they go through `echo` (terminal-safe) as any text does.
    """
    stream = sys.stdout
    if stream is None:
        return
    text = "\n".join(paths)
    buffer = getattr(stream, "buffer", None)
    if buffer is None or stream.isatty() or text.isascii() or not _only_bad_bytes_unsafe(text):
        echo(text)
        return
    stream.flush()
    buffer.write(os.fsencode(text) + b"\n")
    buffer.flush()


def _only_bad_bytes_unsafe(text: str) -> bool:
    """True when terminal_text changes nothing in `text` but its undecodable bytes (os.fsdecode's lone surrogates)."""
    bad_bytes_replaced = "".join("\ufffd" if "\udc80" <= char <= "\udcff" else char for char in text)
    return terminal_text(text, keep_newlines=True) == bad_bytes_replaced


def echo_json(value: Any, fields: Sequence[str] = ()) -> None:
    """Print `value` as indented JSON, non-ASCII characters kept (those a terminal acts on escaped); with
    `fields` (`--json FIELDS`), each object of it (or of the array it is) holds only those, in that order."""
    import json  # only --json output needs it

    echo(terminal_json(json.dumps(selected_fields(value, fields), ensure_ascii=False, indent=2)))


def selected_fields(value: Any, fields: Sequence[str]) -> Any:
    """`value` (an object, or an array of objects) with each object cut to `fields` (none: all of them)."""
    if not fields:
        return value
    if isinstance(value, list):
        return [selected_fields(item, fields) for item in value]
    if isinstance(value, dict):
        return {name: value.get(name) for name in fields}
    return value


# The fields of a session object (`session_json`), which every command printing sessions has.
SESSION_FIELDS = ("id", "path", "cwd", "title", "name", "created", "modified", "messageCount", "firstMessage",
                  "cost", "totalTokens", "machine", "marks")

SEARCH_FIELDS = (*SESSION_FIELDS, "field", "snippet")  # a search hit: where it matched, and the snippet
RESUME_FIELDS = (*SESSION_FIELDS, "action", "source")  # a resolution: open or fork, and the session forked
TRASH_FIELDS = (*SESSION_FIELDS, "restoreTo")
USAGE_FIELDS = ("period", "session", "project", "model", "start", "end", "active", "path", "cwd",
                "title", "firstMessage", "input", "output", "cacheRead", "cacheWrite", "totalTokens", "cost",
                "messages", "sessions", "models", "breakdown", "projection", "marks")  # a usage report's rows
ALL_JSON_FIELDS = frozenset((*SEARCH_FIELDS, *RESUME_FIELDS, *TRASH_FIELDS, *USAGE_FIELDS))


def add_json_option(parser: argparse.ArgumentParser, help: str, fields: Sequence[str] = SESSION_FIELDS) -> None:
    """--json [FIELDS]: JSON instead of text, all fields, or only the comma-separated FIELDS (as gh's --json).

    Sets `as_json` (True when given) and `json_fields` (the names, empty for all)."""
    parser.add_argument("--json", dest="as_json", metavar="FIELDS", action=JsonOption, fields=tuple(fields),
                        help=f"{help} FIELDS (comma-separated) keeps only those: {','.join(fields)}.")
    parser.set_defaults(json_fields=())


def json_field_names(text: str, fields: Sequence[str]) -> tuple[str, ...]:
    """The comma-separated field names of `text` (empty: all); ValueError naming an unknown one."""
    names = tuple(name.strip() for name in text.split(",") if name.strip())
    unknown = [name for name in names if name not in fields]
    if unknown:
        raise ValueError(f"unknown JSON field {unknown[0]!r}; the fields are: {', '.join(fields)}")
    return names


class JsonOption(argparse.Action):
    """The action of `add_json_option`: sets `as_json` and `json_fields`; an unknown field is a usage error."""

    def __init__(self, option_strings: Sequence[str], dest: str, fields: tuple[str, ...] = SESSION_FIELDS,
                 **kwargs: Any) -> None:
        super().__init__(option_strings, dest, nargs="?", const="", default=False, **kwargs)
        self.fields = fields

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace, values: Any,
                 option_string: str | None = None) -> None:
        try:
            namespace.json_fields = json_field_names(values or "", self.fields)
        except ValueError as error:
            parser.error(f"--json: {error}")
        setattr(namespace, self.dest, True)


def iso_utc(moment: datetime) -> str:
    """`moment` as the agent writes dates in JSON: ISO-8601 UTC with milliseconds and a Z."""
    from datetime import UTC  # (loaded already by whoever made `moment`)

    moment = moment.astimezone(UTC)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"


def iso_utc_from_seconds(seconds: float) -> str:
    """Epoch seconds in the format of `iso_utc` (history items)."""
    from datetime import UTC, datetime

    return iso_utc(datetime.fromtimestamp(seconds, UTC))


def session_json(info: SessionInfo, marks: Marks | None = None) -> dict[str, Any]:
    """A session for `--json` output, the same object in every listing command (ISO 8601 UTC dates; `machine`
    for a session of another machine sharing the catalog; `marks` when the command read them)."""
    result: dict[str, Any] = {"id": info.id, "path": info.path_text, "cwd": info.cwd, "title": info.title,
              "name": session_label(info), "created": iso_utc(info.created), "modified": iso_utc(info.modified),
              "messageCount": info.message_count, "firstMessage": info.first_message,
              "cost": info.cost, "totalTokens": whole(info.total_tokens)}
    if getattr(info, "remote", False):
        result["machine"] = info.machine  # type: ignore[attr-defined]
    if marks is not None:
        result["marks"] = marks.to_json()
    return result


def marks_cell(marks: Marks | None) -> str:
    """A session's marks in a table: `pin`, `star`, `note` and each `#tag`."""
    if marks is None:
        return ""
    words = [word for word, on in (("pin", marks.pinned), ("star", marks.starred), ("note", bool(marks.note))) if on]
    return " ".join([*words, *(f"#{tag}" for tag in marks.tags)])


def whole(value: float) -> float | int:
    """A token count as an integer when it is one (they always are, unless a file holds odd figures)."""
    return int(value) if isinstance(value, float) and value.is_integer() else value


def error_json(error: Exception) -> dict[str, Any]:
    """A refusal for `--json`: the message and the sessions it concerns (candidates of an ambiguous prefix), each
    with its marks when the command that refused had read them (`candidate_marks`: session id -> Marks)."""
    candidates = getattr(error, "candidates", None) or []
    marks: dict[str, Marks] | None = getattr(error, "candidate_marks", None)
    if marks is None:
        return {"error": str(error), "candidates": [session_json(info) for info in candidates]}
    from sessdex.core.marks import NO_MARKS

    return {"error": str(error), "candidates": [session_json(info, marks.get(info.id, NO_MARKS))
                                                for info in candidates]}


def resume_json(result: ResumeResult, cwd: str | None, marks: dict[str, Marks] | None = None) -> dict[str, Any]:
    """A `resume --json` answer: the session object of the file to open, plus `action` (open / fork) and the
    directory to run the agent in (`cwd`: the session's own, or this one for a fork). `marks` (session id ->
    Marks): each session object says its marks (a fork's own: none unless they were kept)."""
    from sessdex.core.discovery import read_session_info
    from sessdex.core.marks import NO_MARKS

    path = result.path_text
    info = result.session if result.action == "open" and result.session is not None else \
        read_session_info(path) if os.path.isfile(path) else None

    def marks_of(session_id: str | None) -> Marks | None:
        return None if marks is None else marks.get(session_id or "", NO_MARKS)

    base: dict[str, Any] = session_json(info, marks_of(info.id)) if info is not None else {
        "id": None, "path": path, "cwd": cwd, "title": None, "name": os.path.basename(path),
        "created": None, "modified": None, "messageCount": 0, "firstMessage": None}
    if info is None and marks is not None:
        base["marks"] = NO_MARKS.to_json()
    base["path"] = path
    if cwd is not None:
        base["cwd"] = cwd
    base["action"] = result.action
    base["source"] = session_json(result.session, marks_of(result.session.id)) \
        if result.action == "fork" and result.session is not None else None
    return base


# -- tables ----------------------------------------------------------------------------------------------

NAME_MIN_WIDTH = 24  # a session's name keeps this many columns before the date or cwd columns give way
CWD_MIN_WIDTH = 12


def output_width() -> int | None:
    """Columns available on stdout: $COLUMNS, else the terminal's width; None (no limit) when not a terminal."""
    if os.environ.get("COLUMNS", "").isdigit():
        return int(os.environ["COLUMNS"])
    if sys.stdout.isatty():
        import shutil  # only a terminal needs it; a pipe (the common scripted case) skips the import

        return shutil.get_terminal_size().columns
    return None


def color_enabled(stream: Any = None) -> bool:
    """True when `stream` (stdout) is a terminal and $NO_COLOR is unset or empty (https://no-color.org)."""
    stream = sys.stdout if stream is None else stream
    return not os.environ.get("NO_COLOR") and stream is not None and stream.isatty()


def home_relative(path: str, home: str | None = None) -> str:
    """`path` with the home folder (`home`, else looked up: pass it when shortening many) written as `~`."""
    home = (os.path.expanduser("~") if home is None else home).rstrip("/")
    if home and (path == home or path.startswith(home + "/")):
        return "~" + path[len(home):]
    return path


def shorten_path(path: str, width: int) -> str:
    """`path` in `width` columns: whole folders dropped from the middle (`~/code/…/typescript-7`), else cut in the
    middle by characters."""
    if display_width(path) <= width:
        return path
    parts = path.split("/")
    if len(parts) > 3:
        head = "/".join(parts[:2])
        for tail_count in range(len(parts) - 2, 0, -1):
            candidate = f"{head}/{ELLIPSIS}/" + "/".join(parts[-tail_count:])
            if display_width(candidate) <= width:
                return candidate
    return cut_middle(path, width)


def distinct_short_paths(paths: Sequence[str], width: int) -> list[str]:
    """Each path shortened to `width` columns so that different paths never show the same text (when the width
    allows it): paths that would look alike show the folder where they differ, else another cut."""
    shown = [shorten_path(path, width) for path in paths]
    groups: dict[str, set[str]] = {}
    for path, text in zip(paths, shown):
        groups.setdefault(text, set()).add(path)
    replaced: dict[str, str] = {}
    for group in groups.values():
        if len(group) > 1:
            replaced.update(_told_apart(sorted(group), width))
    return [replaced.get(path, text) for path, text in zip(paths, shown)]


def _told_apart(paths: list[str], width: int) -> dict[str, str]:
    """Distinct texts of at most `width` columns for paths whose usual short forms are the same."""
    split = [path.split("/") for path in paths]
    depth = min(len(parts) for parts in split)
    differing = next((index for index in range(depth) if len({parts[index] for parts in split}) > 1), None)
    if differing is not None and 2 <= differing < depth - 1:
        texts = [_keeping_folder(parts, differing) for parts in split]
        if len(set(texts)) == len(texts) and all(display_width(text) <= width for text in texts):
            return dict(zip(paths, texts))
    for head in range(width):  # else a plain middle cut, moved along until the texts differ
        texts = [cut_middle(path, width, head=head) for path in paths]
        if len(set(texts)) == len(texts):
            return dict(zip(paths, texts))
    return {}


def _keeping_folder(parts: list[str], index: int) -> str:
    """`head/…/folder/…/last`: the path's start, the folder at `index` and its last folder."""
    head, last = "/".join(parts[:2]), parts[-1]
    before = "/" if index == 2 else f"/{ELLIPSIS}/"
    after = "/" if index == len(parts) - 2 else f"/{ELLIPSIS}/"
    return f"{head}{before}{parts[index]}{after}{last}"


FLEXIBLE_MIN_WIDTH = 8  # a flexible column's narrowest unless it says otherwise


class Column:
    """A table column: its header, whether it shrinks to fit the width, its alignment, whether it holds paths
    (shortened in the middle rather than at the end), and when it is left out on a narrow terminal (`drop`)."""

    __slots__ = ("header", "flexible", "align_right", "path", "drop", "min_width")

    def __init__(self, header: str, flexible: bool = False, align_right: bool = False, path: bool = False,
                 drop: int = 0, min_width: int = FLEXIBLE_MIN_WIDTH) -> None:
        self.header = header
        self.flexible = flexible  # flexible columns share what the fixed ones leave of the width
        self.align_right = align_right
        self.path = path
        # 0: always shown. When the columns cannot fit even with the flexible ones at their narrowest, the
        # column with the highest `drop` is left out first, then the next, until the rest fit.
        self.drop = drop
        self.min_width = min_width  # a flexible column's narrowest (or its widest cell, when that is narrower)


def tab_separated(table: bool = False) -> bool:
    """Whether tables print as tab-separated lines (no header, no padding, nothing cut), as gh does when piped:
    stdout is not a terminal, $COLUMNS does not ask for a width, and `--table` (`table`) was not given."""
    if table or os.environ.get("COLUMNS", "").isdigit():
        return False
    return not (sys.stdout is not None and sys.stdout.isatty())


def add_table_option(parser: argparse.ArgumentParser) -> None:
    """--table: the padded table even when stdout is not a terminal."""
    parser.add_argument("--table", action="store_true",
                        help="Print the aligned table even when stdout is not a terminal (else tab-separated lines).")


def tsv_lines(cells_by_column: Sequence[Sequence[str]]) -> list[str]:
    """The rows as tab-separated lines: each cell one line of terminal-safe text, a tab in it a space."""
    # A row whose cells are all printable (most: checked on them together, at C speed) is joined as it is.
    return ["\t".join(row) if "".join(row).isprintable() else "\t".join(terminal_text(cell) for cell in row)
            for row in zip(*cells_by_column)]


def render_table(columns: Sequence[Column], rows: Sequence[Sequence[str]], width: int | None,
                 emphasis: Sequence[int] | None = None, *, tsv: bool = False) -> str:
    """A plain-text table whose lines fit in `width` columns (no limit when None); flexible columns shrink.

    Each cell is one line (a line break or tab in a cwd or title becomes a space), so rows stay rows. Every cell
    goes through `terminal_text` (the table can be echoed with `sanitized=True`).
    `emphasis` (one number per row) marks that many leading characters of the first column, shown in bold
    colour when the table is printed with `echo(..., markup=True)`.
    """
    cells_by_column = [list(cells) for cells in zip(*rows)] if rows else [[] for _ in columns]
    return render_columns(columns, cells_by_column[:len(columns)], width, emphasis, tsv=tsv)


def render_columns(columns: Sequence[Column], cells_by_column: list[list[str]], width: int | None,
                   emphasis: Sequence[int] | None = None, *, tsv: bool = False) -> str:
    """`render_table` of the table given column by column (each list of cells is replaced by what is shown);
    with `tsv`, the rows as tab-separated lines instead (`tab_separated`)."""
    if tsv:
        return "\n".join(tsv_lines(cells_by_column))
    return "\n".join(table_lines(columns, cells_by_column, width, emphasis))


def _fitting_columns(columns: Sequence[Column], natural: Sequence[int], width: int) -> list[int]:
    """The numbers of the columns shown in `width`: all, or without the highest `drop` ones until the rest fit
    with each flexible column at its narrowest."""
    kept = list(range(len(columns)))

    def narrowest() -> int:
        return sum(min(natural[i], columns[i].min_width) if columns[i].flexible else natural[i] for i in kept) \
            + 2 * (len(kept) - 1)

    while narrowest() > width:
        droppable = [i for i in kept if columns[i].drop > 0]
        if not droppable:
            break
        kept.remove(max(droppable, key=lambda i: (columns[i].drop, i)))
    return kept


def table_lines(columns: Sequence[Column], cells_by_column: list[list[str]], width: int | None,
                emphasis: Sequence[int] | None = None, safe: Sequence[int] = ()) -> list[str]:
    """The lines of `render_columns`'s table (header first), for a caller that writes them itself.

    A listing has thousands of cells: each column is checked, measured and padded with whole-list operations
    where its cells are plain (printable, and ASCII for widths), and cell by cell only where they are not.
    The columns numbered in `safe` hold cells that `terminal_text` would not change (no control character, line
    break or lone surrogate): they are not checked again.
    """
    ascii_columns = []
    used_by_column = []
    for index, cells in enumerate(cells_by_column):
        if index in safe:
            ascii_columns.append(all(map(str.isascii, cells)))
        else:
            joined = "".join(cells)
            if not joined.isprintable():  # a control character or line break in some cell (each is one line)
                cells = cells_by_column[index] = [terminal_text(cell) for cell in cells]
                joined = "".join(cells)
            ascii_columns.append(joined.isascii())
        used_by_column.append(list(map(len if ascii_columns[-1] else display_width, cells)))
    natural = [max([display_width(col.header), *used]) for col, used in zip(columns, used_by_column)]
    if width is not None:
        kept = _fitting_columns(columns, natural, width)
        if len(kept) < len(columns):
            columns = [columns[i] for i in kept]
            cells_by_column = [cells_by_column[i] for i in kept]
            ascii_columns = [ascii_columns[i] for i in kept]
            used_by_column = [used_by_column[i] for i in kept]
            natural = [natural[i] for i in kept]
    widths = list(natural)
    gaps = 2 * (len(columns) - 1)
    if width is not None and sum(widths) + gaps > width:
        flexible = [i for i, col in enumerate(columns) if col.flexible]
        fixed_total = sum(w for i, w in enumerate(widths) if i not in flexible) + gaps
        # Each flexible column gets its narrowest, then a fair share of what is left; what a short one does not
        # use goes to the others.
        narrowest = {i: min(natural[i], columns[i].min_width) for i in flexible}
        room = max(width - fixed_total - sum(narrowest.values()), 0)
        remaining = sorted(flexible, key=lambda i: natural[i] - narrowest[i])
        for position, index in enumerate(remaining):
            share = room // (len(remaining) - position)
            grown = min(natural[index] - narrowest[index], share)
            widths[index] = narrowest[index] + grown
            room -= grown
    for i, col in enumerate(columns):
        if col.path and widths[i] < natural[i]:
            cells_by_column[i] = distinct_short_paths(cells_by_column[i], widths[i])
            ascii_columns[i] = False  # shortened paths hold an ellipsis
            used_by_column[i] = list(map(display_width, cells_by_column[i]))
    aligned_by_column = [_aligned_column(cells, used, room, col.align_right, plain)
                         for cells, used, room, col, plain in zip(cells_by_column, used_by_column, widths, columns,
                                                                 ascii_columns)]
    lines = ["  ".join(_aligned(col.header, display_width(col.header), room, col.align_right)
                       for col, room in zip(columns, widths)).rstrip()]
    lines += map(str.rstrip, map("  ".join, zip(*aligned_by_column)))
    if width is not None and any(len(line) > width for line in lines):
        # Even the columns that are never left out do not fit: cut the lines, so that a row never wraps.
        lines = [line if display_width(line) <= width else fit(line, width).rstrip() for line in lines]
    if emphasis is not None:
        first_column = aligned_by_column[0]
        for number, marked in enumerate(emphasis, start=1):
            line = lines[number]
            if 0 < marked <= len(first_column[number - 1].rstrip()):
                lines[number] = EMPHASIS_START + line[:marked] + EMPHASIS_END + line[marked:]
    return lines


def _aligned_column(cells: list[str], used: list[int], width: int, align_right: bool, plain: bool) -> list[str]:
    """The cells of a column `width` wide, each `_aligned`; ASCII cells (`plain`) that fit are padded by str methods."""
    if used and max(used) > width:
        return [_aligned(cell, cell_used, width, align_right) for cell, cell_used in zip(cells, used)]
    if plain:  # one character is one column: str.ljust / rjust pad exactly as _aligned does
        return list(map(str.rjust if align_right else str.ljust, cells, [width] * len(cells)))
    if align_right:
        return [" " * (width - cell_used) + cell for cell, cell_used in zip(cells, used)]
    return [cell + " " * (width - cell_used) for cell, cell_used in zip(cells, used)]


def _aligned(cell: str, used: int, width: int, align_right: bool) -> str:
    """A cell of `used` columns in a column `width` wide: padded on the left (right-aligned) or the right, or cut."""
    if align_right:
        return " " * (width - used) + cell
    if used <= width:
        return cell + " " * (width - used)
    return fit(cell, width)


def unique_prefix_lengths(ids: Sequence[str]) -> list[int]:
    """For each id, the length of its shortest prefix no other id of `ids` shares (what `resume` needs)."""
    ordered = sorted(set(ids))
    needed: dict[str, int] = {}
    for position, value in enumerate(ordered):
        common = 0
        for neighbour in (ordered[position - 1] if position else None,
                          ordered[position + 1] if position + 1 < len(ordered) else None):
            if neighbour is not None:
                shared = len(os.path.commonprefix([value, neighbour]))
                common = max(common, shared)
        needed[value] = min(common + 1, len(value))
    return [needed[value] for value in ids]


def session_label(info: SessionInfo) -> str:
    """One line naming a session: `display_name`, the rule every command shares."""
    from sessdex.catalog.queries.naming import display_name  # core.discovery: only once something is printed

    return display_name(info.title, info.first_message, info.message_count, info.id, info.path_text)


def sessions_table(sessions: Sequence[SessionInfo], width: int | None, now_ms: float | None = None,
                   *, color: bool = False, tsv: bool = False, id_width: int | None = None,
                   extra: Sequence[tuple[Column, list[str]]] = (),
                   marks: dict[str, Marks] | None = None) -> str:
    """The human listing of every listing command: id prefix, modified, message count, cost, tokens, name, cwd.

    `id_width`: how much of each id to show (`session_ids.resume_id_width`: unique among what `resume` looks at), else what
    tells these ids apart. The CWD column is left out when every session has the same one (one project's
    listing). `extra`: more columns after these (a search's field and snippet, in tab-separated output).
    With `tsv`, tab-separated lines without a header (`tab_separated`). `marks`: a MARKS column before the
    name when some of the sessions have any.
    """
    from sessdex.catalog.queries.naming import display_name
    from sessdex.catalog.tui.dates import short_date
    from sessdex.catalog.tui.figures import format_cost, format_tokens
    from sessdex.core.discovery import id_prefix_length

    now_ms = time.time() * 1000 if now_ms is None else now_ms
    ids = [info.id for info in sessions]
    prefix = max(id_width or 0, id_prefix_length(ids))
    home = os.path.expanduser("~")  # once: each lookup decodes the whole environment's mapping entry again
    # Built column by column (render_columns): a listing has hundreds of rows.
    cells_by_column = [[session_id[:prefix] for session_id in ids],
                       [short_date(info.modified.timestamp() * 1000, now_ms) for info in sessions],
                       [str(info.message_count) for info in sessions],
                       list(map(format_cost, [info.cost for info in sessions])),
                       list(map(format_tokens, [info.total_tokens for info in sessions])),
                       [display_name(info.title, info.first_message, info.message_count, info.id, info.path_text)
                        for info in sessions],  # session_label's, its import once
                       [home_relative(info.cwd, home) for info in sessions]]
    # On a narrow terminal the least needed columns go first: tokens, message count, cost, cwd, date.
    columns = [Column("ID"), Column("MODIFIED", drop=2), Column("MSGS", align_right=True, drop=5),
               Column("COST", align_right=True, drop=4), Column("TOKENS", align_right=True, drop=6),
               Column("NAME", flexible=True, min_width=NAME_MIN_WIDTH),
               Column("CWD", flexible=True, path=True, drop=3, min_width=CWD_MIN_WIDTH)]
    if len(set(cells_by_column[6])) <= 1 and not tsv:  # one project's sessions: the cwd says nothing
        del columns[6], cells_by_column[6]
    if any(getattr(info, "remote", False) for info in sessions):
        # Sessions of other machines sharing the catalog: every row says whose it is.
        from sessdex.core.discovery import sanitize_display_name

        columns.append(Column("MACHINE"))
        cells_by_column.append([sanitize_display_name(getattr(info, "machine", None) or "") for info in sessions])
    if marks and any(info.id in marks for info in sessions):
        before_name = next(index for index, column in enumerate(columns) if column.header == "NAME")
        columns.insert(before_name, Column("MARKS", flexible=True, drop=1))
        cells_by_column.insert(before_name, [marks_cell(marks.get(info.id)) for info in sessions])
    for column, cells in extra:
        columns.append(column)
        cells_by_column.append(cells)
    emphasis = unique_prefix_lengths(ids) if color else None
    return render_columns(columns, cells_by_column, width, emphasis=emphasis, tsv=tsv)

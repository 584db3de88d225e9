"""`sessdex pick [--all | --repo]` and `sessdex resume` without a value: the session picker, first frame first.

The picker draws on the terminal itself (`/dev/tty`), never on stdout: stdout carries only the chosen
session file, so `xcsh --resume "$(sessdex resume)"` works. Outcomes and exit codes:
- a session chosen: its path on stdout (or its session object with --json, or its directory and path with
  --shell), status 0;
- Esc or Ctrl+C: `No session selected` on stderr, nothing on stdout, status 130 (as fzf), so that
  `p=$(sessdex pick) && xcsh --resume "$p"` stops there;
- `resume` with no session in this project: `No sessions found`, status 1, no picker.
Without a terminal (stdin not a TTY), `resume` lists the sessions on stderr and `pick` refuses.

The first screen must show within a blink of the command starting: on a SQLite catalog the picker reads the first
screenful of rows (with LIMIT, plus the count and the id prefix length: every project's as the watcher keeps them,
one project's from its ids), draws the first frame on the terminal (`sessdex.catalog.tui.picker_first_frame`), and
only then imports prompt_toolkit, reads every row and starts the picker application, which takes the screen over
(and repaints exact figures, should the kept ones be out of date). Where there is no such first screen (the file scan,
a server catalog, the repository scope, no row yet), the application draws the first frame itself.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
import time
from typing import TYPE_CHECKING, Any, TextIO

from sessdex.catalog.cli.commands import directory
from sessdex.catalog.cli.output import current_directory, echo
from sessdex.core.errors import UsageError

if TYPE_CHECKING:
    from collections.abc import Iterator

    from sessdex.catalog.queries.picker_source import PickerSource
    from sessdex.catalog.queries.sessions import Catalog
    from sessdex.catalog.queries.source import PickerRow, Scope
    from sessdex.catalog.store.settings import Settings
    from sessdex.catalog.tui.picker import PickerResult

TERMINAL_DEVICE = "/dev/tty"


def terminal_available() -> bool:
    """True when a person can drive the picker: stdin is a terminal and the terminal device can be opened."""
    if not sys.stdin.isatty():
        return False
    try:
        with open(TERMINAL_DEVICE, "w"):
            return True
    except OSError:
        return False


@contextlib.contextmanager
def picker_terminal() -> Iterator[tuple[Any, Any]]:
    """The picker's prompt_toolkit (input, output): keys from stdin, drawing on /dev/tty."""
    with open(TERMINAL_DEVICE, "w", encoding="utf-8") as terminal:
        yield terminal_io(terminal)


def terminal_io(terminal: TextIO) -> tuple[Any, Any]:
    """prompt_toolkit's input (stdin) and output (drawing on `terminal`) for the picker."""
    from prompt_toolkit.input import create_input
    from prompt_toolkit.output import create_output

    output = create_output(terminal)
    # A full-screen picker needs no cursor position report; asking for one only risks its reply arriving in
    # pieces, whose lone Esc would read as a cancel.
    output.enable_cpr = False  # type: ignore[attr-defined]
    return create_input(sys.stdin), output


def print_outcome(result: PickerResult, *, as_json: bool = False, shell: bool = False,
                  marks: dict[str, Any] | None = None) -> int:
    """Print the chosen session (its path, its JSON object, or its directory and path) and return 0; or report
    the cancel (Esc or Ctrl+C: nothing on stdout) and return 130."""
    if result.outcome == "selected" and result.row is not None:
        return print_chosen(result.row, as_json=as_json, shell=shell, marks=marks)
    from sessdex.catalog.cli.errors import INTERRUPTED_STATUS

    echo("No session selected", err=True)
    return INTERRUPTED_STATUS


def print_chosen(row: PickerRow, *, as_json: bool = False, shell: bool = False,
                 marks: dict[str, Any] | None = None) -> int:
    """Print a chosen session: its path, its JSON object (with its marks, from `marks`: session id -> Marks), or
    its directory and path; return 0."""
    if as_json:
        from sessdex.catalog.cli.output import echo_json, session_json
        from sessdex.core.discovery import read_session_info
        from sessdex.core.marks import NO_MARKS

        info = read_session_info(row.path)
        echo_json(session_json(info, (marks or {}).get(info.id, NO_MARKS)) if info is not None
                  else {"path": row.path, "cwd": row.cwd})
    elif shell:
        from sessdex.catalog.cli.session_commands import print_shell_target

        print_shell_target(row.cwd if row.cwd and os.path.isdir(row.cwd) else current_directory(), row.path)
    else:
        echo(row.path)
    return 0


def sessions_listing(rows: list[PickerRow], now_ms: float) -> str:
    """The plain table `resume` prints when there is no terminal to pick on (the columns of `sessdex list`)."""
    from sessdex.catalog.cli.output import Column, home_relative, output_width, render_table
    from sessdex.catalog.queries.naming import display_name
    from sessdex.catalog.tui.dates import short_date
    from sessdex.catalog.tui.figures import format_cost
    from sessdex.core.discovery import id_prefix_length

    prefix = id_prefix_length([row.session_id for row in rows])
    cells = [[row.session_id[:prefix], short_date(row.modified_ms, now_ms), str(row.message_count), format_cost(row.cost),
              display_name(row.title, row.first_message, row.message_count, row.session_id, row.path),
              home_relative(row.cwd)] for row in rows]
    columns = [Column("ID"), Column("MODIFIED"), Column("MSGS", align_right=True), Column("COST", align_right=True),
               Column("NAME", flexible=True), Column("CWD", flexible=True, path=True)]
    return render_table(columns, cells, output_width())


# -- the commands --------------------------------------------------------------------------------------------

def add_pick_arguments(parser: argparse.ArgumentParser) -> None:
    parser.description = """\
Choose a session in a full-screen list filtered as you type; print its file path.

Keys: arrows, PgUp/PgDn move; Enter picks; Tab switches scope (this project, this git repository, all
projects); the query line edits like a shell's (Left/Right, Home/End, Ctrl+A/E/W/U/K, Alt+B/F);
Ctrl+/ toggles the preview; Ctrl+O orders by cost; Ctrl+R renames; Ctrl+D moves the session to the trash;
Alt+P pins, Alt+S stars, Alt+T tags (Tab completes a tag) and Alt+N notes the session; Esc or Ctrl+C cancels
(exit 130). Pinned sessions come first; once a session is pinned (starred), Tab also reaches a Pinned
(Starred) scope of every project's.

The query's space-separated terms match in any order, each anywhere in the id, title, cwd, first message,
path or message text; `is:pinned`, `is:starred` and `tag:NAME` keep only sessions so marked (--pinned,
--starred and --tag start the query with them). As with fzf, --select-1 prints the only match without showing
the picker and --exit-0 exits 1 when nothing matches (both work without a terminal when they decide)."""
    parser.add_argument("--all", dest="all_projects", action="store_true",
                        help="Start with every project's sessions (Tab switches).")
    parser.add_argument("--repo", dest="this_repo", action="store_true",
                        help="Start with this git repository's sessions (every worktree and subfolder).")
    parser.add_argument("--session-dir", metavar="DIR", type=directory,
                        help="Read this session folder as the project's sessions.")
    parser.add_argument("--json", dest="as_json", action="store_true", help="Print the chosen session's object as JSON.")
    parser.add_argument("--shell", action="store_true",
                        help="Print two lines: the session's directory (when it exists), then its file.")
    parser.add_argument("-q", "--query", metavar="TEXT", default="", help="Start with this query.")
    parser.add_argument("-1", "--select-1", dest="select_1", action="store_true",
                        help="When exactly one session matches, print it without showing the picker.")
    parser.add_argument("-0", "--exit-0", dest="exit_0", action="store_true",
                        help="When no session matches, exit 1 without showing the picker.")
    parser.add_argument("--height", metavar="N|N%", type=picker_height,
                        help="Draw the picker inline below the prompt, N rows (or N%% of the terminal) tall, "
                             "instead of on the whole screen (at least 6 rows).")
    from sessdex.catalog.cli.marks_filters import add_marks_filter_options

    add_marks_filter_options(parser)


def picker_height(text: str) -> tuple[int, bool]:
    """`--height N` or `N%`: (N, True for a percentage); anything else is a one-line usage error."""
    number, percent = (text[:-1], True) if text.endswith("%") else (text, False)
    if not number.isdigit() or not 0 < int(number) <= (100 if percent else 10_000):
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of rows (1 to 10000) or a percentage (1% to 100%)")
    return int(number), percent


def marks_query(args: argparse.Namespace) -> str:
    """--pinned, --starred and --tag as the query's mark terms (`is:pinned tag:bug `), which the picker shows on its
    query line and keeps across scopes; empty without them."""
    from sessdex.catalog.cli.marks_filters import MarksFilter

    wanted = MarksFilter.of(args)
    terms = (["is:pinned"] if wanted.pinned else []) + (["is:starred"] if wanted.starred else [])
    terms += [f"tag:{tag}" for tag in wanted.tags]
    return " ".join(terms) + " " if terms else ""


def run_pick(args: argparse.Namespace, settings: Settings) -> int:
    if args.as_json and args.shell:
        raise UsageError("--json and --shell cannot be combined")
    if args.all_projects and args.this_repo:
        raise UsageError("--all and --repo cannot be combined")
    if not (args.select_1 or args.exit_0) and not terminal_available():
        raise UsageError("sessdex pick needs a terminal: stdin is not one")
    scope: Scope = "all" if args.all_projects else "repo" if args.this_repo else "project"
    return _pick(args, settings, scope, "Pick a session", resuming=False)


def matching_rows(source: PickerSource, scope: Scope, rows: list[PickerRow], query: str) -> list[PickerRow]:
    """The rows the picker lists for `query`, best first, as it lists them once every search is done (the
    message-text matches included)."""
    from sessdex.catalog.tui.picker_model import PickerModel

    model = PickerModel(scope, rows, sessions_root=source.sessions_root)
    model.set_marks(source.marks())
    model.set_query(query)
    while not model.advance_search(max(len(rows), 1)):
        pass
    key = model.content_key
    if key is not None:
        model.set_content_matches(key, source.content_matches(*key))
    return [model.rows[index] for index in model.results]


def resume_without_value(args: argparse.Namespace, settings: Settings) -> int:
    """`sessdex resume` with no value: this project's sessions in the picker; print the chosen one."""
    if args.as_json and args.shell:
        raise UsageError("--json and --shell cannot be combined")
    return _pick(args, settings, "project", "Resume a session", resuming=True)


def pick_among(args: argparse.Namespace, settings: Settings, candidates: list[Any],
               heading: str) -> PickerResult | None:
    """The picker on the terminal over `candidates` (SessionInfo, newest first) alone: how it ended with a chosen
    row (`keep_marks`: chosen with Alt+Enter), None on a cancel (said on stderr)."""
    from sessdex.catalog.cli.read_guard import session_source
    from sessdex.catalog.queries.picker_source import PickerSource
    from sessdex.catalog.queries.source import PickerRow
    from sessdex.catalog.tui.picker import PickerResult

    cwd = current_directory()
    rows = [PickerRow.from_info(info) for info in candidates]
    scope: Scope = "project" if all(row.cwd == cwd for row in rows) else "all"
    source = session_source(args, settings)
    try:
        result = _run_picker(PickerSource(source, cwd, args.session_dir), settings, scope, rows, heading,
                             scopes=(scope,))
    finally:
        source.close()
    if result.outcome != "selected" or result.row is None:
        print_outcome(PickerResult("cancelled"))
        return None
    return result


def _pick(args: argparse.Namespace, settings: Settings, scope: Scope, heading: str, *, resuming: bool) -> int:
    """Open the picker on `scope` and print how it ended; `resuming`: the `resume` rules (no row, no terminal);
    `pick`'s --query, --select-1 and --exit-0 as fzf's."""
    from sessdex.catalog.cli.read_guard import session_source
    from sessdex.catalog.queries.picker_source import PickerSource
    from sessdex.catalog.queries.sessions import Catalog

    query = marks_query(args) + getattr(args, "query", "")
    select_1, exit_0 = getattr(args, "select_1", False), getattr(args, "exit_0", False)
    cwd = current_directory()
    source = session_source(args, settings)
    try:
        result: PickerResult | None = None
        height = getattr(args, "height", None)
        # A first frame needs no query (else every row is needed before anything is drawn) and the full screen.
        first_frame = not (query or select_1 or exit_0 or height)
        if first_frame and isinstance(source, Catalog) and scope != "repo" and terminal_available():
            result = _first_frame_picker(source, settings, cwd, args.session_dir, scope, heading)
        if result is None:
            picker_source = PickerSource(source, cwd, args.session_dir)
            if scope == "repo" and not picker_source.repo_dirs:
                raise UsageError(f"{cwd} is not inside a git repository")
            rows = picker_source.rows(scope)
            if resuming and not rows:
                echo("No sessions found", err=True)
                return 1
            if resuming and not terminal_available():
                echo(sessions_listing(rows, time.time() * 1000), err=True)
                echo("Pass an id prefix from the list: sessdex resume <id>", err=True)
                return 1
            if select_1 or exit_0:
                found = matching_rows(picker_source, scope, rows, query)
                if exit_0 and not found:
                    echo(f"No session matches “{query.strip()}”" if query.strip() else "No sessions found", err=True)
                    return 1
                if select_1 and len(found) == 1:
                    return print_chosen(found[0], as_json=args.as_json, shell=args.shell,
                                        marks=source.marks() if args.as_json else None)
                if not terminal_available():
                    raise UsageError("sessdex pick needs a terminal: stdin is not one "
                                     f"({len(found)} sessions match, so --select-1 cannot choose)")
            result = _run_picker(picker_source, settings, scope, rows, heading, query=query, height=height)
        marks = source.marks() if args.as_json else None
    finally:
        source.close()
    return print_outcome(result, as_json=args.as_json, shell=args.shell, marks=marks)


def _run_picker(source: PickerSource, settings: Settings, scope: Scope, rows: list[PickerRow],
                heading: str, *, query: str = "", scopes: tuple[Scope, ...] | None = None,
                height: tuple[int, bool] | None = None) -> PickerResult:
    """Open the picker application on the terminal (with rename and trash) and return how it ended."""
    from sessdex.catalog.tui.picker import SessionActions, SessionPicker

    with picker_terminal() as (picker_input, picker_output):
        actions = SessionActions(settings.paths, settings.machine_name)
        picker = SessionPicker(source, scope, heading=heading, rows=rows, actions=actions,
                               input=picker_input, output=picker_output, query=query, scopes=scopes, height=height)
        return picker.run()


def _first_frame_picker(catalog: Catalog, settings: Settings, cwd: str, session_dir: str | os.PathLike[str] | None,
                        scope: Scope, heading: str) -> PickerResult | None:
    """The first frame from the catalog's first screenful of rows, then the picker application on the terminal;
    None (nothing drawn) when the catalog has no such first screen for the scope, or there is no terminal to draw it
    on (or it is too small)."""
    from sessdex.catalog.queries.git_repo import repository_dirs
    from sessdex.catalog.tui import picker_first_frame as frame
    from sessdex.catalog.tui.picker_screen import FIXED_LINES, body_height
    from sessdex.core.discovery import id_prefix_length

    if not sys.stdin.isatty():
        return None  # the first frame holds the keys typed meanwhile in the keyboard's raw mode: it needs a terminal
    try:
        terminal = open(TERMINAL_DEVICE, "w", encoding="utf-8")
    except OSError:
        return None
    with terminal:
        columns, rows = _terminal_size(terminal)
        found = catalog.picker_first_screen(cwd, session_dir, all_projects=scope == "all", limit=body_height(rows))
        if found is not None and not found[1]:
            # Nothing of the scope in the catalog yet (a first run): the newest files' first 4 KB paint it.
            from sessdex.catalog.queries.picker_source import headers_first_screen

            folders = [catalog.sessions_root] if scope == "all" else catalog.project_dirs(cwd, session_dir)
            newest, ids = headers_first_screen(folders, recursive=scope == "all", limit=body_height(rows))
            found = newest, len(ids), id_prefix_length(ids)
        if found is None or not found[1] or rows < FIXED_LINES + 1:
            return None
        first_rows, total, id_length = found
        marks = catalog.marks()
        if any(value.pinned for value in marks.values()):
            return None  # pinned sessions come first, and they may not be among the newest rows: no first screen
        repo_dirs = repository_dirs(cwd)
        now_ms = time.time() * 1000
        screen = frame.first_screen(scope, first_rows, total=total, id_length=id_length,
                                    scopes=("project", "repo", "all") if repo_dirs else ("project", "all"),
                                    heading=heading, cwd=cwd, repo_root=repo_dirs[0] if repo_dirs else None,
                                    now_ms=now_ms, screen_rows=rows, marks=marks)
        keyboard = sys.stdin.fileno()
        previous = frame.raw_input(keyboard)  # keys typed from now on wait, unechoed, for the application
        picker = None
        try:
            terminal.write(frame.first_frame_text(screen, columns, rows))
            terminal.flush()
            from sessdex.catalog.queries.picker_source import PickerSource
            from sessdex.catalog.tui.picker import SessionActions, SessionPicker

            source = PickerSource(catalog, cwd, session_dir)
            picker_input, picker_output = terminal_io(terminal)
            frame.adopt_alternate_screen(picker_output)
            picker = SessionPicker(source, scope, heading=heading, rows=source.rows(scope), now_ms=now_ms,
                                   actions=SessionActions(settings.paths, settings.machine_name),
                                   input=picker_input, output=picker_output)
            return picker.run()
        finally:
            if picker is None or not picker.app.render_counter:
                # The application never took the screen over: give the shell its screen back.
                terminal.write(frame.LEAVE_ALTERNATE_SCREEN + frame.SHOW_CURSOR)
                terminal.flush()
            frame.restore_input(keyboard, previous)


def _terminal_size(terminal: TextIO) -> tuple[int, int]:
    """(columns, rows) of the terminal, as prompt_toolkit's output reads them (80x24 when unknown)."""
    try:
        size = os.get_terminal_size(terminal.fileno())
    except OSError:
        return 80, 24
    return size.columns or 80, size.lines or 24

"""The click-free fast path of the hot read commands: `resume VALUE`, `recent`, `list`, `continue`, `search`,
`history search`.

A shell prompt or an editor runs these often, and importing click alone costs more than answering them
from a current catalog. `run_fast` answers exactly these argument shapes:

    [--agent-dir DIR] [--catalog X] resume VALUE [--yes | -y | --no-fork] [--own-dir] [--json | --shell]
    [--agent-dir DIR] [--catalog X] recent [-n N | --limit N] [--json]
    [--agent-dir DIR] [--catalog X] list [--all] [--json]
    [--agent-dir DIR] [--catalog X] continue [--json]
    [--agent-dir DIR] [--catalog X] search WORD... [--all] [--json] [-n N | --limit N]
    [--agent-dir DIR] [--catalog X] history search WORD... [--here] [--json] [-n N | --limit N]
    [--agent-dir DIR] [--catalog X] usage [REPORT] [--since DAY] [--until DAY] [--all] [--breakdown] [--json]

(`--machines this|all` may stand among the root options too; options in any order after the command,
`--opt=value` forms included, $PI_CODING_AGENT_DIR, $SESSDEX_CATALOG and $SESSDEX_MACHINES read as click
reads them), when the catalog is a SQLite file at the current schema
revision, or is turned off (search: a SQLite catalog at the current revision; history search: an existing
history.db holding the agent's schema). Anything else (help, other commands or options, `--session-dir`, `resume`
without a value, a repeated option, a value click would reject, a catalog to create or migrate) is
"not handled": `run_fast` returns None before printing anything, and the click CLI takes over. The
commands' bodies and output are the click commands' own (`sessdex.catalog.cli.session_commands`).
"""

from __future__ import annotations

import os

from sessdex.core.values import Value

TYPE_CHECKING = False  # typing stays off the hot commands' imports (issue 12)
if TYPE_CHECKING:
    from collections.abc import Sequence

    from sessdex.catalog.queries.source import SessionSource

# click answers shell-completion requests itself when this is set (its `_<PROG>_COMPLETE` convention).
COMPLETION_ENV = "_SESSDEX_COMPLETE"
ROOT_OPTIONS = ("--agent-dir", "--catalog", "--machines")
MACHINES_CHOICES = ("this", "all")  # --machines (click.Choice in click_app): anything else is click's to reject
# Per command: each flag token -> the flag it sets.
COMMAND_FLAGS: dict[str, dict[str, str]] = {
    "resume": {"--yes": "yes", "-y": "yes", "--no-fork": "no_fork", "--json": "json", "--own-dir": "own_dir",
               "--shell": "shell"},
    "recent": {"--json": "json"},
    "list": {"--all": "all", "--json": "json"},
    "continue": {"--json": "json"},
    "search": {"--all": "all", "--json": "json"},
    "history search": {"--here": "here", "--json": "json"},
    "usage": {"--all": "all", "--json": "json", "--breakdown": "breakdown"},
}
# Per command: options that take a value (`--opt VALUE` or `--opt=VALUE`).
COMMAND_VALUE_OPTIONS: dict[str, tuple[str, ...]] = {"usage": ("--since", "--until")}
POSITIONAL_COMMANDS = ("resume", "usage")
LIMIT_OPTION = "--limit"  # -n / --limit of recent, search and history search
LIMITED_COMMANDS = ("recent", "search", "history search")
# Commands taking words (one or more) rather than at most one value.
WORD_COMMANDS = ("search", "history search")
MAX_COUNT = 1_000_000_000  # sessdex.catalog.cli.output.MAX_COUNT (that module is not imported before it is needed)


class CommandLine(Value):
    """One parsed invocation in a shape the fast path answers."""

    __slots__ = ("command", "agent_dir", "catalog", "flags", "value", "limit", "options", "machines")

    def __init__(self, command: str, agent_dir: str | None, catalog: str | None, flags: frozenset[str],
                 value: str | None = None, limit: int | None = None, options: tuple[tuple[str, str], ...] = (),
                 machines: str | None = None) -> None:
        self.command = command
        self.agent_dir = agent_dir
        self.catalog = catalog
        self.flags = flags
        self.value = value  # resume's VALUE, usage's REPORT, the words of search and history search, joined
        self.limit = limit  # -n of recent, search and history search
        self.options = options  # (option, value) of COMMAND_VALUE_OPTIONS
        self.machines = machines  # the root --machines: this or all


def _positive_count(text: str) -> int | None:
    # Plain ASCII digits only: other spellings int() accepts ("+5", " 5", "٥") are left to click.
    # Out of range values are left to click too, which reports them as usage errors.
    if text.isascii() and text.isdigit() and 1 <= int(text) <= MAX_COUNT:
        return int(text)
    return None


def root_options(args: Sequence[str]) -> tuple[dict[str, str], int] | None:
    """The root options before the command (name -> value) and the command's position; None if unsupported."""
    options: dict[str, str] = {}
    position = 0
    while position < len(args) and args[position].startswith("-"):
        name, has_value, value = args[position].partition("=")
        if name not in ROOT_OPTIONS or name in options:
            return None
        if not has_value:
            position += 1
            if position == len(args):
                return None
            value = args[position]
        if not value or value.startswith("-") or (name == "--machines" and value not in MACHINES_CHOICES):
            return None
        options[name] = value
        position += 1
    return options, position


def parse_command_line(args: Sequence[str]) -> CommandLine | None:
    """`args` (argv without the program) as a CommandLine, or None when the fast path does not take it."""
    root = root_options(args)
    if root is None:
        return None
    options, position = root
    if position == len(args):
        return None
    command = args[position]
    if command == "history":
        position += 1
        if position == len(args) or args[position] != "search":
            return None
        command = "history search"
    if command not in COMMAND_FLAGS:
        return None
    flag_tokens = COMMAND_FLAGS[command]
    flags: set[str] = set()
    values: list[str] = []
    limit: int | None = None
    valued: dict[str, str] = {}
    value_options = COMMAND_VALUE_OPTIONS.get(command, ())
    tokens = iter(args[position + 1:])
    for token in tokens:
        name, has_value, text = token.partition("=")
        if name in value_options:
            if name in valued:
                return None
            if not has_value:
                text = next(tokens, "")
            if not text or text.startswith("-"):
                return None
            valued[name] = text
        elif token in flag_tokens:
            if flag_tokens[token] in flags:
                return None
            flags.add(flag_tokens[token])
        elif command in LIMITED_COMMANDS and (token in ("-n", LIMIT_OPTION) or token.startswith(("-n", LIMIT_OPTION + "="))):
            if limit is not None:
                return None
            if token in ("-n", LIMIT_OPTION):
                text = next(tokens, "")
            else:
                text = token.removeprefix(LIMIT_OPTION + "=") if token.startswith("--") else token[2:]
            limit = _positive_count(text)
            if limit is None:
                return None
        elif token.startswith("-"):
            return None
        else:
            values.append(token)
    if command in WORD_COMMANDS:
        if not values:
            return None  # click: a missing argument
        return CommandLine(command, options.get("--agent-dir"), options.get("--catalog"), frozenset(flags),
                           " ".join(values), limit, (), options.get("--machines"))
    if command not in POSITIONAL_COMMANDS and values:
        return None  # click: an unexpected extra argument
    if command == "resume" and (len(values) != 1 or not values[0]):
        return None  # no value or an empty one opens the picker; several are an error
    if command == "usage" and len(values) > 1:
        return None
    return CommandLine(command, options.get("--agent-dir"), options.get("--catalog"), frozenset(flags),
                       values[0] if values else None, limit, tuple(valued.items()), options.get("--machines"))


def run_fast(args: Sequence[str]) -> int | None:
    """Run `args` without click and return the exit status, or None (nothing printed) when not handled here.

    Errors are raised as in the click commands (SessdexError and the rest); the caller reports them.
    """
    if os.environ.get(COMPLETION_ENV):
        return None
    line = parse_command_line(args)
    if line is None:
        return None
    if line.command == "usage":
        from sessdex.catalog.cli.usage_output import date_range, report_kind, run_usage

        valued = dict(line.options)
        kind = report_kind(line.value)  # a bad value is reported as the click command reports it
        days = date_range(valued.get("--since"), valued.get("--until"))
    from sessdex.catalog.store.settings import Settings

    settings = Settings.resolve(line.agent_dir, line.catalog, machines=line.machines)
    if settings.agent_dir is not None and os.path.isfile(settings.agent_dir):
        return None  # click.Path(file_okay=False) rejects it, with click's message
    if line.command == "history search":
        return _run_history_search(line, settings.paths.agent_dir_text)
    paths = settings.paths
    if not os.path.isdir(paths.agent_dir_text):
        return None  # the click commands say so (and create nothing)

    from sessdex.catalog.queries.open_source import open_session_source

    source = open_session_source(settings, only_if_ready=True)
    if source is None:
        return None
    if line.command == "search":
        return _run_search(line, source)

    def open_source() -> SessionSource:
        return source

    if line.command == "usage":
        with source:
            return run_usage(open_source, kind=kind, days=days, all_projects="all" in line.flags,
                             breakdown="breakdown" in line.flags, as_json="json" in line.flags)
    from sessdex.catalog.cli import session_commands as commands

    with source:
        as_json = "json" in line.flags
        if line.command == "list":
            return commands.run_list(open_source, all_projects="all" in line.flags, as_json=as_json,
                                     session_dir=None)
        if line.command == "recent":
            limit = commands.DEFAULT_RECENT_COUNT if line.limit is None else line.limit
            return commands.run_recent(open_source, paths, limit=limit, as_json=as_json, session_dir=None)
        if line.command == "resume":
            assume = commands.fork_choice("yes" in line.flags, "no_fork" in line.flags)
            return commands.run_resume(open_source, paths, line.value, assume=assume, as_json=as_json,
                                       session_dir=None, own_dir="own_dir" in line.flags, shell="shell" in line.flags)
        return commands.run_continue(open_source, paths, as_json=as_json, session_dir=None)


def _run_search(line: CommandLine, source: SessionSource) -> int | None:
    """`search` on a current SQLite catalog; None (for click, which reports it) for anything else."""
    from sessdex.catalog.cli.output import current_directory
    from sessdex.catalog.cli.search_commands import DEFAULT_SEARCH_COUNT, run_search
    from sessdex.catalog.queries.sessions import Catalog

    with source:
        if not isinstance(source, Catalog) or source.db is None or source.db.sqlite_reader() is None:
            return None
        limit = DEFAULT_SEARCH_COUNT if line.limit is None else line.limit
        return run_search(source, line.value or "", cwd=None if "all" in line.flags else current_directory(),
                          session_dir=None, limit=limit, as_json="json" in line.flags)


def _run_history_search(line: CommandLine, agent_dir: str) -> int | None:
    """`history search` on an existing history.db with the agent's schema; None (for click) otherwise."""
    from sessdex.catalog.cli.output import current_directory, search_query
    from sessdex.catalog.cli.search_commands import DEFAULT_HISTORY_COUNT, print_history
    from sessdex.catalog.history.search import HISTORY_DB_NAME, search_history_file

    limit = DEFAULT_HISTORY_COUNT if line.limit is None else line.limit
    entries = search_history_file(os.path.join(agent_dir, HISTORY_DB_NAME), search_query([line.value or ""]), limit,
                                  current_directory() if "here" in line.flags else None)
    if entries is None:
        return None
    print_history(entries, "json" in line.flags)
    return 0

"""The `sessdex` command line: one argparse parser, built for the chosen command only.

`COMMANDS` maps each command name to the module of this package that implements it and a one-line summary.
For a command NAME (dashes become underscores) the module defines

    def add_NAME_arguments(parser: argparse.ArgumentParser) -> None    # the command's own options and arguments
    def run_NAME(args: argparse.Namespace, settings: Settings) -> int   # the command; returns its exit status

`parse_command_line` finds the command name in the arguments first and then builds the parser with that one
command's options, so `sessdex list` imports the `list` module and no other command's. The global options
(--agent-dir, --catalog, --machine, --machines) are accepted before or after the command name; `dispatch` turns
them (and their environment variables) into the `Settings` every command receives.
"""

from __future__ import annotations

import argparse
import os
import sys

from sessdex.catalog.cli.errors import CommandLineError

TYPE_CHECKING = False  # see the README's start-up budget
if TYPE_CHECKING:
    from collections.abc import Callable, Sequence
    from pathlib import Path
    from typing import Any, NoReturn

    from sessdex.catalog.store.settings import Settings

PROG = "sessdex"

# name -> (module in this package, summary shown in `sessdex --help`)
COMMANDS: dict[str, tuple[str, str]] = {
    "context": ("inspect_commands", "Print what the model sees for a session (id prefix or file)."),
    "continue": ("session_group", "Print the session --continue would resume here."),
    "doctor": ("catalog_commands", "Check the catalog against the files and repair it."),
    "entries": ("inspect_commands", "Print a session's entries (read-only; id prefix or file)."),
    "export": ("export_commands", "Export a session as HTML, Markdown or JSON, secrets redacted."),
    "history": ("history_commands", "Search and add prompt history (history.db)."),
    "index": ("catalog_commands", "Bring the catalog up to date (or --rebuild it)."),
    "init": ("shell_commands", "Print shell integration (xr, key, completion) for bash|zsh|fish."),
    "list": ("session_group", "List sessions of this project (or --all)."),
    "marks": ("marks_commands", "Show a session's marks, or every marked session."),
    "mcp": ("mcp_commands", "Serve sessions and prompts to coding agents over MCP (read-only)."),
    "note": ("marks_commands", "Give a session a note (--clear removes it)."),
    "pick": ("pick_commands", "Pick a session interactively."),
    "pin": ("marks_commands", "Pin a session: pinned sessions come first."),
    "prune": ("marks_commands", "Move old, empty or small unmarked sessions to the trash (lists them first)."),
    "recent": ("session_group", "Show the most recently used sessions."),
    "rename": ("manage_commands", "Give a session a title, as the agent's rename does."),
    "resume": ("session_group", "Resolve a session by id prefix or path and print its file."),
    "search": ("search_commands", "Search titles, first messages and all message text."),
    "secrets": ("export_commands", "List which sessions hold which kinds of secret (never the secrets)."),
    "serve": ("serve_commands", "Serve the history as a local web page: search, transcripts, usage charts."),
    "star": ("marks_commands", "Star a session."),
    "tag": ("marks_commands", "Add (+TAG) and remove (-TAG) a session's tags."),
    "tags": ("marks_commands", "Every tag in use, with its count."),
    "trash": ("manage_commands", "Move a session to the trash; trash list | restore ID."),
    "unpin": ("marks_commands", "Unpin a session."),
    "unstar": ("marks_commands", "Unstar a session."),
    "usage": ("usage_commands", "Tokens and cost per day, week, month, session, project or model."),
    "view": ("view_commands", "View a session's transcript; switch sessions in place."),
    "watch": ("catalog_commands", "Keep the catalog current as the agent writes."),
}

DESCRIPTION = "sessdex: index, search and resume xcsh session history."
EXIT_STATUS_HELP = """\
Exit status:
  0    success
  1    not found, ambiguous or refused (no sessions yet, no history yet)
  2    usage error or unreadable input (a --agent-dir that does not exist)
  130  cancelled: Esc or Ctrl+C in the picker or the viewer (nothing on stdout)"""

# The global options that take a value, as they may stand before the command name.
GLOBAL_VALUE_OPTIONS = ("--agent-dir", "--catalog", "--machine", "--machines")
MACHINES_CHOICES = ("this", "all")


class HelpFormatter(argparse.RawDescriptionHelpFormatter):
    """Help with the descriptions as written (paragraphs, line breaks), as wide as $COLUMNS or the terminal."""

    def __init__(self, prog: str) -> None:
        super().__init__(prog, width=_help_width())


def _help_width() -> int:
    columns = os.environ.get("COLUMNS", "")
    if columns.isdigit() and int(columns) > 0:
        return int(columns) - 2
    try:
        return os.get_terminal_size(sys.stdout.fileno()).columns - 2
    except (AttributeError, OSError, ValueError):
        return 78


class CommandParser(argparse.ArgumentParser):
    """An ArgumentParser whose errors are one line (`sessdex list: <message> (see `sessdex list --help`)`, exit 2)
    instead of argparse's usage dump; subparsers made from it are CommandParsers too."""

    def error(self, message: str) -> NoReturn:
        raise CommandLineError(self.prog, message)

    def parse_known_args(self, args: Sequence[str] | None = None,  # type: ignore[override]
                         namespace: argparse.Namespace | None = None) -> tuple[argparse.Namespace, list[str]]:
        parsed, extra = super().parse_known_args(args, namespace)
        # The innermost parser finishes first: `parser_prog` names the (sub)command the arguments were given to.
        if not hasattr(parsed, "parser_prog"):
            parsed.parser_prog = self.prog
        return parsed, extra


def add_global_options(parser: argparse.ArgumentParser, *, after_command: bool = True) -> None:
    """--agent-dir, --catalog, --machine and --machines on `parser`.

    On a command's parser (`after_command`) an option left out keeps the value given before the command name:
    its default is "not set" rather than None.
    """
    unset = argparse.SUPPRESS if after_command else None
    group = parser.add_argument_group("global options")
    group.add_argument("--agent-dir", metavar="DIR", default=unset,
                       help="The agent directory (default ~/.xcsh/agent; env PI_CODING_AGENT_DIR).")
    group.add_argument("--catalog", metavar="CATALOG", default=unset,
                       help="The catalog: a file path or a SQLAlchemy URL (default <agent dir>/catalog.db); `off` makes "
                            "list/recent/resume/continue read the session files directly (env SESSDEX_CATALOG).")
    group.add_argument("--machine", metavar="NAME", default=unset,
                       help="This agent dir's machine in a shared catalog (default: the name stored in the agent dir, "
                            "else the host name; env SESSDEX_MACHINE).")
    group.add_argument("--machines", choices=MACHINES_CHOICES, default=unset,
                       help="Whose sessions list/resume/search/pick show: this machine's (default) or every "
                            "machine's (env SESSDEX_MACHINES).")


def positive_count(text: str) -> int:
    """An argument type: a whole number from 1 to MAX_COUNT (-n / --limit)."""
    from sessdex.catalog.cli.output import MAX_COUNT

    try:
        value = int(text)
    except ValueError:
        value = 0
    if not 1 <= value <= MAX_COUNT:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number from 1 to {MAX_COUNT}")
    return value


def directory(text: str) -> Path:
    """An argument type: a directory path (one that need not exist yet, but is not a file)."""
    from pathlib import Path

    if os.path.isfile(text):
        raise argparse.ArgumentTypeError(f"{text!r} is a file, not a directory")
    return Path(text)


def command_name(args: Sequence[str]) -> str | None:
    """The command named in `args` (the first word after the global options), None when there is none."""
    position = 0
    while position < len(args):
        token = args[position]
        if token in GLOBAL_VALUE_OPTIONS:
            position += 2
        elif token.startswith("-"):
            position += 1  # `--agent-dir=DIR`, or an option the top-level parser reports (or --help, --version)
        else:
            return token
    return None


class _VersionAction(argparse.Action):
    """--version: `sessdex X.Y.Z` on stdout, exit 0 (the version is read only when asked for)."""

    def __init__(self, option_strings: Sequence[str], dest: str, **kwargs: object) -> None:
        super().__init__(option_strings, dest, nargs=0, default=argparse.SUPPRESS, help="Show the version and exit.")

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace, values: object,
                 option_string: str | None = None) -> None:
        import sessdex

        print(f"{PROG} {sessdex.__version__}")
        parser.exit()


def _top_parser() -> CommandParser:
    parser = CommandParser(prog=PROG, description=DESCRIPTION, epilog=EXIT_STATUS_HELP, allow_abbrev=False,
                           formatter_class=HelpFormatter)
    parser.add_argument("--version", action=_VersionAction)
    add_global_options(parser, after_command=False)
    return parser


def command_function(name: str, kind: str) -> Callable[..., Any]:
    """`add_NAME_arguments` (kind "add") or `run_NAME` (kind "run") of the command `name`."""
    module_name = f"{__package__}.{COMMANDS[name][0]}"
    __import__(module_name)
    module = sys.modules[module_name]
    attribute = name.replace("-", "_")
    return getattr(module, f"add_{attribute}_arguments" if kind == "add" else f"run_{attribute}")


def build_parser(name: str | None) -> CommandParser:
    """The parser for the command `name` (only its options are added and only its module imported); for None,
    the top-level parser listing every command (for `sessdex --help`)."""
    parser = _top_parser()
    commands = parser.add_subparsers(title="commands", dest="command", metavar="COMMAND")
    for command in sorted(COMMANDS) if name is None else [name]:
        summary = COMMANDS[command][1]
        sub = commands.add_parser(command, help=summary, description=summary, allow_abbrev=False,
                                  prog=f"{PROG} {command}", formatter_class=HelpFormatter)
        if name is not None:
            command_function(command, "add")(sub)
            add_global_options(sub)
    return parser


def _did_you_mean(name: str) -> str:
    import difflib

    close = difflib.get_close_matches(name, COMMANDS, n=1)
    return f"; did you mean {close[0]!r}?" if close else ""


def overview() -> str:
    """What `sessdex` alone prints: the short usage and the command list."""
    width = max(len(name) for name in COMMANDS)
    lines = [f"usage: {PROG} [--agent-dir DIR] [--catalog CATALOG] [--machine NAME] [--machines {{this,all}}] "
             "COMMAND ...", "", DESCRIPTION, "", "commands:"]
    lines += [f"  {name:<{width}}  {COMMANDS[name][1]}" for name in sorted(COMMANDS)]
    lines += ["", f"Run `{PROG} COMMAND --help` for a command's options, `{PROG} --help` for the global options."]
    return "\n".join(lines)


# Commands whose `--json` takes FIELDS and that take words after their options: `--json WORD` there is `--json`
# and a word, unless WORD names fields. (The other commands' `--json` takes no value.)
WORDS_AFTER_JSON = frozenset({"search", "resume", "usage"})


def json_value_apart(args: Sequence[str], name: str | None) -> list[str]:
    """`args` with `--json WORD` written `--json= WORD` where WORD is the command's argument rather than a list of
    fields (`sessdex search --json docker`): it holds no comma and names no JSON field of any command."""
    from sessdex.catalog.cli.output import ALL_JSON_FIELDS

    words = list(args)
    if name not in WORDS_AFTER_JSON:
        return words
    for position, token in enumerate(words[:-1]):
        following = words[position + 1]
        if token == "--json" and not following.startswith("-") and "," not in following \
                and following not in ALL_JSON_FIELDS:
            words[position] = "--json="
    return words


def parse_command_line(args: Sequence[str]) -> argparse.Namespace:
    """`args` (argv without the program) parsed; CommandLineError for a mistyped command or a bad option."""
    name = command_name(args)
    if name is not None and name not in COMMANDS:
        raise CommandLineError(PROG, f"no such command {name!r}{_did_you_mean(name)}")
    parsed, extra = build_parser(name).parse_known_args(json_value_apart(args, name))
    if extra:
        # Reported by the command they were given to, whose help lists what it takes.
        raise CommandLineError(parsed.parser_prog, f"unrecognized arguments: {' '.join(extra)}")
    return parsed


def settings_of(args: argparse.Namespace) -> Settings:
    """The settings of the global options (else their environment variables, else the defaults)."""
    from sessdex.catalog.store.settings import Settings
    from sessdex.core.errors import UsageError

    settings = Settings.resolve(args.agent_dir, args.catalog, machine=args.machine, machines=args.machines)
    if settings.agent_dir is not None and os.path.isfile(settings.agent_dir):
        raise UsageError(f"--agent-dir {os.fspath(settings.agent_dir)}: a file, not a directory")
    return settings


def agent_dir_named(args: argparse.Namespace) -> bool:
    """Whether --agent-dir was given on the command line (not only inherited from $PI_CODING_AGENT_DIR)."""
    return getattr(args, "agent_dir", None) is not None


def dispatch(args: Sequence[str]) -> int:
    """Run `sessdex ARGS` and return its exit status (errors are raised, for `errors.run_reporting_errors`)."""
    parsed = parse_command_line(args)
    if parsed.command is None:
        print(overview())
        return 0
    run = command_function(parsed.command, "run")
    if sys.stderr.isatty():
        # A read command that finds the catalog incomplete says how far its indexing is (see cli.progress).
        from sessdex.catalog.cli.progress import pass_reporter
        from sessdex.catalog.index import pass_progress

        pass_progress.install(pass_reporter)
    return run(parsed, settings_of(parsed))


"""The `sessdex` command line: one click group; subcommands live in their own modules and are loaded lazily.

The console script is `sessdex.catalog.cli.entry:main`, which answers the common shapes of the hot read commands
without click (`sessdex.catalog.cli.fastpath`) and hands everything else to `run_click` here.
"""

from __future__ import annotations

import importlib
import sys
from typing import NoReturn

import click

from sessdex.catalog.cli.read_guard import AGENT_DIR_NAMED
from sessdex.catalog.store.settings import Settings

# name -> ("module:attribute" in this package, short help). A module is imported only when its subcommand runs,
# so the hot paths (resume, recent, list) never pay for the others' imports, and `--help` none.
SUBCOMMANDS: dict[str, tuple[str, str]] = {
    "context": ("inspect_commands:context_command", "Print what the model sees for a session file."),
    "entries": ("inspect_commands:entries_command", "Print a session file's entries (read-only)."),
    "history": ("history_commands:history_group", "Search and add prompt history (history.db)."),
    "list": ("session_group:list_command", "List sessions of this project (or --all)."),
    "recent": ("session_group:recent_command", "Show the most recently used sessions."),
    "resume": ("session_group:resume_command", "Resolve a session by id prefix or path and print its file."),
    "continue": ("session_group:continue_command", "Print the session --continue would resume here."),
    "pick": ("pick_commands:pick_command", "Pick a session interactively."),
    "index": ("catalog_commands:index_command", "Bring the catalog up to date (or --rebuild it)."),
    "watch": ("catalog_commands:watch_command", "Keep the catalog current as the agent writes."),
    "search": ("catalog_commands:search_command", "Search titles, first messages and all message text."),
    "doctor": ("catalog_commands:doctor_command", "Check the catalog against the files and repair it."),
    "view": ("view_commands:view_command", "View a session's transcript; switch sessions in place."),
    "usage": ("usage_commands:usage_command", "Tokens and cost per day, week, month, session, project or model."),
    "rename": ("manage_commands:rename_command", "Give a session a title, as the agent's rename does."),
    "trash": ("manage_commands:trash_command", "Move a session to the trash; trash list | restore ID."),
    "init": ("shell_commands:init_command", "Print shell integration (xr, key, completion) for bash|zsh|fish."),
}


class LazyGroup(click.Group):
    """A click group whose subcommands are imported on first use."""

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        rows = [(name, SUBCOMMANDS[name][1]) for name in sorted(SUBCOMMANDS)]
        with formatter.section("Commands"):
            formatter.write_dl(rows)

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(set(super().list_commands(ctx)) | set(SUBCOMMANDS))

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name not in SUBCOMMANDS:
            return super().get_command(ctx, cmd_name)
        module_name, attribute = SUBCOMMANDS[cmd_name][0].split(":")
        return getattr(importlib.import_module(f"{__package__}.{module_name}"), attribute)


EXIT_STATUS_HELP = """\b
Exit status:
  0    success
  1    not found, ambiguous or refused (no sessions yet, no history yet)
  2    usage error or unreadable input (a --agent-dir that does not exist)
  130  cancelled: Esc or Ctrl+C in the picker or the viewer (nothing on stdout)"""


@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"]}, epilog=EXIT_STATUS_HELP)
@click.version_option(package_name="sessdex", prog_name="sessdex", message="%(prog)s %(version)s")
@click.option("--agent-dir", envvar="PI_CODING_AGENT_DIR", type=click.Path(file_okay=False),
              help="The agent directory (default ~/.xcsh/agent).")
@click.option("--catalog", envvar="SESSDEX_CATALOG",
              help="The catalog: a file path or a SQLAlchemy URL (default <agent dir>/catalog.db); "
                   "`off` makes list/recent/resume/continue read the session files directly.")
@click.option("--machine", envvar="SESSDEX_MACHINE",
              help="This agent dir's machine in a shared catalog (default: the name stored in the agent dir, "
                   "else the host name).")
@click.option("--machines", envvar="SESSDEX_MACHINES", type=click.Choice(["this", "all"]),
              help="Whose sessions list/resume/search/pick show: this machine's (default) or every machine's.")
@click.pass_context
def cli(ctx: click.Context, agent_dir: str | None, catalog: str | None, machine: str | None,
        machines: str | None) -> None:
    """sessdex: index, search and resume xcsh session history."""
    ctx.obj = Settings.resolve(agent_dir, catalog, machine=machine, machines=machines)
    # Named on the command line (not only inherited from $PI_CODING_AGENT_DIR): a missing one is a usage error.
    ctx.meta[AGENT_DIR_NAMED] = ctx.get_parameter_source("agent_dir") == click.core.ParameterSource.COMMANDLINE


def command_settings(ctx: click.Context) -> Settings:
    """The settings the root command resolved (`--agent-dir`, `--catalog`, `--machine(s)` and their variables)."""
    settings = ctx.find_root().obj
    return settings if isinstance(settings, Settings) else Settings.resolve()


def run_click(argv: list[str] | None = None) -> int:
    """Run the click CLI on `argv` (default: the process arguments) and return its exit status.

    Errors propagate: `sessdex.catalog.cli.entry.run_reporting_errors` reports them for both CLI paths.
    """
    status = cli.main(args=argv, prog_name="sessdex", standalone_mode=False)
    return status if isinstance(status, int) else 0


def main(argv: list[str] | None = None) -> NoReturn:
    """Run the click CLI (never the fast path of `sessdex.catalog.cli.entry`), reporting errors, and exit with its status."""
    from sessdex.catalog.cli.errors import run_reporting_errors

    sys.exit(run_reporting_errors(lambda: run_click(argv)))

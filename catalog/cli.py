"""The `sessdex` command line: one click group; subcommands live in their own modules and are loaded lazily."""

from __future__ import annotations

import importlib
import sys

import click

from core.errors import SessdexError

# name -> "module:attribute"; imported only when that subcommand runs, so that the hot paths
# (resume, recent, list) never pay for the others' imports.
SUBCOMMANDS: dict[str, str] = {
    "context": "catalog.cli_inspect:context_command",
    "entries": "catalog.cli_inspect:entries_command",
    "history": "catalog.cli_history:history_group",
    "list": "catalog.cli_sessions:list_command",
    "recent": "catalog.cli_sessions:recent_command",
    "resume": "catalog.cli_sessions:resume_command",
    "continue": "catalog.cli_sessions:continue_command",
    "pick": "catalog.cli_pick:pick_command",
    "index": "catalog.cli_catalog:index_command",
    "watch": "catalog.cli_catalog:watch_command",
    "search": "catalog.cli_catalog:search_command",
    "doctor": "catalog.cli_catalog:doctor_command",
    "view": "catalog.cli_view:view_command",
}


class LazyGroup(click.Group):
    """A click group whose subcommands are imported on first use."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(set(super().list_commands(ctx)) | set(SUBCOMMANDS))

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        target = SUBCOMMANDS.get(cmd_name)
        if target is None:
            return super().get_command(ctx, cmd_name)
        module_name, attribute = target.split(":")
        return getattr(importlib.import_module(module_name), attribute)


@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.option("--agent-dir", envvar="PI_CODING_AGENT_DIR", type=click.Path(file_okay=False),
              help="The agent directory (default ~/.xcsh/agent).")
@click.option("--catalog", envvar="SESSDEX_CATALOG",
              help="The catalog: a file path or a SQLAlchemy URL (default <agent dir>/catalog.db).")
@click.pass_context
def cli(ctx: click.Context, agent_dir: str | None, catalog: str | None) -> None:
    """sessdex: index, search and resume xcsh session history."""
    ctx.ensure_object(dict)
    ctx.obj["agent_dir"] = agent_dir
    ctx.obj["catalog"] = catalog


def main(argv: list[str] | None = None) -> None:
    """Run the CLI, mapping every SessdexError to one line on stderr and its exit code."""
    try:
        status = cli.main(args=argv, prog_name="sessdex", standalone_mode=False)
    except click.exceptions.Abort:
        click.echo("Aborted.", err=True)
        sys.exit(130)
    except click.ClickException as exc:
        exc.show()
        sys.exit(exc.exit_code)
    except SessdexError as exc:
        click.echo(f"sessdex: {exc}", err=True)
        sys.exit(exc.exit_code)
    except KeyboardInterrupt:
        sys.exit(130)
    except BrokenPipeError:
        sys.exit(0)
    sys.exit(status if isinstance(status, int) else 0)

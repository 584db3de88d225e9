"""`sessdex init` under click: only reached with root options before it (`sessdex --agent-dir X init bash`), or
for `sessdex --help`'s list; `sessdex.catalog.cli.entry` answers the plain form without click."""

from __future__ import annotations

import click

from sessdex.catalog.cli.shell_init import run_init


@click.command("init", add_help_option=False,
               context_settings={"ignore_unknown_options": True, "allow_extra_args": True})
@click.pass_context
def init_command(ctx: click.Context) -> None:
    """Print shell integration for bash|zsh|fish (see `sessdex init --help`)."""
    ctx.exit(run_init(ctx.args))

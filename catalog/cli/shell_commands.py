"""`sessdex init` through the parser: reached with global options before it (`sessdex --agent-dir X init bash`);
the plain form is answered before the parser is built (`sessdex.catalog.cli.entry`)."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from sessdex.catalog.cli.shell_init import run_init as print_init

if TYPE_CHECKING:
    from sessdex.catalog.store.settings import Settings


def add_init_arguments(parser: argparse.ArgumentParser) -> None:
    parser.description = "Print shell integration for bash|zsh|fish (see `sessdex init --help`)."
    parser.add_argument("init_args", metavar="bash|zsh|fish [--cmd NAME] [--no-key] [--key KEY]",
                        nargs=argparse.REMAINDER, help="What `sessdex init --help` describes.")


def run_init(args: argparse.Namespace, settings: Settings) -> int:
    return print_init(args.init_args)

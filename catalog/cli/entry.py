"""The `sessdex` console script: the argument parser of `sessdex.catalog.cli.commands`, errors reported by
`sessdex.catalog.cli.errors.run_reporting_errors` (one line and an exit status, never a traceback).

`init` and `complete-sessions` run from shell start-up and from every Tab press: they are answered before the
parser is even built.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, NoReturn

from sessdex.catalog.cli.errors import run_reporting_errors

if TYPE_CHECKING:
    from collections.abc import Sequence


def main(argv: Sequence[str] | None = None) -> NoReturn:
    """Run `sessdex ARGV` (default: the process arguments) and exit with its status."""
    args = list(sys.argv[1:] if argv is None else argv)
    sys.exit(run_reporting_errors(lambda: _run(args)))


def _run(args: list[str]) -> int:
    if args and args[0] in ("init", "complete-sessions"):
        from sessdex.catalog.cli import shell_init

        if args[0] == "init":
            return shell_init.run_init(args[1:])
        return shell_init.run_complete_sessions(args[1:])
    from sessdex.catalog.cli import commands

    return commands.dispatch(args)

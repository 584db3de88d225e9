"""The `sessdex` console script: the argument parser of `sessdex.catalog.cli.commands`, errors reported by
`sessdex.catalog.cli.errors.run_reporting_errors` (one line and an exit status, never a traceback).

`init`, `complete-sessions` and `complete-commands` run from shell start-up and from Tab presses: they are answered
before the parser is even built.
"""

from __future__ import annotations

import gc
import sys

from sessdex.catalog.cli.errors import run_reporting_errors

TYPE_CHECKING = False  # see the README's start-up budget
if TYPE_CHECKING:
    from collections.abc import Sequence
    from typing import NoReturn


def main(argv: Sequence[str] | None = None) -> NoReturn:
    """Run `sessdex ARGV` (default: the process arguments) and exit with its status."""
    args = list(sys.argv[1:] if argv is None else argv)
    status = run_reporting_errors(lambda: _run(args))
    if argv is None:
        # The process ends here. Frozen objects are out of the cycle collector's reach, so the interpreter's last
        # collection at exit does not walk every object the command made (3 to 9 % of `sessdex list`).
        # A caller passing its own arguments lives on, and its objects stay collectable.
        gc.freeze()
    sys.exit(status)


def _run(args: list[str]) -> int:
    if args and args[0] in ("init", "complete-sessions", "complete-commands"):
        from sessdex.catalog.cli import shell_init

        if args[0] == "init":
            return shell_init.run_init(args[1:])
        if args[0] == "complete-commands":
            return shell_init.run_complete_commands(args[1:])
        return shell_init.run_complete_sessions(args[1:])
    from sessdex.catalog.cli import commands

    return commands.dispatch(args)

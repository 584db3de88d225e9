"""The `sessdex` console script: the click-free fast path for the hot read commands, else the click CLI.

`sessdex resume ID`, `recent`, `list` and `continue` run from shell prompts and editor integrations; on a
current catalog they finish in tens of milliseconds only if the process imports neither click nor
SQLAlchemy/Alembic, so `sessdex.catalog.cli.fastpath` answers their common shapes itself. Every other invocation,
and any the fast path is not sure of, goes to the click CLI (`sessdex.catalog.cli.click_app`). Both paths report errors
through `sessdex.catalog.cli.errors.run_reporting_errors`, so messages and exit codes do not depend on the path taken.
`SESSDEX_NO_FASTPATH=1` (any non-empty value) forces the click CLI, for tests and debugging.
"""

from __future__ import annotations

import gc
import os
import sys

from sessdex.catalog.cli.errors import run_reporting_errors

TYPE_CHECKING = False  # typing stays off the hot commands' imports (issue 12)
if TYPE_CHECKING:
    from collections.abc import Sequence
    from typing import NoReturn

NO_FASTPATH_ENV = "SESSDEX_NO_FASTPATH"


def main(argv: Sequence[str] | None = None) -> NoReturn:
    """Run `sessdex ARGV` (default: the process arguments) and exit with its status."""
    args = list(sys.argv[1:] if argv is None else argv)
    # A hot command lives for milliseconds and makes no garbage worth a cycle collection: the collector's passes
    # over the freshly imported modules were a twelfth of `sessdex list`. Whatever may run long (the picker,
    # the click commands: index, watch, ...) turns it back on (_run).
    collecting = gc.isenabled()
    gc.disable()
    status = run_reporting_errors(lambda: _run(args))
    if argv is None and not gc.isenabled():
        # The process's own command, answered without click: nothing is left for the collector at exit either
        # (every file and connection is closed), and its last pass over every object would cost as much as the
        # command's own work. (A caller passing `argv` lives on: its objects stay collectable.)
        gc.freeze()
    if collecting:
        gc.enable()  # as it was, for a caller that catches the SystemExit
    else:
        gc.disable()
    sys.exit(status)


def _run(args: list[str]) -> int:
    if args and args[0] in ("init", "complete-sessions"):
        # Shell start-up and Tab presses: answered without click whatever the environment says.
        from sessdex.catalog.cli import shell_init

        if args[0] == "init":
            return shell_init.run_init(args[1:])
        return shell_init.run_complete_sessions(args[1:])
    if not os.environ.get(NO_FASTPATH_ENV):
        from sessdex.catalog.cli.fastpath import run_fast

        status = run_fast(args)
        if status is not None:
            return status
        gc.enable()
        status = _run_picker_fast(args)
        if status is not None:
            return status
    gc.enable()
    from sessdex.catalog.cli.click_app import run_click

    return run_click(args)


def _run_picker_fast(args: list[str]) -> int | None:
    """`pick` and `resume` without a value open the picker without click, first frame first (see pick_fast)."""
    if "pick" not in args and "resume" not in args:
        return None
    from sessdex.catalog.cli.pick_fast import run_pick_fast

    return run_pick_fast(args)

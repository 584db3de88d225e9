"""The one place where errors become what the user sees: a message on stderr and an exit status.

Both CLI paths (the fast path and click) run through `run_reporting_errors`, so messages and exit codes do
not depend on the path taken.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable

from sessdex.core.errors import SessdexError

INTERRUPTED_STATUS = 130
BROKEN_PIPE_STATUS = 1  # what click exits with when stdout is closed under it


def run_reporting_errors(command: Callable[[], int]) -> int:
    """Run a CLI invocation and return its exit status, every error it raises reported as the user sees it.

    A SessdexError is one line `sessdex: <message>` on stderr and its `exit_code`; click's own errors
    (usage, abort) are shown as click shows them; Ctrl+C is `Aborted.` and 130; a closed stdout ends
    quietly with status 1.
    """
    try:
        return command()
    except SessdexError as exc:
        _echo_error(f"sessdex: {exc}")
        return exc.exit_code
    except KeyboardInterrupt:
        _echo_error("")  # ends the terminal's `^C` line, as click does
        _echo_error("Aborted.")
        return INTERRUPTED_STATUS
    except BrokenPipeError:
        _silence_closed_output()
        return BROKEN_PIPE_STATUS
    except Exception as exc:
        status = _click_error_status(exc)
        if status is None:
            raise
        return status


def _echo_error(text: str) -> None:
    from sessdex.catalog.cli.output import echo

    echo(text, err=True)


def _click_error_status(exc: Exception) -> int | None:
    """Show a click exception as click does and return its status; None for anything else."""
    click = sys.modules.get("click")  # a click exception exists only once click was imported
    if click is None:
        return None
    if isinstance(exc, click.exceptions.Abort):
        click.echo("Aborted.", err=True)
        return INTERRUPTED_STATUS
    if isinstance(exc, click.ClickException):
        exc.show()
        return exc.exit_code
    return None


def _silence_closed_output() -> None:
    """Point stdout and stderr at /dev/null: the interpreter's last flush must not fail on the closed pipe."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    for stream in (sys.stdout, sys.stderr):
        try:
            os.dup2(devnull, stream.fileno())
        except (AttributeError, OSError, ValueError):
            continue
    os.close(devnull)

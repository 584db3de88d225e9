"""The one place where errors become what the user sees: a message on stderr and an exit status.

Every command runs through `run_reporting_errors`: a usage error, a refusal, a file or database failure is one
line on stderr and an exit status, never a traceback.
"""

from __future__ import annotations

import os
import sys

from sessdex.core.errors import SessdexError, UsageError

TYPE_CHECKING = False  # see the README's start-up budget
if TYPE_CHECKING:
    from collections.abc import Callable

INTERRUPTED_STATUS = 130
BROKEN_PIPE_STATUS = 1  # stdout was closed under the command (`sessdex list | head -1`)
OS_ERROR_STATUS = 2  # a file or folder sessdex needs cannot be read or written (permissions, read-only, gone)
DATABASE_ERROR_STATUS = 1


class CommandLineError(UsageError):
    """A bad command line (an unknown command or option, a missing or invalid value) of the command `command`
    (`sessdex list`): reported as `sessdex list: <message> (see `sessdex list --help`)`, exit 2."""

    def __init__(self, command: str, message: str) -> None:
        super().__init__(message)
        self.command = command


def run_reporting_errors(command: Callable[[], int]) -> int:
    """Run a CLI invocation and return its exit status, every error it raises reported as the user sees it.

    A SessdexError is one line `sessdex: <message>` on stderr and its `exit_code`; a bad command line is one
    line too (`sessdex recent: <message> (see ...)`, status 2); Ctrl+C is `Aborted.` and 130; a closed stdout ends
    quietly with status 1.
    """
    try:
        return command()
    except CommandLineError as exc:
        _echo_error(f"{exc.command}: {exc} (see `{exc.command} --help`)")
        return exc.exit_code
    except SessdexError as exc:
        _echo_error(f"sessdex: {exc}")
        return exc.exit_code
    except KeyboardInterrupt:
        _echo_error("")  # ends the terminal's `^C` line
        _echo_error("Aborted.")
        return INTERRUPTED_STATUS
    except BrokenPipeError:
        _silence_closed_output()
        return BROKEN_PIPE_STATUS
    except OSError as exc:
        # A read-only agent dir, a file removed underfoot: one line, never a traceback.
        where = f": {exc.filename}" if exc.filename else ""
        _echo_error(f"sessdex: {exc.strerror or exc}{where}")
        return OS_ERROR_STATUS
    except Exception as exc:
        status = _database_error_status(exc)
        if status is None:
            raise
        return status


def _echo_error(text: str) -> None:
    from sessdex.catalog.cli.output import echo

    echo(text, err=True)


def _database_error_status(exc: Exception) -> int | None:
    """A SQLite error that escaped (the catalog's WAL deleted under a running command, a disk error): one line."""
    sqlite3, sqlalchemy_errors = sys.modules.get("sqlite3"), sys.modules.get("sqlalchemy.exc")
    if sqlalchemy_errors is not None and isinstance(exc, sqlalchemy_errors.DBAPIError):
        exc = exc.orig  # the driver's own error, without SQLAlchemy's SQL dump
    if sqlite3 is None or not isinstance(exc, sqlite3.Error):
        return None
    _echo_error(f"sessdex: the database failed: {exc}. The catalog is derived data: `sessdex doctor` or "
                "`sessdex index --rebuild` repairs it (session files are never touched)")
    return DATABASE_ERROR_STATUS


def _silence_closed_output() -> None:
    """Point stdout and stderr at /dev/null: the interpreter's last flush must not fail on the closed pipe."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    for stream in (sys.stdout, sys.stderr):
        try:
            os.dup2(devnull, stream.fileno())
        except (AttributeError, OSError, ValueError):
            continue
    os.close(devnull)

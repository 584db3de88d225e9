"""The exception tree of sessdex: every error a user can cause derives from SessdexError."""

from __future__ import annotations

TYPE_CHECKING = False  # typing stays off the hot commands' imports
if TYPE_CHECKING:
    from typing import Any


class SessdexError(Exception):
    """Base of every error sessdex reports to a user; `exit_code` is what the CLI exits with."""

    exit_code = 1


class UsageError(SessdexError):
    """The command was called wrongly (bad option values, unreadable input path)."""

    exit_code = 2


class SessionFileError(SessdexError):
    """A session file is missing or cannot be read."""

    exit_code = 2


class NotASessionError(SessdexError):
    """An existing file that is not a session (no valid header) was named where a session is expected.

    sessdex refuses instead of handing the file to the agent or starting a session over it.
    """


class PersistenceError(SessdexError):
    """Writing a session file failed; kept and raised again by later operations."""


class EntryNotFoundError(SessdexError, LookupError):
    """An operation named an entry id that is not in the session."""

    def __init__(self, entry_id: str) -> None:
        super().__init__(f"Entry {entry_id} not found")
        self.entry_id = entry_id


class SessionNotFoundError(SessdexError):
    """No session matches the id prefix the user gave."""


class SessionInOtherProjectError(SessdexError):
    """The matched session belongs to another project and the user declined to fork it."""


class SessionOnOtherMachineError(SessdexError):
    """The matched session's file is on another machine sharing the catalog, not reachable here."""


class AmbiguousSessionError(SessdexError):
    """An id prefix matches several sessions; `candidates` lists them."""

    def __init__(self, message: str, candidates: list[Any]) -> None:
        super().__init__(message)
        self.candidates = candidates


class ForkSourceNotFoundError(SessdexError):
    """`fork_from` was given a source session file that does not exist."""


class CatalogError(SessdexError):
    """The catalog database cannot be opened, upgraded or queried."""


class CatalogUnavailableError(CatalogError):
    """The catalog's database server cannot be reached or refuses us (down, wrong password, no such database)."""

    exit_code = 2


class HistoryError(SessdexError):
    """The prompt history database cannot be opened or written."""


class SessionBusyError(SessdexError):
    """Another process (most likely the agent) holds the session file open for writing.

    A whole-file rewrite replaces the file by a new one; a process that keeps its descriptor open would go on
    writing into the replaced file and every entry it wrote from then on would be lost. sessdex refuses instead.
    """


class PrivateFileError(SessdexError):
    """A file or folder sessdex would write its own data to is not private to the user: another user's, readable
    or writable by others, a symlink or not a regular file. sessdex refuses rather than leak session text."""

    exit_code = 2

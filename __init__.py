"""sessdex: read, index, search and resume the session history of the xcsh coding agent.

The names below are the library's public API. They are loaded on first use (PEP 562), so that
`import sessdex` — which every `sessdex` command does first — costs nothing on the CLI's hot path.
"""

from __future__ import annotations

TYPE_CHECKING = False  # typing (and importlib) stay off the hot commands' imports

__all__ = [
    "AgentPaths",
    "AgentSession",
    "AmbiguousSessionError",
    "BlobStore",
    "Catalog",
    "CatalogError",
    "FileScan",
    "FileSessionStorage",
    "HistoryError",
    "HistoryStorage",
    "MemorySessionStorage",
    "PersistenceError",
    "RecentSessionInfo",
    "SessdexError",
    "SessionFileError",
    "SessionInfo",
    "SessionInOtherProjectError",
    "SessionManager",
    "SessionNotFoundError",
    "SessionRuntime",
    "UsageError",
    "__version__",
    "build_session_context",
    "find_most_recent_session",
    "get_recent_sessions",
    "list_all_sessions",
    "list_sessions",
    "open_catalog",
    "resolve_resume",
]

# Public name -> the module that defines it.
_SOURCES = {
    "AgentPaths": "sessdex.core.paths",
    "AgentSession": "sessdex.core.agent_session",
    "AmbiguousSessionError": "sessdex.core.errors",
    "BlobStore": "sessdex.core.blobs",
    "Catalog": "sessdex.catalog.queries.sessions",
    "CatalogError": "sessdex.core.errors",
    "FileScan": "sessdex.catalog.queries.file_scan",
    "FileSessionStorage": "sessdex.core.storage",
    "HistoryError": "sessdex.core.errors",
    "HistoryStorage": "sessdex.catalog.history.storage",
    "MemorySessionStorage": "sessdex.core.storage",
    "PersistenceError": "sessdex.core.errors",
    "RecentSessionInfo": "sessdex.core.discovery",
    "SessdexError": "sessdex.core.errors",
    "SessionFileError": "sessdex.core.errors",
    "SessionInfo": "sessdex.core.summary",
    "SessionInOtherProjectError": "sessdex.core.errors",
    "SessionManager": "sessdex.core.session_manager",
    "SessionNotFoundError": "sessdex.core.errors",
    "SessionRuntime": "sessdex.core.runtime",
    "UsageError": "sessdex.core.errors",
    "build_session_context": "sessdex.core.context",
    "find_most_recent_session": "sessdex.core.discovery",
    "get_recent_sessions": "sessdex.core.discovery",
    "list_all_sessions": "sessdex.core.discovery",
    "list_sessions": "sessdex.core.discovery",
    "open_catalog": "sessdex.catalog.queries.sessions",
    "resolve_resume": "sessdex.core.resume",
}

if TYPE_CHECKING:
    from typing import Any

    from sessdex.catalog.history.storage import HistoryStorage
    from sessdex.catalog.queries.file_scan import FileScan
    from sessdex.catalog.queries.sessions import Catalog, open_catalog
    from sessdex.core.agent_session import AgentSession
    from sessdex.core.blobs import BlobStore
    from sessdex.core.context import build_session_context
    from sessdex.core.discovery import (
        RecentSessionInfo,
        find_most_recent_session,
        get_recent_sessions,
        list_all_sessions,
        list_sessions,
    )
    from sessdex.core.errors import (
        AmbiguousSessionError,
        CatalogError,
        HistoryError,
        PersistenceError,
        SessdexError,
        SessionFileError,
        SessionInOtherProjectError,
        SessionNotFoundError,
        UsageError,
    )
    from sessdex.core.paths import AgentPaths
    from sessdex.core.resume import resolve_resume
    from sessdex.core.runtime import SessionRuntime
    from sessdex.core.session_manager import SessionManager
    from sessdex.core.storage import FileSessionStorage, MemorySessionStorage
    from sessdex.core.summary import SessionInfo


def __getattr__(name: str) -> Any:
    """Load a public name from its module the first time it is asked for."""
    if name == "__version__":
        from importlib.metadata import PackageNotFoundError, version

        try:
            return version("sessdex")
        except PackageNotFoundError:
            return "0+unknown"
    module = _SOURCES.get(name)
    if module is None:
        raise AttributeError(f"module 'sessdex' has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))

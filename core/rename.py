"""Renaming a session the way the agent does (`setSessionName(name, "user")`): the title goes into the header
(and the `title` line, when the file has one) by an atomic rewrite of the whole file, so the agent shows it."""

from __future__ import annotations

import os
from pathlib import Path

from sessdex.core.errors import SessionFileError, UsageError
from sessdex.core.paths import AgentPaths


def rename_session(path: str | os.PathLike[str], title: str, paths: AgentPaths) -> str:
    """Set the title of the session file at `path` as a user rename; return the title as stored (cleaned).

    Refuses (never starts a new session there) when `path` is not a readable session file, and when the
    cleaned title is empty. The terminal's breadcrumb is left alone: renaming is not resuming.
    """
    from sessdex.core.discovery import read_session_info
    from sessdex.core.runtime import SessionRuntime
    from sessdex.core.session_manager import SessionManager, sanitize_session_name

    clean = sanitize_session_name(title)
    if not clean:
        raise UsageError("a session title needs at least one visible character")
    path = Path(path)
    if path.is_symlink():
        # The rewrite replaces a file by a new one: done to the link, it would leave the real file with its old
        # title and the two diverging. The link's target is the session; it is renamed there.
        path = Path(os.path.realpath(path))
    if read_session_info(path) is None:
        raise SessionFileError(f"{path} is not a readable session file")
    runtime = SessionRuntime(paths=paths, environ={}, tty_path=lambda: None)  # no terminal: no breadcrumb
    manager = SessionManager.open(path, runtime=runtime)
    try:
        manager.set_session_name(clean, "user")
        manager.flush()
    finally:
        manager.close()
    return clean

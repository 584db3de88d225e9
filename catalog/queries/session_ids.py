"""Every session id `resume` may look at, for printing ids at a width that stays unique (one id rule).

`resume PREFIX` looks in this project first, then in every project: an id prefix is safe to print when no other
session anywhere shares it. The ids come from the file names (`<timestamp>_<sessionId>.jsonl`), without opening a
file.
"""

from __future__ import annotations

from typing import Any

from sessdex.core.paths import session_file_entries


def known_session_ids(source: Any) -> list[str]:
    """The session ids of this machine's sessions (any project, any message count), from the file names: the
    catalog may not have read every project yet (a listing refreshes only the folders it shows)."""
    from sessdex.catalog.queries.sessions import Catalog

    root = source.sessions_root if isinstance(source, Catalog) else source.paths.sessions_root
    return ids_from_file_names(str(root))


def ids_from_file_names(sessions_root: str) -> list[str]:
    """The session ids the file names below `sessions_root` carry (the part after the last `_`)."""
    ids = []
    for entry in session_file_entries(sessions_root, recursive=True):
        stem = entry.name[:-len(".jsonl")]
        _timestamp, separator, session_id = stem.rpartition("_")
        if separator and session_id:
            ids.append(session_id)
    return ids

"""Every session id `resume` may look at, for printing ids at a width that stays unique (one id rule).

`resume PREFIX` looks in this project first, then in every project: an id prefix is safe to print when no other
session anywhere shares it. The ids come from the catalog when a live watcher keeps every project current (see
`Catalog.watched_id_width`), else from the file names (`<timestamp>_<sessionId>.jsonl`), without opening a file.
"""

from __future__ import annotations

from sessdex.core.paths import session_file_entries, session_ids_of_names

TYPE_CHECKING = False  # see the README's start-up budget
if TYPE_CHECKING:
    from collections.abc import Sequence
    from typing import Any


def resume_id_width(source: Any, ids: Sequence[str]) -> int:
    """The id width at which every session `resume` looks at (every project's; and `ids`) has its own prefix."""
    from sessdex.catalog.queries.sessions import Catalog
    from sessdex.core.discovery import id_prefix_length

    if isinstance(source, Catalog):
        width = source.watched_id_width()  # the listing's ids are among the catalog's then
        if width is not None:
            return width
    return id_prefix_length([*known_session_ids(source), *ids])


def known_session_ids(source: Any) -> list[str]:
    """The session ids of this machine's sessions (any project, any message count), from the file names: the
    catalog may not have read every project yet (a listing refreshes only the folders it shows)."""
    from sessdex.catalog.queries.sessions import Catalog

    root = source.sessions_root if isinstance(source, Catalog) else source.paths.sessions_root
    return ids_from_file_names(str(root))


def ids_from_file_names(sessions_root: str) -> list[str]:
    """The session ids the file names below `sessions_root` carry (the part after the last `_`)."""
    return session_ids_of_names(entry.name for entry in session_file_entries(sessions_root, recursive=True))

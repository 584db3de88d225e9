"""The one display name of a session, shared by every command that names one (tables, JSON `name`, completion)."""

from __future__ import annotations

import os

from sessdex.core.discovery import sanitize_display_name
from sessdex.core.paths import SESSION_SUFFIX

TYPE_CHECKING = False  # typing stays off the hot commands' imports
if TYPE_CHECKING:
    from sessdex.catalog.queries.source import PickerRow

ELLIPSIS = "…"
LABEL_MAX_CHARS = 200  # titles and first messages are cut here before any width is measured


def display_name(title: str | None, first_message: str | None, message_count: int, session_id: str | None,
                 path: str) -> str:
    """The one name of a session in every command: title, else first message, else id, else file name, cleaned."""
    for candidate in (title, first_message if message_count else None, session_id):
        label = _label(candidate)
        if label:
            return label
    # The file name, looked up only now (a listing names hundreds of sessions, nearly all by title or message).
    return _label(os.path.basename(path).removesuffix(SESSION_SUFFIX)) or os.path.basename(path)


def _label(candidate: str | None) -> str:
    """`candidate` cleaned to one line of at most LABEL_MAX_CHARS characters; "" when nothing is left."""
    cleaned = sanitize_display_name(candidate[:LABEL_MAX_CHARS * 2]) if candidate else ""
    return cleaned if len(cleaned) <= LABEL_MAX_CHARS else cleaned[:LABEL_MAX_CHARS - 1] + ELLIPSIS


def row_name(row: PickerRow) -> str:
    """`display_name` of a picker row."""
    return display_name(row.title, row.first_message, row.message_count, row.session_id, row.path)

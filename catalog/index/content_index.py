"""The second phase of a first index: the content a listing-first run left for later.

A first index into an empty catalog by a read command (`Indexer(defer_content=True)`) writes the files'
rows only (listing columns, ids, titles, counts: what `list` and `resume` need), in about the time it
takes to read and parse the files, and records them as the catalog's content backlog
(`sessdex.catalog.store.fts.FILES_BACKLOG_KEY`). This module reads those files again, in id order and in
chunks of about CHUNK_BYTES, each in its own short write transaction that also advances the backlog, and
stores their message rows, full-text entries and usage facts; after the last, it sums the usage rollup.
Readers and the watcher are never blocked for long, and an interrupted fill resumes where it stopped.
A file that changed since its row was written is indexed again from the start the ordinary way.

A bulk run of a full first index (`sessdex.catalog.index.bulk_writer`), like a catalog written by an earlier
version, leaves message rows without their `message_fts` entries (`sessdex.catalog.store.fts.BACKLOG_KEY`): those
are copied into `message_fts` afterwards (`sessdex.catalog.index.text_fill`).
Once both backlogs are gone the catalog holds exactly what a single full index writes (tests compare
the two). SQLite catalogs only: only they have FTS5 and bulk runs.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from sessdex.catalog.index.text_fill import CHUNK_ROWS, ContentProgress, fill_message_fts, fill_message_text
from sessdex.catalog.store import fts
from sessdex.catalog.store.db import SqliteCatalog

TYPE_CHECKING = False  # see the README's start-up budget
if TYPE_CHECKING:
    from sessdex.catalog.store.db import CatalogDatabase

# Names of the message-text half (catalog.index.text_fill) that callers of this module use.
__all__ = ["CHUNK_ROWS", "ContentProgress", "content_backlog", "fill_content_index", "fill_message_text"]

CHUNK_BYTES = 8 << 20  # bytes of session files read per transaction of the content backlog: about 0.1-0.3 s


def content_backlog(db: CatalogDatabase, *, text: bool = True) -> ContentProgress | None:
    """How far the content (message rows, full-text entries, usage facts) is while incomplete, else None.
    `text=False`: None once only message-text entries are left (message rows and usage facts are complete)."""
    if not isinstance(db, SqliteCatalog):
        return None
    reader = db.sqlite_reader()
    files = fts.read_backlog(reader, fts.FILES_BACKLOG_KEY)
    if files is not None:
        first, done, end = files
        return ContentProgress(done - first + 1, end - first + 1, "sessions")
    if not text:
        return None
    progress = fts.backlog_progress(reader)
    return None if progress is None else ContentProgress(*progress, "messages")


def backlog_messages_text(db: CatalogDatabase, file_id: int) -> str | None:
    """A file's searchable texts joined by spaces (as the catalog's message rows give them) while its content is
    still in the backlog, read from the file; None when the catalog holds it (or the file cannot be read)."""
    if not isinstance(db, SqliteCatalog):
        return None
    reader = db.sqlite_reader()
    backlog = fts.read_backlog(reader, fts.FILES_BACKLOG_KEY)
    if backlog is None or not backlog[1] < file_id <= backlog[2]:
        return None
    row = reader.execute("SELECT path, size FROM session_files WHERE id = ?", (file_id,)).fetchone()
    if row is None:
        return None
    from sessdex.catalog.index.file_reader import fold_chunks, message_text, open_session_file
    from sessdex.core.summary import SessionSummary

    texts: list[str] = []
    try:
        with open_session_file(row[0]) as handle:
            for found, _pending in fold_chunks(handle, 0, row[1], SessionSummary(), 0, usage=False):
                texts += map(message_text, found)
    except Exception:  # noqa: BLE001 - unreadable now: the catalog's (empty) answer stands
        return None
    return " ".join(texts)


def fill_content_index(db: CatalogDatabase, *, deadline: float | None = None,
                       progress: Callable[[ContentProgress], None] | None = None, chunk_rows: int | None = None,
                       chunk_bytes: int | None = None) -> bool:
    """Complete the content backlog, then the message-text backlog, chunk by chunk, until none is left (True) or
    `deadline` passes (False).

    `deadline` is a time.monotonic() value; `progress` is called after every chunk (of about `chunk_bytes` of
    files, default CHUNK_BYTES, or `chunk_rows` message rows, default CHUNK_ROWS).
    """
    if not isinstance(db, SqliteCatalog):
        return True
    reader = db.sqlite_reader()
    if fts.read_backlog(reader, fts.FILES_BACKLOG_KEY) is None and fts.read_backlog(reader) is None:
        return True  # the common case, answered without a write transaction
    if not _fill_files(db, deadline, progress, chunk_bytes or CHUNK_BYTES):
        return False
    return fill_message_fts(db, deadline, progress, chunk_rows or CHUNK_ROWS)


def _fill_files(db: SqliteCatalog, deadline: float | None, progress: Callable[[ContentProgress], None] | None,
                chunk_bytes: int) -> bool:
    from sessdex.catalog.index.indexer import Indexer
    from sessdex.catalog.index.usage_writer import refresh_all_usage

    connection = db.writer_connection()
    indexer = Indexer(db)
    while True:
        with db.write():
            backlog = fts.read_backlog(connection, fts.FILES_BACKLOG_KEY)
            if backlog is None:
                return True
            first, done, end = backlog
            if done >= end:
                refresh_all_usage(db)
                fts.write_files_backlog(connection, None)
                return True
            upto = indexer.fill_content(connection, done, end, chunk_bytes)
            fts.write_files_backlog(connection, (first, upto, end))
        if progress is not None:
            progress(ContentProgress(upto - first + 1, end - first + 1, "sessions"))
        if deadline is not None and time.monotonic() >= deadline:
            return False

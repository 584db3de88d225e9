"""The second phase of a first index: fill `message_fts` from the message rows a bulk run left without entries.

A first index into an empty catalog (`Indexer(defer_content=True)`) writes the listing columns and the
message rows, and records the ids still missing from the full-text index as the catalog's backlog
(`sessdex.catalog.store.fts.BACKLOG_KEY`). This module copies those rows into `message_fts` in chunks,
each in its own short write transaction that also advances the backlog, so readers and the watcher
are never blocked for long, and an interrupted fill resumes where it stopped. Once the backlog is
gone, `message_fts` holds exactly what an inline index would have written (tests compare the two).
SQLite catalogs only: only they have FTS5 and bulk runs.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from sessdex.catalog.store import fts
from sessdex.catalog.store.db import CatalogDatabase, SqliteCatalog

CHUNK_ROWS = 20_000  # message rows per transaction: about 0.1-0.3 s of FTS5 work


def content_backlog(db: CatalogDatabase) -> tuple[int, int] | None:
    """(message rows indexed, message rows of the backlog) while message_fts is incomplete, else None."""
    if not isinstance(db, SqliteCatalog):
        return None
    return fts.backlog_progress(db.sqlite_reader())


def fill_content_index(db: CatalogDatabase, *, deadline: float | None = None,
                       progress: Callable[[int, int], None] | None = None, chunk_rows: int | None = None) -> bool:
    """Index the backlog's message rows, chunk by chunk, until none is left (True) or `deadline` passes (False).

    `deadline` is a time.monotonic() value; `progress(indexed, total)` is called after every chunk of
    `chunk_rows` rows (default CHUNK_ROWS).
    """
    chunk_rows = chunk_rows or CHUNK_ROWS
    if not isinstance(db, SqliteCatalog):
        return True
    if fts.read_backlog(db.sqlite_reader()) is None:
        return True  # the common case, answered without a write transaction
    connection = db.writer_connection()
    while True:
        with db.write():
            backlog = fts.read_backlog(connection)
            if backlog is None:
                return True
            first, done, end = backlog
            upto = min(done + chunk_rows, end)
            connection.execute(fts.FILL_BACKLOG, (done, upto))
            fts.write_backlog(connection, first, upto, end)
        if progress is not None:
            progress(upto - first + 1, end - first + 1)
        if upto >= end:
            return True
        if deadline is not None and time.monotonic() >= deadline:
            return False

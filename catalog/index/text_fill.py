"""The full-text entries of message rows written without them: the message-text backlog, filled set-based.

A bulk run of a full first index (`sessdex.catalog.index.bulk_writer`), like a catalog written by an earlier
version, leaves message rows without their `message_fts` entries (`sessdex.catalog.store.fts.BACKLOG_KEY`). They
are copied into `message_fts` here, CHUNK_ROWS rows per statement and transaction, so that readers see progress
and other writers wait little. FTS5 writes its pending terms out as a new segment whenever they pass its
`hashsize` (1 MiB by default), and every segment is merged again later; a fill transaction raises it
(FILL_HASH_BYTES) so that a chunk becomes one segment, which makes the fill about a quarter cheaper than
interleaving the entries with the row inserts. SQLite catalogs only: only they have FTS5.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from sessdex.catalog.store import fts
from sessdex.catalog.store.db import SqliteCatalog

TYPE_CHECKING = False  # see the README's start-up budget
if TYPE_CHECKING:
    from sessdex.catalog.store.db import CatalogDatabase

CHUNK_ROWS = 20_000  # message rows per transaction of the message-text backlog: about 0.1-0.3 s of FTS5 work
FILL_HASH_BYTES = 128 << 20  # FTS5's pending-terms limit while a chunk of the message-text backlog is copied
DEFAULT_HASH_BYTES = 1 << 20  # FTS5's own default, put back before each fill transaction commits


class ContentProgress:
    """How far the content of a first index is: `done` of `total` sessions read, or (an earlier version's
    backlog) message rows indexed."""

    __slots__ = ("done", "total", "unit")

    def __init__(self, done: int, total: int, unit: str) -> None:
        self.done = done
        self.total = total
        self.unit = unit  # "sessions" or "messages"

    @property
    def percent(self) -> int:
        """The share done, rounded down."""
        return 100 * self.done // max(self.total, 1)


def fill_message_text(db: CatalogDatabase, *, deadline: float | None = None,
                      progress: Callable[[ContentProgress], None] | None = None) -> bool:
    """Complete the message-text backlog only (the `message_fts` entries of message rows written without them),
    as `content_index.fill_content_index` would: True when none is left, False when `deadline` passed first."""
    if not isinstance(db, SqliteCatalog) or fts.read_backlog(db.sqlite_reader()) is None:
        return True
    return fill_message_fts(db, deadline, progress, CHUNK_ROWS)


def fill_message_fts(db: SqliteCatalog, deadline: float | None, progress: Callable[[ContentProgress], None] | None,
                     chunk_rows: int) -> bool:
    """Copy the message-text backlog into message_fts, `chunk_rows` rows per transaction, until none is left (True)
    or `deadline` (time.monotonic()) passes (False); `progress` is told after every chunk."""
    connection = db.writer_connection()
    while True:
        with db.write():
            backlog = fts.read_backlog(connection)
            if backlog is None:
                return True
            first, done, end = backlog
            upto = min(done + chunk_rows, end)
            connection.execute(fts.SET_MESSAGE_HASH_SIZE, (FILL_HASH_BYTES,))
            connection.execute(fts.FILL_BACKLOG, (done, upto))
            connection.execute(fts.SET_MESSAGE_HASH_SIZE, (DEFAULT_HASH_BYTES,))
            fts.write_backlog(connection, first, upto, end)
        if progress is not None:
            progress(ContentProgress(upto - first + 1, end - first + 1, "messages"))
        if upto >= end:
            return True
        if deadline is not None and time.monotonic() >= deadline:
            return False

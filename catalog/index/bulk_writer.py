"""Write a run of new session files into a SQLite catalog from a background thread, in a few large statements.

Indexing is two kinds of work: Python (reading, parsing and folding the files) and SQLite (b-tree
and FTS5 inserts, which run without holding the GIL). `BulkWriter` executes the SQLite part on a
thread of its own, so it overlaps the parsing of the next files. The thread must execute *few*
statements: each one needs the GIL back, and while the indexing thread keeps it busy every hand-over
waits for the interpreter's switch interval (5 ms), so row-by-row inserts from a thread are far
slower than inline ones. Rows therefore travel as one JSON array per statement, unpacked by SQLite's
`json_each`; a row JSON cannot carry exactly (a NUL character, a non-finite number, an integer
beyond 64 bits) is bound as parameters of a statement of its own, as the ordinary writer binds it.
Texts do not travel inside that JSON: a part's texts (message texts, most of the bytes, and the text columns of
its `session_files` rows) are sent as one UTF-8 blob per statement and its JSON rows hold each text's byte offset
and length in it, so SQLite cuts the texts out (`substr` of a blob counts bytes) instead of parsing and unescaping
every character of them as JSON. It also keeps each row's JSON short, which matters: SQLite finds a row's parse
again for each of its columns by comparing the row's whole JSON text, so a 4 KB file row (its fold state, first
message, prefix state) cost about three times as much as its short columns alone.
The `session_fts` rows of a part are copied from the file rows just inserted, one statement per part.
The message texts' `message_fts` entries are not written here: every commit records the run's message
rows as the catalog's message-text backlog (`sessdex.catalog.store.fts.BACKLOG_KEY`), and
`sessdex.catalog.index.content_index` fills `message_fts` from them afterwards in a few large
statements. Building the full-text index set-based costs far less than interleaving it with the row
inserts (FTS5 flushes and merges its pending terms at the end of every statement), and listings,
resume and usage do not need it, so they are complete sooner.

With `listing_only` the run writes the files' rows only (its reader sends no texts and no usage facts), and
every commit records them as the catalog's content backlog (`sessdex.catalog.store.fts.FILES_BACKLOG_KEY`):
listings and resume then become visible at little more than the cost of reading the files, and
`sessdex.catalog.index.content_index` reads the files' message rows, full-text entries and usage facts
afterwards.

While the run lasts its connection keeps a larger page cache and checkpoints the WAL less often (BULK_PRAGMAS):
with SQLite's defaults (2 MB of cache, a checkpoint every 1,000 pages) the writer spent about a third of its time
spilling pages from its cache and copying the WAL back into the database. Neither touches durability or
consistency: the journal stays WAL and `synchronous` stays as the catalog set it.

The writer hands out row ids itself, which is only right while nobody else writes to the catalog:
every transaction checks `PRAGMA data_version` right after `BEGIN IMMEDIATE`, and when another
connection committed since this writer last did, it rolls back and raises `CatalogChanged`; the
indexer then redoes the uncommitted files the ordinary way. Transactions end only at file
boundaries (`end_batch`), so a file's rows are committed together; within a transaction a large
file's texts may reach SQLite before its `session_files` row, hence deferred foreign keys.
"""

from __future__ import annotations

import math
import queue
import sqlite3
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Self

import orjson

from sessdex.catalog.store import fts
from sessdex.core.usage import USAGE_FACT_COLUMNS

# A part (one round of statements) is sent once this many characters of text are waiting.
PART_CHARS = 1024 * 1024
# Parts waiting for the writer; the indexer blocks beyond this, which bounds memory and the wait at the end.
QUEUED_PARTS = 1
MESSAGE_COLUMNS = ("id", "file_id", "seq", "pending", "text")
# The bulk connection's settings while a run lasts (put back after it): a 64 MiB page cache (negative: KiB), and a
# WAL checkpoint every 10,000 pages (40 MB of 4 KiB pages) instead of every 1,000.
BULK_PRAGMAS = {"cache_size": -65536, "wal_autocheckpoint": 10_000}
MESSAGE_FTS_FROM_ROWS = "INSERT INTO message_fts(rowid, text) SELECT id, text FROM messages WHERE id BETWEEN ? AND ?"
SESSION_FTS_FROM_ROWS = ("INSERT INTO session_fts(rowid, title, first_message) "
                         "SELECT id, title, first_message FROM session_files WHERE id BETWEEN ? AND ?")


def _insert_json(table: str, columns: tuple[str, ...], texts: tuple[bool, ...] | None = None) -> str:
    """INSERT of the rows of one JSON array of arrays (bound as ?1, UTF-8 bytes), values in `columns` order.

    With `texts` (a flag per column), a flagged column's value is a text cut out of the blob bound as ?2: the row
    holds two numbers for it, the text's offset (from 1) and length in bytes, or two nulls for NULL. The rows are
    materialized first: otherwise json_each renders a row's JSON again for every column.
    """
    values = []
    position = 0
    for text in texts or (False,) * len(columns):
        if text:
            values.append(f"CAST(substr(?2, value ->> {position}, value ->> {position + 1}) AS TEXT)")
            position += 2
        else:
            values.append(f"value ->> {position}")
            position += 1
    return (f"WITH rows(value) AS MATERIALIZED (SELECT value FROM json_each(CAST(?1 AS TEXT))) "
            f"INSERT INTO {table} ({', '.join(columns)}) SELECT {', '.join(values)} FROM rows")


def _insert_values(table: str, columns: tuple[str, ...]) -> str:
    """INSERT of one row bound as parameters, values in `columns` order."""
    return f"INSERT INTO {table} ({', '.join(columns)}) VALUES ({', '.join('?' * len(columns))})"


# The rows of a part's messages: ?1 a JSON array of [id, file_id, seq, pending, offset, length], ?2 the blob of the
# part's texts (UTF-8) that offset (from 1) and length (bytes) point into; a text is stored as TEXT, as bound.
INSERT_MESSAGES_JSON = _insert_json("messages", MESSAGE_COLUMNS, (False, False, False, False, True))
INSERT_MESSAGE = _insert_values("messages", MESSAGE_COLUMNS)
INSERT_USAGE_FACTS_JSON = _insert_json("usage_facts", USAGE_FACT_COLUMNS)
INSERT_USAGE_FACT = _insert_values("usage_facts", USAGE_FACT_COLUMNS)


class CatalogChanged(Exception):
    """Another connection committed to the catalog during a bulk run; the open transaction was rolled back."""


def data_version(connection: sqlite3.Connection) -> int:
    """SQLite's counter of commits made by *other* connections, as seen by `connection`."""
    return connection.execute("PRAGMA data_version").fetchone()[0]


def next_message_id(connection: sqlite3.Connection) -> int:
    """The id for the next message row: past every row, and past the backlog (whose rows may have been deleted)."""
    last = connection.execute("SELECT coalesce(max(id), 0) FROM messages").fetchone()[0]
    backlog = fts.read_backlog(connection)
    return max(last, backlog[2] if backlog else 0) + 1


def _json_row_with_texts(values: tuple[Any, ...], texts: tuple[bool, ...], offset: int
                         ) -> tuple[bytes, list[bytes]] | None:
    """`values` as a JSON row of `_insert_json(..., texts)` whose texts start at byte `offset` of the blob, and those
    texts (UTF-8); None when JSON or the blob cannot carry one of them exactly (a NUL character, a lone surrogate, a
    value of another kind in a text column, or what `_json_exact` refuses)."""
    row: list[Any] = []
    blobs: list[bytes] = []
    others: list[Any] = []
    for value, text in zip(values, texts, strict=True):
        if not text:
            row.append(value)
            others.append(value)
        elif value is None:
            row += (None, None)
        elif type(value) is str and "\x00" not in value:  # a NUL is kept whole when bound as a parameter
            try:
                data = value.encode()
            except UnicodeEncodeError:
                return None  # a lone surrogate: bound as a parameter, it fails as it does for the ordinary writer
            row += (offset + 1, len(data))
            blobs.append(data)
            offset += len(data)
        else:
            return None
    if not _json_exact(tuple(others)):
        return None
    try:
        return orjson.dumps(row), blobs
    except TypeError:
        return None  # a lone surrogate in a column sent as JSON


def _json_row(values: tuple[Any, ...]) -> bytes | None:
    """`values` as a JSON array SQLite reads back unchanged, or None when JSON cannot carry one of them exactly."""
    if not _json_exact(values):
        return None
    try:
        return orjson.dumps(values)
    except TypeError:
        return None  # a lone surrogate: bound as a parameter, it fails as it does for the ordinary writer


def _json_exact(values: tuple[Any, ...]) -> bool:
    """True when SQLite reads every one of `values` back from orjson's JSON unchanged (orjson permitting)."""
    for value in values:
        kind = type(value)
        if kind is str:
            if "\x00" in value:  # SQLite's JSON text ends at an escaped NUL
                return False
        elif kind is int:
            if not -(1 << 63) <= value < (1 << 63):  # beyond, SQLite would read a float
                return False
        elif kind is float:
            if not math.isfinite(value):  # orjson writes NaN and infinities as null
                return False
        elif value is not None and kind is not bool:
            return False
    return True


@dataclass
class _Part:
    """Rows for one round of statements; `*_rows` are JSON arrays, `odd_*` rows are bound as parameters (the rows
    JSON cannot carry exactly)."""

    file_rows: list[bytes] = field(default_factory=list)  # their texts by offset, length (_json_row_with_texts)
    file_texts: list[bytes] = field(default_factory=list)  # the UTF-8 texts of `file_rows`, in order
    file_text_bytes: int = 0
    odd_files: list[tuple[Any, ...]] = field(default_factory=list)
    messages: list[tuple[int, int, int, bool, int, int]] = field(default_factory=list)  # texts by offset, length
    texts: list[bytes] = field(default_factory=list)  # the UTF-8 texts of `messages`, in order
    text_bytes: int = 0
    odd_messages: list[tuple[Any, ...]] = field(default_factory=list)
    usage: list[tuple[Any, ...]] = field(default_factory=list)  # fact_values rows, made JSON when written
    # The ids of a part's rows are consecutive: files are added, and their texts numbered, in id order.
    file_ids: tuple[int, int] | None = None
    message_ids: tuple[int, int] | None = None
    chars: int = 0


_COMMIT = "commit"


class WriterThread:
    """The part every bulk writer shares: the indexing thread queues parts of rows (`_send_part`) and commit
    marks (`end_batch`); a background thread writes them (`_write`, `_commit`, then `_end` when the run ends)
    and hands its first failure back to the indexing thread, raised by its next call or by `finish`.

    Use as a context manager. Leaving it, by `finish()` or by an exception, the batches ended so far are
    still written and what came after the last `end_batch` is rolled back (`_end`).
    """

    thread_name = "sessdex-bulk-writer"
    _next_file_id: int  # set by the writer before `WriterThread.__init__`

    def __init__(self) -> None:
        self._queue: queue.Queue[Any] = queue.Queue(maxsize=QUEUED_PARTS)
        self._failure: BaseException | None = None
        self.committed_batches = 0
        self.cpu_seconds = 0.0  # CPU time spent writing (a benchmark figure)
        self._thread = threading.Thread(target=self._run, name=self.thread_name, daemon=True)

    def __enter__(self) -> Self:
        self._thread.start()
        return self

    def __exit__(self, *_exception: object) -> None:
        if self._thread.is_alive():
            self._queue.put(None)
            self._thread.join()

    def new_file_id(self) -> int:
        """The id (provisional, for a writer that shifts ids when it writes) the next new file's row will have."""
        file_id = self._next_file_id
        self._next_file_id += 1
        return file_id

    def end_batch(self) -> None:
        """Commit everything added so far (call between files)."""
        self._send_part()
        self._put(_COMMIT)

    def finish(self) -> None:
        """Wait until every batch is written; raise the writer's failure (CatalogChanged or a database error)."""
        self._put(None)
        self._thread.join()
        if self._failure is not None:
            raise self._failure

    def _put(self, item: Any) -> None:
        if self._failure is not None:
            raise self._failure
        self._queue.put(item)

    def _send_part(self) -> None:
        raise NotImplementedError

    # -- the writer thread ----------------------------------------------------------------------------

    def _run(self) -> None:
        while True:
            item = self._queue.get()
            if item is None:
                break
            if self._failure is None:  # else keep draining so that the indexing thread never blocks on a full queue
                self._execute(item)
        self._end()

    def _execute(self, item: Any) -> None:
        started = time.thread_time()
        try:
            if item is _COMMIT:
                self._commit()
            else:
                self._write(item)
        except BaseException as exc:  # noqa: BLE001 - handed to the indexing thread (or raised by the next call)
            self._failure = exc
        finally:
            self.cpu_seconds += time.thread_time() - started

    def _write(self, part: Any) -> None:
        raise NotImplementedError

    def _commit(self) -> None:
        raise NotImplementedError

    def _end(self) -> None:
        raise NotImplementedError


class BulkWriter(WriterThread):
    """Inserts new files' rows, texts and FTS entries from a background thread (see the module docstring and
    `WriterThread`). Methods other than `committed_batches` are called from the indexing thread only.
    """

    def __init__(self, connection: sqlite3.Connection, version: int, *, listing_only: bool = False) -> None:
        """`version` is `data_version(connection)` read before the caller found the catalog empty."""
        self._connection = connection
        self._version = version
        self._file_columns: tuple[str, ...] = ()
        self._file_texts: tuple[bool, ...] = ()  # which of them are sent in the texts blob
        self._insert_files_json = self._insert_file = ""
        self._next_file_id = connection.execute("SELECT coalesce(max(id), 0) FROM session_files").fetchone()[0] + 1
        self._next_message_id = next_message_id(connection)
        self.listing_only = listing_only
        self._first_file_id = self._next_file_id
        self._last_written_file_id = self._next_file_id - 1  # written by the writer thread
        self._first_message_id = self._next_message_id
        self._last_written_message_id = self._next_message_id - 1  # written by the writer thread
        self._part = _Part()
        self._saved_pragmas: dict[str, Any] = {}
        super().__init__()

    def __enter__(self) -> Self:
        connection = self._connection
        self._saved_pragmas = {name: connection.execute(f"PRAGMA {name}").fetchone()[0] for name in BULK_PRAGMAS}
        for name, value in BULK_PRAGMAS.items():
            connection.execute(f"PRAGMA {name} = {int(value)}")
        return super().__enter__()

    # -- the indexing thread's side -------------------------------------------------------------------

    def add_texts(self, file_id: int, first_seq: int, texts: list[str], pending: bool) -> None:
        """Queue message rows for `texts` (already storable), numbered from `first_seq`."""
        if not texts:
            return
        part = self._part
        first_id = self._next_message_id
        self._next_message_id += len(texts)
        messages, blobs, offset = part.messages, part.texts, part.text_bytes
        for message_id, seq, text in zip(range(first_id, self._next_message_id), range(first_seq, first_seq + len(texts)),
                                         texts):
            if "\x00" in text:  # bound as a parameter: kept whole, as the ordinary writer keeps it
                part.odd_messages.append((message_id, file_id, seq, pending, text))
            else:
                data = text.encode()
                messages.append((message_id, file_id, seq, pending, offset + 1, len(data)))
                blobs.append(data)
                offset += len(data)
            part.chars += len(text)
        part.text_bytes = offset
        part.message_ids = (part.message_ids[0] if part.message_ids else first_id, self._next_message_id - 1)
        if part.chars >= PART_CHARS:
            self._send_part()

    def add_usage(self, rows: list[tuple[Any, ...]]) -> None:
        """Queue `usage_facts` rows (`usage_writer.fact_values`, in USAGE_FACT_COLUMNS order) of a file added in
        this batch."""
        self._part.usage += rows

    def add_file(self, file_id: int, columns: Mapping[str, Any]) -> None:
        """Queue the `session_files` row of a file whose texts were all added; every row has the same columns."""
        values = (file_id, *columns.values())
        if not self._file_columns:
            self._file_columns = ("id", *columns)
            # The text columns (a text or NULL in the first row) go through the blob; a row holding something else
            # in one of them is bound as parameters.
            self._file_texts = tuple(type(value) is str or value is None for value in values)
            self._insert_files_json = _insert_json("session_files", self._file_columns, self._file_texts)
            self._insert_file = _insert_values("session_files", self._file_columns)
        part = self._part
        found = _json_row_with_texts(values, self._file_texts, part.file_text_bytes)
        if found is None:
            part.odd_files.append(values)
        else:
            row, texts = found
            part.file_rows.append(row)
            part.file_texts += texts
            part.file_text_bytes += sum(map(len, texts))
        part.file_ids = (part.file_ids[0] if part.file_ids else file_id, file_id)

    def _send_part(self) -> None:
        if self._part.file_ids or self._part.message_ids:
            part, self._part = self._part, _Part()
            self._put(part)

    # -- the writer thread ----------------------------------------------------------------------------

    def _end(self) -> None:
        if self._connection.in_transaction:
            self._connection.rollback()  # a batch that was not ended
        for name, value in self._saved_pragmas.items():
            self._connection.execute(f"PRAGMA {name} = {int(value)}")

    def _write(self, part: _Part) -> None:
        connection = self._connection
        if not connection.in_transaction:
            connection.execute("BEGIN IMMEDIATE")
            if data_version(connection) != self._version:
                raise CatalogChanged("another process wrote to the catalog during the bulk run")
            connection.execute("PRAGMA defer_foreign_keys = ON")
        if part.file_rows:
            connection.execute(self._insert_files_json,
                               (b"[" + b",".join(part.file_rows) + b"]", b"".join(part.file_texts)))
        if part.odd_files:
            connection.executemany(self._insert_file, part.odd_files)
        if part.file_ids:
            connection.execute(SESSION_FTS_FROM_ROWS, part.file_ids)
            self._last_written_file_id = part.file_ids[1]
        if part.usage:
            self._write_usage(part.usage)
        if part.messages:
            connection.execute(INSERT_MESSAGES_JSON, (orjson.dumps(part.messages), b"".join(part.texts)))
        if part.odd_messages:
            connection.executemany(INSERT_MESSAGE, part.odd_messages)
        if part.message_ids:
            self._last_written_message_id = part.message_ids[1]

    def _write_usage(self, rows: list[tuple[Any, ...]]) -> None:
        """Insert usage fact rows, as one JSON array when JSON carries them exactly.

        `fact_values` rows hold booleans, finite numbers and integers within 2**53, which JSON carries exactly; only
        their texts may not (a NUL character, a lone surrogate): then each row is looked at on its own."""
        try:
            data = orjson.dumps(rows)
        except TypeError:
            data = b""
        if data and b"\\u0000" not in data:
            self._connection.execute(INSERT_USAGE_FACTS_JSON, (data,))
            return
        exact, odd = [], []
        for values in rows:
            row = _json_row(values)
            if row is None:
                odd.append(values)
            else:
                exact.append(row)
        if exact:
            self._connection.execute(INSERT_USAGE_FACTS_JSON, (b"[" + b",".join(exact) + b"]",))
        if odd:
            self._connection.executemany(INSERT_USAGE_FACT, odd)

    def _commit(self) -> None:
        if self._connection.in_transaction:
            if self.listing_only:
                first = self._first_file_id
                fts.write_files_backlog(self._connection, (first, first - 1, self._last_written_file_id))
            if self._last_written_message_id >= self._first_message_id:
                first = self._first_message_id
                fts.write_backlog(self._connection, first, first - 1, self._last_written_message_id)
            self._connection.commit()  # data_version stays: it counts other connections' commits only
        self.committed_batches += 1

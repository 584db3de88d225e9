"""Write a run of new session files into a PostgreSQL catalog from a background thread, with COPY.

The PostgreSQL counterpart of `sessdex.catalog.index.bulk_writer.BulkWriter`, with the same methods, for a first
index of this machine's files into a shared catalog (this machine has no rows yet; other machines may). The
indexing thread parses files and queues their rows; a writer thread sends them with `COPY ... FROM STDIN` into
`session_files`, `messages` and `usage_facts`, so that the server's work (row inserts, the generated `tsvector`
columns, the GIN and trigram index entries) overlaps the parsing of the next files and costs one round trip per
table and part instead of one per row (the ordinary writer's row-by-row statements and per-file usage refresh
made a first index ten times slower than on SQLite).

Ids. Other machines write to the same tables meanwhile, so the indexing thread hands out *provisional* ids
(from 1 on); each write transaction takes the advisory write lock every catalog writer takes
(`sessdex.catalog.store.postgres_reads.WRITE_LOCK_KEY`), reads the tables' largest ids and shifts the
provisional ones of its rows past them. Within a transaction the ids of files, and of texts, are consecutive,
so one offset per kind maps them. The `session_files` sequence (which the ordinary writer's inserts draw from)
is moved past the rows written.

Transactions end only at file boundaries (`end_batch`, about every 0.2 s of parsing), so a file's rows are
committed together and readers (on any machine: COPY takes no lock a reader waits for) see the index progress;
other machines' writers wait for the advisory lock one batch at most. When this machine's files in the catalog
are no longer the ones this run committed (another process of this machine indexed meanwhile), the transaction
is rolled back and `CatalogChanged` raised: the indexer redoes the uncommitted files the ordinary way.

The usage rollups are summed by the indexer after the run, set-based (`usage_writer.refresh_all_usage`).
Text loses its NUL characters, as every PostgreSQL write does (its text type cannot hold them).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from sessdex.catalog.index.bulk_writer import MESSAGE_COLUMNS, PART_CHARS, CatalogChanged, WriterThread
from sessdex.catalog.store.postgres_reads import WRITE_LOCK_KEY, PostgresCatalog
from sessdex.core.usage import USAGE_FACT_COLUMNS

if TYPE_CHECKING:
    from sessdex.catalog.store.db import CatalogDatabase

# Largest ids, and this machine's file count (to notice another writer of this machine), in one statement.
_STATE_SQL = ("SELECT (SELECT coalesce(max(id), 0) FROM session_files), (SELECT coalesce(max(id), 0) FROM messages), "
              "(SELECT count(*) FROM session_files WHERE machine = %s)")
_SEQUENCE_SQL = "SELECT setval(pg_get_serial_sequence('session_files', 'id'), %s)"


def _copy_sql(table: str, columns: tuple[str, ...]) -> str:
    return f"COPY {table} ({', '.join(columns)}) FROM STDIN"


def _nul_free(value: Any) -> Any:
    return value.replace("\x00", "\ufffd") if type(value) is str and "\x00" in value else value


@dataclass
class _Part:
    """Rows for one round of COPY statements, with provisional ids."""

    files: list[tuple[Any, ...]] = field(default_factory=list)
    messages: list[tuple[Any, ...]] = field(default_factory=list)
    usage: list[tuple[Any, ...]] = field(default_factory=list)
    chars: int = 0


class PostgresBulkWriter(WriterThread):
    """Inserts new files' rows, texts and usage facts from a background thread (see the module docstring).

    Used as `WriterThread` says. Methods other than `committed_batches` are called from the indexing thread only;
    while the run lasts the writer thread alone uses the catalog's connection.
    """

    listing_only = False  # texts and usage facts are always written (PostgreSQL has no content backlog)
    thread_name = "sessdex-postgres-bulk-writer"

    def __init__(self, db: PostgresCatalog) -> None:
        self._db = db
        self._machine = db.machine
        self._file_columns: tuple[str, ...] = ()
        self._next_file_id = 1  # provisional ids
        self._next_message_id = 1
        self._part = _Part()
        # The writer thread's state: the open transaction's id offsets, and this machine's committed file count.
        self._in_transaction = False
        self._file_offset = self._message_offset = 0
        self._files_committed = self._files_written = 0
        self._messages_committed = self._messages_written = 0
        self._last_file_id = 0  # the provisional id of the last file row written
        self._held: list[tuple[Any, ...]] = []  # message rows whose file's row is not written yet
        super().__init__()

    @classmethod
    def for_new_machine(cls, db: CatalogDatabase) -> PostgresBulkWriter | None:
        """A writer when `db` is a psycopg catalog in which this machine has no files yet, else None (the ordinary
        way then)."""
        if not isinstance(db, PostgresCatalog) or db.scalar("count_machine_files"):
            return None
        return cls(db)

    # -- the indexing thread's side -------------------------------------------------------------------

    def add_texts(self, file_id: int, first_seq: int, texts: list[str], pending: bool) -> None:
        """Queue message rows for `texts` (already storable), numbered from `first_seq`."""
        if not texts:
            return
        part = self._part
        message_id = self._next_message_id
        self._next_message_id += len(texts)
        append = part.messages.append
        for seq, text in enumerate(texts, first_seq):
            if "\x00" in text:
                text = text.replace("\x00", "\ufffd")
            append((message_id, file_id, seq, pending, text))
            message_id += 1
            part.chars += len(text)
        if part.chars >= PART_CHARS:
            self._send_part()

    def add_usage(self, rows: list[tuple[Any, ...]]) -> None:
        """Queue `usage_facts` rows (values in USAGE_FACT_COLUMNS order) of a file added in this batch."""
        self._part.usage.extend(tuple(_nul_free(value) for value in row) for row in rows)

    def add_file(self, file_id: int, columns: Mapping[str, Any]) -> None:
        """Queue the `session_files` row of a file whose texts were all added; every row has the same columns."""
        if not self._file_columns:
            self._file_columns = ("id", *columns)
        self._part.files.append((file_id, *(_nul_free(value) for value in columns.values())))

    def _send_part(self) -> None:
        part = self._part
        if part.files or part.messages or part.usage:
            self._part = _Part()
            self._put(part)

    # -- the writer thread ----------------------------------------------------------------------------

    def _begin(self) -> None:
        """Open a transaction under the write lock and fix the offsets of its provisional ids: those of the files and
        texts committed so far come first, so the transaction's first provisional ids follow them."""
        connection = self._db.connection()
        connection.execute("BEGIN")
        self._in_transaction = True
        connection.execute("SELECT pg_advisory_xact_lock(%s)", (WRITE_LOCK_KEY,))
        # A batch's commit need not wait for its WAL to reach the disk: after a server crash the batches lost are
        # derived data, indexed again by the next run (the files' rows are gone with them).
        connection.execute("SET LOCAL synchronous_commit = off")
        max_file, max_message, own_files = connection.execute(_STATE_SQL, (self._machine,)).fetchone()
        if own_files != self._files_committed:
            raise CatalogChanged("another process of this machine wrote to the catalog during the bulk run")
        self._file_offset = max_file - self._files_committed
        self._message_offset = max_message - self._messages_committed
        self._files_written = self._messages_written = 0

    def _write(self, part: _Part) -> None:
        """COPY a part's rows: files first, then the texts of files whose row is written (the foreign key is checked
        row by row), then usage facts (always queued after their file's row)."""
        if not self._in_transaction:
            self._begin()
        connection = self._db.connection()
        file_offset, message_offset = self._file_offset, self._message_offset
        if part.files:
            with connection.cursor().copy(_copy_sql("session_files", self._file_columns)) as copy:
                write_row = copy.write_row
                for row in part.files:
                    write_row((row[0] + file_offset, *row[1:]))
            self._last_file_id = part.files[-1][0]
            self._files_written += len(part.files)
        messages = self._held + part.messages if self._held else part.messages
        ready = len(messages)
        while ready and messages[ready - 1][1] > self._last_file_id:
            ready -= 1  # texts of a file whose row comes in a later part
        self._held = messages[ready:]
        if ready:
            with connection.cursor().copy(_copy_sql("messages", MESSAGE_COLUMNS)) as copy:
                write_row = copy.write_row
                for message_id, file_id, seq, pending, text in messages[:ready]:
                    write_row((message_id + message_offset, file_id + file_offset, seq, pending, text))
            self._messages_written += ready
        if part.usage:
            with connection.cursor().copy(_copy_sql("usage_facts", USAGE_FACT_COLUMNS)) as copy:
                write_row = copy.write_row
                for row in part.usage:
                    write_row((row[0] + file_offset, *row[1:]))

    def _commit(self) -> None:
        if self._in_transaction:
            connection = self._db.connection()
            if self._held:  # cannot happen: a batch ends after a file's row
                raise RuntimeError("texts without their file's row at the end of a batch")
            if self._files_written:
                connection.execute(_SEQUENCE_SQL, (self._last_file_id + self._file_offset,))
            connection.execute("COMMIT")
            self._in_transaction = False
            self._files_committed += self._files_written
            self._messages_committed += self._messages_written
        self.committed_batches += 1

    def _end(self) -> None:
        if self._in_transaction:  # a batch that was not ended, or one that failed
            self._in_transaction = False
            try:
                self._db.connection().execute("ROLLBACK")
            except Exception:  # noqa: BLE001 - a lost connection: the server rolled it back
                self._db.close()

"""Index session files into the catalog incrementally, with bounded memory, never writing to them.

For each file the catalog keeps the stat it last saw, the byte offset read so far and the state of
`sessdex.core.summary.SessionSummary` at that offset. Indexing a file again then means:
- same (device, inode, size, mtime_ns): nothing to do;
- same inode, not shorter, unchanged head and a newline just before the stored offset: an append,
  so only the new bytes are read and folded;
- anything else (new inode, shrink, changed head): the file is read again from the start.
Bytes are read in chunks and parsed with the same lenient rules as a whole-file read
(`sessdex.core.jsonl.parse_jsonl`): only complete lines are committed; what follows the last newline (a torn
or still-growing last line) is "pending": it is parsed as a file scan would parse it and shown in
the listing columns, but re-read on the next pass. A value of a damaged file that spans lines is
handled by widening the chunk until the parser no longer depends on where the chunk ends.
A file that vanished is dropped; one that appears with the (device, inode) of a vanished row takes
that row over (a rename), without being read again.
A message's text is stored (and so searched) up to its first MESSAGE_TEXT_MAX_CHARS characters (64 Ki):
one huge message (a 200 MB tool output) must not stall every search that touches it. FTS5's snippet()
grows faster than linearly with the matches in one document (a word on every line: 16 K characters
6 ms, 64 K 50-130 ms, 256 K 1.3-3.6 s, 1 M over 10 s), so the cap is that low. Longer texts are
almost always tool output; the session file keeps them whole and the viewer reads them from there.
One bad file never stops the others: a file whose reading raises (a value SQLite cannot hold, a parser
limit) is recorded like an unreadable one (listed nowhere, not read again until its stat changes,
reported by `doctor`) and named in `Indexer.failures`; its batch is rolled back and done again without
it. A path that is not valid UTF-8 is stored in a reversible text form (core.paths.path_to_text). Every searchable
text becomes a `messages` row,
and the FTS5 indexes are written alongside by `_Writer`.

Into an empty SQLite catalog (a first index, a rebuild) the files go through a
`sessdex.catalog.index.bulk_writer.BulkWriter` instead, for as long as each path is certainly new: its SQLite work
then overlaps the parsing of the next files. A path the run itself already wrote a row for, a rename within the
run, a read error or another process writing to the catalog ends the bulk run; what it had not committed is
indexed again the ordinary way.
"""

from __future__ import annotations

import contextlib
import json
import os
import sqlite3
import time
from collections.abc import Callable, Generator, Iterable, Iterator
from enum import Enum
from typing import Any, NamedTuple

from sessdex.catalog.index import pass_progress
from sessdex.catalog.index.bulk_writer import (
    INSERT_MESSAGE,
    INSERT_USAGE_FACT,
    MESSAGE_FTS_FROM_ROWS,
    BulkWriter,
    CatalogChanged,
    data_version,
    next_message_id,
)
from sessdex.catalog.index.file_reader import (
    CHUNK_BYTES,
    HEAD_BYTES,
    INT64_MAX,
    MESSAGE_TEXT_MAX_CHARS,
    REDACT_VARIABLE,
    HeadValues,
    ReadResult,
    clamp_int64,
    digest,
    file_columns,
    head_columns,
    message_text,
    open_session_file,
    parse_lines,
    read_fold,
    read_new_files,
    stat_session_file,
    storable_text,
    unreadable_columns,
)
from sessdex.catalog.index.usage_writer import (
    delete_usage_facts,
    fact_values,
    forget_file_usage,
    insert_usage_facts,
    refresh_all_usage,
    refresh_usage_around,
)
from sessdex.catalog.store import fts
from sessdex.core.paths import path_to_text
from sessdex.core.storage import FileStat
from sessdex.core.summary import SessionSummary

TYPE_CHECKING = False
if TYPE_CHECKING:
    from sessdex.catalog.index.postgres_bulk import PostgresBulkWriter
    from sessdex.catalog.store.db import CatalogDatabase

# Names of the file-reading half (catalog.index.file_reader) that callers of this module use.
__all__ = ["CHUNK_BYTES", "HEAD_BYTES", "INT64_MAX", "MESSAGE_TEXT_MAX_CHARS", "HeadValues", "clamp_int64",
           "head_columns", "message_text", "open_session_file", "parse_lines", "read_fold", "stat_session_file",
           "storable_text"]

# A batch of small files shares one write transaction; it ends after this many files or seconds: short, so that
# readers in WAL mode see a first index's progress and other writers (a watcher's event) wait little for the lock.
BATCH_FILES = 2000
BATCH_SECONDS = 0.2
# At most this many files per chunk of Indexer.fill_content (a chunk of CHUNK_BYTES holds about a hundred).
FILL_ROWS = 256
# Texts of a new file are held back until its row exists; past this many characters a placeholder row is made.
TEXT_BUFFER_CHARS = 8 * 1024 * 1024


class Outcome(Enum):
    """What indexing one path did."""

    UNCHANGED = "unchanged"
    APPENDED = "appended"
    INDEXED = "indexed"
    MOVED = "moved"
    REMOVED = "removed"
    ABSENT = "absent"


def storable_path(path: str) -> bool:
    """Can `path` be a catalog key? Not when a name in it is not valid UTF-8 (decoded with surrogate escapes)."""
    if path.isascii():
        return True
    try:
        path.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


class FileFailure(NamedTuple):
    """A file the indexer could not index: its path and why (one line)."""

    path: str
    reason: str


def catalog_path(path: str | os.PathLike[str]) -> str:
    """The key a file is stored under: its absolute path, symlinks kept (as a directory scan names it), in the
    stored form of core.paths.path_to_text (the path itself unless a name in it is not valid UTF-8)."""
    return path_to_text(os.path.abspath(os.fspath(path)))


# insert(file_id, first_seq, texts, pending): store texts as message rows numbered from first_seq.
_TextInsert = Callable[[int, int, list[str], bool], None]


class _TextSink:
    """Receives texts from read_fold and stores them as message rows of one file, numbered in file order.

    A new file has no row yet: its texts are buffered until `file_id` is known, unless they grow past
    TEXT_BUFFER_CHARS, in which case `create_row()` is called early to get an id (a placeholder row).
    """

    def __init__(self, insert: _TextInsert, file_id: int | None, first_seq: int,
                 create_row: Callable[[], int] | None = None) -> None:
        self._insert = insert
        self.file_id = file_id
        self._next_seq = first_seq
        self._create_row = create_row
        self._buffer: list[tuple[list[str], bool]] = []
        self._buffered_chars = 0

    def __call__(self, texts: list[str], pending: bool) -> None:
        if not texts:
            return
        if self.file_id is None:
            self._buffer.append((texts, pending))
            self._buffered_chars += sum(len(text) for text in texts)
            if self._buffered_chars > TEXT_BUFFER_CHARS and self._create_row is not None:
                self.attach(self._create_row())
            return
        self._store(texts, pending)

    def attach(self, file_id: int) -> None:
        """Give the sink its row id and store what was buffered."""
        self.file_id = file_id
        buffered, self._buffer = self._buffer, []
        for texts, pending in buffered:
            self._store(texts, pending)

    def _store(self, texts: list[str], pending: bool) -> None:
        assert self.file_id is not None
        self._insert(self.file_id, self._next_seq, texts, pending)
        self._next_seq += len(texts)


class _Writer:
    """Every write of the indexer, keeping the FTS5 indexes in step with the rows they index.

    FTS rows are written with single-row statements on purpose: a multi-row statement or a trigger
    makes SQLite open a statement journal, and FTS5 flushes its pending terms at each one, which made
    indexing several times slower. Message ids are handed out here, within the write transaction.
    """

    def __init__(self, db: CatalogDatabase, *, content: bool = True) -> None:
        self.db = db
        self.content = content  # False (`--no-content`): no message text is stored, only the file's row
        self._next_message_id: int | None = None
        # The message ids written without message_fts entries yet (see fts.BACKLOG_KEY): (done, end].
        self._backlog: tuple[int, int] | None = None
        # The file ids whose content a listing-first run left for later (see fts.FILES_BACKLOG_KEY): (done, end].
        self._files_backlog: tuple[int, int] | None = None

    def begin(self) -> None:
        """Forget what an earlier transaction read (call right after opening one)."""
        self._next_message_id = None
        self._backlog = self._read_backlog(fts.BACKLOG_KEY)
        self._files_backlog = self._read_backlog(fts.FILES_BACKLOG_KEY)

    def _read_backlog(self, key: str) -> tuple[int, int] | None:
        value = self.db.scalar("meta_get", {"key": key})
        if value is None:
            return None
        _first, done, end = (int(part) for part in value.split())
        return done, end

    def content_pending(self, file_id: int) -> bool:
        """Whether this file's content (message rows, usage facts) is still to be read by content_index: its
        rows then cannot be appended to (read it whole)."""
        return self._files_backlog is not None and self._files_backlog[0] < file_id <= self._files_backlog[1]

    def _indexed(self, message_id: int) -> bool:
        """Whether message_fts holds an entry for this message row (not so for the backlog's rows)."""
        return self._backlog is None or not self._backlog[0] < message_id <= self._backlog[1]

    def insert_texts(self, file_id: int, first_seq: int, texts: list[str], pending: bool) -> None:
        if not self.content:
            return
        if self._next_message_id is None:
            # Past the backlog too: its last rows may be gone, and their ids must not be handed out again.
            self._next_message_id = max(self.db.scalar("max_message_id"), self._backlog[1] if self._backlog else 0) + 1
        first_id = self._next_message_id
        self._next_message_id += len(texts)
        rows = [{"id": first_id + index, "file_id": file_id, "seq": first_seq + index, "pending": pending,
                 "text": message_text(text)} for index, text in enumerate(texts)]
        self.db.executemany("insert_message", rows)
        self.db.fts_executemany(fts.MESSAGE_INSERT, [(row["id"], row["text"]) for row in rows])

    def delete_texts(self, file_id: int, *, pending_only: bool = False) -> None:
        name = "pending_messages_of_file" if pending_only else "messages_of_file"
        old = self.db.fetchall(name, {"file_id": file_id})
        if not old:
            return
        self.db.fts_executemany(fts.MESSAGE_DELETE, [(row["id"], row["text"]) for row in old if self._indexed(row["id"])])
        self.db.execute("delete_pending_messages" if pending_only else "delete_messages_of_file", {"file_id": file_id})

    def insert_file(self, columns: dict[str, Any]) -> int:
        file_id = self.db.insert_returning_id("insert_file", columns)
        self.db.fts_executemany(fts.SESSION_INSERT, [(file_id, columns["title"], columns["first_message"])])
        return file_id

    def update_file(self, file_id: int, old: tuple[str | None, str | None], columns: dict[str, Any]) -> None:
        self.db.execute("update_file", {**columns, "file_id": file_id})
        new = (columns["title"], columns["first_message"])
        if new != old:
            self.db.fts_executemany(fts.SESSION_DELETE, [(file_id, *old)])
            self.db.fts_executemany(fts.SESSION_INSERT, [(file_id, *new)])

    def delete_file(self, row: Any) -> None:
        self.delete_texts(row["id"])
        forget_file_usage(self.db, row["id"])
        delete_usage_facts(self.db, row["id"])
        self.db.fts_executemany(fts.SESSION_DELETE, [(row["id"], row["title"], row["first_message"])])
        self.db.execute("delete_file", {"file_id": row["id"]})
        refresh_usage_around(self.db, None, row["session_id"], row["path"])  # its forks count their copies now

    def replace_usage(self, file_id: int, result: ReadResult, old: Any, key: str, *, append: bool) -> None:
        """Store a file's facts after a read (all of them, or with `append` the new ones) and refresh its
        usage and its forks' (`old`: the row before the read, None for a new file)."""
        delete_usage_facts(self.db, file_id, pending_only=append)
        insert_usage_facts(self.db, file_id, result.facts, False)
        insert_usage_facts(self.db, file_id, result.pending_facts, True)
        session_id = result.visible.session_id
        refresh_usage_around(self.db, file_id, session_id, key)
        if old is not None and old["session_id"] not in (None, session_id):
            refresh_usage_around(self.db, None, old["session_id"], key)


class Indexer:
    """Brings catalog rows up to date with session files; every method writes inside its own transaction."""

    def __init__(self, db: CatalogDatabase, *, clock: Callable[[], float] = time.time,
                 defer_content: bool = False, defer_text: bool = False, content: bool | None = None) -> None:
        """`defer_content`: a bulk run into an empty catalog writes the files' rows only (listing first) and leaves
        their message rows, full-text entries and usage facts to
        `sessdex.catalog.index.content_index.fill_content_index`, so that listings are visible sooner.
        A bulk run always leaves the `message_fts` entries of its message rows for afterwards (see
        `sessdex.catalog.index.bulk_writer`); `index_paths` writes them before it returns unless `defer_text`
        (the caller then runs `fill_content_index` itself, e.g. with a progress bar of its own).
        `content=False` indexes metadata only (no message text); None: as this machine is registered."""
        self.db = db
        self._clock = clock
        self.content = stores_content(db) if content is None else content
        if redaction_remembered(db):
            # The file reader (and any parse worker this process starts) redacts when the variable is set.
            os.environ[REDACT_VARIABLE] = "1"
        self._writer = _Writer(db, content=self.content)
        self._defer_content = defer_content
        self._defer_text = defer_text
        self.failures: list[FileFailure] = []  # files whose indexing raised (recorded as unreadable), oldest first
        self.skipped_names: list[str] = []  # paths that are not valid UTF-8, never stored

    @contextlib.contextmanager
    def _transaction(self) -> Iterator[None]:
        with self.db.write():
            self._writer.begin()
            yield

    # -- public ---------------------------------------------------------------------------------------

    def index_path(self, path: str | os.PathLike[str], *, force: bool = False) -> Outcome:
        """Bring one path's row up to date: index, append, follow a rename, or remove it when gone.

        `force` re-reads the file from the start even when its stat says it is unchanged.
        """
        key = catalog_path(path)
        if not storable_path(key):
            self.skipped_names.append(key)
            return Outcome.ABSENT
        return self._index_batch([key], 0, {}, None, 0, force=force)[0]

    def index_paths(self, paths: Iterable[str | os.PathLike[str]],
                    progress: Callable[[str, Outcome], None] | None = None) -> dict[Outcome, int]:
        """Index many paths, batching small files into shared transactions; return a count per outcome.

        `progress(path, outcome)` is called once per path, in order; without it, the reporter installed in
        `sessdex.catalog.index.pass_progress` (if any) is told how far the paths are.
        """
        keys = []
        for path in paths:
            key = catalog_path(path)
            if storable_path(key):
                keys.append(key)
            else:
                self.skipped_names.append(key)
        if progress is not None:
            return self._index_keys(keys, progress)
        # Nobody asked for progress (a read command's pass): the installed reporter, if any, shows it.
        with pass_progress.reporting("Reading new session files", len(keys)) as advance:
            return self._index_keys(keys, None if advance is None else lambda _path, _outcome: advance(1))

    def _index_keys(self, keys: list[str], progress: Callable[[str, Outcome], None] | None) -> dict[Outcome, int]:
        counts: dict[Outcome, int] = {}
        position = reported = 0
        bulk_connection = self.db.sqlite_writer() if keys else None
        if bulk_connection is not None or (keys and self.db.dialect == "postgresql"):
            position, reported = self._index_into_empty_catalog(bulk_connection, keys, counts, progress)
        while position < len(keys):
            _, position, reported = self._index_batch(keys, position, counts, progress, reported)
        if bulk_connection is not None and not self._defer_text and fts.read_backlog(bulk_connection) is not None:
            from sessdex.catalog.index.text_fill import fill_message_text

            fill_message_text(self.db)
        return counts

    def _index_batch(self, keys: list[str], start: int, counts: dict[Outcome, int],
                     progress: Callable[[str, Outcome], None] | None, reported: int,
                     *, force: bool = False) -> tuple[Outcome, int, int]:
        """Index keys from `start` in one transaction (up to BATCH_FILES or BATCH_SECONDS); return the last
        outcome, where the next batch starts and how many keys were reported.

        A file whose indexing raises rolls the batch back; it is then done again with that file recorded
        as unreadable (see the module docstring). Errors of the catalog itself propagate.
        """
        failed: dict[str, str] = {}
        while True:
            batch_counts: dict[Outcome, int] = {}
            position = start
            current_key = None
            try:
                started = time.monotonic()
                with self._transaction():
                    batch_end = min(position + BATCH_FILES, len(keys))
                    while position < batch_end:
                        current_key = key = keys[position]
                        if key in failed:
                            outcome = self._record_failure(key)
                        else:
                            outcome = self._index_in_transaction(key, force=force)
                        position += 1
                        batch_counts[outcome] = batch_counts.get(outcome, 0) + 1
                        if progress is not None and position > reported:
                            progress(key, outcome)
                            reported = position
                        if time.monotonic() - started > BATCH_SECONDS:
                            break
            except Exception as exc:
                if current_key is None or current_key in failed or not _file_error(exc):
                    raise
                failed[current_key] = _reason(exc)
                continue
            for key, reason in failed.items():
                self.failures.append(FileFailure(key, reason))
            for outcome, count in batch_counts.items():
                counts[outcome] = counts.get(outcome, 0) + count
            return outcome, position, reported

    def _record_failure(self, key: str) -> Outcome:
        """Record a file whose indexing raised as unreadable (by its current stat); ABSENT when it is gone."""
        current = stat_session_file(key)
        row = self._row(key)
        if current is None:
            if row is None:
                return Outcome.ABSENT
            self._writer.delete_file(row)
            return Outcome.REMOVED
        self._record_unreadable(key, row, current)
        return Outcome.INDEXED

    # -- bulk run into an empty catalog ----------------------------------------------------------------

    def _index_into_empty_catalog(self, connection: sqlite3.Connection | None, keys: list[str],
                                  counts: dict[Outcome, int],
                                  progress: Callable[[str, Outcome], None] | None) -> tuple[int, int]:
        """Bulk-index the leading `keys` that are certainly new to an empty catalog (see the module docstring), or
        on PostgreSQL (`connection` None) to this machine's rows of the catalog.

        Returns (how many keys are committed, how many were reported to `progress`); the caller indexes
        the keys from the first number on, reporting only those from the second.
        """
        bulk: BulkWriter | PostgresBulkWriter
        if connection is None:
            from sessdex.catalog.index.postgres_bulk import PostgresBulkWriter

            found = PostgresBulkWriter.for_new_machine(self.db)
            if found is None:
                return 0, 0
            bulk = found
        else:
            version = data_version(connection)  # read first: a commit after it is caught by the writer
            if self.db.scalar("count_files"):
                return 0, 0
            bulk = BulkWriter(connection, version, listing_only=self._defer_content)
        batches: list[tuple[int, dict[Outcome, int]]] = []  # (keys up to, counts) of every batch sent
        batch_counts: dict[Outcome, int] = {}
        run = _BulkRun()
        position = batch_start = 0
        items = read_new_files(keys, self.content, listing_only=bulk.listing_only)
        try:
            with bulk:
                started = time.monotonic()
                while position < len(keys):
                    outcome = self._index_new(keys[position], items, bulk, run)
                    if outcome is None:
                        break  # not certainly new: the ordinary way from here
                    position += 1
                    batch_counts[outcome] = batch_counts.get(outcome, 0) + 1
                    if progress is not None:
                        progress(keys[position - 1], outcome)
                    if position - batch_start >= BATCH_FILES or time.monotonic() - started > BATCH_SECONDS:
                        bulk.end_batch()
                        batches.append((position, batch_counts))
                        batch_counts, batch_start, started = {}, position, time.monotonic()
                bulk.end_batch()
                batches.append((position, batch_counts))
                bulk.finish()
        except (CatalogChanged, _ReadFailure):
            pass  # rolled back: the keys of the batches not committed are indexed again
        except Exception as exc:
            if not _file_error(exc):
                raise
            # A file the bulk run could not take: the ordinary way indexes the rest and isolates that file.
        finally:
            items.close()
        reported = position
        committed = batches[:bulk.committed_batches]
        bulk_peak_rss_kb = _peak_rss_kb()
        refresh_started = time.process_time()
        if committed and not bulk.listing_only:  # a listing-first run has no usage facts yet
            with self._transaction():
                refresh_all_usage(self.db)
        _report_bulk_run(bulk, position, time.process_time() - refresh_started, bulk_peak_rss_kb)
        for _end, done in committed:
            for outcome, count in done.items():
                counts[outcome] = counts.get(outcome, 0) + count
        return (committed[-1][0] if committed else 0), reported

    def _index_new(self, key: str, items: Generator[tuple[Any, ...], None, None], bulk: BulkWriter | PostgresBulkWriter,
                   run: _BulkRun) -> Outcome | None:
        """Index `key` through `bulk` from its items (`file_reader.read_new_files`) as the ordinary way would
        index it; None when that would touch an existing row."""
        if key in run.paths:
            return None
        item = next(items)
        kind = item[0]
        if kind == "absent":
            return Outcome.ABSENT
        if kind == "read_error":
            raise _ReadFailure(key)
        current: FileStat = item[2]
        identity = (current.device, current.inode)
        for other in run.inodes.get(identity, ()):
            earlier = stat_session_file(other)
            if earlier is None or (earlier.device, earlier.inode) != identity:
                return None  # the file at `other` was renamed to `key`: its row is taken over
        file_id = bulk.new_file_id()
        if kind == "unreadable":
            bulk.add_file(file_id, self._unreadable_columns(key, current))
            run.add(key, identity)
            return Outcome.INDEXED
        seq = 0
        while True:
            item = next(items)
            kind = item[0]
            if kind == "texts":
                texts = item[1]
                bulk.add_texts(file_id, seq, texts, item[2])
                seq += len(texts)
            elif kind == "read":
                break
            else:
                raise _ReadFailure(key)
        bulk.add_file(file_id, self._stamped(item[1]))
        bulk.add_usage([fact_values(file_id, fact, pending) for found, pending in
                        ((item[2], False), (item[3], True)) for fact in found])
        run.add(key, identity)
        return Outcome.INDEXED

    # -- the content of a listing-first run -----------------------------------------------------------------

    def fill_content(self, connection: sqlite3.Connection, after: int, end: int, max_bytes: int) -> int:
        """Inside a write transaction of a SQLite catalog (`connection`, its writer): store the message rows,
        full-text entries and usage facts of this machine's files with ids after `after` up to `end` (about
        `max_bytes` of them, at least one file) that a listing-first run (`defer_content`) indexed without them;
        return the last id done. A file that is no longer what its row says (changed, unreadable now, gone) is
        indexed again from the start the ordinary way, in this transaction too (a file whose indexing raises is
        recorded as unreadable, as `index_paths` records it).

        Files are read in id order and their rows numbered on, so that once the whole backlog is done the catalog
        is the one a single full index writes. A file whose content an ordinary index wrote meanwhile gets it
        written again (its rows are replaced)."""
        self._writer.begin()
        rows = connection.execute(
            "SELECT id, path, device, inode, size, mtime_ns, indexed_offset FROM session_files "
            "WHERE machine = ? AND id > ? AND id <= ? ORDER BY id LIMIT ?",
            (self.db.machine, after, end, FILL_ROWS)).fetchall()
        if not rows:
            return end
        chosen = []
        total = 0
        for row in rows:
            chosen.append(row)
            total += row[4]
            if total >= max_bytes:
                break
        last = end if len(chosen) == len(rows) < FILL_ROWS else chosen[-1][0]  # whether files up to `end` are left
        written = {file_id for (file_id,) in connection.execute(
            "SELECT DISTINCT file_id FROM messages WHERE file_id > ? AND file_id <= ? UNION "
            "SELECT DISTINCT file_id FROM usage_facts WHERE file_id > ? AND file_id <= ?", (after, last, after, last))}
        next_id = next_message_id(connection)
        first_id = next_id
        messages: list[tuple[Any, ...]] = []
        facts: list[tuple[Any, ...]] = []
        again: list[str] = []
        reads = ContentReads(read_new_files([row[1] for row in chosen], self.content))
        for file_id, path, device, inode, size, mtime_ns, indexed_offset in chosen:
            read = reads.next_read(path)
            if read is None or read.stat_key != (device, inode, size, mtime_ns) or read.offset != indexed_offset:
                again.append(path)  # after this chunk's rows: it takes message ids of its own
                continue
            if file_id in written:
                self._writer.delete_texts(file_id)
                delete_usage_facts(self.db, file_id)
            for seq, (text, pending) in enumerate(read.texts):
                messages.append((next_id, file_id, seq, pending, text))
                next_id += 1
            facts += [(file_id, *row[1:]) for row in read.fact_rows]
        if messages:
            connection.executemany(INSERT_MESSAGE, messages)
            connection.execute(MESSAGE_FTS_FROM_ROWS, (first_id, next_id - 1))
        if facts:
            connection.executemany(INSERT_USAGE_FACT, facts)
        for path in again:
            self._index_again(connection, path)
        return last

    def _index_again(self, connection: sqlite3.Connection, key: str) -> None:
        """Index `key` from the start inside the caller's transaction; a file whose indexing raises is rolled back
        alone (a savepoint) and recorded as unreadable."""
        connection.execute("SAVEPOINT index_again")
        try:
            self._index_in_transaction(key, force=True)
        except Exception as exc:
            if not _file_error(exc):
                raise
            connection.execute("ROLLBACK TO index_again")
            self._writer.begin()  # what the rolled back statements wrote is not there
            self._record_failure(key)
            self.failures.append(FileFailure(key, _reason(exc)))
        connection.execute("RELEASE index_again")

    # -- one file -----------------------------------------------------------------------------------------

    def _row(self, key: str) -> Any:
        rows = self.db.fetchall("file_by_path", {"path": key})
        return rows[0] if rows else None

    def _index_in_transaction(self, key: str, *, force: bool = False) -> Outcome:
        current = stat_session_file(key)
        row = self._row(key)
        if current is None:
            if row is None:
                return Outcome.ABSENT
            self._writer.delete_file(row)
            return Outcome.REMOVED
        moved = False
        if row is None:
            row = self._adopt_moved_row(key, current)
            moved = row is not None
        unchanged = row is not None and (row["device"], row["inode"], row["size"], row["mtime_ns"]) == (
            current.device, current.inode, current.size, current.mtime_ns)
        if unchanged and not force:
            return Outcome.MOVED if moved else Outcome.UNCHANGED
        try:
            with open_session_file(key) as handle:
                if (row is not None and not force and not self._writer.content_pending(row["id"])
                        and self._is_append(handle, row, current)):
                    self._append(handle, key, row, current)
                    return Outcome.MOVED if moved else Outcome.APPENDED
                self._full(handle, key, row, current)
                return Outcome.INDEXED
        except (FileNotFoundError, NotADirectoryError):
            row = self._row(key)
            if row is not None:
                self._writer.delete_file(row)
                return Outcome.REMOVED
            return Outcome.ABSENT
        except OSError:
            # Unreadable (permissions, I/O error): record it so that doctor reports it and it is not retried
            # until its stat changes; it is listed nowhere, as a file scan would skip it.
            self._record_unreadable(key, self._row(key), current)
            return Outcome.INDEXED

    def _adopt_moved_row(self, key: str, current: FileStat) -> Any:
        """A row for the same (device, inode) whose path no longer holds that file: the file was renamed."""
        for candidate in self.db.fetchall("file_by_inode", {"device": current.device, "inode": current.inode}):
            old = stat_session_file(candidate["path"])
            if old is None or (old.device, old.inode) != (current.device, current.inode):
                self.db.execute("move_file", {"file_id": candidate["id"], "path": key,
                                              "directory": os.path.dirname(key)})
                moved = self._row(key)
                # Forks may name their parent by path: the old path's lose it, the new path's gain it.
                refresh_usage_around(self.db, None, None, candidate["path"])
                refresh_usage_around(self.db, moved["id"], moved["session_id"], key)
                return moved
        return None

    def _is_append(self, handle, row: Any, current: FileStat) -> bool:
        if (row["device"], row["inode"]) != (current.device, current.inode):
            return False
        if current.size < row["size"] or current.size < row["indexed_offset"]:
            return False
        head = handle.read(row["head_length"])
        if digest(head) != row["head_digest"]:
            return False
        offset = row["indexed_offset"]
        if offset > 0:
            handle.seek(offset - 1)
            if handle.read(1) != b"\n":
                return False
        return True

    def _full(self, handle, key: str, row: Any, current: FileStat) -> None:
        if row is None:
            sink = _TextSink(self._writer.insert_texts, None, 0,
                             lambda: self._writer.insert_file(self._unreadable_columns(key, current)))
        else:
            self._writer.delete_texts(row["id"])
            sink = _TextSink(self._writer.insert_texts, row["id"], 0)
        head = HeadValues(min(current.size, HEAD_BYTES))
        result = read_fold(handle, 0, current.size, SessionSummary(), 0, sink, head)
        head_length, head_digest, prefix = head_columns(handle, current.size, head)
        columns = self._columns(key, current, result, prefix, head_length, head_digest)
        if row is not None:
            self._writer.update_file(row["id"], (row["title"], row["first_message"]), columns)
        elif sink.file_id is not None:
            self._writer.update_file(sink.file_id, (None, None), columns)
        else:
            sink.attach(self._writer.insert_file(columns))
        assert sink.file_id is not None
        self._writer.replace_usage(sink.file_id, result, row, key, append=False)

    def _append(self, handle, key: str, row: Any, current: FileStat) -> None:
        file_id = row["id"]
        self._writer.delete_texts(file_id, pending_only=True)
        first_seq = self.db.scalar("max_committed_seq", {"file_id": file_id}) + 1
        fold = SessionSummary.from_state(json.loads(row["summary_state"]))
        result = read_fold(handle, row["indexed_offset"], current.size, fold, row["unparseable_lines"],
                           _TextSink(self._writer.insert_texts, file_id, first_seq))
        if row["size"] < HEAD_BYTES:
            head_length, head_digest, prefix = head_columns(handle, current.size)
        else:
            prefix, head_length, head_digest = row["prefix_state"], row["head_length"], row["head_digest"]
        columns = self._columns(key, current, result, prefix, head_length, head_digest)
        self._writer.update_file(file_id, (row["title"], row["first_message"]), columns)
        self._writer.replace_usage(file_id, result, row, key, append=True)

    def _record_unreadable(self, key: str, row: Any, current: FileStat) -> None:
        columns = self._unreadable_columns(key, current)
        if row is None:
            self._writer.insert_file(columns)
        else:
            self._writer.delete_texts(row["id"])
            self._writer.update_file(row["id"], (row["title"], row["first_message"]), columns)
            delete_usage_facts(self.db, row["id"])
            refresh_usage_around(self.db, row["id"], None, key)
            refresh_usage_around(self.db, None, row["session_id"], key)

    # -- columns -----------------------------------------------------------------------------------------------

    def _unreadable_columns(self, key: str, current: FileStat) -> dict[str, Any]:
        """The columns of a file nothing was read from (unreadable, or a placeholder row of a large new file)."""
        return self._stamped(unreadable_columns(key, current))

    def _columns(self, key: str, current: FileStat, result: ReadResult, prefix_state: str | None,
                 head_length: int, head_digest: str) -> dict[str, Any]:
        return self._stamped(file_columns(key, current, result, prefix_state, head_length, head_digest))

    def _stamped(self, columns: dict[str, Any]) -> dict[str, Any]:
        """A row's columns from file_columns with this catalog's machine and the time of indexing added."""
        return {"machine": self.db.machine, **columns, "indexed_at_ms": clamp_int64(int(self._clock() * 1000))}


class ContentRead(NamedTuple):
    """One file read whole for its content: its stat, the committed offset, its texts (storable, capped, with their
    pending flag) and its usage facts as `usage_writer.fact_values` rows with file id 0."""

    stat_key: tuple[int, int, int, int]
    offset: int
    texts: list[tuple[str, bool]]
    fact_rows: list[tuple[Any, ...]]


class ContentReads:
    """The content of files, key by key, from `file_reader.read_new_files` items."""

    def __init__(self, items: Iterator[tuple[Any, ...]]) -> None:
        self._items = items

    def next_read(self, key: str) -> ContentRead | None:
        """The next file's content (the items are read in the order of the keys asked for), None when it could not
        be read whole."""
        item = next(self._items)
        assert item[1] == key, (item[1], key)
        if item[0] != "open":
            return None  # absent, unreadable
        current: FileStat = item[2]
        texts: list[tuple[str, bool]] = []
        while True:
            item = next(self._items)
            kind = item[0]
            if kind == "texts":
                pending = item[2]
                texts += [(text, pending) for text in item[1]]
            elif kind == "read":
                rows = [fact_values(0, fact, pending) for found, pending in ((item[2], False), (item[3], True))
                        for fact in found]
                break
            else:
                return None  # read_error
        return ContentRead((current.device, current.inode, current.size, current.mtime_ns),
                           item[1]["indexed_offset"], texts, rows)


def _file_error(exc: Exception) -> bool:
    """Is `exc` about one file's content (so: skip that file), not about the catalog (so: stop)?

    A value SQLite cannot take (DataError, OverflowError, UnicodeEncodeError) or a parser limit is the
    file's; every other SQLite error (locked, I/O, a corrupt catalog) is the catalog's.
    """
    if isinstance(exc, sqlite3.DataError):
        return True
    return not isinstance(exc, sqlite3.Error | CatalogChanged)


def _reason(exc: Exception) -> str:
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0]}" if text else type(exc).__name__


def _peak_rss_kb() -> int:
    """This process's peak resident memory so far (KiB; 0 where the platform cannot tell)."""
    try:
        import resource
    except ImportError:
        return 0
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss


def _report_bulk_run(bulk: BulkWriter | PostgresBulkWriter, files: int, refresh_cpu_seconds: float,
                     bulk_peak_rss_kb: int) -> None:
    """Append a bulk run's figures to the file $SESSDEX_INDEX_STATS names, if any (for scripts/bench_catalog.py):
    the CPU time of executing statements, of the usage refresh and of this process so far, its peak RSS (also
    at the end of the reading)."""
    stats_path = os.environ.get("SESSDEX_INDEX_STATS")
    if not stats_path:
        return
    figures = {"files": files,
               "writer_cpu_seconds": bulk.cpu_seconds,
               "usage_refresh_cpu_seconds": refresh_cpu_seconds,
               "main_cpu_seconds": time.process_time(),
               "main_peak_rss_kb": _peak_rss_kb(),
               "ended_at": time.time(),  # when the run's rows were all committed (its full-text entries may follow)
               "main_peak_rss_kb_while_reading": bulk_peak_rss_kb}
    with open(stats_path, "a", encoding="utf-8") as handle:
        handle.write(json.dumps(figures) + "\n")


class _ReadFailure(Exception):
    """A file could not be read to its end during a bulk run (it is indexed again the ordinary way)."""


class _BulkRun:
    """What a bulk run wrote rows for: paths, and paths by (device, inode)."""

    def __init__(self) -> None:
        self.paths: set[str] = set()
        self.inodes: dict[tuple[int, int], list[str]] = {}

    def add(self, key: str, identity: tuple[int, int]) -> None:
        self.paths.add(key)
        self.inodes.setdefault(identity, []).append(key)


# The catalog_meta key that remembers `index --redact` / `watch --redact` ("1"): every later indexing into that
# catalog (index, watch, the quick index of a read command, any machine sharing it) keeps secrets out of its text.
REDACT_META_KEY = "redact"


def redaction_remembered(db: CatalogDatabase) -> bool:
    """Whether the catalog was told to keep detected secrets out of its text."""
    return db.scalar("meta_get", {"key": REDACT_META_KEY}) == "1"


def remember_redaction(db: CatalogDatabase, redact: bool) -> None:
    """Remember (or, with False, forget) in the catalog that its text is redacted."""
    with db.write():
        db.execute("meta_delete", {"key": REDACT_META_KEY})
        if redact:
            db.execute("meta_insert", {"key": REDACT_META_KEY, "value": "1"})


def stores_content(db: CatalogDatabase) -> bool:
    """Whether this machine's rows carry message text (True until it indexes with `--no-content`)."""
    rows = db.fetchall("machine_get", {"machine": db.machine})
    return not rows or bool(rows[0]["content"])


def delete_files_texts(db: CatalogDatabase, file_ids: Iterable[int]) -> None:
    """Delete these files' message rows and their full-text entries (inside `db.write()`)."""
    writer = _Writer(db)
    writer.begin()  # reads the backlog: rows without full-text entries must not be deleted from message_fts
    for file_id in file_ids:
        writer.delete_texts(file_id)

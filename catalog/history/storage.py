"""Prompt history: the agent's `history.db`, shared safely, written in the background, searched instantly.

The schema is the agent's, byte for byte (a fresh file is identical to one the agent creates), so the
agent keeps using a file sessdex opened and vice versa. `add()` never waits for SQLite: prompts go to a
queue that a writer thread commits in batches; `flush()`/`close()` drain it. A failed write is logged
once and its prompts stay queued; the next `add()` raises it, and `flush()`/`close()` raise while
prompts cannot be written.

Search (`sessdex.catalog.history.search`) turns each word of the user's text into an FTS5 phrase with the
tokenizer that indexed the prompts, so no input can be an FTS syntax error; every phrase must occur,
its last token as a word prefix; when that finds nothing, a substring search takes over (`mit` finds
`commit`).
"""

from __future__ import annotations

import logging
import sqlite3
import threading
import time
import weakref
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from os import PathLike
from pathlib import Path
from typing import Any, Self

from sessdex.catalog.history.search import (
    BUSY_TIMEOUT_SECONDS,
    HISTORY_DB_NAME,
    NEWEST_FIRST,
    READER_MMAP_BYTES,
    REQUIRED_COLUMNS,
    SCHEMA_OBJECTS,
    HistoryEntry,
    SearchScratch,
    clamp_limit,
    search_prompts,
    trim_prompt,
)
from sessdex.core.errors import HistoryError
from sessdex.core.paths import default_agent_dir
from sessdex.core.private_files import create_private_file
from sessdex.core.text import without_lone_surrogates

__all__ = ["HistoryEntry", "HistoryStorage", "HistoryWriteError", "ImportedPrompt", "history_db_path", "trim_prompt"]

logger = logging.getLogger(__name__)

DEFAULT_BATCH_DELAY_SECONDS = 0.1  # the agent's prompts also land about 100 ms after add()
DEFAULT_LIMIT = 20
IMPORT_TOLERANCE_SECONDS = 60

# The agent's DDL, verbatim: SQLite keeps this text (minus IF NOT EXISTS) in sqlite_master.
_SCHEMA_STATEMENTS = (
    (
        "CREATE TABLE IF NOT EXISTS history (\n"
        "\tid INTEGER PRIMARY KEY AUTOINCREMENT,\n"
        "\tprompt TEXT NOT NULL,\n"
        "\tcreated_at INTEGER NOT NULL DEFAULT (CAST(strftime('%s','now') AS INTEGER)),\n"
        "\tcwd TEXT\n"
        ")"
    ),
    "CREATE INDEX IF NOT EXISTS idx_history_created_at ON history(created_at DESC)",
    "CREATE VIRTUAL TABLE IF NOT EXISTS history_fts USING fts5(prompt, content='history', content_rowid='id')",
    (
        "CREATE TRIGGER IF NOT EXISTS history_ai AFTER INSERT ON history BEGIN\n"
        "\tINSERT INTO history_fts(rowid, prompt) VALUES (new.id, new.prompt);\n"
        "\tEND"
    ),
)


class HistoryWriteError(HistoryError):
    """A background write to history.db failed; the prompts it carried stay queued for a retry."""


def history_db_path(agent_dir: str | PathLike[str] | None = None) -> Path:
    """`<agent dir>/history.db`, the agent dir defaulting to `$PI_CODING_AGENT_DIR` or `~/.xcsh/agent`."""
    return (Path(agent_dir).expanduser() if agent_dir else default_agent_dir()) / HISTORY_DB_NAME


@dataclass(frozen=True, slots=True)
class ImportedPrompt:
    """A prompt recovered from elsewhere (a session file), with the unix time it was sent."""

    prompt: str
    cwd: str | None
    created_at: int


@dataclass(frozen=True, slots=True)
class _QueuedPrompt:
    prompt: str
    cwd: str | None
    created_at: int


def _connect(path: Path, busy_timeout: float) -> sqlite3.Connection:
    # Autocommit mode: every transaction below is explicit (BEGIN IMMEDIATE ... COMMIT).
    return sqlite3.connect(path, timeout=busy_timeout, isolation_level=None, check_same_thread=False)


def _rollback(connection: sqlite3.Connection) -> None:
    if connection.in_transaction:
        try:
            connection.execute("ROLLBACK")
        except sqlite3.Error:
            pass  # the transaction is gone with the failure that ended it


def _ensure_schema(connection: sqlite3.Connection, path: Path) -> None:
    """Create the agent's schema where missing (WAL mode) and check that an existing file really is one.

    A file that already has the whole schema is not written to, so a read-only one can still be searched.
    """
    try:
        connection.execute("PRAGMA journal_mode = WAL")
    except sqlite3.OperationalError:
        pass  # read-only, or another process holds it in rollback mode: it stays usable as it is
    _check_history_columns(connection, path)
    present = {row[0] for row in connection.execute(
        "SELECT name FROM sqlite_master WHERE name IN (?, ?, ?, ?)", SCHEMA_OBJECTS)}
    if present == set(SCHEMA_OBJECTS):
        return
    connection.execute("BEGIN IMMEDIATE")
    try:
        _check_history_columns(connection, path)  # again: another process may have just created it
        for statement in _SCHEMA_STATEMENTS:
            connection.execute(statement)
        connection.execute("COMMIT")
    except BaseException:
        _rollback(connection)
        raise


def _check_history_columns(connection: sqlite3.Connection, path: Path) -> None:
    columns = {row[1] for row in connection.execute("PRAGMA table_info(history)")}
    if columns and not REQUIRED_COLUMNS <= columns:
        raise HistoryError(f"{path} is not a prompt history: its `history` table has the columns "
                           f"{', '.join(sorted(columns))}")


class _PromptWriter:
    """Commits queued prompts on a background thread: one transaction per batch, batches `delay` apart.

    After a failed write the batch goes back to the head of the queue and the writer pauses until a
    caller acts (`take_failure`, `drain`, `stop`), so a broken disk is not hammered in a loop.
    """

    def __init__(self, connection: sqlite3.Connection, path: Path, delay: float) -> None:
        self._connection = connection
        self._path = path
        self._delay = delay
        self._cond = threading.Condition()
        self._queue: list[_QueuedPrompt] = []
        self._first_queued_at = 0.0
        self._writing = 0
        self._urgent = 0
        self._stopping = False
        self._paused = False
        self._failures = 0
        self._unreported: Exception | None = None
        self._failure_logged = False
        self._thread = threading.Thread(target=self._run, name="sessdex-history-writer", daemon=True)
        self._thread.start()

    def enqueue(self, item: _QueuedPrompt) -> None:
        """Queue one prompt; wakes the thread only when the queue was empty (it then waits for the batch)."""
        with self._cond:
            if self._stopping:
                raise HistoryError("the prompt history is closed")
            self._queue.append(item)
            if len(self._queue) == 1:
                self._first_queued_at = time.monotonic()
                self._cond.notify_all()

    def take_failure(self) -> HistoryWriteError | None:
        """The write failure nobody was told about yet (then forgotten), and resume retrying."""
        with self._cond:
            error, self._unreported = self._unreported, None
            if error is None:
                return None
            self._paused = False
            self._cond.notify_all()
            return self._failure(error)

    def drain(self) -> None:
        """Block until every queued prompt is committed; raise HistoryWriteError if a write fails meanwhile."""
        with self._cond:
            self._urgent += 1
            self._paused = False
            failures = self._failures
            self._cond.notify_all()
            try:
                while (self._queue or self._writing) and self._failures == failures and self._thread.is_alive():
                    self._cond.wait()
            finally:
                self._urgent -= 1
            self._raise_if_stuck()

    def stop(self) -> None:
        """Write what is queued (one last attempt), stop the thread; raise if prompts could not be written."""
        with self._cond:
            self._stopping = True
            self._paused = False
            self._cond.notify_all()
        self._thread.join()
        with self._cond:
            self._raise_if_stuck()

    def _raise_if_stuck(self) -> None:
        if self._queue or self._writing:
            error, self._unreported = self._unreported, None
            raise self._failure(error)
        self._unreported = None  # a retry succeeded: the failure was logged and nothing was lost

    def _failure(self, error: Exception | None) -> HistoryWriteError:
        queued = len(self._queue) + self._writing
        return HistoryWriteError(f"could not write to {self._path}: {error or 'writer stopped'} "
                                 f"({queued} prompt(s) still queued)")

    def _run(self) -> None:
        while True:
            with self._cond:
                batch = self._next_batch()
            if batch is None:
                return
            error = self._write(batch)
            with self._cond:
                self._writing = 0
                if error is not None:
                    self._queue[:0] = batch
                    self._failures += 1
                    self._unreported = error
                    self._paused = True
                    if not self._failure_logged:
                        logger.error("could not write %d prompt(s) to %s: %s", len(batch), self._path, error)
                        self._failure_logged = True
                else:
                    self._failure_logged = False
                    self._unreported = None
                self._cond.notify_all()

    def _next_batch(self) -> list[_QueuedPrompt] | None:
        """Wait (lock held) for a batch that is due; None when stopping with nothing (more) to try."""
        while True:
            if self._queue and not self._paused:
                if self._urgent or self._stopping:
                    break
                remaining = self._first_queued_at + self._delay - time.monotonic()
                if remaining <= 0:
                    break
                self._cond.wait(remaining)
                continue
            if self._stopping:
                return None
            self._cond.wait()
        batch, self._queue = self._queue, []
        self._writing = len(batch)
        return batch

    def _write(self, batch: list[_QueuedPrompt]) -> Exception | None:
        connection = self._connection
        try:
            connection.execute("BEGIN IMMEDIATE")
            connection.executemany("INSERT INTO history (prompt, created_at, cwd) VALUES (?, ?, ?)",
                                   [(item.prompt, item.created_at, item.cwd) for item in batch])
            connection.execute("COMMIT")
            return None
        except sqlite3.Error as exc:
            _rollback(connection)
            return exc


def _shutdown(writer: _PromptWriter, resources: list[Any]) -> None:
    """Stop the writer (draining it) and close the connections, even if the drain fails."""
    try:
        writer.stop()
    finally:
        for resource in resources:
            resource.close()


def _shutdown_unattended(writer: _PromptWriter, resources: list[Any]) -> None:
    """Garbage collection or interpreter exit without close(): drain anyway and log what went wrong."""
    try:
        _shutdown(writer, resources)
    except HistoryError as exc:
        logger.error("prompt history closed at exit: %s", exc)


class HistoryStorage:
    """The prompt history in the agent's `history.db`: background `add`, instant `recent` and `search`.

    Open with `HistoryStorage.open(...)` and always `close()` it (or use `with`): that drains the queue.
    `clock` (unix seconds) stamps `created_at`; `batch_delay` is how long the writer gathers prompts.
    """

    def __init__(self, path: Path, *, clock: Callable[[], float] = time.time,
                 batch_delay: float = DEFAULT_BATCH_DELAY_SECONDS,
                 busy_timeout: float = BUSY_TIMEOUT_SECONDS) -> None:
        self.path = path
        self._clock = clock
        try:
            if not path.exists():
                create_private_file(path)  # 0600 (and so its -wal, -shm): it holds every prompt
            write_connection = _connect(path, busy_timeout)
        except (OSError, sqlite3.Error) as exc:
            raise HistoryError(f"cannot open the prompt history {path}: {exc}") from exc
        opened = [write_connection]
        try:
            _ensure_schema(write_connection, path)
            self._reader = _connect(path, busy_timeout)
            opened.append(self._reader)
            # Search seeks rows all over the file: memory-mapped reads make each seek much cheaper.
            self._reader.execute(f"PRAGMA mmap_size = {READER_MMAP_BYTES}").fetchall()
            newest = self._reader.execute(f"SELECT prompt FROM history {NEWEST_FIRST} LIMIT 1").fetchone()
        except BaseException as exc:
            for connection in opened:
                connection.close()
            if isinstance(exc, sqlite3.Error):
                raise HistoryError(f"cannot open the prompt history {path}: {exc}") from exc
            raise
        # The consecutive-repeat cache starts from the newest stored prompt, as the agent's does.
        self._last_prompt: str | None = newest[0] if newest else None
        self._add_lock = threading.Lock()
        self._read_lock = threading.Lock()
        self._scratch = SearchScratch()
        self._writer = _PromptWriter(write_connection, path, batch_delay)
        self._closed = False
        self._resources: list[Any] = [self._reader, write_connection, self._scratch]
        self._finalizer = weakref.finalize(self, _shutdown_unattended, self._writer, self._resources)

    @classmethod
    def open(cls, db_path: str | PathLike[str] | None = None, *, agent_dir: str | PathLike[str] | None = None,
             clock: Callable[[], float] = time.time, batch_delay: float = DEFAULT_BATCH_DELAY_SECONDS,
             busy_timeout: float = BUSY_TIMEOUT_SECONDS) -> HistoryStorage:
        """Open (creating if needed) `db_path`, else `<agent_dir>/history.db`, else the default agent dir's.

        `busy_timeout` is how long a write waits for another process's lock before it counts as failed.
        """
        path = Path(db_path).expanduser() if db_path is not None else history_db_path(agent_dir)
        return cls(path, clock=clock, batch_delay=batch_delay, busy_timeout=busy_timeout)

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    @property
    def closed(self) -> bool:
        """True once close() ran."""
        return self._closed

    def add(self, prompt: str, cwd: str | None = None) -> None:
        """Queue a prompt without waiting for SQLite: trimmed, empty ones ignored, a repeat of the last dropped.

        Raises HistoryWriteError when an earlier background write failed (this prompt is queued even so).
        """
        self._check_open()
        text = without_lone_surrogates(trim_prompt(prompt))
        if text:
            with self._add_lock:
                if text != self._last_prompt:
                    self._last_prompt = text
                    self._writer.enqueue(_QueuedPrompt(text, cwd and without_lone_surrogates(cwd), int(self._clock())))
        failure = self._writer.take_failure()
        if failure is not None:
            raise failure

    def flush(self) -> None:
        """Wait until every queued prompt is committed (HistoryWriteError if that fails)."""
        self._check_open()
        self._writer.drain()

    def close(self) -> None:
        """Drain the queue and release the database; raises HistoryWriteError if prompts were left unwritten."""
        if self._closed:
            return
        self._closed = True
        self._finalizer.detach()
        with self._read_lock:
            _shutdown(self._writer, self._resources)

    def recent(self, limit: int = DEFAULT_LIMIT) -> list[HistoryEntry]:
        """The newest `limit` committed prompts, newest first (none for limit <= 0)."""
        limit = clamp_limit(limit)
        if limit == 0:
            return []
        with self._reading():
            rows = self._reader.execute(f"SELECT id, prompt, created_at, cwd FROM history {NEWEST_FIRST} LIMIT ?",
                                        (limit,)).fetchall()
        return [HistoryEntry(*row) for row in rows]

    def search(self, query: str, limit: int = DEFAULT_LIMIT, cwd: str | None = None, *,
               substring_fallback: bool = True) -> list[HistoryEntry]:
        """Committed prompts holding every word of `query` as a phrase (last token a prefix), newest first, with snippets.

        `cwd` keeps only prompts sent from that directory. When that finds nothing and
        `substring_fallback` is on (the agent has no such fallback), prompts containing every word
        of `query` anywhere, ASCII case-insensitively, are returned instead. No input raises.
        """
        limit = clamp_limit(limit)
        text = without_lone_surrogates(trim_prompt(query))
        if limit == 0 or not text:
            return []
        with self._reading():
            return search_prompts(self._reader, self._scratch, text, limit, cwd and without_lone_surrogates(cwd),
                                  substring_fallback=substring_fallback)

    def import_prompts(self, prompts: Iterable[ImportedPrompt],
                       tolerance_seconds: int = IMPORT_TOLERANCE_SECONDS) -> int:
        """Insert prompts recovered from elsewhere, oldest first, skipping any already present; returns the count.

        "Already present" means the same trimmed text and cwd stamped within `tolerance_seconds`, so
        running an import twice adds nothing and prompts the agent recorded itself are not doubled.
        The consecutive-repeat cache is left alone: imports are not what the user typed last.
        """
        self.flush()
        # Distinct, oldest first; prompts sent in the same second keep the order they were given in.
        rows = sorted(dict.fromkeys((text, item.cwd and without_lone_surrogates(item.cwd), int(item.created_at))
                                    for item in prompts if (text := without_lone_surrogates(trim_prompt(item.prompt)))),
                      key=lambda row: row[2])
        inserted = 0
        with self._reading():
            connection = self._reader
            connection.execute("BEGIN IMMEDIATE")
            try:
                for text, cwd, created_at in rows:
                    present = connection.execute(
                        "SELECT 1 FROM history WHERE created_at BETWEEN ? AND ? AND prompt = ? AND cwd IS ? LIMIT 1",
                        (created_at - tolerance_seconds, created_at + tolerance_seconds, text, cwd)).fetchone()
                    if present is None:
                        connection.execute("INSERT INTO history (prompt, created_at, cwd) VALUES (?, ?, ?)",
                                           (text, created_at, cwd))
                        inserted += 1
                connection.execute("COMMIT")
            finally:
                _rollback(connection)
        return inserted

    def _check_open(self) -> None:
        if self._closed:
            raise HistoryError("the prompt history is closed")

    @contextmanager
    def _reading(self) -> Iterator[None]:
        """Serialize use of the caller-side connection and turn SQLite errors into HistoryError."""
        with self._read_lock:
            self._check_open()
            try:
                yield
            except sqlite3.Error as exc:
                raise HistoryError(f"prompt history {self.path}: {exc}") from exc

"""Reading session files for the catalog: the chunked fold, the head, the columns of a file's row.

This is the half of indexing that needs no database: `read_fold` folds a file's bytes chunk by chunk
(see `sessdex.catalog.index.indexer` for the rules on appends and pending tails), `file_columns` turns
the result into the columns of its `session_files` row, and `read_new_files` reads whole new files
for a bulk run as a stream of small items. It imports only the core and orjson.
"""

from __future__ import annotations

import dataclasses
import errno
import hashlib
import io
import json
import math
import os
import stat as stat_module
from collections.abc import Callable, Generator, Iterable
from dataclasses import dataclass, field
from typing import Any, BinaryIO, overload

import orjson

from sessdex.catalog.secrets import redact, redact_value
from sessdex.core.discovery import RECENT_PREFIX_BYTES, summarize_bytes
from sessdex.core.jsonl import MAX_LINE_BYTES, SKIPPED_LINE, SKIPPED_TAIL, ParsedJsonl, line_blocks, parse_jsonl, too_deep
from sessdex.core.paths import path_from_text
from sessdex.core.storage import FileStat
from sessdex.core.summary import SessionSummary
from sessdex.core.text import without_lone_surrogates
from sessdex.core.usage import UsageFact, usage_facts

CHUNK_BYTES = 4 * 1024 * 1024
HEAD_BYTES = RECENT_PREFIX_BYTES
MESSAGE_TEXT_MAX_CHARS = 1 << 16  # per message: what the catalog stores and searches (see catalog.index.indexer)
INT64_MAX = 2**63 - 1  # the largest integer SQLite stores; larger stat or usage figures are clamped to it
_WHITESPACE = b" \t\r\n"


def clamp_int64(value: int) -> int:
    """`value` within SQLite's INTEGER range (an mtime in year 5000 has more nanoseconds than that)."""
    return INT64_MAX if value > INT64_MAX else -INT64_MAX if value < -INT64_MAX else value



def stat_session_file(path: str | os.PathLike[str]) -> FileStat | None:
    """The FileStat of the regular file a catalog key (or path) names (symlinks followed), or None when it is
    missing or not a file."""
    try:
        result = os.stat(path_from_text(os.fspath(path)))
    except OSError:  # missing, a component not a directory, unreadable
        return None
    if not stat_module.S_ISREG(result.st_mode):
        return None
    file_stat = FileStat.of(result)
    # The catalog stores mtimes as SQLite integers: one in year 5000 is clamped (as reconcile.stat_key does).
    return file_stat if file_stat.mtime_ns <= INT64_MAX else dataclasses.replace(file_stat, mtime_ns=INT64_MAX)


def open_session_file(path: str | os.PathLike[str]) -> BinaryIO:
    """The file a catalog key (or path) names, opened for reading without blocking; IsADirectoryError-like
    OSError unless it is a regular file.

    Between the stat that found a regular file and this open, it may have become a FIFO (whose open
    would block) or a device (whose read would never end): both are refused here.
    """
    fd = os.open(path_from_text(os.fspath(path)), os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    try:
        if not stat_module.S_ISREG(os.fstat(fd).st_mode):
            raise OSError(errno.EINVAL, "not a regular file", os.fspath(path))
        os.set_blocking(fd, True)
        raw = io.FileIO(fd, "rb")
        raw.name = os.fspath(path)  # as open(path) names it
        return io.BufferedReader(raw)
    except BaseException:
        os.close(fd)
        raise



def digest(data: bytes) -> str:
    """The digest a file's head is compared by (append detection)."""
    return hashlib.blake2b(data, digest_size=16).hexdigest()


def state_json(state: dict[str, Any]) -> str:
    """A fold state as JSON text that json.loads gives back exactly."""
    if _finite(state):  # orjson would write an infinite sum of usage figures as null
        try:
            return orjson.dumps(state).decode()
        except TypeError:
            pass  # orjson refuses lone surrogates (a damaged line can hold them)
    # ASCII JSON keeps lone surrogates as escapes and infinities as Infinity, losslessly.
    return json.dumps(state, separators=(",", ":"))


def _finite(container: dict[str, Any] | list[Any]) -> bool:
    """True when no float in `container`, at any depth, is infinite or NaN."""
    for item in container.values() if type(container) is dict else container:
        kind = type(item)
        if kind is float:
            if not math.isfinite(float(item)):
                return False
        elif (kind is dict or kind is list) and not _finite(item):  # type: ignore[arg-type]
            return False
    return True


@overload
def storable_text(text: str) -> str: ...
@overload
def storable_text(text: None) -> None: ...
def storable_text(text: str | None) -> str | None:
    """Text SQLite can store: lone surrogates (only damaged lines produce them) become U+FFFD."""
    return None if text is None else without_lone_surrogates(text)


# `index --redact` / `watch --redact` set this variable (processes they start inherit it).
REDACT_VARIABLE = "SESSDEX_REDACT"


def redacting() -> bool:
    """Whether detected secrets are kept out of the catalog's text (a shared catalog must never hold them)."""
    return os.environ.get(REDACT_VARIABLE) == "1"


@overload
def catalog_text(text: str, redacted: bool | None = None) -> str: ...
@overload
def catalog_text(text: None, redacted: bool | None = None) -> None: ...
def catalog_text(text: str | None, redacted: bool | None = None) -> str | None:
    """Session text as the catalog stores it (titles, first messages, summaries): storable, and redacted when
    `redacting()` (or as `redacted` says when the caller asked that once for many texts). The session files
    themselves are never changed."""
    if text is None:
        return None
    return storable_text(redact(text) if (redacting() if redacted is None else redacted) else text)


def message_text(text: str, redacted: bool | None = None) -> str:
    """A message's text as the catalog stores it: its first MESSAGE_TEXT_MAX_CHARS characters, storable (redacted
    when `redacting()`, or as `redacted` says when the caller asked that once for many texts; a little past the
    cut is scanned, so a secret straddling it is not left half-visible)."""
    if redacting() if redacted is None else redacted:
        return storable_text(redact(text[:MESSAGE_TEXT_MAX_CHARS + 1024])[:MESSAGE_TEXT_MAX_CHARS])
    return storable_text(text[:MESSAGE_TEXT_MAX_CHARS])


@dataclass
class ReadResult:
    """Reading a file from an offset: the committed fold state, and the view including the pending tail."""

    committed_offset: int
    committed_bad: int
    committed_state: dict[str, Any]
    pending_bad: int
    visible: SessionSummary
    visible_state: dict[str, Any]
    facts: list[UsageFact] = field(default_factory=list)  # usage of the committed lines
    pending_facts: list[UsageFact] = field(default_factory=list)  # usage of the pending tail



def storable_int(value: Any) -> Any:
    """An integer column value within SQLite's range (other values as they are)."""
    return clamp_int64(value) if type(value) is int else value



def parse_lines(data: bytes) -> ParsedJsonl:
    """Exactly `sessdex.core.jsonl.parse_jsonl(data)`, faster on well-formed data: orjson on each line, in place.

    From the first line orjson rejects (and that is not blank) the rest goes to parse_jsonl itself:
    its state at a line start is fresh, so the result is the same, and damage is rare.
    """
    return _parse_lines(data)[0]


_DAMAGED = object()  # a line orjson cannot read


def _parse_lines(data: bytes) -> tuple[ParsedJsonl, int]:
    """parse_lines(data), and how many of its first values are each a whole non-blank line (before any damage)."""
    values: list[Any] = []
    loads = orjson.loads
    view = memoryview(data)  # lines are parsed where they lie: copying them out costs more than finding them
    find = data.find
    position, size = 0, len(data)
    while position < size:
        end = find(b"\n", position)
        if end < 0:
            end = size
        if end > position:
            line = view[position:end]
            if end - position > MAX_LINE_BYTES:
                value = _DAMAGED  # parse_jsonl skips and counts it
            else:
                try:
                    value = loads(line)
                except orjson.JSONDecodeError:
                    value = _DAMAGED
            # A line nested deeper than the file scan reads is damage too (orjson reads deeper than core does).
            if value is _DAMAGED or too_deep(line, value):
                if data[position:end].strip(_WHITESPACE):
                    rest = parse_jsonl(data[position:])
                    clean = len(values)
                    rest.values[:0] = values
                    return rest, clean
            else:
                values.append(value)
        position = end + 1
    return ParsedJsonl(values), len(values)


class HeadValues:
    """A file's head, and the values in it, taken from the full read: the prefix fold then needs no parse of its own.

    get_recent_sessions folds `summarize_bytes(head)` (head: the first HEAD_BYTES). That parse finds the
    values of the head's complete lines, which the full read parsed already, then tries the line the
    head ends inside; it finds no value there when that whole line is one JSON object, array or
    string (a piece of one never is a value). `values` is the head's values when that can be told
    from the full read, else None (head_columns then parses the head itself).
    """

    def __init__(self, head_length: int) -> None:
        self._head_length = head_length
        self.head: bytes | None = None
        self.values: list[Any] | None = None

    def see(self, complete: bytes, values: list[Any], clean: int) -> None:
        """`complete`: the file's first complete lines; `values`: their values, the first `clean` one per non-blank line."""
        self.head = self.values = None
        if len(complete) < self._head_length:
            return
        self.head = head = complete[:self._head_length]
        cut = head.rfind(b"\n") + 1
        count = sum(1 for line in head[:cut].split(b"\n") if line.strip(_WHITESPACE))
        torn = head[cut:]
        if torn.strip(_WHITESPACE):
            if clean <= count or type(values[count]) not in (dict, list, str):
                return
            line_end = complete.find(b"\n", cut)
            if len(torn) >= len(complete[cut:line_end].rstrip(_WHITESPACE)):
                return  # the head holds that line whole
        elif clean < count:
            return
        self.values = values[:count]


def read_fold(handle, offset: int, end: int, fold: SessionSummary, committed_bad: int,
              sink: Callable[[list[str], bool], None], head: HeadValues | None = None) -> ReadResult:
    """Fold the bytes [offset, end) of an open file into `fold` chunk by chunk, handing texts to `sink`.

    Complete lines are committed (`sink(texts, False)`); what follows the last newline, or a damaged
    value still open at the end of the file, is pending: folded into a copy (`sink(texts, True)`).
    Memory stays bounded by the chunk size plus the longest line. Reading from offset 0, `head` is
    shown the first lines parsed.
    """
    chunks = fold_chunks(handle, offset, end, fold, committed_bad, head)
    while True:
        try:
            texts, pending = next(chunks)
        except StopIteration as stop:
            return stop.value
        sink(texts, pending)


def fold_chunks(handle, offset: int, end: int, fold: SessionSummary, committed_bad: int,
                head: HeadValues | None = None, *, usage: bool = True, texts_wanted: bool = True
                ) -> Generator[tuple[list[str], bool], None, ReadResult]:
    """read_fold as a generator: yields (texts, pending) as read_fold hands them to its sink, returns the ReadResult.

    `usage=False` leaves the usage facts out (a listing-first read: they are read again with the content);
    `texts_wanted=False` yields no texts (a reader that stores none)."""
    handle.seek(offset)
    committed = offset
    buffer = b""  # whole lines held back (a damaged value may continue past them), then the unterminated tail
    facts: list[UsageFact] = []
    skipping = False  # the file ends inside a line longer than MAX_LINE_BYTES (dropped, counted as pending)
    for block in line_blocks(handle.read, offset, limit=end - offset, chunk_bytes=CHUNK_BYTES):
        if block.skipped:
            committed_bad += 1 if block.skipped == SKIPPED_LINE else 0
            skipping = block.skipped == SKIPPED_TAIL
            if not buffer:
                committed = block.offset
                continue
            complete, buffer = buffer, b""  # held lines are decided now: what follows cannot continue them
        else:
            buffer = buffer + block.data if buffer else block.data
            if not buffer.endswith(b"\n"):
                break  # the unterminated tail: pending
            complete = buffer
        parsed, clean = _parse_lines(complete)
        if not block.skipped and parsed.torn_tail and len(complete) <= MAX_LINE_BYTES:
            continue  # a damaged value runs to the chunk's end: decide once more bytes are in
        if head is not None and committed == 0:
            head.see(complete, parsed.values, clean)
        texts = fold.feed_all(parsed.values, texts_wanted)
        if usage and fold.header_valid:
            facts += usage_facts(parsed.values)
        committed_bad += parsed.bad_records
        committed = block.offset if block.skipped else committed + len(complete)
        buffer = b""
        del parsed, complete
        if texts:
            yield texts, False
    committed_state = fold.to_state()
    if not buffer:
        return ReadResult(committed, committed_bad, committed_state, 1 if skipping else 0, fold, committed_state,
                          facts)
    visible = SessionSummary.from_state(committed_state)
    parsed = parse_lines(buffer)
    texts = visible.feed_all(parsed.values, texts_wanted)
    if texts:
        yield texts, True
    pending_facts = usage_facts(parsed.values) if usage and visible.header_valid else []
    return ReadResult(committed, committed_bad, committed_state, parsed.bad_records, visible, visible.to_state(),
                      facts, pending_facts)


def head_columns(handle, size: int, known: HeadValues | None = None, redacted: bool | None = None
                 ) -> tuple[int, str, str | None]:
    """(head_length, head_digest, prefix_state) of a file.

    The head is what an append check compares later; prefix_state is the fold of the first 4 KB as
    get_recent_sessions reads them (JSON), None without a valid header there, redacted when `redacting()` (or as
    `redacted` says). What `known` holds (HeadValues shown the full read) is not read or parsed again.
    """
    length = min(size, HEAD_BYTES)
    head = known.head if known is not None else None
    if head is None:
        handle.seek(0)
        head = handle.read(length)
    if known is not None and known.values is not None:
        summary = SessionSummary()
        summary.feed_all(known.values)
    else:
        summary = summarize_bytes(head)[0]
    if not summary.header_valid:
        return length, digest(head), None
    state = summary.to_state()
    return length, digest(head), state_json(redact_value(state) if (redacting() if redacted is None else redacted)
                                            else state)



def file_columns(key: str, current: FileStat, result: ReadResult, prefix_state: str | None, head_length: int,
                 head_digest: str, redacted: bool | None = None) -> dict[str, Any]:
    """The columns of a file's `session_files` row that come from the file (all but machine and indexed_at_ms), their
    texts redacted when `redacting()` (or as `redacted` says, when the caller asked that once for many files).

    Every number is made storable (storable_int): the figures come from the file, and a huge integer in one must
    not make the file unindexable."""
    visible = result.visible
    if redacted is None:
        redacted = redacting()
    committed_state = result.committed_state
    return {
        "path": key,
        "directory": os.path.dirname(key),
        "device": storable_int(current.device),
        "inode": storable_int(current.inode),
        "size": storable_int(current.size),
        "mtime_ns": storable_int(current.mtime_ns),
        "indexed_offset": storable_int(result.committed_offset),
        "head_length": storable_int(head_length),
        "head_digest": head_digest,
        "summary_state": state_json(redact_value(committed_state) if redacted else committed_state),
        "unparseable_lines": storable_int(result.committed_bad),
        "pending_unparseable": storable_int(result.pending_bad),
        "header_valid": visible.header_valid,
        "session_id": storable_text(visible.session_id),
        "cwd": storable_text(visible.cwd),
        "title": catalog_text(visible.title, redacted),
        "header_title": catalog_text(visible.header_title, redacted),
        "short_summary": catalog_text(result.visible_state["compaction_short_summary"], redacted),
        "parent_session": storable_text(visible.parent_session),
        "created": storable_text(visible.created),
        "message_count": storable_int(visible.message_count),
        "entry_count": storable_int(visible.entry_count),
        "first_message": catalog_text(visible.first_message, redacted),
        "prefix_state": prefix_state,
        "last_entry_id": storable_text(visible.last_entry_id),
        "last_model": storable_text(visible.last_model),
        "input_tokens": storable_int(visible.input_tokens),
        "output_tokens": storable_int(visible.output_tokens),
        "cache_read_tokens": storable_int(visible.cache_read_tokens),
        "cache_write_tokens": storable_int(visible.cache_write_tokens),
        "cost_total": storable_int(visible.cost_total),
    }


def unreadable_columns(key: str, current: FileStat) -> dict[str, Any]:
    """file_columns of a file nothing was read from (unreadable, or a placeholder row of a large new file)."""
    empty = SessionSummary()
    state = empty.to_state()
    return file_columns(key, current, ReadResult(0, 0, state, 0, empty, state), None, 0, digest(b""))


# -- whole new files, as a stream of items (a bulk run's input) ------------------------------------------------
# Per path, in order, read_new_files yields one of:
#   ("absent", path)                      no regular file there;
#   ("unreadable", path, stat)            a file that cannot be opened (recorded as unreadable);
#   ("open", path, stat), then ("texts", texts, pending)... and ("read", columns, facts, pending_facts):
#                                         a file read whole (texts storable and capped, columns from file_columns);
#   ("read_error", path)                  reading it failed part-way (the bulk run ends there).


def read_new_files(keys: Iterable[str], content: bool, *, listing_only: bool = False
                   ) -> Generator[tuple[Any, ...], None, None]:
    """Read each of `keys` (catalog keys of files new to the catalog) whole, yielding the items above.

    Lazy: a path is looked at only when the items of the previous one were taken. `content=False` sends
    no texts (a metadata-only catalog); `listing_only` sends neither texts nor usage facts (a listing-first
    index: `sessdex.catalog.index.content_index` reads them later).
    """
    content = content and not listing_only
    redacted = redacting()  # asked once per run, not once per file and text
    for key in keys:
        current = stat_session_file(key)
        if current is None:
            yield ("absent", key)
            continue
        try:
            handle = open_session_file(key)
        except (FileNotFoundError, NotADirectoryError):
            yield ("absent", key)
            continue
        except OSError:
            yield ("unreadable", key, current)
            continue
        with handle:  # closed also when the consumer stops at the "open" item (the generator is closed there)
            yield ("open", key, current)
            try:
                head = HeadValues(min(current.size, HEAD_BYTES))
                chunks = fold_chunks(handle, 0, current.size, SessionSummary(), 0, head, usage=not listing_only,
                                     texts_wanted=content)
                while True:
                    try:
                        texts, pending = next(chunks)
                    except StopIteration as stop:
                        result: ReadResult = stop.value
                        break
                    if content:
                        yield ("texts", [message_text(text, redacted) for text in texts], pending)
                head_length, head_digest, prefix = head_columns(handle, current.size, head, redacted)
            except Exception:  # noqa: BLE001 - a failure to read one file ends the bulk run, never the index
                read_error = True
            else:
                read_error = False
        if read_error:
            yield ("read_error", key)
            continue
        yield ("read", file_columns(key, current, result, prefix, head_length, head_digest, redacted), result.facts,
               result.pending_facts)

"""Worker processes that read a bulk run's files while this process writes them, so that both use a core.

Reading a session file for the catalog (orjson parsing, the `SessionSummary` fold, usage facts, the
row's values) is Python work; writing it (b-tree and FTS5 inserts) is SQLite work. In one process they
share a core (the BulkWriter thread overlaps only SQLite's own part). A bulk run large enough to gain
from it (PARALLEL_MIN_BYTES) therefore hands its files to worker processes, each running
`file_reader.read_new_files` over its share and sending the items back through a pipe, pickled in
frames of about FRAME_CHARS characters of text (usage facts already as row values). This process turns
items into rows and executes the statements (the BulkWriter inline: one thread, no GIL hand-over), in
the order of the keys, so the catalog is exactly the one the single-process path writes. Writing takes
less time than reading, so this process also reads a share of the files itself (every `local_every`-th
run of files, small ones: meanwhile a worker fills its pipe): every other one in a listing-first run, which
writes the files' rows only (see content_index).

How many: one per CPU but the writer's, at most MAX_WORKERS (1). Measured on the 10,000-session corpus
(2 cores), a second worker only competes with the writer for the same cores, costs 1-3 s more CPU in all
and 63 MB more memory: the processes' peaks would sum past the indexer's 200 MB budget.
$SESSDEX_PARSE_WORKERS overrides the count (benchmarks).

The workers are new interpreters (`python -P -m sessdex.catalog.index.parse_workers`), not forks: a
fork would copy this process's open SQLite connections and threads. They ignore SIGINT (Ctrl+C reaches
the whole process group; this process stops them), send nothing to stderr, and end when their pipe
closes. A worker can be ahead of the writer by one pipe (PIPE_BYTES), which bounds memory.
`ParseWorkers.close()` kills what is still running and waits for it, whatever happened (an error, a
rolled back run, a KeyboardInterrupt). A worker that dies or sends garbage raises WorkerFailure, and
the bulk run ends there like at a read error: what it had not committed is indexed again the ordinary way.
"""

from __future__ import annotations

import contextlib
import os
import pickle
import struct
import subprocess
import sys
from collections.abc import Generator, Sequence
from typing import IO, Any

from sessdex.catalog.index.file_reader import read_new_files

# A run with fewer bytes than this is read in the indexing process: starting a worker (a new interpreter
# importing the reader: 0.1-0.15 s measured) costs more than handing it the parsing saves below 15-20 MB
# (the worker takes about 9 ms/MB of CPU off the writing process).
PARALLEL_MIN_BYTES = 24 << 20
MAX_WORKERS = 1  # see the module docstring
FRAME_CHARS = 1 << 20  # a worker sends its items in frames of about this many characters of text...
FRAME_ITEMS = 256  # ...or this many items, whichever comes first
PIPE_BYTES = 1 << 20  # what a worker may send ahead of this process's reading (Linux's default limit for a pipe)
SHARE_BYTES = 2 << 20  # consecutive files of about this many bytes go to one reader (within what a pipe holds)
# This process reads every LOCAL_EVERY-th share itself (see _schedule). Measured on the benchmark corpus (3 runs),
# reading every 4th share: the worker took 6.5-7.7 s of CPU, this process 8.2-9.6 s (3.7-4.6 s of statements,
# 1.5 s of usage refresh, about 2.3 s reading its quarter): reading a sixth balances the two.
LOCAL_EVERY = 6
# A listing-first run (no texts, no usage facts: see content_index) writes almost nothing: this process reads
# every other share.
LOCAL_EVERY_LISTING = 2
# glibc malloc settings of a worker: its multi-megabyte buffers (chunks read, lines sliced) are otherwise each
# mapped and unmapped again, and every page faulted in anew (measured: 386,000 page faults, 1.4 s of system time,
# against 13,000 and 0.4 s with these) for a few megabytes more of resident memory.
_WORKER_MALLOC = {"MALLOC_MMAP_THRESHOLD_": str(64 << 20), "MALLOC_TRIM_THRESHOLD_": str(128 << 20)}
_HEADER = struct.Struct("<Q")
_TERMINAL = frozenset(("absent", "unreadable", "read", "read_rows", "read_error"))  # each key's last item
_END = "end"


class WorkerFailure(Exception):
    """A parse worker died, could not start or sent something unreadable (the bulk run ends there)."""


def available_cpus() -> int:
    """The CPUs this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def parse_worker_count(keys: Sequence[str]) -> int:
    """How many worker processes should read `keys` for a bulk run: 0 when they are too few bytes to gain from
    workers or when there is only one CPU, else one per CPU but one (the writer's), at least 1, at most MAX_WORKERS.
    $SESSDEX_PARSE_WORKERS (a number) overrides that."""
    chosen = os.environ.get("SESSDEX_PARSE_WORKERS", "")
    if chosen.isdigit():
        return int(chosen)  # a benchmark's (or a user's) choice
    cpus = available_cpus()
    if cpus < 2 or not sys.executable or getattr(sys, "frozen", False):
        return 0  # a frozen application's executable is no interpreter to run the worker module with
    total = 0
    for key in keys:
        try:
            total += os.stat(key).st_size
        except OSError:
            continue
        if total >= PARALLEL_MIN_BYTES:
            return max(1, min(cpus - 1, MAX_WORKERS))
    return 0


def _shares(keys: Sequence[str]) -> list[tuple[list[str], int]]:
    """`keys` cut into runs of consecutive keys, each ending at the file that makes it reach SHARE_BYTES, with
    their sizes in bytes."""
    shares: list[tuple[list[str], int]] = [([], 0)]
    for key in keys:
        try:
            size = os.stat(key).st_size
        except OSError:
            size = 0
        run, total = shares[-1]
        run.append(key)
        shares[-1] = (run, total + size)
        if total + size >= SHARE_BYTES:
            shares.append(([], 0))
    return [share for share in shares if share[0]]


def _schedule(shares: list[tuple[list[str], int]], count: int, local_every: int) -> list[int]:
    """Who reads each share: a worker (0 to count - 1) in turn, or this process (`count`) for every
    `local_every`-th share that is not large (it would otherwise wait for the workers meanwhile), the first
    among them: this process reads while the workers' interpreters start (0.1-0.15 s)."""
    schedule = []
    turn = 0
    for position, (_keys, size) in enumerate(shares):
        if position % local_every == 0 and size <= 2 * SHARE_BYTES:
            schedule.append(count)
        else:
            schedule.append(turn % count)
            turn += 1
    return schedule


class _Local:
    """The shares this process reads itself, as a channel."""

    def __init__(self, keys: list[str], content: bool, listing_only: bool) -> None:
        self._items = read_new_files(keys, content, listing_only=listing_only)

    def next_item(self) -> Any:
        return next(self._items)

    def close(self) -> None:
        self._items.close()  # closes the file it may have open


class _Channel:
    """One worker process: its task goes in through stdin, its frames come back through stdout."""

    def __init__(self, keys: list[str], content: bool, listing_only: bool) -> None:
        self._items: list[Any] = []
        self._next = 0
        self.process = subprocess.Popen(
            [sys.executable, "-P", "-m", "sessdex.catalog.index.parse_workers"], stdin=subprocess.PIPE,
            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, close_fds=True,
            env={**os.environ, **_WORKER_MALLOC, _PARENT_ENV: str(os.getpid())})
        assert self.process.stdin is not None and self.process.stdout is not None
        for stream in (self.process.stdin, self.process.stdout):
            _widen_pipe(stream.fileno())
        try:
            self.process.stdin.write(pickle.dumps((keys, content, listing_only), protocol=pickle.HIGHEST_PROTOCOL))
            self.process.stdin.close()
        except OSError:
            pass  # the worker is gone already: reading its frames says so

    def next_item(self) -> Any:
        """The worker's next item; WorkerFailure when its stream ended or cannot be read."""
        if self._next == len(self._items):
            self._items = self._read_frame()
            self._next = 0
        item = self._items[self._next]
        self._next += 1
        return item

    def _read_frame(self) -> list[Any]:
        stdout = self.process.stdout
        assert stdout is not None
        try:
            header = stdout.read(_HEADER.size)
            frame = stdout.read(_HEADER.unpack(header)[0]) if len(header) == _HEADER.size else b""
        except (OSError, ValueError) as exc:
            raise WorkerFailure(f"a parse worker's pipe failed: {exc}") from exc
        if len(header) < _HEADER.size or len(frame) < _HEADER.unpack(header)[0]:
            raise WorkerFailure("a parse worker stopped before sending every file")
        try:
            items = pickle.loads(frame)
        except Exception as exc:  # noqa: BLE001 - whatever went wrong, the run ends at this file
            raise WorkerFailure(f"a parse worker sent an unreadable frame: {exc}") from exc
        if type(items) is not list or not items:
            raise WorkerFailure("a parse worker sent a frame without items")
        return items

    def close(self) -> None:
        """Stop the worker if it still runs, and wait for it."""
        if self.process.poll() is None:
            self.process.kill()
        self.process.wait()
        for stream in (self.process.stdin, self.process.stdout):
            if stream is not None:
                stream.close()


def _widen_pipe(fd: int) -> None:
    """Let a pipe hold PIPE_BYTES (Linux; elsewhere, or beyond the system's limit, it keeps its size)."""
    try:
        import fcntl

        fcntl.fcntl(fd, fcntl.F_SETPIPE_SZ, PIPE_BYTES)
    except (ImportError, AttributeError, OSError):
        pass


class ParseWorkers:
    """Worker processes reading a bulk run's keys; `items()` gives read_new_files' items for all keys, in order.

    A few small shares are read in this process (`_schedule`). Always `close()` it (in a `finally`): that
    stops and waits for every process.
    """

    def __init__(self, keys: Sequence[str], content: bool, count: int, local_every: int,
                 listing_only: bool = False) -> None:
        self.count = count
        self._shares = _shares(keys)
        self._schedule = _schedule(self._shares, count, local_every)
        self._channels: list[_Channel] = []
        self._local = _Local([key for (share, _size), reader in zip(self._shares, self._schedule) if reader == count
                              for key in share], content, listing_only)
        self.files_read_here = sum(len(share) for (share, _size), reader in zip(self._shares, self._schedule)
                                   if reader == count)
        self.cpu_seconds = 0.0  # the workers' CPU time, once they all finished
        self.peak_rss_kb: list[int] = []  # each worker's peak resident memory, once they all finished

    @classmethod
    def start(cls, keys: Sequence[str], content: bool, count: int, *, local_every: int = LOCAL_EVERY,
              listing_only: bool = False) -> ParseWorkers:
        """Start `count` workers reading their shares of `keys` (their items then wait in the pipes); this
        process reads every `local_every`-th share. `listing_only`: see file_reader.read_new_files."""
        workers = cls(keys, content, count, local_every, listing_only)
        try:
            for index in range(count):
                assigned = [key for (share, _size), reader in zip(workers._shares, workers._schedule)
                            if reader == index for key in share]
                workers._channels.append(_Channel(assigned, content, listing_only))
        except BaseException:
            workers.close()
            raise
        return workers

    def items(self) -> Generator[tuple[Any, ...], None, None]:
        """Every key's items in key order (see file_reader.read_new_files)."""
        for (share, _size), reader in zip(self._shares, self._schedule):
            channel: _Channel | _Local = self._local if reader == self.count else self._channels[reader]
            remaining = len(share)
            while remaining:
                item = channel.next_item()
                if type(item) is not tuple or not item:
                    raise WorkerFailure("a parse worker sent something that is not an item")
                if item[0] in _TERMINAL:
                    remaining -= 1
                yield item

    def read_figures(self) -> None:
        """Once every key's items were taken: read the workers' CPU time and peak RSS into the attributes."""
        for channel in self._channels:
            item = channel.next_item()
            if item[0] == _END:
                self.cpu_seconds += item[1]
                self.peak_rss_kb.append(item[2])

    def close(self) -> None:
        """Stop every worker still running and wait for all of them; close the file read here, if any."""
        self._local.close()
        for channel in self._channels:
            channel.close()


# -- the worker process ---------------------------------------------------------------------------------------

def _send(stdout: IO[bytes], frame: list[Any]) -> None:
    data = pickle.dumps(frame, protocol=pickle.HIGHEST_PROTOCOL)
    stdout.write(_HEADER.pack(len(data)))
    stdout.write(data)


def serve(stdin: IO[bytes], stdout: IO[bytes]) -> None:
    """The worker's loop: read (keys, content, listing_only) from `stdin`, send read_new_files' items to `stdout` in frames,
    then an ("end", CPU seconds, peak RSS in KB) item. A "read" item is sent as ("read_rows", columns, rows):
    its facts as `usage_writer.fact_values` rows with file id 0 (the writing process knows the id)."""
    import resource
    import time

    from sessdex.catalog.index.usage_writer import fact_values

    keys, content, listing_only = pickle.load(stdin)
    frame: list[Any] = []
    chars = 0
    for item in read_new_files(keys, content, listing_only=listing_only):
        if item[0] == "read":  # the usage facts as rows: that work is done here, not in the writing process
            _kind, columns, facts, pending_facts = item
            item = ("read_rows", columns, [fact_values(0, fact, pending) for found, pending in
                                           ((facts, False), (pending_facts, True)) for fact in found])
        frame.append(item)
        if item[0] == "texts":
            chars += sum(map(len, item[1]))
        if chars >= FRAME_CHARS or len(frame) >= FRAME_ITEMS:
            _send(stdout, frame)
            frame, chars = [], 0
    frame.append((_END, time.process_time(), resource.getrusage(resource.RUSAGE_SELF).ru_maxrss))
    _send(stdout, frame)
    stdout.flush()


_PARENT_ENV = "SESSDEX_PARSE_PARENT"  # the indexer's pid, given to its workers


def _die_with_parent() -> None:
    """Be killed when the indexer dies (SIGTERM, SIGKILL: it cannot stop us then), instead of parsing on for
    minutes with nobody reading. Linux's PR_SET_PDEATHSIG; elsewhere a worker ends at its next write to the
    closed pipe."""
    import signal

    parent = os.environ.get(_PARENT_ENV)
    if not sys.platform.startswith("linux") or parent is None:
        return
    import ctypes

    pr_set_pdeathsig = 1
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None, use_errno=True).prctl(pr_set_pdeathsig, signal.SIGKILL)
    if str(os.getppid()) != parent:
        os._exit(1)  # the indexer died before the request took effect


def _main() -> None:
    import signal

    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl+C reaches the whole process group: the indexer stops us
    _die_with_parent()
    try:
        serve(sys.stdin.buffer, sys.stdout.buffer)
    except (BrokenPipeError, EOFError):
        os._exit(1)  # the indexer stopped reading (it ended the run or died): nothing to report


if __name__ == "__main__":
    _main()

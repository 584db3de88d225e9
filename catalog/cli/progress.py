"""The progress bar of `sessdex index` (and of the content a first index left for later) on stderr.

One line redrawn in place, `Indexing  [######------]   42%  00:00:07` (elapsed, then the estimated time left),
at most ten times a second; nothing at all when hidden (stderr is not a terminal).

`pass_reporter` is the quieter form for read commands (installed in `sessdex.catalog.index.pass_progress` when
stderr is a terminal): it says nothing for the first PASS_PROGRESS_AFTER_SECONDS, so a pass that is quick stays
silent, then one line `sessdex: Reading new session files 1,234 of 10,000 (12%), about 8 s left`, which is
erased when the pass ends, before the answer is printed.
"""

from __future__ import annotations

import contextlib
import os
import sys
import threading
import time
from collections.abc import Callable, Iterator
from types import TracebackType

WIDTH = 30
REDRAW_SECONDS = 0.1
# A read command's pass shows progress once it has run this long ($SESSDEX_PROGRESS_AFTER overrides it).
PASS_PROGRESS_AFTER_SECONDS = 1.0


def _clock(seconds: float) -> str:
    seconds = int(seconds)
    return f"{seconds // 3600:02d}:{seconds // 60 % 60:02d}:{seconds % 60:02d}"


class ProgressBar:
    """`with ProgressBar(length, label) as bar: bar.update(n)`; `pos` is the amount done so far."""

    def __init__(self, length: int, label: str, *, hidden: bool = False) -> None:
        self.length = max(length, 1)
        self.label = label
        self.hidden = hidden
        self.pos = 0
        self._started = time.monotonic()
        self._drawn = 0.0

    def __enter__(self) -> ProgressBar:
        self._draw()
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 traceback: TracebackType | None) -> None:
        self._draw()
        if not self.hidden:
            sys.stderr.write("\n")
            sys.stderr.flush()

    def update(self, amount: int) -> None:
        """`amount` more done; the line is redrawn when the last drawing is old enough."""
        self.pos = min(self.pos + amount, self.length)
        if time.monotonic() - self._drawn >= REDRAW_SECONDS:
            self._draw()

    def _draw(self) -> None:
        if self.hidden:
            return
        self._drawn = now = time.monotonic()
        done = self.pos / self.length
        filled = int(done * WIDTH)
        elapsed = now - self._started
        left = f"  eta {_clock(elapsed / done - elapsed)}" if 0 < done < 1 else ""
        sys.stderr.write(f"\r{self.label}  [{'#' * filled}{'-' * (WIDTH - filled)}]  {done:4.0%}  "
                         f"{_clock(elapsed)}{left}\x1b[K")
        sys.stderr.flush()


def _pass_delay() -> float:
    try:
        return float(os.environ.get("SESSDEX_PROGRESS_AFTER", PASS_PROGRESS_AFTER_SECONDS))
    except ValueError:
        return PASS_PROGRESS_AFTER_SECONDS


@contextlib.contextmanager
def pass_reporter(what: str, total: int) -> Iterator[Callable[[int], None]]:
    """Progress of a pass over `total` items on stderr (a terminal), shown once the pass runs longer than the delay."""
    main = threading.main_thread()
    started = time.monotonic()
    show_after = started + _pass_delay()
    done = 0
    drawn_at = 0.0

    def advance(amount: int) -> None:
        nonlocal done, drawn_at
        done = min(done + amount, total)
        now = time.monotonic()
        if now < show_after or now - drawn_at < REDRAW_SECONDS or threading.current_thread() is not main:
            return  # a pass on another thread may run under a full-screen view (the picker): never drawn over it
        drawn_at = now
        elapsed = now - started
        left = f", about {elapsed / done * (total - done):.0f} s left" if 0 < done < total else ""
        sys.stderr.write(f"\rsessdex: {what} {done:,} of {total:,} ({100 * done // total}%){left}\x1b[K")
        sys.stderr.flush()

    try:
        yield advance
    finally:
        if drawn_at:
            sys.stderr.write("\r\x1b[K")  # the answer follows on a clean line
            sys.stderr.flush()

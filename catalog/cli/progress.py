"""The progress bar of `sessdex index` (and of the content a first index left for later) on stderr.

One line redrawn in place, `Indexing  [######------]   42%  00:00:07` (elapsed, then the estimated time left),
at most ten times a second; nothing at all when hidden (stderr is not a terminal).
"""

from __future__ import annotations

import sys
import time
from types import TracebackType

WIDTH = 30
REDRAW_SECONDS = 0.1


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

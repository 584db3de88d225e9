"""Progress of the indexing a command did not ask for: a read command's pass over an incomplete catalog.

`sessdex index` draws its own bar. A read command (`list --all` on an empty catalog, `recent` after many new
sessions) indexes what it finds missing before it answers, which can take seconds; the CLI installs a reporter
here (`install`) when stderr is a terminal, and `Indexer.index_paths` reports through it whenever its caller
passed no progress callback of its own. Without a reporter (a library caller, stderr not a terminal, the
watcher in the background) nothing is reported.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator

# reporter(what, total) -> a context whose value is advance(done): `done` more of `total` are finished.
Reporter = Callable[[str, int], contextlib.AbstractContextManager[Callable[[int], None]]]

_reporter: Reporter | None = None


def install(reporter: Reporter | None) -> None:
    """Report unrequested indexing passes through `reporter` from now on (None: report nothing)."""
    global _reporter
    _reporter = reporter


@contextlib.contextmanager
def reporting(what: str, total: int) -> Iterator[Callable[[int], None] | None]:
    """The installed reporter's advance function for a pass over `total` items, or None without one."""
    if _reporter is None or total <= 0:
        yield None
        return
    with _reporter(what, total) as advance:
        yield advance

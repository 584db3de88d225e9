"""The sqlite3 module sessdex reads and writes its databases through: its C part, `_sqlite3`, when there is one.

`import sqlite3` runs sqlite3/dbapi2.py, which imports the pure-Python datetime (see `sessdex.core.datetimes`) and
collections.abc to register the default date adapters and converters: about a tenth of `python -c pass` on every
start of the hot commands (issue 12). sessdex binds and reads only text, numbers and bytes, never dates, so it needs
none of that: connections, rows and exceptions are the same objects as `sqlite3`'s (dbapi2 re-exports them from
`_sqlite3`).

`_sqlite3` itself, when it loads, imports functools only to take `functools.lru_cache`, which wraps each
connection's statement cache. functools imports collections, operator, reprlib, keyword and types: another quarter
of `python -c pass`. When nothing has loaded functools yet (a hot command's single thread), `_sqlite3` is handed a
`lru_cache` built on the same C cache functools uses (`_functools._lru_cache_wrapper`), through a stand-in module that
is removed again right after, so a later `import functools` loads the real one."""

from __future__ import annotations

import sys

TYPE_CHECKING = False
if TYPE_CHECKING:
    import sqlite3
    from collections.abc import Callable


def _statement_cache(maxsize: int | None = 128, typed: bool = False) -> Callable[[Callable[..., object]], object]:
    """What `_sqlite3` calls `functools.lru_cache(maxsize)(connection)` with: the same C cache, without functools."""
    import _functools  # type: ignore[import-not-found]  # (no stub: the C half of functools)

    def wrap(user_function: Callable[..., object]) -> object:
        return _functools._lru_cache_wrapper(user_function, maxsize, typed, tuple)

    return wrap


def _import_sqlite3_c_module() -> object:
    """`_sqlite3`, loaded without functools when functools is not loaded yet; ImportError when it does not exist."""
    if "_sqlite3" in sys.modules or "functools" in sys.modules or "threading" in sys.modules:
        import _sqlite3
        return _sqlite3
    stand_in = type(sys)("functools")
    stand_in.lru_cache = _statement_cache  # type: ignore[attr-defined]
    sys.modules["functools"] = stand_in
    try:
        import _sqlite3
    finally:
        if sys.modules.get("functools") is stand_in:
            del sys.modules["functools"]
    return _sqlite3


if not TYPE_CHECKING:
    try:
        sqlite3 = _import_sqlite3_c_module()
    except ImportError:
        import sqlite3

__all__ = ["sqlite3"]

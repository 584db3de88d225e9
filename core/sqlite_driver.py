"""The sqlite3 module sessdex reads and writes its databases through: its C part, `_sqlite3`, when there is one.

`import sqlite3` runs sqlite3/dbapi2.py, which imports the pure-Python datetime (see `sessdex.core.datetimes`) and
collections.abc to register the default date adapters and converters: about a tenth of `python -c pass` on every
start of the hot commands (issue 12). sessdex binds and reads only text, numbers and bytes, never dates, so it needs
none of that: connections, rows and exceptions are the same objects as `sqlite3`'s (dbapi2 re-exports them from
`_sqlite3`)."""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    import sqlite3
else:
    try:
        import _sqlite3 as sqlite3
    except ImportError:
        import sqlite3

__all__ = ["sqlite3"]

"""The sqlite3 module the catalog reads and writes through: its C part, `_sqlite3`, when there is one.

`import sqlite3` runs sqlite3/dbapi2.py, which imports collections and datetime (pure Python, see
`sessdex.core.datetimes`) to register the default date adapters and converters: nearly as much as loading the
SQLite library itself, on every start of the hot commands (issue 12). The catalog binds and reads only text,
numbers and bytes, never dates, so it needs none of that: connections, rows and exceptions are the same objects
as `sqlite3`'s (dbapi2 re-exports them from `_sqlite3`).
"""

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

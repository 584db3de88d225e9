"""The datetime classes, from datetime's C implementation.

`import datetime` first executes the whole pure-Python implementation in datetime.py (thousands of lines of
class definitions) and only then replaces it with the C module `_datetime`: about a sixth of `python -c pass`
spent on every start of the hot commands (issue 12). The classes are the same objects either way
(`datetime.datetime is _datetime.datetime`); an interpreter without `_datetime` gets them from `datetime`.
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from datetime import UTC, date, datetime, timedelta, timezone
else:
    try:
        from _datetime import UTC, date, datetime, timedelta, timezone
    except ImportError:
        from datetime import UTC, date, datetime, timedelta, timezone

__all__ = ["UTC", "date", "datetime", "timedelta", "timezone"]

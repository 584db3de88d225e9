"""The words of `sessdex usage`: its report kinds and its date range, all a command line needs to be read.

Apart from `sessdex.core.usage` (facts, figures and the file-scan reference) so that `sessdex usage --json`
answered from the catalog's stored rows imports none of that.
"""

from __future__ import annotations

TYPE_CHECKING = False  # typing stays off the hot commands' imports (issue 12)
if TYPE_CHECKING:
    from typing import Literal

    ReportKind = Literal["daily", "weekly", "monthly", "session", "project", "model"]
else:
    ReportKind = str  # the names below import it at run time; the type checker sees the Literal

REPORT_KINDS: tuple[ReportKind, ...] = ("daily", "weekly", "monthly", "session", "project", "model")
PERIOD_KINDS = ("daily", "weekly", "monthly")
# Between the table cells the catalog stores for a report row (sessdex.core.usage_cells): a control character,
# which no cell holds (`sanitize_display_name` makes every control character of a name a space; figures are ASCII).
CELL_SEPARATOR = "\x1f"


class DateRange:
    """`--since` / `--until` as inclusive local days (YYYY-MM-DD); None is open-ended."""

    __slots__ = ("since", "until")

    def __init__(self, since: str | None = None, until: str | None = None) -> None:
        self.since, self.until = since, until

    def contains(self, day: str) -> bool:
        return (self.since is None or day >= self.since) and (self.until is None or day <= self.until)


def parse_day(text: str) -> str:
    """A `--since`/`--until` value (YYYY-MM-DD or YYYYMMDD) as YYYY-MM-DD; ValueError when it is not a date."""
    from sessdex.core.datetimes import date  # only a report with dates needs it

    cleaned = text.strip()
    if len(cleaned) == 8 and cleaned.isdigit():
        cleaned = f"{cleaned[:4]}-{cleaned[4:6]}-{cleaned[6:]}"
    return date.fromisoformat(cleaned).isoformat()

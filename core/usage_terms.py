"""The words of `sessdex usage`: its report kinds and its date range, all a command line needs to be read."""

from __future__ import annotations

from datetime import date

from sessdex.core.values import FrozenValue

TYPE_CHECKING = False  # see the README's start-up budget: typing stays off the prompt line
if TYPE_CHECKING:
    from typing import Literal

    ReportKind = Literal["daily", "weekly", "monthly", "session", "project", "model"]
else:
    ReportKind = str

REPORT_KINDS: tuple[ReportKind, ...] = ("daily", "weekly", "monthly", "session", "project", "model")
PERIOD_KINDS = ("daily", "weekly", "monthly")


class DateRange(FrozenValue):
    """`--since` / `--until` as inclusive local days (YYYY-MM-DD); None is open-ended."""

    __slots__ = ("since", "until")
    since: str | None
    until: str | None

    def __init__(self, since: str | None = None, until: str | None = None) -> None:
        self._set_fields(since, until)

    def contains(self, day: str) -> bool:
        return (self.since is None or day >= self.since) and (self.until is None or day <= self.until)


def parse_day(text: str) -> str:
    """A `--since`/`--until` value (YYYY-MM-DD or YYYYMMDD) as YYYY-MM-DD; ValueError when it is not a date."""
    cleaned = text.strip()
    if len(cleaned) == 8 and cleaned.isdigit():
        cleaned = f"{cleaned[:4]}-{cleaned[4:6]}-{cleaned[6:]}"
    return date.fromisoformat(cleaned).isoformat()

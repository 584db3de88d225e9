"""The one date style of every listing (tables, search, trash, picker): relative under a week, then the ISO date."""

from __future__ import annotations

from datetime import datetime

from sessdex.core.discovery import time_ago

WEEK_MS = 7 * 86_400_000


def short_date(moment_ms: float, now_ms: float) -> str:
    """"just now", "5m ago", "3h ago", "3d ago" under a week, then the local date as YYYY-MM-DD."""
    if now_ms - moment_ms < WEEK_MS:
        return time_ago(moment_ms, now_ms)
    local = datetime.fromtimestamp(moment_ms / 1000)
    # isoformat is strftime("%Y-%m-%d") several times faster (a table has hundreds of dates); strftime writes years
    # before 1000 without the leading zeros.
    return local.date().isoformat() if local.year >= 1000 else local.strftime("%Y-%m-%d")

"""`core.usage.day_keys` (remembered per day, for the indexer's speed) gives what the datetime definition gives."""

from __future__ import annotations

import random
import time
from datetime import UTC, datetime, timedelta

import pytest

from sessdex.core.usage import day_keys

MIN_MS, MAX_MS = -62_135_596_800_000, 253_402_300_800_000  # 0001-01-01 and 10000-01-01, UTC


def by_datetime(ts_ms: int) -> tuple[str, str, str] | None:
    """The definition: UTC day, local day and its Monday of ts_ms / 1000 seconds; None where datetime fails."""
    try:
        seconds = ts_ms / 1000
        local = datetime.fromtimestamp(seconds).date()
        monday = local - timedelta(days=local.weekday())
        return datetime.fromtimestamp(seconds, tz=UTC).date().isoformat(), local.isoformat(), monday.isoformat()
    except (OverflowError, OSError, ValueError):
        return None


def remembered(ts_ms: int) -> tuple[str, str, str] | None:
    try:
        return day_keys(ts_ms)
    except (OverflowError, OSError, ValueError):
        return None


@pytest.mark.parametrize("zone", ["UTC", "Europe/Amsterdam", "America/St_Johns", "Pacific/Kiritimati", "Etc/GMT+12"])
def test_day_keys_agree_with_datetime_in_every_zone_and_at_the_calendar_ends(zone, monkeypatch):
    monkeypatch.setenv("TZ", zone)
    time.tzset()
    try:
        rng = random.Random(zone)
        ends = [ts for base in (MIN_MS, MAX_MS, 0) for ts in range(base - 2 * 86_400_000, base + 2 * 86_400_000,
                                                                       3_599_999)]
        # The same days twice: the second answer comes from what was remembered.
        samples = ends + [rng.randint(MIN_MS - 10**11, MAX_MS + 10**11) for _ in range(1500)] + ends
        for ts_ms in samples:
            assert remembered(ts_ms) == by_datetime(ts_ms), ts_ms
    finally:
        monkeypatch.undo()
        time.tzset()

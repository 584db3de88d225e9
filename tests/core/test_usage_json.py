"""`sessdex.core.usage_json` writes a usage report exactly as orjson (and `json.dumps` but for the spelling of
numbers) writes `UsageReport.to_json`, made terminal-safe as `terminal_json` makes JSON text: the text `--json`
printed before the rows were stored ready, for ordinary and hostile values alike."""

from __future__ import annotations

import json
import random

import orjson
from hypothesis import given
from hypothesis import strategies as st

from sessdex.catalog.tui.terminal_text import terminal_json
from sessdex.core.usage import UsageReport, UsageRow, UsageTotals, session_fields
from sessdex.core.usage_json import float_text, report_bytes, report_json, report_text, stored_row_json

NAMES = ["anthropic/claude-opus-4-1", "p/m\x7f", "é\u2028", "\x1b[31mred", "\x9b2J", "tab\tquote\"back\\slash",
         "", "日本語", "nbsp\u00a0", "\ud800lone"]
NUMBERS = [0, 0.0, -0.0, 1, 2.5, 1e-5, 5e-6, 1.5e-7, 0.0001, 1e16, 1.2345e21, 1e300, 123456789.0,
           9007199254740993, float("inf"), float("nan"), 0.1 + 0.2]


def _totals(pick: random.Random) -> UsageTotals:
    return UsageTotals(*(pick.choice(NUMBERS) for _ in range(5)), pick.randrange(1000), pick.randrange(50))


def _report(pick: random.Random, kind: str) -> UsageReport:
    rows = []
    for _ in range(pick.randrange(0, 6)):
        models = {pick.choice(NAMES): _totals(pick) for _ in range(pick.randrange(0, 4))}
        session = (session_fields(pick.choice(NAMES), pick.choice([None, *NAMES]), pick.choice([None, *NAMES]),
                                  pick.choice([None, *NAMES]) or None) if kind == "session" else None)
        if session is not None and pick.random() < 0.3:
            session["machine"] = pick.choice(NAMES)
        rows.append(UsageRow(pick.choice([*NAMES, None]), _totals(pick), models, session=session))
    return UsageReport(kind, rows, UsageRow("", _totals(pick), {pick.choice(NAMES): _totals(pick)}))


def _json_dumps_with_orjson_numbers(value: object) -> str:
    """`json.dumps(value, ensure_ascii=False, indent=2)` with each float spelled by orjson (it also takes lone
    surrogates, which orjson refuses)."""
    floats: list[float] = []

    def marked(item: object) -> object:
        if isinstance(item, dict):
            return {key: marked(inner) for key, inner in item.items()}
        if isinstance(item, list):
            return [marked(inner) for inner in item]
        if type(item) is float:
            floats.append(item)
            return f"\x00{len(floats) - 1}\x00"
        return item

    text = json.dumps(marked(value), ensure_ascii=False, indent=2)
    for number, item in enumerate(floats):
        text = text.replace(f'"\\u0000{number}\\u0000"', orjson.dumps(item).decode(), 1)
    return text


@given(st.floats() | st.floats(min_value=-1e-4, max_value=1e-4))
def test_a_float_is_spelled_as_orjson_spells_it(value: float) -> None:
    assert float_text(value) == orjson.dumps(value).decode()


def test_the_report_text_is_what_orjson_and_json_dumps_write_made_terminal_safe() -> None:
    pick = random.Random(14)
    for _ in range(300):
        report = _report(pick, pick.choice(["daily", "weekly", "monthly", "session", "project", "model"]))
        for breakdown in (False, True):
            value = report.to_json(breakdown)
            written = report_json(report, breakdown)
            # What --json printed before: json_text with orjson's numbers below 1,000 rows, orjson from there on.
            assert written == terminal_json(_json_dumps_with_orjson_numbers(value))
            try:
                by_orjson = orjson.dumps(value, option=orjson.OPT_INDENT_2).decode()
            except TypeError:  # orjson refuses lone surrogates (the catalog never holds one)
                continue
            assert written == terminal_json(by_orjson)


def test_a_report_joined_from_stored_rows_is_the_report_written_whole() -> None:
    rows = [("", 1.0, 2.0, 3.0, 4.0, 0.5, 3, 2, None), ("a/b", 1.0, 2.0, 3.0, 4.0, 0.25, 1, 1, None),
            ("c\x1b/d", 0.0, 0.0, 0.0, 0.0, 0.25, 2, 1, None)]
    texts = [stored_row_json(kind, "2026-01-05", rows, None)[0] for kind in ("daily", "daily")]
    total, label = stored_row_json("total", "", rows, None)
    assert label == ""
    whole = report_text("daily", texts, total)
    assert report_bytes("daily", [text.encode() for text in texts], total.encode()) == whole.encode()
    report = UsageReport("daily", [UsageRow("2026-01-05", UsageTotals(1.0, 2.0, 3.0, 4.0, 0.5, 3, 2),
                                            {"a/b": UsageTotals(), "c\x1b/d": UsageTotals()})] * 2,
                         UsageRow("", UsageTotals(1.0, 2.0, 3.0, 4.0, 0.5, 3, 2), {"a/b": UsageTotals(),
                                                                                  "c\x1b/d": UsageTotals()}))
    assert whole == report_json(report, False)
    assert report_bytes("daily", [], total.encode()).decode() == report_json(UsageReport("daily", [], report.totals),
                                                                           False)
    session = ("", 1.0, 2.0, 3.0, 4.0, 0.5, 3, 1, 7)
    text, label = stored_row_json("session", "7", [session], (7, "id\x9b", "/p", None, "title", "first"))
    assert label == "id\x9b" and '"session": "id\\u009b"' in text and '"cwd": ""' in text

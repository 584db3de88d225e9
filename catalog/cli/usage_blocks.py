"""`sessdex usage blocks` and `sessdex usage --line`: the 5-hour billing blocks of every project's sessions, read
from the session source (`SessionSource.timed_usage_facts`: the catalog, of every machine with `--machines all`,
or the files with `--catalog off`), as a table, as JSON, or as one short line for a shell prompt or an agent's
status line (today's cost and tokens, and the active block).

A billing window is the account's, not a project's: both count every project's sessions."""

from __future__ import annotations

import time
from collections.abc import Sequence

from sessdex.catalog.cli.output import echo, iso_utc_from_seconds, selected_fields
from sessdex.catalog.queries.usage import MINUTE_MS, UsageBlock, usage_blocks
from sessdex.catalog.tui.figures import format_cost, format_tokens
from sessdex.core.usage import UsageTotals, add_fact, model_names
from sessdex.core.usage_terms import DateRange

TYPE_CHECKING = False  # see the README's start-up budget
if TYPE_CHECKING:
    from typing import Any

    from sessdex.catalog.queries.source import SessionSource

# Before the start of today, a block may still be active (it started at most five hours ago, floored to the hour).
LINE_SPAN_MS = 6 * 3600 * 1000


def local_midnight_ms(day: str) -> int:
    """Epoch ms of a local day's (YYYY-MM-DD) first moment."""
    year, month, mday = (int(part) for part in day.split("-"))
    return int(time.mktime((year, month, mday, 0, 0, 0, 0, 0, -1)) * 1000)


def local_day(ms: int) -> str:
    return time.strftime("%Y-%m-%d", time.localtime(ms // 1000))


def blocks_in(source: SessionSource, days: DateRange, now_ms: int) -> list[UsageBlock]:
    """The blocks whose first message falls on a local day of `days`, oldest first."""
    since_ms = None if days.since is None else local_midnight_ms(days.since)
    blocks = usage_blocks(source.timed_usage_facts(since_ms), now_ms)
    return [block for block in blocks if days.contains(local_day(block.first_ms))]


def block_json(block: UsageBlock, now_ms: int) -> dict[str, Any]:
    """A block as `sessdex usage blocks --json` prints it (the fields of the other reports' rows where they
    apply; models named as there, by `model_name`)."""
    value: dict[str, Any] = {"start": iso_utc_from_seconds(block.start_ms / 1000),
                             "end": iso_utc_from_seconds(block.end_ms / 1000), "active": block.active}
    value.update(block.totals.to_json())
    value["models"] = model_names(block.models)
    projection = block.projection(now_ms)
    value["projection"] = None if projection is None else {
        "totalTokens": round(projection.total_tokens), "cost": projection.cost,
        "remainingMinutes": round(projection.remaining_minutes, 1),
        "tokensPerMinute": projection.tokens_per_minute, "costPerHour": projection.cost_per_hour}
    return value


def run_blocks(source: SessionSource, days: DateRange, *, as_json: bool, json_fields: Sequence[str], tsv: bool,
               width: int | None) -> int:
    """`sessdex usage blocks`: a line per block, the active one with its projection."""
    now_ms = int(time.time() * 1000)
    blocks = blocks_in(source, days, now_ms)
    from sessdex.catalog.cli.usage_output import warn_if_incomplete

    warn_if_incomplete(source.content_index_progress(text=False))
    if as_json:
        from sessdex.catalog.cli.usage_output import print_json_text, report_text

        rows = [block_json(block, now_ms) for block in blocks]
        print_json_text(report_text({"report": "blocks", "rows": selected_fields(rows, json_fields) if json_fields
                                     else rows}))
        return 0
    if not blocks:
        echo("No usage found", err=True)
        return 0
    echo(blocks_table(blocks, now_ms, width, tsv=tsv))
    return 0


def local_minute(ms: int) -> str:
    return time.strftime("%Y-%m-%d %H:%M", time.localtime(ms // 1000))


def duration(ms: float) -> str:
    """A span as `2h 13m` (minutes rounded down)."""
    minutes = max(0, int(ms // MINUTE_MS))
    hours, minutes = divmod(minutes, 60)
    return f"{hours}h {minutes:02d}m" if hours else f"{minutes}m"


def block_state(block: UsageBlock, now_ms: int) -> str:
    """What the TIME cell says of a block: how long it has left when active, else how long its messages spanned."""
    if block.active:
        return f"{duration(block.end_ms - now_ms)} left"
    return duration(block.last_ms - block.first_ms)


def blocks_table(blocks: Sequence[UsageBlock], now_ms: int, width: int | None, *, tsv: bool = False) -> str:
    """`sessdex usage blocks`: a line per 5-hour block (its local start, how long it has left when active or
    how long its messages spanned, its models and figures), the active block's projection under the table; laid
    out as the other reports' tables (`usage_table`, which `--line` does not need)."""
    from sessdex.catalog.cli.output import Column, render_table
    from sessdex.catalog.cli.usage_table import FIGURE_DROPS, FIGURE_HEADERS, figure_cells, model_cells

    cells, models_line = model_cells([tuple(sorted(block.models)) for block in blocks], tsv)
    columns = [Column("BLOCK START"), Column("TIME")]
    if cells is not None:
        columns.append(Column("MODELS", flexible=True, drop=2, min_width=12))
    columns += [Column(header, align_right=True, drop=drop) for header, drop in zip(FIGURE_HEADERS, FIGURE_DROPS)]
    lines = []
    for number, block in enumerate(blocks):
        line = [local_minute(block.start_ms), block_state(block, now_ms)]
        if cells is not None:
            line.append(cells[number])
        lines.append(line + figure_cells(block.totals))
    table = render_table(columns, lines, width, tsv=tsv)
    if models_line is not None:
        table += f"\n{models_line}"
    active = blocks[-1] if blocks[-1].active else None
    projection = None if active is None else active.projection(now_ms)
    if active is not None and projection is not None and not tsv:
        table += (f"\nactive block: {format_cost(active.totals.cost)} so far, projected {format_cost(projection.cost)}"
                  f" and {format_tokens(projection.total_tokens)} tokens by {local_minute(active.end_ms)[11:]}"
                  f" ({format_cost(projection.cost_per_hour)}/h, {duration(active.end_ms - now_ms)} left)")
    return table


def usage_line(source: SessionSource, now_ms: int) -> str:
    """`sessdex usage --line`: today's cost and tokens, and the active block's cost, time left and projection."""
    today = local_day(now_ms)
    since_ms = min(local_midnight_ms(today), now_ms - LINE_SPAN_MS)
    facts = source.timed_usage_facts(since_ms)
    totals = UsageTotals()
    for fact, _path in facts:
        if fact.day_local == today:
            add_fact(totals, fact)
    line = f"today {format_cost(totals.cost)} {format_tokens(totals.total_tokens)} tokens"
    blocks = usage_blocks(facts, now_ms)
    block = blocks[-1] if blocks and blocks[-1].active else None
    if block is None:
        return f"{line} · no active block"
    line += f" · block {format_cost(block.totals.cost)} {duration(block.end_ms - now_ms)} left"
    projection = block.projection(now_ms)
    if projection is not None:
        line += f" → {format_cost(projection.cost)}"
    return line


def run_line(source: SessionSource) -> int:
    echo(usage_line(source, int(time.time() * 1000)))
    return 0

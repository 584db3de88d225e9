"""The cells of `sessdex usage`'s table (without --json), as the catalog stores them ready for each report row.

A report row's line is its label, the names of its models and six figures (input, output, cache read, cache
write, total tokens, cost), formatted as `sessdex.catalog.cli.usage_table` shows them. The catalog keeps each
report row's cells in `usage_totals.cells` (rendered by `stored_row_cells` when the indexer changes the row),
joined by CELL_SEPARATOR (sessdex.core.usage_terms), so that a table of 10,000 sessions formats no figure when it
is printed. Two parts of a label depend on the reader, so they are left out: a session's id prefix (its length
depends on every row shown; the id is the row's `label`) and a project's `~` (the reader's home; the key is kept
in full, sanitized).
"""

from __future__ import annotations

from sessdex.core.discovery import format_cost, format_tokens, sanitize_display_name
from sessdex.core.usage_terms import CELL_SEPARATOR

TYPE_CHECKING = False  # typing stays off the hot commands' imports (issue 12)
if TYPE_CHECKING:
    from collections.abc import Iterable, Sequence
    from typing import Any

NO_CWD = "(no cwd)"  # a project row whose sessions have no cwd


def models_cell(names: Iterable[str]) -> str:
    """The MODELS cell: the models' names without their provider, sorted by full name, one line each."""
    return ", ".join([sanitize_display_name(name.split("/", 1)[-1]) for name in sorted(names)])


def figure_cells(input_tokens: float, output_tokens: float, cache_read: float, cache_write: float,
                 cost: float) -> list[str]:
    """The INPUT, OUTPUT, CACHE READ, CACHE WRITE, TOTAL and COST cells of a row's figures."""
    return [format_tokens(input_tokens), format_tokens(output_tokens), format_tokens(cache_read),
            format_tokens(cache_write), format_tokens(input_tokens + output_tokens + cache_read + cache_write),
            format_cost(cost)]


def session_name_cell(title: str | None, first_message: str | None) -> str:
    """What follows a session's id prefix in its label: a space and its title (else the start of its first
    message), or nothing when it has neither."""
    name = title or first_message
    return f" {sanitize_display_name(name)}" if name else ""


def stored_row_cells(kind: str, key: str, rows: Sequence[Sequence[Any]], names: Sequence[Any] | None) -> str:
    """The cells of one report row as the catalog stores them (usage_totals.cells), joined by CELL_SEPARATOR.

    `rows` and `names` are `sessdex.core.usage_json.stored_row_json`'s (the row over all models first, with its
    7 figures, then one row per model; a session's file row). The cells are, by kind:
    daily/weekly/monthly/project: label, models, figures; model: label, figures; session: the name after the id
    prefix (`session_name_cell`), models, figures; total (the TOTAL line): models, figures.
    """
    input_tokens, output_tokens, cache_read, cache_write, cost = [0 + value for value in rows[0][1:6]]
    cells = figure_cells(input_tokens, output_tokens, cache_read, cache_write, cost)
    models = models_cell([row[0] for row in rows[1:]])
    if kind == "model":
        cells.insert(0, sanitize_display_name(key))
    elif kind == "session":
        from sessdex.core.usage import FIRST_MESSAGE_CHARS  # (the indexer's: a table never renders a row)

        title, first_message = (names[4], names[5]) if names else (None, None)
        cells[:0] = [session_name_cell(title, first_message[:FIRST_MESSAGE_CHARS] if first_message else None),
                     models]
    elif kind == "total":
        cells.insert(0, models)
    else:
        cells[:0] = [sanitize_display_name(key or NO_CWD if kind == "project" else key), models]
    return CELL_SEPARATOR.join(cells)

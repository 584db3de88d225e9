"""The text of `sessdex usage --json`, written piece by piece: rows, totals and the whole report.

The text is exactly `json.dumps(report.to_json(breakdown), indent=2, ensure_ascii=False)` with numbers spelled
as orjson spells them, made safe for a terminal (DEL, C1 controls and lone surrogates inside strings written
as \\uXXXX escapes, as `sessdex.catalog.tui.terminal_text.terminal_json` writes them; json escapes the other
control characters itself). Each string is made safe once, where it is written, so the report itself needs no
pass over its (possibly megabytes of) text.

The catalog keeps every report row's text ready (`usage_totals.json`, rendered by `stored_row_json` when the
indexer changes the row), so a report over 10,000 sessions joins stored texts instead of formatting each
number again (`report_bytes`). Model names pass between the functions as `names_text`: the names' JSON
strings joined by newlines (a JSON string never holds a raw newline), indented where printed (`names_list`).
"""

from __future__ import annotations

from sessdex.core.usage_terms import PERIOD_KINDS

TYPE_CHECKING = False  # typing stays off the hot commands' imports (issue 12)
if TYPE_CHECKING:
    from _json import encode_basestring as _quoted
    from collections.abc import Iterable, Sequence
    from typing import Any

    from sessdex.core.usage import UsageReport, UsageTotals
else:
    try:  # the C encoder of the json package, without importing the package (it imports re)
        from _json import encode_basestring as _quoted
    except ImportError:  # an interpreter without the accelerator
        from json.encoder import py_encode_basestring as _quoted

_INFINITY = float("inf")
ROW_PAD = "      "  # a report row's fields (inside "rows": [ {)
TOTALS_PAD = "    "  # the totals' fields (inside "totals": {)


def json_string(text: str | None) -> str:
    """A string (or None) as --json writes it: json's escapes, plus DEL, C1 controls and lone surrogates."""
    if text is None:
        return "null"
    quoted: str = _quoted(text)
    if quoted.isprintable():
        return quoted
    # What a terminal could act on that json leaves as it is: DEL, C1 controls, lone surrogates (rare: a loop).
    return "".join([f"\\u{ord(char):04x}" if "\x7f" <= char <= "\x9f" or "\ud800" <= char <= "\udfff" else char
                    for char in quoted])


def float_text(value: float) -> str:
    """A float as orjson writes it: Python's repr, but 1e-05 is 0.00001, 5e-06 is 5e-6, NaN and infinities null."""
    if value != value or value == _INFINITY or value == -_INFINITY:
        return "null"
    text = float.__repr__(value)
    if value == 0 or not -1e-4 < value < 1e-4:
        return text
    mantissa, _e, exponent = text.partition("e")
    if not exponent:
        return text
    if exponent == "-05":
        sign = "-" if mantissa[0] == "-" else ""
        return f"{sign}0.0000{mantissa.lstrip('-').replace('.', '')}"
    return f"{mantissa}e{int(exponent)}"


def number_text(value: float) -> str:
    """An int or a float as --json writes it."""
    return float_text(value) if type(value) is float else int.__repr__(value)


def tokens_text(value: float) -> str:
    """A token count: a whole float is written as an integer (`UsageTotals.to_json`)."""
    if type(value) is float:
        return int.__repr__(int(value)) if value.is_integer() else float_text(value)
    return int.__repr__(value)


def figures_text(figures: Sequence[Any], pad: str) -> str:
    """The figures' fields (input ... sessions) at indentation `pad`, without a trailing comma.

    `figures` is (input, output, cache read, cache write, cost, messages, sessions).
    """
    input_tokens, output_tokens, cache_read, cache_write, cost, messages, sessions = figures
    total = input_tokens + output_tokens + cache_read + cache_write
    return (f'{pad}"input": {tokens_text(input_tokens)},\n{pad}"output": {tokens_text(output_tokens)},\n'
            f'{pad}"cacheRead": {tokens_text(cache_read)},\n{pad}"cacheWrite": {tokens_text(cache_write)},\n'
            f'{pad}"totalTokens": {tokens_text(total)},\n{pad}"cost": {number_text(cost)},\n'
            f'{pad}"messages": {number_text(messages)},\n{pad}"sessions": {number_text(sessions)}')


def names_text(names: Iterable[str]) -> str:
    """Model names (in the order given) as stored: their JSON strings joined by newlines."""
    return "\n".join([json_string(name) for name in names])


def names_list(names: str, pad: str) -> str:
    """`names_text` as the JSON list printed in a field at indentation `pad`."""
    if not names:
        return "[]"
    inner = "\n" + pad + "  "
    return "[" + inner + names.replace("\n", "," + inner) + "\n" + pad + "]"


def breakdown_text(split: Sequence[tuple[str, Sequence[Any]]], pad: str) -> str:
    """The `breakdown` list (model name, figures), already in its order, in a field at indentation `pad`."""
    if not split:
        return "[]"
    inner = pad + "  "
    fields = inner + "  "
    items = [f'{{\n{fields}"model": {json_string(name)},\n{figures_text(figures, fields)}\n{inner}}}'
             for name, figures in split]
    return "[\n" + inner + (",\n" + inner).join(items) + "\n" + pad + "]"


def body_text(head: str, figures: Sequence[Any], names: str, pad: str,
              split: Sequence[tuple[str, Sequence[Any]]] | None = None) -> str:
    """An object's fields at `pad`: `head` (its key fields, each line ending with a comma, or ""), the figures,
    the models (`names_text`) and, given `split`, the breakdown; the braces are the caller's."""
    text = f'{head}{figures_text(figures, pad)},\n{pad}"models": {names_list(names, pad)}'
    if split is not None:
        text += f',\n{pad}"breakdown": {breakdown_text(split, pad)}'
    return text


def key_field(kind: str, key: str | None) -> str:
    """A row's key field line (`"period": "2026-01-05",` ...) at the rows' indentation."""
    return f'{ROW_PAD}"{"period" if kind in PERIOD_KINDS else kind}": {json_string(key)},\n'


def session_fields_text(session: dict[str, Any]) -> str:
    """The session report's fields after the key (path, cwd, title, firstMessage[, machine])."""
    return "".join([f'{ROW_PAD}{json_string(name)}: {json_string(value)},\n' for name, value in session.items()])


def row_text(head: str, figures: Sequence[Any], names: str,
             split: Sequence[tuple[str, Sequence[Any]]] | None = None) -> str:
    """A report row's object as it stands in the `rows` list (its fields at ROW_PAD)."""
    return "{\n" + body_text(head, figures, names, ROW_PAD, split) + "\n    }"


def totals_text(figures: Sequence[Any], names: str, split: Sequence[tuple[str, Sequence[Any]]] | None = None) -> str:
    """The `totals` object as it stands in the report."""
    return "{\n" + body_text("", figures, names, TOTALS_PAD, split) + "\n  }"


def report_text(kind: str, rows: Sequence[str], totals: str) -> str:
    """The whole report from its rows' texts (`row_text`) and its totals' (`totals_text`)."""
    listed = "[\n    " + ",\n    ".join(rows) + "\n  ]" if rows else "[]"
    return f'{{\n  "report": {json_string(kind)},\n  "rows": {listed},\n  "totals": {totals}\n}}'


def report_bytes(kind: str, rows: Sequence[bytes], totals: bytes) -> bytes:
    """`report_text` over UTF-8 encoded texts (the catalog's stored rows, read as bytes), encoded."""
    head = f'{{\n  "report": {json_string(kind)},\n  "rows": '.encode()
    if not rows:
        return b"".join([head, b'[],\n  "totals": ', totals, b"\n}"])
    return b"".join([head, b"[\n    ", b",\n    ".join(rows), b'\n  ],\n  "totals": ', totals, b"\n}"])


def _figures(totals: UsageTotals) -> tuple[Any, ...]:
    return (totals.input, totals.output, totals.cache_read, totals.cache_write, totals.cost, totals.messages,
            totals.sessions)


def _split(models: dict[str, UsageTotals]) -> list[tuple[str, tuple[Any, ...]]]:
    return [(name, _figures(figures)) for name, figures in sorted(models.items(), key=_by_cost)]


def _by_cost(item: tuple[str, UsageTotals]) -> tuple[float, str]:
    return -item[1].cost, item[0]


def report_json(report: UsageReport, breakdown: bool) -> str:
    """A whole `UsageReport` as --json prints it (`UsageReport.to_json`'s value, written as described above)."""
    kind = report.kind
    rows = []
    for row in report.rows:
        head = key_field(kind, row.key)
        if row.session is not None:
            head += session_fields_text(row.session)
        rows.append(row_text(head, _figures(row.totals), names_text(sorted(row.models)),
                             _split(row.models) if breakdown else None))
    totals = report.totals
    return report_text(kind, rows, totals_text(_figures(totals.totals), names_text(sorted(totals.models)),
                                               _split(totals.models) if breakdown else None))


# -- the texts the catalog stores (usage_totals.json) -------------------------------------------------------

def _zeroed(values: Sequence[Any]) -> tuple[Any, ...]:
    # As a report adds them to zeroed totals (0 + -0.0 is 0.0): the stored text is the computed one.
    return tuple([0 + value for value in values])


def stored_row_json(kind: str, key: str, rows: Sequence[Sequence[Any]],
                    names: Sequence[Any] | None) -> tuple[str, str | None]:
    """(text, label) of one report row as the catalog stores it in usage_totals: the row's object (the totals'
    for kind "total"), without a breakdown, and its order among rows of equal cost (a session's id, else the key).

    `rows` are the row's usage_totals rows (model, the 7 figures, ...): its row over all models first, then one
    per model (in any order; only their names are read); `names` is a session's file row (id, session id, path,
    cwd, title, start of the first message).
    """
    figures = _zeroed(rows[0][1:8])
    models = sorted([row[0] for row in rows[1:]])
    if kind == "total":
        return totals_text(figures, names_text(models)), key
    if kind == "model":  # a model's row is its own only model
        return row_text(key_field(kind, key), figures, names_text([key])), key
    if kind == "session":
        from sessdex.core.usage import session_fields  # (the indexer's: `--json` never renders a session row)

        _file_id, session_id, path, cwd, title, first_message = names or (None, None, "", None, None, None)
        head = key_field(kind, session_id) + session_fields_text(session_fields(path, cwd, title, first_message))
        return row_text(head, figures, names_text(models)), session_id
    return row_text(key_field(kind, key), figures, names_text(models)), key

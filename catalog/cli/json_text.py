"""JSON text for `--json` output, exactly as `json.dumps(value, ensure_ascii=False, indent=2)` writes it.

Every `--json` of the hot commands prints through here: importing `json` costs a command more than the rest
of its start-up (it imports `re`), and orjson more still (it imports dataclasses, inspect, uuid, ...). Strings
are escaped by the C encoder the `json` package itself uses (`_json.encode_basestring`), and runs of items
that hold no container are written by its C encoder in one call.
"""

from __future__ import annotations

TYPE_CHECKING = False  # typing stays off the hot commands' imports (issue 12)
if TYPE_CHECKING:
    from _json import encode_basestring as _quoted
    from _json import make_encoder as _make_encoder
    from typing import Any
else:
    try:  # the C encoder of the json package, without importing the package (it imports re)
        from _json import encode_basestring as _quoted
        from _json import make_encoder as _make_encoder
    except ImportError:  # an interpreter without the accelerator: the json package's own Python code (no encoder)
        from json.encoder import c_make_encoder as _make_encoder
        from json.encoder import py_encode_basestring as _quoted

INDENT = "  "
_INFINITY = float("inf")


def json_text(value: Any) -> str:
    """`value` (dicts, lists, tuples, strings, numbers, booleans, None) as indented JSON text."""
    return _text(value, "\n")


_SCALARS = frozenset((str, int, float, bool, type(None)))
_RUN_ENCODERS: dict[str, Any] = {}


def _not_serializable(value: Any) -> Any:
    raise TypeError(f"Object of type {type(value).__name__} is not JSON serializable")


def _run_text(run: dict[Any, Any] | list[Any], separator: str) -> str:
    """Items holding no container, written by the C encoder (one call for a row's figures) and joined by
    `separator`, without the brackets."""
    if _make_encoder is None:
        items = run.items() if isinstance(run, dict) else None
        return separator.join([f"{_key(key)}: {_scalar(item)}" for key, item in items] if items is not None
                              else [str(_scalar(item)) for item in run])
    encode = _RUN_ENCODERS.get(separator)
    if encode is None:
        encode = _RUN_ENCODERS[separator] = _make_encoder(None, _not_serializable, _quoted, None, ": ", separator,
                                                          False, False, True)
    return "".join(encode(run, 0))[1:-1]


def _number(value: float) -> str:
    if value != value:
        return "NaN"
    if value == _INFINITY:
        return "Infinity"
    if value == -_INFINITY:
        return "-Infinity"
    return float.__repr__(value)


def _scalar(value: Any) -> str | None:
    """The JSON text of a string, number, boolean or None; None for anything else."""
    if isinstance(value, str):
        return _quoted(value)
    if value is None:
        return "null"
    if value is True:
        return "true"
    if value is False:
        return "false"
    if isinstance(value, int):
        return int.__repr__(value)
    if isinstance(value, float):
        return _number(value)
    return None


def _key(key: Any) -> str:
    """A dict key as `json` writes it: strings as they are, numbers, booleans and None as their JSON text."""
    if isinstance(key, str):
        return _quoted(key)
    text = _scalar(key)
    if text is None:
        raise TypeError(f"keys must be str, int, float, bool or None, not {type(key).__name__}")
    return f'"{text}"'


def _text(value: Any, newline: str) -> str:
    """`value`'s text; `newline` is a line break and the indentation of its level.

    Consecutive items that hold no container go to the C encoder together (`_run_text`): most of any output
    (a session report has a row of figures per session) is written in C.
    """
    kind = type(value)
    if kind in _SCALARS:
        return _scalar(value)  # type: ignore[return-value]  # a scalar always has a text
    inner = newline + INDENT
    separator = "," + inner
    pieces: list[str] = []
    if kind is dict or (kind is not list and kind is not tuple and isinstance(value, dict)):
        if not value:
            return "{}"
        run: dict[Any, Any] = {}
        for key, item in value.items():
            if type(item) in _SCALARS:
                run[key] = item
                continue
            if run:
                pieces.append(_run_text(run, separator))
                run = {}
            pieces.append(f"{_key(key)}: {_text(item, inner)}")
        if run:
            pieces.append(_run_text(run, separator))
        return "{" + inner + separator.join(pieces) + newline + "}"
    if kind is list or kind is tuple or isinstance(value, (list, tuple)):
        if not value:
            return "[]"
        items: list[Any] = []
        for item in value:
            if type(item) in _SCALARS:
                items.append(item)
                continue
            if items:
                pieces.append(_run_text(items, separator))
                items = []
            pieces.append(_text(item, inner))
        if items:
            pieces.append(_run_text(items, separator))
        return "[" + inner + separator.join(pieces) + newline + "]"
    text = _scalar(value)
    if text is None:
        _not_serializable(value)
    return text  # type: ignore[return-value]

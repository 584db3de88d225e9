"""Text from sessions, the catalog or the prompt history made safe for a terminal.

A title, cwd or prompt is written by whoever wrote the session file; sent raw, `ESC ] 52` would set the
clipboard, `ESC ] 0` the window title, `ESC [2J` clear the screen. Every string sessdex shows goes through
one of these functions at the single place its kind of output is written: the CLI's line writer
(`sessdex.catalog.cli.output.echo`), the picker's row renderer and the viewer.
"""

from __future__ import annotations

import re

REPLACEMENT = "\ufffd"
# C0 controls but tab and newline, DEL, C1 controls, and lone surrogates (undecodable bytes or damaged text).
_UNSAFE = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\ud800-\udfff]")
_UNSAFE_OR_BREAK = re.compile(r"[\x00-\x1f\x7f-\x9f\ud800-\udfff\u2028\u2029]")
_LINE_BREAKS = frozenset("\t\n\r\x0b\x0c\x85\u2028\u2029")
# Inside JSON text: what json/orjson leave raw that a terminal would still act on.
_UNSAFE_IN_JSON = re.compile(r"[\x7f-\x9f\ud800-\udfff]")
# Private-use characters a writer may put around highlighted text; `markup` turns them into bold on/off.
HIGHLIGHT_START, HIGHLIGHT_END = "\ue000", "\ue001"
# The same for an id's unique prefix in a listing table (bold colour).
EMPHASIS_START, EMPHASIS_END = "\ue002", "\ue003"


def _replace_line_break_with_space(match: re.Match[str]) -> str:
    return " " if match.group() in _LINE_BREAKS else REPLACEMENT


def terminal_text(text: str, *, keep_newlines: bool = False) -> str:
    """`text` with every control character (C0 but tab/newline, DEL, C1) and lone surrogate shown as U+FFFD.

    Without `keep_newlines` it is one line: tabs and line breaks become spaces. With it, newlines
    stay (a table is several lines) and tabs too.
    """
    if keep_newlines:
        # The common case, checked at C speed: ASCII whose only non-printables are newlines and tabs.
        if text.isascii() and text.replace("\n", " ").replace("\t", " ").isprintable():
            return text
        return _UNSAFE.sub(REPLACEMENT, text)
    if text.isprintable():
        return text
    return _UNSAFE_OR_BREAK.sub(_replace_line_break_with_space, text)


def terminal_json(text: str) -> str:
    """JSON text safe to print: DEL, C1 controls and lone surrogates inside strings written as \\uXXXX escapes.

    The result is the same JSON value (json and orjson escape the other control characters themselves).
    """
    if text.isascii() and "\x7f" not in text:
        return text
    return _UNSAFE_IN_JSON.sub(lambda match: f"\\u{ord(match.group()):04x}", text)

"""Text from sessions, the catalog or the prompt history made safe for a terminal.

A title, cwd or prompt is written by whoever wrote the session file; sent raw, `ESC ] 52` would set the
clipboard, `ESC ] 0` the window title, `ESC [2J` clear the screen. Every string sessdex shows goes through
one of these functions at the single place its kind of output is written: the CLI's line writer
(`sessdex.catalog.cli.output.echo`), the picker's row renderer and the viewer.
"""

from __future__ import annotations

TYPE_CHECKING = False  # typing stays off the hot commands' imports
if TYPE_CHECKING:
    from typing import Any

REPLACEMENT = "\ufffd"
# Unsafe: C0 controls, DEL, C1 controls, and lone surrogates (undecodable bytes or damaged text). Replaced with
# str.translate tables built on first use (no `re`: every hot command prints through here).
_C0, _C1, _SURROGATES = range(0x20), range(0x7f, 0xa0), range(0xd800, 0xe000)
_LINE_BREAKS = "\t\n\r\x0b\x0c\x85\u2028\u2029"
# Bidirectional controls reorder what follows them (U+202E shows "txt.exe" as "exe.txt"): shown as U+FFFD, so a
# title cannot display as something else. Other invisible format characters (zero-width space, word joiner,
# byte-order mark, invisible operators, interlinear annotation) are dropped. Zero-width (non-)joiners and tag
# characters stay: emoji sequences and several scripts need them.
_BIDI_CONTROLS = (0x061C, 0x200E, 0x200F, *range(0x202A, 0x202F), *range(0x2066, 0x206A))
_INVISIBLE = (0x180E, 0x200B, *range(0x2060, 0x2065), *range(0x206A, 0x2070), 0xFEFF, *range(0xFFF9, 0xFFFC))
_TABLES: dict[str, dict[int, str]] = {}
# Per UTF-8 lead byte of the characters terminal_json escapes, their other bytes; and each one's search, once made.
_JSON_UNSAFE_BYTES: list[tuple[bytes, list[bytes]]] = []
_JSON_UNSAFE_PATTERNS: dict[bytes, Any] = {}
# Private-use characters a writer may put around highlighted text; `markup` turns them into bold on/off.
HIGHLIGHT_START, HIGHLIGHT_END = "\ue000", "\ue001"
# The same for an id's unique prefix in a listing table (bold colour).
EMPHASIS_START, EMPHASIS_END = "\ue002", "\ue003"


def _table(kind: str) -> dict[int, str]:
    """The translation of unsafe characters for `kind`: "lines" (tab and newline kept), "line" (line breaks become
    spaces), "json" (written as \\uXXXX escapes)."""
    table = _TABLES.get(kind)
    if table is None:
        if kind == "json":  # json/orjson escape the C0 controls themselves
            table = {code: f"\\u{code:04x}" for code in (*_C1, *_SURROGATES, *_BIDI_CONTROLS, *_INVISIBLE)}
        else:
            table = dict.fromkeys((*_C0, *_C1, *_SURROGATES, *_BIDI_CONTROLS), REPLACEMENT)
            table.update(dict.fromkeys(_INVISIBLE, ""))
            if kind == "lines":
                del table[ord("\t")], table[ord("\n")]
            else:
                table.update(dict.fromkeys(map(ord, _LINE_BREAKS), " "))
        _TABLES[kind] = table
    return table


def terminal_text(text: str, *, keep_newlines: bool = False) -> str:
    """`text` with every control character (C0 but tab/newline, DEL, C1), bidirectional control and lone surrogate
    shown as U+FFFD, and other invisible format characters dropped.

    Without `keep_newlines` it is one line: tabs and line breaks become spaces. With it, newlines
    stay (a table is several lines) and tabs too.
    """
    if not keep_newlines:
        return text if text.isprintable() else text.translate(_table("line"))
    # The common case, checked at C speed: text whose only non-printables are newlines and tabs.
    if text.replace("\n", " ").replace("\t", " ").isprintable():
        return text
    # Else line by line: a line that is printable (most) is kept as it is.
    table = _table("lines")
    return "\n".join(line if line.isprintable() else line.translate(table) for line in text.split("\n"))


def terminal_json(text: str) -> str:
    """JSON text safe to print: DEL, C1 controls, bidirectional and invisible format characters and lone
    surrogates inside strings written as \\uXXXX escapes.

    The result is the same JSON value (json and orjson escape the other control characters themselves).
    """
    if text.isascii() and "\x7f" not in text:
        return text
    if text.replace("\n", " ").isprintable():
        return text
    table = _table("json")
    return "\n".join(line if line.isprintable() else line.translate(table) for line in text.split("\n"))


def terminal_json_bytes(data: bytes) -> bytes:
    """UTF-8 JSON text as `terminal_json` makes it, for documents of megabytes (`usage session --json`): the same
    bytes, uncopied, when they hold none of the characters it escapes (looked for in the bytes instead of
    decoding and encoding the whole text: per UTF-8 lead byte of those characters, a search for the lead byte,
    and only where it occurs one for the characters), else `terminal_json` of the text."""
    if data.isascii() and b"\x7f" not in data:
        return data
    if not _JSON_UNSAFE_BYTES:
        tails: dict[bytes, list[bytes]] = {}
        for code in _table("json"):
            if not 0xD800 <= code < 0xE000:  # (lone surrogates cannot be in UTF-8 text)
                encoded = chr(code).encode()
                tails.setdefault(encoded[:1], []).append(encoded[1:])
        _JSON_UNSAFE_BYTES.extend(tails.items())
    if not any(lead in data and _unsafe_after(lead, found).search(data) for lead, found in _JSON_UNSAFE_BYTES):
        return data
    return terminal_json(data.decode()).encode()


def _unsafe_after(lead: bytes, tails: list[bytes]) -> Any:
    """The search for `lead` followed by one of `tails` (compiled on first use: most texts hold few lead bytes)."""
    import re

    pattern = _JSON_UNSAFE_PATTERNS.get(lead)
    if pattern is None:
        pattern = _JSON_UNSAFE_PATTERNS[lead] = re.compile(re.escape(lead) + b"(?:" + b"|".join(map(re.escape, tails))
                                                           + b")")
    return pattern

"""How many terminal columns text takes, and text cut to fit: shared by the tables, the history listing and the picker."""

from __future__ import annotations

import unicodedata

ELLIPSIS = "…"
# Per non-ASCII character seen: its columns minus one (-1 combining, 1 wide): a listing measures the
# same titles several times, and the unicodedata lookups were most of `sessdex list`'s own time.
_EXTRA_COLUMNS: dict[str, int] = {}


def char_width(char: str) -> int:
    """Terminal columns of one character: 0 for combining marks, 2 for wide East Asian ones, else 1."""
    if unicodedata.combining(char):
        return 0
    return 2 if unicodedata.east_asian_width(char) in ("W", "F") else 1


def display_width(text: str) -> int:
    """Terminal columns `text` occupies (wide East Asian characters count twice)."""
    width = len(text)  # every ASCII character is one column: only the others are looked up
    if not text.isascii():
        for char in text:
            if char.isascii():
                continue
            extra = _EXTRA_COLUMNS.get(char)
            if extra is None:
                extra = _EXTRA_COLUMNS[char] = char_width(char) - 1
            width += extra
    return width


def fit(text: str, width: int) -> str:
    """`text` cut to at most `width` columns (ending in `…` when cut) and padded to exactly `width`."""
    if text.isascii() and len(text) > width:
        text = text[:width - 1] + ELLIPSIS
    elif display_width(text) > width:
        kept, used = [], 0
        for char in text:
            columns = char_width(char)
            if used + columns > width - 1:
                break
            kept.append(char)
            used += columns
        text = "".join(kept) + ELLIPSIS
    return text + " " * (width - display_width(text))

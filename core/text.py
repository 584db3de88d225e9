"""Text every store can hold: the one encoder for strings with lone surrogates."""

from __future__ import annotations


def without_lone_surrogates(text: str) -> str:
    """`text` with every lone surrogate (unencodable as UTF-8) replaced by U+FFFD.

    Only damaged input produces them (a lenient read of a broken line, an undecodable file-name byte);
    SQLite and UTF-8 files cannot store them. A high surrogate followed by a low one is the character the
    pair encodes, as in the agent's JavaScript strings. Text without surrogates is returned as it is, fast.
    """
    if text.isascii():
        return text
    try:
        text.encode("utf-8")  # fails exactly on surrogates, and is much faster than searching for them
    except UnicodeEncodeError:
        return text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")
    return text

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


MAX_QUERY_WORDS = 32  # a search of more words is no more precise, only slower
MAX_QUERY_CHARS = 1000
MAX_QUERY_WORD_CHARS = 100  # a longer "word" (a pasted blob) is cut: no real word is that long


def bounded_query(text: str) -> tuple[str, bool]:
    """A search text any search can answer in bounded time, and whether it had to be reduced.

    Lone surrogates become U+FFFD. A text over MAX_QUERY_WORDS words or MAX_QUERY_CHARS characters keeps its
    most selective words: without statistics, the longest distinct ones (long words are the rare ones; `at`,
    `the`, `File` of a pasted stack trace are everywhere), each cut to MAX_QUERY_WORD_CHARS, in the order
    they came. The scan is linear in the text's length.
    """
    text = without_lone_surrogates(text)
    words = text.split()
    if len(text) <= MAX_QUERY_CHARS and len(words) <= MAX_QUERY_WORDS:
        return text, False
    distinct: dict[str, tuple[int, str]] = {}
    for position, word in enumerate(words):
        word = word[:MAX_QUERY_WORD_CHARS]
        distinct.setdefault(word.casefold(), (position, word))
    by_selectivity = sorted(distinct.values(), key=lambda item: (-len(item[1]), item[0]))
    chosen: list[tuple[int, str]] = []
    size = 0
    for position, word in by_selectivity:
        if len(chosen) == MAX_QUERY_WORDS or size + len(word) + 1 > MAX_QUERY_CHARS:
            break
        chosen.append((position, word))
        size += len(word) + 1
    return " ".join(word for _, word in sorted(chosen)), True

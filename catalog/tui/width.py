"""How many terminal columns text takes, and text cut to fit: shared by the tables, the history listing and the picker.

Text of plain characters (ASCII, accented letters, CJK, single emoji) is measured here from the Unicode tables of
`unicodedata`, combining marks riding on the character before them. Only text holding grapheme machinery (a
zero-width joiner, a variation selector, flags, skin tones, keycaps) is measured by wcwidth, which knows that a
joined emoji family is one 2-column picture: importing wcwidth costs a listing more than measuring it.
"""

from __future__ import annotations

import functools

TYPE_CHECKING = False  # typing stays off the hot commands' imports
if TYPE_CHECKING:
    from collections.abc import Iterator

ELLIPSIS = "…"
# What makes one drawn picture out of several characters (wcwidth's business): joiner, variation selectors,
# keycap; regional indicators (flags) and skin tones are ranges, both above _CLUSTER_RANGES_START.
_JOINERS = frozenset("\u200d\ufe0e\ufe0f\u20e3")
_CLUSTER_RANGES_START = "\U0001f1e6"


def _has_cluster_machinery(text: str) -> bool:
    if _JOINERS.isdisjoint(text) and (not text or max(text) < _CLUSTER_RANGES_START):
        return False  # the common case, decided at C speed
    return any(char in _JOINERS or "\U0001f1e6" <= char <= "\U0001f1ff" or "\U0001f3fb" <= char <= "\U0001f3ff"
               for char in text)


class _CharWidths(dict[str, int]):
    """Columns of single characters, each computed once (a table of thousands of cells measures them often)."""

    def __missing__(self, char: str) -> int:
        width = self[char] = _plain_width(char)
        return width


_CHAR_WIDTHS = _CharWidths()
_CLUSTER_WIDTHS: dict[str, int] = {}


def _cluster_width(cluster: str) -> int:
    if len(cluster) == 1 and cluster < _CLUSTER_RANGES_START and cluster not in _JOINERS:
        return _CHAR_WIDTHS[cluster]
    width = _CLUSTER_WIDTHS.get(cluster)
    if width is None:
        if not _has_cluster_machinery(cluster):
            width = sum(map(_CHAR_WIDTHS.__getitem__, cluster))
        else:
            import wcwidth

            width = max(wcwidth.width(cluster), 0)
        if len(_CLUSTER_WIDTHS) < 4096:
            _CLUSTER_WIDTHS[cluster] = width
    return width


def _plain_width(char: str) -> int:
    if char < "\u0300":  # Latin-1 and the Latin extensions (accented names, paths): neither combining nor wide
        return 1
    import unicodedata  # a shared library to load: only text holding other characters needs it

    if unicodedata.combining(char) or char in "\u200b\u200c\u2060\ufeff":
        return 0
    return 2 if unicodedata.east_asian_width(char) in ("W", "F") else 1


def char_width(char: str) -> int:
    """Terminal columns of one character or grapheme cluster: 0 for combining marks, 2 for wide ones, else 1."""
    return 1 if char.isascii() else _cluster_width(char)


def graphemes(text: str) -> Iterator[str]:
    """`text` as the units a terminal draws: grapheme clusters (a character with its combining marks)."""
    if text.isascii():
        yield from text
        return
    if _has_cluster_machinery(text):
        import wcwidth

        yield from wcwidth.iter_graphemes(text)
        return
    import unicodedata

    cluster = ""
    for char in text:
        if cluster and unicodedata.combining(char):
            cluster += char
            continue
        if cluster:
            yield cluster
        cluster = char
    if cluster:
        yield cluster


def display_width(text: str) -> int:
    """Terminal columns `text` occupies (wide East Asian characters and emoji count twice)."""
    if text.isascii():
        return len(text)
    return _non_ascii_width(text)


@functools.lru_cache(maxsize=4096)  # the picker measures the same titles and paths on every redraw
def _non_ascii_width(text: str) -> int:
    # Its distinct non-ASCII characters, gathered at C speed: most text holding some non-ASCII is mostly ASCII,
    # and looking at each character in Python cost a listing more than everything else it shows.
    width = len(text)
    for char in set(text).difference(_ASCII):
        extra = _EXTRA_COLUMNS[char]
        if extra is None:  # grapheme machinery: the clusters decide
            return sum(_cluster_width(cluster) for cluster in graphemes(text))
        if extra:
            width += extra * text.count(char)
    return width


_ASCII = frozenset(map(chr, range(128)))


class _ExtraColumns(dict[str, "int | None"]):
    """A character's columns beyond one (1 wide, -1 zero-width, else 0), or None for grapheme machinery (what
    _has_cluster_machinery tells), each computed once. A cluster of plain characters is as wide as its characters
    together (combining marks are 0)."""

    def __missing__(self, char: str) -> int | None:
        if char in _JOINERS or "\U0001f1e6" <= char <= "\U0001f1ff" or "\U0001f3fb" <= char <= "\U0001f3ff":
            extra = None
        else:
            extra = _CHAR_WIDTHS[char] - 1
        self[char] = extra
        return extra


_EXTRA_COLUMNS = _ExtraColumns()


def cut(text: str, width: int) -> str:
    """`text` cut to at most `width` columns, ending in `…` when cut (never in the middle of a cluster)."""
    if text.isascii():
        return text if len(text) <= width else text[:max(width - 1, 0)] + ELLIPSIS
    if display_width(text) <= width:
        return text
    kept, used = [], 0
    for cluster in graphemes(text):
        columns = _cluster_width(cluster)
        if used + columns > width - 1:
            break
        kept.append(cluster)
        used += columns
    return "".join(kept) + ELLIPSIS


def fit(text: str, width: int) -> str:
    """`text` cut to at most `width` columns (ending in `…` when cut) and padded to exactly `width`."""
    used = display_width(text)
    if used > width:
        text = cut(text, width)
        used = display_width(text)
    return text + " " * (width - used)


def cut_middle(text: str, width: int, head: int | None = None) -> str:
    """`text` in at most `width` columns, its middle replaced by `…` when too long (both ends stay readable);
    `head` columns of its start are kept (default a third: a path's last folders tell projects apart)."""
    if display_width(text) <= width:
        return text
    clusters = list(graphemes(text))
    head_room = min(max((width - 1) // 3 if head is None else head, 0), width - 1)
    tail_room = width - 1 - head_room
    start: list[str] = []
    used = 0
    for cluster in clusters:
        if used + char_width(cluster) > head_room:
            break
        start.append(cluster)
        used += char_width(cluster)
    tail: list[str] = []
    used = 0
    for cluster in reversed(clusters[len(start):]):
        if used + char_width(cluster) > tail_room:
            break
        tail.append(cluster)
        used += char_width(cluster)
    return "".join(start) + ELLIPSIS + "".join(reversed(tail))


def cut_marked(text: str, width: int, markers: str) -> str:
    """Like `cut` for text holding marker characters (`markers`: zero-width, kept); a marked run that is cut
    is closed, so `markers` must be pairs of (start, end) characters."""
    plain = text
    for marker in markers:
        plain = plain.replace(marker, "")
    if display_width(plain) <= width:
        return text
    kept, used, open_end = [], 0, ""
    for char in text:
        if char in markers:
            index = markers.index(char)
            open_end = markers[index + 1] if index % 2 == 0 else ""
            kept.append(char)
            continue
        columns = char_width(char)
        if used + columns > width - 1:
            break
        kept.append(char)
        used += columns
    return "".join(kept) + open_end + ELLIPSIS

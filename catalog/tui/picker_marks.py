"""Marks in the picker: the `is:pinned`, `is:starred` and `tag:NAME` terms of a query, the Pinned and Starred
scopes, how a row shows its marks, and the tag prompt's completion. Pure: no terminal, no prompt_toolkit.

A mark term is a query word of its own: `is:pinned` (or a prefix of it, `is:pin`), `is:starred`, `tag:bug` (the
exact tag, as `--tag` asks for it; `tag:` alone: any tag). Every mark term must hold (AND, like the text terms);
the rest of the query is matched as text. The marks themselves are `sessdex.core.marks.Marks`, by session id.
"""

from __future__ import annotations

TYPE_CHECKING = False  # typing stays off the first frame's imports
if TYPE_CHECKING:
    from collections.abc import Iterable

    from sessdex.catalog.queries.source import Scope
    from sessdex.core.marks import Marks

MARK_SCOPES: tuple[Scope, ...] = ("pinned", "starred")  # the Tab cycle's scopes of marked sessions (every project's)
PIN_GLYPH = "⚑"  # before a pinned session's title
STAR_GLYPH = "★"  # before a starred session's title
IS_WORDS = ("pinned", "starred")
TAG_COMPLETIONS_SHOWN = 8


class MarkTerms:
    """The mark terms of a query: sessions must be pinned, starred, and carry each of `tags` (`any_tag`: some tag);
    `impossible` when a term asks for what no session can be (`is:nothing`)."""

    __slots__ = ("pinned", "starred", "tags", "any_tag", "impossible")

    def __init__(self) -> None:
        self.pinned = False
        self.starred = False
        self.tags: list[str] = []
        self.any_tag = False
        self.impossible = False

    def matches(self, marks: Marks | None) -> bool:
        if self.impossible:
            return False
        if marks is None:
            return False
        return ((marks.pinned or not self.pinned) and (marks.starred or not self.starred)
                and (bool(marks.tags) or not self.any_tag) and all(tag in marks.tags for tag in self.tags))

    def key(self) -> tuple[object, ...]:
        return (self.pinned, self.starred, tuple(self.tags), self.any_tag, self.impossible)


def split_mark_terms(query: str) -> tuple[str, MarkTerms | None]:
    """`query` without its mark terms (the words left, one space apart), and the mark terms (None when none)."""
    if ":" not in query:
        return query, None
    words = query.split()
    terms = MarkTerms()
    found = False
    text: list[str] = []
    for word in words:
        lowered = word.lower()
        if lowered.startswith("is:"):
            found = True
            value = lowered[3:]
            if not value:
                continue  # `is:` being typed: no constraint yet
            names = [name for name in IS_WORDS if name.startswith(value)]
            if len(names) != 1:
                terms.impossible = True
            elif names[0] == "pinned":
                terms.pinned = True
            else:
                terms.starred = True
        elif lowered.startswith("tag:"):
            found = True
            value = lowered[4:]
            if value:
                terms.tags.append(value)
            else:
                terms.any_tag = True
        else:
            text.append(word)
    return (" ".join(text), terms) if found else (query, None)


def scope_keeps(scope: Scope, marks: Marks | None) -> bool:
    """Whether a session with `marks` belongs to `scope` as far as marks go (only the mark scopes ask)."""
    if scope == "pinned":
        return marks is not None and marks.pinned
    if scope == "starred":
        return marks is not None and marks.starred
    return True


def cycle_with_mark_scopes(scopes: tuple[Scope, ...], current: Scope, marks: dict[str, Marks]) -> tuple[Scope, ...]:
    """The Tab cycle `scopes` with the Pinned (Starred) scope at its end once some session is pinned (starred), or
    while it is the current scope."""
    wanted = tuple(scope for scope in MARK_SCOPES
                   if scope == current or any(getattr(value, scope) for value in marks.values()))
    return tuple(scope for scope in scopes if scope not in MARK_SCOPES) + wanted


def rows_scope(scope: Scope) -> Scope:
    """The scope whose rows the source reads for `scope`: every project's for the mark scopes."""
    return "all" if scope in MARK_SCOPES else scope


def title_prefix(marks: Marks | None) -> str:
    """What goes before a row's title: the pin and star glyphs, then a space (empty when neither)."""
    if marks is None or not (marks.pinned or marks.starred):
        return ""
    return (PIN_GLYPH if marks.pinned else "") + (STAR_GLYPH if marks.starred else "") + " "


def marks_summary(marks: Marks | None) -> str:
    """The marks in words for the detail line: `⚑ pinned  ★ starred  #bug #wip  note: …` (empty when none)."""
    if marks is None or marks.empty:
        return ""
    parts = [f"{PIN_GLYPH} pinned"] if marks.pinned else []
    parts += [f"{STAR_GLYPH} starred"] if marks.starred else []
    parts += [" ".join(f"#{tag}" for tag in marks.tags)] if marks.tags else []
    parts += [f"note: {' '.join(marks.note.split())}"] if marks.note else []
    return "  ".join(parts)


def known_tags(every_marks: Iterable[Marks]) -> list[str]:
    """Every tag some session carries, the most used first (then by name)."""
    counts: dict[str, int] = {}
    for marks in every_marks:
        for tag in marks.tags:
            counts[tag] = counts.get(tag, 0) + 1
    return sorted(counts, key=lambda tag: (-counts[tag], tag))


def tag_changes(text: str, current: Iterable[str]) -> tuple[list[str], list[str]]:
    """What the tag prompt's text asks for, as (tags to add, tags to remove): `bug +ui -wip` adds bug and ui,
    removes wip; a tag already there is not added again, one absent is not removed. Raises UsageError (from
    `valid_tag`) on a word that is not a tag."""
    from sessdex.core.marks import valid_tag

    have = set(current)
    add: list[str] = []
    remove: list[str] = []
    for word in text.split():
        if word.startswith("-"):
            tag = valid_tag(word[1:])
            if tag in have and tag not in remove:
                remove.append(tag)
        else:
            tag = valid_tag(word[1:] if word.startswith("+") else word)
            if tag not in have and tag not in add:
                add.append(tag)
    return add, remove


def completions(text: str, tags: list[str]) -> tuple[str, list[str]]:
    """The tag prompt's completion of its last word: (the text with that word completed as far as the matching
    tags agree, the matching tags). A `+` or `-` in front of the word stays."""
    head, _, word = text.rpartition(" ")
    sign = word[:1] if word[:1] in "+-" else ""
    stem = word[len(sign):].lower()
    matching = [tag for tag in tags if tag.startswith(stem)]
    if not matching:
        return text, []
    common = matching[0]
    for tag in matching[1:]:
        while not tag.startswith(common):
            common = common[:-1]
    completed = sign + (matching[0] + " " if len(matching) == 1 else common)
    return (head + " " if head else "") + completed, matching

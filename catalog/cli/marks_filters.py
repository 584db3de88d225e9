"""`--pinned`, `--starred` and `--tag T` of the listing commands (`list`, `recent`, `search`), and the order that
puts pinned sessions first. Marks come from the session source (`SessionSource.marks`); sessions are matched by id."""

from __future__ import annotations

from sessdex.core.marks import pinned_first  # one ordering for list and the picker (the picker cannot import cli)

__all__ = ["MarksFilter", "add_marks_filter_options", "pinned_first"]

TYPE_CHECKING = False  # see the README's start-up budget
if TYPE_CHECKING:
    import argparse
    from collections.abc import Callable, Sequence
    from typing import TypeVar

    from sessdex.core.marks import Marks

    Item = TypeVar("Item")


def add_marks_filter_options(parser: argparse.ArgumentParser) -> None:
    """--pinned, --starred, --tag T (repeatable: every tag must be there)."""
    group = parser.add_argument_group("marks")
    group.add_argument("--pinned", action="store_true", help="Only pinned sessions.")
    group.add_argument("--starred", action="store_true", help="Only starred sessions.")
    group.add_argument("--tag", dest="tags", metavar="TAG", action="append", default=[],
                       help="Only sessions tagged TAG (repeat: sessions with every one of the tags).")


class MarksFilter:
    """What the marks options ask for; `active` when any of them was given."""

    __slots__ = ("pinned", "starred", "tags")

    def __init__(self, pinned: bool = False, starred: bool = False, tags: Sequence[str] = ()) -> None:
        from sessdex.core.marks import valid_tag

        self.pinned = pinned
        self.starred = starred
        self.tags = tuple(valid_tag(tag.lstrip("+")) for tag in tags)  # `--tag +bug` as `--tag bug`

    @classmethod
    def of(cls, args: argparse.Namespace) -> MarksFilter:
        return cls(getattr(args, "pinned", False), getattr(args, "starred", False), getattr(args, "tags", ()))

    @property
    def active(self) -> bool:
        return self.pinned or self.starred or bool(self.tags)

    def matches(self, marks: Marks | None) -> bool:
        from sessdex.core.marks import marks_match

        return marks_match(marks, pinned=self.pinned, starred=self.starred, tags=self.tags)

    def select(self, items: Sequence[Item], marks: dict[str, Marks], session_id: Callable[[Item], str]) -> list[Item]:
        """The items whose session's marks match, in their order."""
        if not self.active:
            return list(items)
        return [item for item in items if self.matches(marks.get(session_id(item)))]

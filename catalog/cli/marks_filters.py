"""`--pinned`, `--starred` and `--tag T` of the listing commands (`list`, `recent`, `search`) and of `usage`, and
the order that puts pinned sessions first. Marks come from the session source (`SessionSource.marks`); sessions
are matched by id."""

from __future__ import annotations

import os

TYPE_CHECKING = False  # see the README's start-up budget
if TYPE_CHECKING:
    import argparse
    from collections.abc import Callable, Sequence
    from typing import Any, TypeVar

    from sessdex.catalog.queries.source import SessionSource
    from sessdex.core.marks import Marks
    from sessdex.core.usage import FileUsage, UsageReport
    from sessdex.core.usage_terms import DateRange, ReportKind

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
        if not self.active:
            return True
        if marks is None:
            return False
        return (marks.pinned or not self.pinned) and (marks.starred or not self.starred) and \
            all(tag in marks.tags for tag in self.tags)

    def select(self, items: Sequence[Item], marks: dict[str, Marks], session_id: Callable[[Item], str]) -> list[Item]:
        """The items whose session's marks match, in their order."""
        if not self.active:
            return list(items)
        return [item for item in items if self.matches(marks.get(session_id(item)))]


def pinned_first(items: Sequence[Item], marks: dict[str, Any], session_id: Callable[[Item], str]) -> list[Item]:
    """The items with pinned sessions first, each part in its own order (`list` and the picker)."""
    if not marks:
        return list(items)
    pinned = [item for item in items if getattr(marks.get(session_id(item)), "pinned", False)]
    if not pinned:
        return list(items)
    return [*pinned, *(item for item in items if not getattr(marks.get(session_id(item)), "pinned", False))]


def marked_usage_report(source: SessionSource, wanted: MarksFilter, kind: ReportKind, cwd: str, *,
                        all_projects: bool, days: DateRange) -> UsageReport:
    """`usage --tag/--pinned/--starred`: the report over the sessions (of the project, or every project) whose
    marks match, read from their files. Marked sessions are few, so only their files are read, with the files
    they were forked from (a fork's copies of its parent's entries are counted in the parent, as in every report).
    A session of another machine (no file here) is left out."""
    from sessdex.core.usage import build_report, mark_copies, read_file_usage

    marks = source.marks()
    every = source.list_all_sessions(include_empty=True)
    scope = every if all_projects else source.list_sessions(cwd, include_empty=True)
    chosen = [info for info in wanted.select(scope, marks, lambda info: info.id) if not getattr(info, "remote", False)]
    path_of = {info.id: info.path_text for info in every if not getattr(info, "remote", False)}
    files: dict[str, FileUsage] = {}
    for info in chosen:
        usage = read_file_usage(info.path_text)
        if usage is not None:
            files[usage.path] = usage
    wanted_paths = set(files)
    # The ancestors of the chosen files, for the fork rule (a parent named by its id or by its path).
    pending = [usage.parent_session for usage in files.values() if usage.parent_session]
    while pending:
        reference = pending.pop()
        parent_path = path_of.get(reference, reference)
        if parent_path in files or not os.path.isfile(parent_path):
            continue
        parent = read_file_usage(parent_path)
        if parent is not None:
            files[parent.path] = parent
            if parent.parent_session:
                pending.append(parent.parent_session)
    every_file = list(files.values())
    mark_copies(every_file)
    return build_report(kind, [usage for usage in every_file if usage.path in wanted_paths], days)


def add_session_marks(report: UsageReport, marks: dict[str, Marks]) -> None:
    """Each row of a session usage report says its session's marks (as every JSON session object does)."""
    from sessdex.core.marks import NO_MARKS

    for row in report.rows:
        if row.session is not None:
            row.session["marks"] = marks.get(row.key, NO_MARKS).to_json()

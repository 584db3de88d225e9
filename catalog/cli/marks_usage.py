"""`usage --tag/--pinned/--starred` (`marked_usage_report`), and the marks of `usage session`'s rows.

A usage report over the marked sessions is summed from the marked sessions themselves (they are few): this
machine's read from their files, another machine's sharing the catalog from the usage facts the catalog holds of
it (its file is not here). The marks are every machine's (the catalog's marks are the union of their files).
"""

from __future__ import annotations

import os

TYPE_CHECKING = False  # see the README's start-up budget
if TYPE_CHECKING:
    from sessdex.catalog.cli.marks_filters import MarksFilter
    from sessdex.catalog.queries.source import SessionSource
    from sessdex.core.usage import FileUsage, UsageReport
    from sessdex.core.usage_terms import DateRange, ReportKind


def marked_usage_report(source: SessionSource, wanted: MarksFilter, kind: ReportKind, cwd: str, *,
                        all_projects: bool, days: DateRange) -> UsageReport:
    """`usage --tag/--pinned/--starred`: the report over the sessions (of the project, or every project; of every
    machine sharing the catalog with `--machines all`) whose marks match. This machine's are read from their
    files, with the files they were forked from (a fork's copies of its parent's entries are counted in the
    parent, as in every report); another machine's come from the catalog, its copies already left out there."""
    from sessdex.core.usage import build_report, mark_copies, read_file_usage

    marks = source.marks()
    every = source.list_all_sessions(include_empty=True)
    scope = every if all_projects else source.list_sessions(cwd, include_empty=True)
    chosen = wanted.select(scope, marks, lambda info: info.id)
    path_of = {info.id: info.path_text for info in every if not getattr(info, "remote", False)}
    files: dict[str, FileUsage] = {}
    theirs: list[FileUsage] = []
    for info in chosen:
        if getattr(info, "remote", False):
            remote = source.remote_file_usage(info)
            if remote is not None:
                theirs.append(remote)
            continue
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
    mine = list(files.values())
    mark_copies(mine)  # this machine's forks and parents only: another machine's session copied none of these
    return build_report(kind, [usage for usage in mine if usage.path in wanted_paths] + theirs, days)

"""`usage --tag/--pinned/--starred` (`marked_usage_report`), and the marks of `usage session`'s rows.

A usage report over the marked sessions cannot come from the catalog's rollups (they are summed per folder and
period, not per session and period), so it is read from the marked sessions' files; they are few.
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

"""The options of `sessdex usage`; its body is `sessdex.catalog.cli.usage_output.run_usage`."""

from __future__ import annotations

import argparse

from sessdex.catalog.cli import usage_output
from sessdex.catalog.cli.output import USAGE_FIELDS, add_json_option, add_table_option
from sessdex.catalog.cli.read_guard import session_source
from sessdex.core.usage_terms import REPORT_KINDS

TYPE_CHECKING = False  # see the README's start-up budget
if TYPE_CHECKING:
    from sessdex.catalog.store.settings import Settings


def add_usage_arguments(parser: argparse.ArgumentParser) -> None:
    parser.description = """\
Tokens and cost per day (default), week, month, session, project or model, with a total.

Counts every assistant message's usage in this project's sessions (every project's with --all);
an entry a fork copied from its parent session is counted once, in the parent. Days are local."""
    parser.add_argument("report", nargs="?", metavar=f"[{'|'.join(REPORT_KINDS)}]",
                        help="The report (default daily).")
    parser.add_argument("--since", metavar="DAY", help="First local day to count (YYYY-MM-DD or YYYYMMDD).")
    parser.add_argument("--until", metavar="DAY", help="Last local day to count (YYYY-MM-DD or YYYYMMDD).")
    parser.add_argument("--all", dest="all_projects", action="store_true",
                        help="Sessions of every project, not only this one.")
    parser.add_argument("--breakdown", action="store_true", help="Split each row per model.")
    add_json_option(parser, "Print JSON instead of a table.", USAGE_FIELDS)
    add_table_option(parser)
    from sessdex.catalog.cli.marks_filters import add_marks_filter_options  # --tag, --pinned, --starred

    add_marks_filter_options(parser)


def run_usage(args: argparse.Namespace, settings: Settings) -> int:
    return usage_output.run_usage(lambda: session_source(args, settings), kind=usage_output.report_kind(args.report),
                                  days=usage_output.date_range(args.since, args.until),
                                  wanted=usage_output.MarksFilter.of(args),
                                  all_projects=args.all_projects, breakdown=args.breakdown, as_json=args.as_json,
                                  json_fields=args.json_fields, table=args.table)

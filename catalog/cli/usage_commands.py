"""The options of `sessdex usage`; its body is `sessdex.catalog.cli.usage_output.run_usage`."""

from __future__ import annotations

import argparse

from sessdex.catalog.cli.output import USAGE_FIELDS, add_json_option, add_table_option
from sessdex.catalog.cli.read_guard import session_source
from sessdex.core.usage_terms import REPORT_KINDS

BLOCKS = "blocks"  # the 5-hour billing blocks, read apart from the other reports

TYPE_CHECKING = False  # see the README's start-up budget
if TYPE_CHECKING:
    from sessdex.catalog.store.settings import Settings


def add_usage_arguments(parser: argparse.ArgumentParser) -> None:
    parser.description = """\
Tokens and cost per day (default), week, month, session, project or model, with a total; or the
5-hour billing blocks (`blocks`, as ccusage counts them, the active one with its projection).

Counts every assistant message's usage in this project's sessions (every project's with --all);
an entry a fork copied from its parent session is counted once, in the parent. Days are local.
`blocks` and `--line` count every project's sessions (a billing window is the account's)."""
    parser.add_argument("report", nargs="?", metavar=f"[{'|'.join((*REPORT_KINDS, BLOCKS))}]",
                        help="The report (default daily).")
    parser.add_argument("--since", metavar="DAY", help="First local day to count (YYYY-MM-DD or YYYYMMDD).")
    parser.add_argument("--until", metavar="DAY", help="Last local day to count (YYYY-MM-DD or YYYYMMDD).")
    parser.add_argument("--all", dest="all_projects", action="store_true",
                        help="Sessions of every project, not only this one.")
    parser.add_argument("--breakdown", action="store_true", help="Split each row per model.")
    parser.add_argument("--line", action="store_true",
                        help="One short line for a prompt or a status line: today's cost and tokens, the active block.")
    add_json_option(parser, "Print JSON instead of a table.", USAGE_FIELDS)
    add_table_option(parser)
    from sessdex.catalog.cli.marks_filters import add_marks_filter_options  # --tag, --pinned, --starred

    add_marks_filter_options(parser)


def run_usage(args: argparse.Namespace, settings: Settings) -> int:
    if args.line or args.report == BLOCKS:
        return _run_blocks(args, settings)
    from sessdex.catalog.cli import usage_output  # (not for --line, which reads the files alone)

    return usage_output.run_usage(lambda: session_source(args, settings), kind=usage_output.report_kind(args.report),
                                  days=usage_output.date_range(args.since, args.until),
                                  wanted=usage_output.MarksFilter.of(args),
                                  all_projects=args.all_projects, breakdown=args.breakdown, as_json=args.as_json,
                                  json_fields=args.json_fields, table=args.table)


def _run_blocks(args: argparse.Namespace, settings: Settings) -> int:
    """`usage blocks` and `usage --line`, from the session source (`--catalog`, `--machines`) as every report."""
    from sessdex.core.errors import UsageError

    if args.line and (args.report is not None or args.as_json or args.since or args.until or args.breakdown):
        raise UsageError("--line prints one line of its own: give it alone (`sessdex usage --line`)")
    if args.breakdown:
        raise UsageError("usage blocks has no --breakdown: see `sessdex usage model --since DAY`")
    from sessdex.catalog.cli.marks_filters import MarksFilter

    if MarksFilter.of(args).active:
        raise UsageError("a billing block is the account's: usage blocks and --line take no --tag, --pinned or "
                         "--starred")
    from sessdex.catalog.cli import usage_blocks

    if args.line:
        with session_source(args, settings) as source:
            return usage_blocks.run_line(source)
    from sessdex.catalog.cli.output import output_width, tab_separated
    from sessdex.catalog.cli.usage_output import date_range

    days = date_range(args.since, args.until)  # refused before anything is opened
    with session_source(args, settings) as source:
        return usage_blocks.run_blocks(source, days, as_json=args.as_json, json_fields=args.json_fields,
                                       tsv=tab_separated(args.table), width=output_width())

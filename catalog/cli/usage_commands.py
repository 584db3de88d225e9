"""`sessdex usage` as a click command: option parsing only; the body is `sessdex.catalog.cli.usage_output.run_usage`."""

from __future__ import annotations

import click

from sessdex.catalog.cli.session_group import _session_source
from sessdex.catalog.cli.usage_output import date_range, report_kind, run_usage
from sessdex.core.usage_terms import REPORT_KINDS


@click.command("usage")
@click.argument("report", required=False, metavar=f"[{'|'.join(REPORT_KINDS)}]")
@click.option("--since", help="First local day to count (YYYY-MM-DD or YYYYMMDD).")
@click.option("--until", help="Last local day to count (YYYY-MM-DD or YYYYMMDD).")
@click.option("--all", "all_projects", is_flag=True, help="Sessions of every project, not only this one.")
@click.option("--breakdown", is_flag=True, help="Split each row per model.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON instead of a table.")
@click.pass_context
def usage_command(ctx: click.Context, report: str | None, since: str | None, until: str | None, all_projects: bool,
                  breakdown: bool, as_json: bool) -> None:
    """Tokens and cost per day (default), week, month, session, project or model, with a total.

    Counts every assistant message's usage in this project's sessions (every project's with --all);
    an entry a fork copied from its parent session is counted once, in the parent. Days are local.
    """
    run_usage(lambda: _session_source(ctx), kind=report_kind(report), days=date_range(since, until),
              all_projects=all_projects, breakdown=breakdown, as_json=as_json)

"""Reading creates nothing: read commands check that the agent dir exists before anything opens (or creates) a
catalog or a history database in it (`require_agent_dir`, `session_source`).

A missing agent dir (`~/.xcsh/agent`, or `$PI_CODING_AGENT_DIR` set before the agent first ran) simply means no
sessions yet: one line, exit 1. A `--agent-dir` named on the command line that does not exist is a usage error
(a typo, most likely): exit 2, as for any unreadable input.
"""

from __future__ import annotations

import contextlib
import os

from sessdex.catalog.cli.commands import agent_dir_named
from sessdex.core.errors import SessdexError, SessionNotFoundError, UsageError

TYPE_CHECKING = False  # see the README's start-up budget
if TYPE_CHECKING:
    import argparse
    from collections.abc import Iterator

    from sessdex.catalog.queries.source import ResumeSource, SessionSource
    from sessdex.catalog.store.settings import Settings
    from sessdex.core.paths import AgentPaths


def require_agent_dir(paths: AgentPaths, named: bool = False) -> None:
    """Raise unless `paths.agent_dir` is a directory; `named`: it was given as --agent-dir on the command line."""
    agent_dir = paths.agent_dir_text
    if os.path.isdir(agent_dir):
        return
    if named:
        raise UsageError(f"agent dir {agent_dir} does not exist")
    raise SessionNotFoundError(f"no sessions: {agent_dir} does not exist")


def session_source(args: argparse.Namespace, settings: Settings) -> SessionSource:
    """The catalog (kept fresh by stat or by `sessdex watch`), or the file scan if the catalog is unusable.

    Refused (nothing created) when the agent dir does not exist."""
    from sessdex.catalog.cli.output import echo
    from sessdex.catalog.queries.open_source import open_session_source

    require_agent_dir(settings.paths, agent_dir_named(args))
    return open_session_source(settings, warn=lambda message: echo(f"sessdex: {message}", err=True))


def resume_source(args: argparse.Namespace, settings: Settings, *, marks_wanted: bool) -> ResumeSource:
    """The source of `resume VALUE`: this machine's session files first when they can settle the answer (a
    catalog server asked for this machine's sessions and no marks: see `catalog.queries.resume_files`), else
    `session_source`. Refused (nothing created) when the agent dir does not exist."""
    from sessdex.catalog.queries.resume_files import FilesFirst, files_settle_resume

    if marks_wanted or not files_settle_resume(settings):
        return session_source(args, settings)
    require_agent_dir(settings.paths, agent_dir_named(args))
    return FilesFirst(settings.paths, lambda: session_source(args, settings))


@contextlib.contextmanager
def json_refusal(as_json: bool) -> Iterator[None]:
    """With `as_json`, a refusal also prints `{"error", "candidates"}` on stdout (then is reported as usual)."""
    try:
        yield
    except SessdexError as error:
        if as_json:
            from sessdex.catalog.cli.output import echo_json, error_json

            echo_json(error_json(error))
        raise

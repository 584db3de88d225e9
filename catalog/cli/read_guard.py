"""Reading creates nothing: read commands check that the agent dir exists before anything opens (or creates) a
catalog or a history database in it.

A missing agent dir (`~/.xcsh/agent`, or `$PI_CODING_AGENT_DIR` set before the agent first ran) simply means no
sessions yet: one line, exit 1. A `--agent-dir` named on the command line that does not exist is a usage error
(a typo, most likely): exit 2, as for any unreadable input.
"""

from __future__ import annotations

import contextlib
import os

from sessdex.core.errors import SessdexError, SessionNotFoundError, UsageError

TYPE_CHECKING = False  # see the README's start-up budget
if TYPE_CHECKING:
    from collections.abc import Iterator

    from sessdex.core.paths import AgentPaths


def require_agent_dir(paths: AgentPaths, named: bool = False) -> None:
    """Raise unless `paths.agent_dir` is a directory; `named`: it was given as --agent-dir on the command line."""
    agent_dir = paths.agent_dir_text
    if os.path.isdir(agent_dir):
        return
    if named:
        raise UsageError(f"agent dir {agent_dir} does not exist")
    raise SessionNotFoundError(f"no sessions: {agent_dir} does not exist")


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

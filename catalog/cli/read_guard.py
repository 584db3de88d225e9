"""Reading creates nothing: read commands check that the agent dir exists before anything opens (or creates) a
catalog or a history database in it.

A missing agent dir (`~/.xcsh/agent`, or `$PI_CODING_AGENT_DIR` set before the agent first ran) simply means no
sessions yet: one line, exit 1. A `--agent-dir` named on the command line that does not exist is a usage error
(a typo, most likely): exit 2, as for any unreadable input.
"""

from __future__ import annotations

import os

from sessdex.core.errors import SessdexError, SessionNotFoundError, UsageError

TYPE_CHECKING = False  # typing and pathlib stay off the hot commands' imports (issue 12)
if TYPE_CHECKING:
    from typing import Any

    from sessdex.core.paths import AgentPaths

AGENT_DIR_NAMED = "sessdex.agent_dir_named"  # click context meta: --agent-dir was given on the command line


def require_agent_dir(paths: AgentPaths, named: bool = False) -> None:
    """Raise unless `paths.agent_dir` is a directory; `named`: it was given as --agent-dir on the command line."""
    agent_dir = paths.agent_dir_text
    if os.path.isdir(agent_dir):
        return
    if named:
        raise UsageError(f"agent dir {agent_dir} does not exist")
    raise SessionNotFoundError(f"no sessions: {agent_dir} does not exist")


class json_refusal:  # a function's name: used as `with json_refusal(as_json):`
    """With `as_json`, a refusal also prints `{"error", "candidates"}` on stdout (then is reported as usual).

    A class rather than a contextlib generator: every hot command enters one (issue 12).
    """

    __slots__ = ("as_json",)

    def __init__(self, as_json: bool) -> None:
        self.as_json = as_json

    def __enter__(self) -> None:
        return None

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None, traceback: object) -> None:
        if self.as_json and isinstance(error, SessdexError):
            from sessdex.catalog.cli.output import echo_json, error_json

            echo_json(error_json(error))


def agent_dir_named(ctx: Any) -> bool:
    """Whether the click command's --agent-dir came from the command line (the root command records it)."""
    return bool(ctx.meta.get(AGENT_DIR_NAMED))

"""`sessdex mcp --print-config xcsh|claude|codex`: the snippet each client's configuration needs to start the server.

The snippet goes to stdout (so it can be appended to the file), where it goes to stderr.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Sequence

CLIENTS = ("xcsh", "claude", "codex")
SERVER_KEY = "sessdex"


def sessdex_command() -> str:
    """The sessdex console script beside this interpreter (a virtual environment's), else `sessdex` on PATH."""
    beside = os.path.join(os.path.dirname(sys.executable), "sessdex")
    return beside if os.path.isfile(beside) and os.access(beside, os.X_OK) else "sessdex"


def client_config(client: str, args: Sequence[str], command: str | None = None) -> tuple[str, str]:
    """(snippet, where it goes) for `client`; `args` are sessdex's arguments (`mcp` and any global options)."""
    command = command or sessdex_command()
    entry = {"command": command, "args": list(args)}
    if client == "codex":
        lines = [f"[mcp_servers.{SERVER_KEY}]", f"command = {json.dumps(command)}",
                 f"args = {json.dumps(list(args))}"]
        return "\n".join(lines), "Add this table to ~/.codex/config.toml."
    if client == "claude":
        snippet = json.dumps({"mcpServers": {SERVER_KEY: {"type": "stdio", **entry}}}, indent=2)
        return snippet, ("Put this in the project's .mcp.json (or run: claude mcp add --scope user sessdex -- "
                         f"{command} {' '.join(args)}).")
    snippet = json.dumps({"mcpServers": {SERVER_KEY: entry}}, indent=2)
    return snippet, "Merge this into the agent's mcp.json: <agent dir>/mcp.json for every project, .xcsh/mcp.json for one."

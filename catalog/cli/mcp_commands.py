"""`sessdex mcp`: serve past sessions and prompts to coding agents over the Model Context Protocol (read-only).

The SDK and the server are imported here only, when the command runs: no other command pays for them.
"""

from __future__ import annotations

import argparse
import os

from sessdex.catalog.mcp.client_config import CLIENTS

TYPE_CHECKING = False  # see the README's start-up budget
if TYPE_CHECKING:
    from sessdex.catalog.store.settings import Settings


def _port(text: str) -> int:
    """An argument type: a TCP port, 0 (any free port) to 65535."""
    if not text.isdigit() or not 0 <= int(text) <= 65535:
        raise argparse.ArgumentTypeError(f"{text!r} is not a port number from 0 to 65535")
    return int(text)


def add_mcp_arguments(parser: argparse.ArgumentParser) -> None:
    parser.description = """\
Serve this agent dir's sessions and prompt history to coding agents over MCP (read-only):
tools search_sessions, list_sessions, read_session, search_prompts, usage_report and the
resource session://<id>. Secrets are redacted from every answer.

Over stdio by default (the client starts `sessdex mcp`); with --http, streamable HTTP on
127.0.0.1 with a bearer token ($SESSDEX_MCP_TOKEN, the --token-file, else a new one printed
on stderr). `--print-config CLIENT` prints the client's configuration snippet."""
    parser.add_argument("--http", action="store_true", help="Serve streamable HTTP on 127.0.0.1 instead of stdio.")
    parser.add_argument("--port", type=_port, default=None,
                        help="The HTTP port (default 8765; 0 picks a free one). Needs --http.")
    parser.add_argument("--token-file", metavar="FILE", default=None,
                        help="Read the HTTP token from FILE, or store a new one there (0600). Needs --http.")
    parser.add_argument("--print-config", metavar="CLIENT", choices=CLIENTS, default=None,
                        help=f"Print the configuration snippet of {', '.join(CLIENTS)} and exit.")


def _global_args(args: argparse.Namespace) -> list[str]:
    """The global options given on this command line, for the configuration snippet (absolute paths)."""
    found: list[str] = []
    for option, name in (("--agent-dir", "agent_dir"), ("--catalog", "catalog"), ("--machine", "machine"),
                         ("--machines", "machines")):
        value = getattr(args, name, None)
        if value is not None:
            if name == "agent_dir" or (name == "catalog" and "://" not in value and value != "off"):
                value = os.path.abspath(os.path.expanduser(value))
            found += [option, value]
    return found


def run_mcp(args: argparse.Namespace, settings: Settings) -> int:
    from sessdex.catalog.cli.output import echo
    from sessdex.core.errors import UsageError

    if not args.http and (args.port is not None or args.token_file is not None):
        raise UsageError("--port and --token-file need --http")
    if args.print_config is not None:
        from sessdex.catalog.mcp.client_config import client_config

        server_args = [*_global_args(args), "mcp"]
        snippet, where = client_config(args.print_config, server_args)
        echo(snippet)
        echo(where, err=True)
        return 0
    return _serve(args, settings)


def _serve(args: argparse.Namespace, settings: Settings) -> int:
    from sessdex.catalog.cli.commands import agent_dir_named
    from sessdex.catalog.cli.marks_filters import pinned_first
    from sessdex.catalog.cli.output import current_directory, search_query, session_json
    from sessdex.catalog.cli.read_guard import require_agent_dir
    from sessdex.catalog.cli.search_commands import history_json, hit_json
    from sessdex.catalog.mcp import server
    from sessdex.catalog.mcp.tools import SessionTools, Shapes

    require_agent_dir(settings.paths, agent_dir_named(args))
    shapes = Shapes(session_json=session_json, hit_json=hit_json, history_json=history_json,
                    search_query=search_query, pinned_first=pinned_first)
    tools = SessionTools(settings, shapes, current_directory())
    if args.http:
        server.run_http(tools, server.DEFAULT_PORT if args.port is None else args.port, args.token_file)
    else:
        server.run_stdio(tools)
    return 0

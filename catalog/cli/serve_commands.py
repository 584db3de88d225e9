"""`sessdex serve`: the catalog as a local web page (search, projects, transcripts, usage, prompt history).

Starlette, uvicorn and Jinja2 are imported only here, when the command runs: no other command pays for them.
"""

from __future__ import annotations

import argparse
import socket
from typing import TYPE_CHECKING

from sessdex.catalog.cli.commands import agent_dir_named
from sessdex.catalog.cli.output import echo
from sessdex.core.errors import UsageError

if TYPE_CHECKING:
    from sessdex.catalog.store.settings import Settings

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8765
WILDCARD_HOSTS = ("0.0.0.0", "::", "")


def _port(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = -1
    if not 0 <= value <= 65535:
        raise argparse.ArgumentTypeError(f"{text!r} is not a port number (0 to 65535; 0 picks a free one)")
    return value


def add_serve_arguments(parser: argparse.ArgumentParser) -> None:
    parser.description = """\
Serve the session history as a local web page: search as you type, projects and their sessions, transcripts
(rendered as `sessdex export` renders them), usage charts and the prompt history.

The page is read-only and answers only on this machine (127.0.0.1) unless --host names another address, which
also needs --allow-remote. Every request needs the random token of this run, given in the address printed at
start; secrets found in session text are shown redacted unless --no-redact."""
    parser.add_argument("--port", type=_port, default=DEFAULT_PORT,
                        help=f"The port to listen on (default {DEFAULT_PORT}; 0 picks a free port).")
    parser.add_argument("--host", default=DEFAULT_HOST,
                        help=f"The address to listen on (default {DEFAULT_HOST}, this machine only).")
    parser.add_argument("--allow-remote", action="store_true",
                        help="Allow a --host other machines can reach (the token is still required).")
    parser.add_argument("--open", dest="open_browser", action="store_true", help="Open the page in a browser.")
    parser.add_argument("--no-redact", dest="redact", action="store_false",
                        help="Show detected secrets in session text instead of [REDACTED:<kind>].")


def _listening_socket(host: str, port: int) -> socket.socket:
    """A socket bound and listening on host:port (before the server starts, so the real port is known)."""
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    except socket.gaierror as exc:
        raise UsageError(f"--host {host}: {exc.strerror or exc}") from None
    family, kind, proto, _name, address = infos[0]
    sock = socket.socket(family, kind, proto)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(address)
        sock.listen(128)
    except OSError as exc:
        sock.close()
        raise UsageError(f"cannot listen on {host}:{port}: {exc.strerror or exc}"
                         + ("; pass another --port (0 picks a free one)" if port else "")) from None
    return sock


def run_serve(args: argparse.Namespace, settings: Settings) -> int:
    from sessdex.catalog.cli.read_guard import require_agent_dir
    from sessdex.catalog.web.security import is_loopback, new_token

    host = args.host.strip()
    if host in WILDCARD_HOSTS:
        raise UsageError(f"--host {host or '(empty)'}: name one address to listen on, not every address")
    if not is_loopback(host) and not args.allow_remote:
        raise UsageError(f"--host {host} can be reached from other machines; pass --allow-remote to serve there")
    if settings.catalog_off:
        raise UsageError("sessdex serve reads the catalog; it cannot run with --catalog off")
    require_agent_dir(settings.paths, agent_dir_named(args))

    import uvicorn

    from sessdex.catalog.web.app import create_app
    from sessdex.catalog.web.data import WebCatalog

    if not args.redact:
        echo("sessdex serve: warning: --no-redact: pages show any secret the sessions hold", err=True)
    web = WebCatalog(settings, redact=args.redact, start_watcher=True)
    sock = _listening_socket(host, args.port)
    port = sock.getsockname()[1]
    token = new_token()
    app = create_app(web, token=token, host=host, port=port)
    shown_host = f"[{host}]" if ":" in host else host
    url = f"http://{shown_host}:{port}/?token={token}"
    # The access log would write every address, the token's first one included: it stays off.
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", access_log=False, lifespan="on",
                                           server_header=False, date_header=False))
    echo(f"sessdex serve: {url}")
    echo("sessdex serve: read-only; press Ctrl+C to stop", err=True)
    if args.open_browser:
        import threading
        import webbrowser

        threading.Timer(0.5, webbrowser.open, args=(url,)).start()
    try:
        server.run(sockets=[sock])
    finally:
        sock.close()
    return 0

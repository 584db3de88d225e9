"""The MCP server of `sessdex mcp`: the tools of `sessdex.catalog.mcp.tools` declared to the official SDK, run over
stdio or streamable HTTP (127.0.0.1 only, behind a bearer token).

Every call runs on one worker thread that owns the open session source (the catalog stays open between calls: a
call costs what the query costs). A failure comes back as an MCP tool error of one line: sessdex's own message for
a bad argument, an unknown or ambiguous id, a missing history; the argument names (never the values given) when
the arguments do not fit the schema.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import hmac
import logging
import os
import secrets
import socket
import sqlite3
import stat
import sys
from collections.abc import Callable
from typing import Annotated, Any, Literal, TypeVar

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ResourceError, ToolError
from mcp_types import ToolAnnotations
from pydantic import Field, ValidationError

from sessdex.catalog.mcp import tools as t
from sessdex.core.errors import SessdexError, UsageError

SERVER_NAME = "sessdex"
TOKEN_ENV = "SESSDEX_MCP_TOKEN"
MIN_TOKEN_CHARS = 16
DEFAULT_PORT = 8765
HTTP_PATH = "/mcp"
INSTRUCTIONS = """\
Past sessions of the xcsh coding agent and the prompts typed into it, read-only. Use search_sessions to find \
sessions about a topic (full-text, every word must match), list_sessions for the newest ones, read_session to read \
one (summary, the context the model saw, or the whole transcript; page with offset), search_prompts for earlier \
prompts and usage_report for tokens and cost. Sessions are named by id or id prefix. Secrets are redacted."""
READ_ONLY = ToolAnnotations(read_only_hint=True, destructive_hint=False, idempotent_hint=True, open_world_hint=False)

Result = TypeVar("Result")
log = logging.getLogger(__name__)

Query = Annotated[str, Field(description="Words to look for (every word must match, as a word prefix); taken "
                                         "literally: quotes, AND/OR and * mean nothing special.",
                             min_length=1, max_length=1000)]
Project = Annotated[str | None, Field(description="The project's directory (absolute path); default: the directory "
                                                  "the server runs in.", max_length=4096)]
AllProjects = Annotated[bool, Field(description="Every project instead of one.")]
Day = Annotated[str | None, Field(description="A local day, YYYY-MM-DD.", max_length=10)]
SessionArg = Annotated[str, Field(description="A session id or a unique id prefix (as `sessdex resume` takes), or a "
                                              "session file path.", min_length=1, max_length=4096)]


def one_line_error(exc: BaseException) -> str:
    """The message a tool error carries: sessdex's one line; for arguments that do not fit the schema, which
    arguments and why (the values are the caller's data and stay out)."""
    cause = exc.__cause__
    if isinstance(cause, ValidationError):
        reasons = [f"{'.'.join(str(part) for part in error['loc'])}: {error['msg']}" for error in cause.errors()]
        return "invalid arguments: " + "; ".join(reasons)
    return t.one_line(str(exc))


class SessdexMCPServer(MCPServer[Any]):
    """MCPServer whose tool errors are one line (the SDK's own validation errors span several)."""

    async def call_tool(self, name: str, arguments: dict[str, Any], context: Any = None) -> Any:
        try:
            return await super().call_tool(name, arguments, context)
        except ToolError as exc:
            raise ToolError(one_line_error(exc)) from None


class Worker:
    """One thread for every call, so the session source it opened is only ever used from that thread."""

    def __init__(self, session_tools: t.SessionTools) -> None:
        self.tools = session_tools
        self._executor = concurrent.futures.ThreadPoolExecutor(max_workers=1, thread_name_prefix="sessdex-mcp")

    async def run(self, function: Callable[[], Result]) -> Result:
        future = self._executor.submit(self._guarded, function)
        return await asyncio.wrap_future(future)

    @staticmethod
    def _guarded(function: Callable[[], Result]) -> Result:
        try:
            return function()
        except (SessdexError, LookupError, ValueError) as exc:
            raise ToolError(t.one_line(str(exc))) from None
        except OSError as exc:
            where = f": {exc.filename}" if exc.filename else ""
            raise ToolError(f"{exc.strerror or exc}{where}") from None
        except sqlite3.Error as exc:
            raise ToolError(f"the catalog failed: {t.one_line(str(exc))}; `sessdex doctor` repairs it") from None
        except Exception as exc:  # a bug: the caller gets one line, the server's stderr the traceback
            log.exception("sessdex mcp: a tool failed")
            raise ToolError(f"internal error: {type(exc).__name__}") from None

    def close(self) -> None:
        self._executor.submit(self.tools.close).result()
        self._executor.shutdown(wait=True)


def build_server(session_tools: t.SessionTools) -> tuple[SessdexMCPServer, Worker]:
    """The MCP server with sessdex's tools and the `session://<id>` resource, and the worker that runs them."""
    import sessdex

    worker = Worker(session_tools)
    server = SessdexMCPServer(SERVER_NAME, title="sessdex: xcsh session history", instructions=INSTRUCTIONS,
                              version=sessdex.__version__, log_level="WARNING")

    @server.tool(annotations=READ_ONLY, structured_output=True)
    async def search_sessions(
            query: Query, project: Project = None, all_projects: AllProjects = False,
            since: Annotated[Day, Field(description="Only sessions last changed on or after this local day "
                                                    "(YYYY-MM-DD).")] = None,
            until: Annotated[Day, Field(description="Only sessions last changed on or before this local day.")] = None,
            limit: Annotated[int, Field(ge=1, le=t.MAX_SEARCH_RESULTS, description="At most this many sessions.")]
            = t.DEFAULT_SEARCH_RESULTS) -> dict[str, Any]:
        """Full-text search over past sessions' titles, first messages and message text, best match first.

        Each result is a session (id, title, project `cwd`, created/modified dates, message count, cost, tokens)
        with where it matched (`field`) and a `snippet`, matches between [ and ]. Pass a result's `id` to
        read_session."""
        return await worker.run(lambda: session_tools.search_sessions(query, project, all_projects, since, until,
                                                                       limit))

    @server.tool(annotations=READ_ONLY, structured_output=True)
    async def list_sessions(
            project: Project = None, all_projects: AllProjects = False,
            since: Annotated[Day, Field(description="Only sessions last changed on or after this local day "
                                                    "(YYYY-MM-DD).")] = None,
            limit: Annotated[int, Field(ge=1, le=t.MAX_LIST_RESULTS, description="At most this many sessions.")]
            = t.DEFAULT_LIST_RESULTS) -> dict[str, Any]:
        """The sessions with at least one message (of this project, or every project), pinned first, then newest
        first, with their id, title, dates, message count, cost, tokens and marks (pinned, starred, tags, note);
        `total` counts every one that matched."""
        return await worker.run(lambda: session_tools.list_sessions(project, all_projects, since, limit))

    @server.tool(annotations=READ_ONLY, structured_output=True)
    async def read_session(
            session: SessionArg,
            view: Annotated[Literal["summary", "context", "transcript"], Field(
                description="summary: title, figures and the user's prompts; context: the messages the model saw "
                            "at the session's last entry (after compaction); transcript: every message of the "
                            "current branch, with tool calls and results, as Markdown.")] = "summary",
            max_chars: Annotated[int, Field(ge=100, le=t.MAX_READ_CHARS, description="The most characters of text "
                                                                                     "to return.")]
            = t.DEFAULT_READ_CHARS,
            offset: Annotated[int, Field(ge=0, le=10**12, description="Where the text starts: 0, or the "
                                                                     "`nextOffset` of the previous call.")] = 0,
    ) -> dict[str, Any]:
        """Read one session as text: `text` holds at most max_chars characters from offset; `nextOffset` is where
        the next page starts (null at the end) and `totalChars` the whole length."""
        return await worker.run(lambda: session_tools.read_session(session, view, max_chars, offset))

    @server.tool(annotations=READ_ONLY, structured_output=True)
    async def search_prompts(
            query: Query,
            here: Annotated[bool, Field(description="Only prompts sent from the server's directory.")] = False,
            limit: Annotated[int, Field(ge=1, le=t.MAX_PROMPT_RESULTS, description="At most this many prompts.")]
            = t.DEFAULT_PROMPT_RESULTS) -> dict[str, Any]:
        """Search the prompts typed into the agent (its history.db, every project), newest first: each prompt
        with its time (`created`), directory (`cwd`) and a snippet around the match."""
        return await worker.run(lambda: session_tools.search_prompts(query, here, limit))

    @server.tool(annotations=READ_ONLY, structured_output=True)
    async def usage_report(
            kind: Annotated[Literal["daily", "weekly", "monthly", "session", "project", "model"], Field(
                description="Rows per local day, week (from Monday), month, session, project or model.")] = "daily",
            since: Annotated[Day, Field(description="First local day to count (YYYY-MM-DD).")] = None,
            until: Annotated[Day, Field(description="Last local day to count (YYYY-MM-DD).")] = None,
            project: Project = None, all_projects: AllProjects = False) -> dict[str, Any]:
        """Tokens and cost of every assistant message, per row of `kind`, with `totals`; an entry a fork copied
        from its parent session is counted once, in the parent."""
        return await worker.run(lambda: session_tools.usage_report(kind, since, until, project, all_projects))

    @server.resource("session://{session_id}", name="session", mime_type="text/markdown",
                     description="A session's transcript as Markdown (secrets redacted), by id or id prefix.")
    async def session_resource(session_id: str) -> str:
        try:
            return await worker.run(lambda: session_tools.session_resource(session_id))
        except ToolError as exc:
            raise ResourceError(str(exc)) from None

    return server, worker


# -- running ----------------------------------------------------------------------------------------------------

def run_stdio(session_tools: t.SessionTools) -> None:
    server, worker = build_server(session_tools)
    try:
        server.run("stdio")
    finally:
        worker.close()


def resolve_token(token_file: str | None) -> tuple[str, bool]:
    """The HTTP bearer token and whether it is new (to print): `$SESSDEX_MCP_TOKEN`, else the token in
    `token_file` (created 0600 with a new token when missing), else a new one."""
    given = os.environ.get(TOKEN_ENV)
    if given is not None:
        if len(given.strip()) < MIN_TOKEN_CHARS:
            raise UsageError(f"${TOKEN_ENV} must hold at least {MIN_TOKEN_CHARS} characters")
        return given.strip(), False
    if token_file is None:
        return secrets.token_urlsafe(32), True
    return _token_in_file(token_file)


def _token_in_file(path: str) -> tuple[str, bool]:
    """The token stored in `path` (a regular 0600 file of ours, never followed through a symlink), or a new one
    written there."""
    token = secrets.token_urlsafe(32)
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    except FileExistsError:
        fd = -1
    except OSError as exc:
        raise UsageError(f"cannot write the token file {path}: {exc.strerror or exc}") from None
    if fd >= 0:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(token + "\n")
        return token, True
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError as exc:
        raise UsageError(f"cannot read the token file {path}: {exc.strerror or exc}") from None
    with os.fdopen(fd, encoding="utf-8") as handle:
        info = os.fstat(handle.fileno())
        if not stat.S_ISREG(info.st_mode) or info.st_uid != os.getuid() or info.st_mode & 0o077:
            raise UsageError(f"{path} must be a regular file of yours that only you can read (0600)")
        stored = handle.read().strip()
    if len(stored) < MIN_TOKEN_CHARS:
        raise UsageError(f"the token in {path} must hold at least {MIN_TOKEN_CHARS} characters")
    return stored, False


class BearerGate:
    """ASGI middleware: HTTP requests without `Authorization: Bearer <token>` get 401 and never reach the server."""

    def __init__(self, app: Any, token: str) -> None:
        self.app = app
        self.expected = f"Bearer {token}".encode()

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "http":
            given = next((value for name, value in scope.get("headers", ()) if name == b"authorization"), b"")
            if not hmac.compare_digest(given, self.expected):
                body = b'{"error": "missing or wrong bearer token"}'
                await send({"type": "http.response.start", "status": 401,
                            "headers": [(b"content-type", b"application/json"), (b"www-authenticate", b"Bearer"),
                                        (b"content-length", str(len(body)).encode())]})
                await send({"type": "http.response.body", "body": body})
                return
        await self.app(scope, receive, send)


def run_http(session_tools: t.SessionTools, port: int, token_file: str | None) -> None:
    """Serve streamable HTTP on 127.0.0.1:`port` (0: any free port), every request checked for the token."""
    import uvicorn

    token, new = resolve_token(token_file)
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        listener.bind(("127.0.0.1", port))
    except OSError as exc:
        listener.close()
        raise UsageError(f"cannot listen on 127.0.0.1:{port}: {exc.strerror or exc}") from None
    listener.listen(64)
    bound = listener.getsockname()[1]
    server, worker = build_server(session_tools)
    app = BearerGate(server.streamable_http_app(streamable_http_path=HTTP_PATH, host="127.0.0.1"), token)
    message = f"sessdex mcp: serving http://127.0.0.1:{bound}{HTTP_PATH}"
    if new and token_file is None:
        message += f" (token: {token})"
    elif new:
        message += f" (token stored in {token_file})"
    print(message, file=sys.stderr, flush=True)
    config = uvicorn.Config(app, log_level="warning", lifespan="on")
    try:
        uvicorn.Server(config).run(sockets=[listener])
    finally:
        listener.close()
        worker.close()

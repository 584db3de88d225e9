"""What every request of `sessdex serve` passes before a page is made: the Host check and the per-run token.

A page served on 127.0.0.1 can still be reached by a hostile web page through DNS rebinding (a name of the
attacker's that resolves to 127.0.0.1): the browser then sends that name in `Host`, so only the names the server
was started for are answered. Any other local program or page that guesses the port still lacks the random
token printed with the URL (as Jupyter does): the first request carries it in the query (`?token=`), is answered
with a same-site, HTTP-only cookie and redirected to the same address without it, so the token leaves the
address bar and the history at once. Every response carries a strict Content-Security-Policy (scripts and
styles only from the app itself, no frames, nothing fetched from elsewhere) and headers that keep it out of
frames, caches and referrers. The app is read-only: anything but GET and HEAD is refused.
"""

from __future__ import annotations

import hmac
import ipaddress
import secrets
from collections.abc import Awaitable, Callable, MutableMapping
from http.cookies import SimpleCookie
from typing import Any
from urllib.parse import parse_qsl, quote, urlencode

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

TOKEN_PARAMETER = "token"
CONTENT_SECURITY_POLICY = ("default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
                           "connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'")
SECURITY_HEADERS: list[tuple[bytes, bytes]] = [
    (b"content-security-policy", CONTENT_SECURITY_POLICY.encode()),
    (b"x-content-type-options", b"nosniff"),
    (b"x-frame-options", b"DENY"),
    (b"referrer-policy", b"no-referrer"),
    (b"cross-origin-opener-policy", b"same-origin"),
    (b"cross-origin-resource-policy", b"same-origin"),
    (b"cache-control", b"no-store"),
]
LOOPBACK_NAMES = ("localhost", "127.0.0.1", "::1")


def new_token() -> str:
    """A fresh random token for one run of the server (256 bits, URL-safe)."""
    return secrets.token_urlsafe(32)


def is_loopback(host: str) -> bool:
    """Whether `host` (a name or an address to bind) is this machine only."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def allowed_hosts(bind_host: str, port: int) -> frozenset[str]:
    """The `Host` header values the server answers: the loopback names (when bound to loopback) or the host it
    was bound to, with and without the port."""
    names = set(LOOPBACK_NAMES) if is_loopback(bind_host) else {bind_host}
    values = set()
    for name in names:
        shown = f"[{name}]" if ":" in name and not name.startswith("[") else name
        values.update({shown.lower(), f"{shown}:{port}".lower()})
    return frozenset(values)


def cookie_name(port: int) -> str:
    """The token cookie's name: cookies are shared by every port of a host, so each port has its own."""
    return f"sessdex-token-{port}"


def _header(scope: Scope, name: bytes) -> str:
    for key, value in scope.get("headers", []):
        if key == name:
            return bytes(value).decode("latin-1")
    return ""


def _same(given: str, token: str) -> bool:
    return bool(given) and hmac.compare_digest(given.encode("utf-8", "replace"), token.encode())


class Guard:
    """ASGI middleware: Host check, token check, read-only methods, security headers on every response."""

    def __init__(self, app: ASGIApp, *, token: str, hosts: frozenset[str], port: int) -> None:
        self.app = app
        self.token = token
        self.hosts = hosts
        self.cookie = cookie_name(port)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            if scope["type"] == "lifespan":
                await self.app(scope, receive, send)
            return  # no websockets

        async def send_with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                message["headers"] = [*message.get("headers", []), *SECURITY_HEADERS]
            await send(message)

        if _header(scope, b"host").lower() not in self.hosts:
            await _plain(send_with_headers, 403, "Forbidden: unknown Host header")
            return
        if scope["method"] not in ("GET", "HEAD"):
            await _plain(send_with_headers, 405, "Method not allowed: this server is read-only")
            return
        query = parse_qsl(bytes(scope.get("query_string", b"")).decode("latin-1"), keep_blank_values=True)
        given = [value for key, value in query if key == TOKEN_PARAMETER]
        if given and _same(given[-1], self.token):
            rest = urlencode([(key, value) for key, value in query if key != TOKEN_PARAMETER])
            await _redirect_with_cookie(send_with_headers, quote(scope["path"]) + (f"?{rest}" if rest else ""),
                                        self.cookie, self.token)
            return
        cookies = SimpleCookie()
        try:
            cookies.load(_header(scope, b"cookie"))
        except Exception:  # a malformed Cookie header is no token
            cookies = SimpleCookie()
        morsel = cookies.get(self.cookie)
        if not (morsel is not None and _same(morsel.value, self.token)):
            await _plain(send_with_headers, 403,
                         "Forbidden: open the address `sessdex serve` printed (it carries this run's token)")
            return
        await self.app(scope, receive, send_with_headers)


async def _plain(send: Send, status: int, text: str) -> None:
    body = (text + "\n").encode()
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", b"text/plain; charset=utf-8"),
                            (b"content-length", str(len(body)).encode())]})
    await send({"type": "http.response.body", "body": body})


async def _redirect_with_cookie(send: Send, location: str, name: str, token: str) -> None:
    # Only a path of this app is ever the target: a query string cannot turn it into another site's address.
    target = "/" + location.lstrip("/")  # already percent-encoded by the caller
    cookie = f"{name}={token}; Path=/; HttpOnly; SameSite=Strict"
    await send({"type": "http.response.start", "status": 303,
                "headers": [(b"location", target.encode("latin-1", "replace")), (b"set-cookie", cookie.encode()),
                            (b"content-length", b"0")]})
    await send({"type": "http.response.body", "body": b""})

"""The MCP server's HTTP guard: the bind address checked and normalized, a non-loopback bind refused unless a
strong bearer token is configured (``TALKTHROUGH_MCP_TOKEN``), and an ASGI wrapper that requires that token on
every request."""

from __future__ import annotations

import hmac
import ipaddress
import json
import re

from talkthrough_assets.core.errors import TalkthroughError

TOKEN_ENV = "TALKTHROUGH_MCP_TOKEN"


class BindRefused(TalkthroughError, RuntimeError):
    """A bind address the server refuses (not an address, or non-loopback without a strong token)."""


_HOSTNAME = re.compile(r"^[A-Za-z0-9](?:[A-Za-z0-9.-]{0,251}[A-Za-z0-9])?$")


def normalize_host(host: str) -> str:
    """The bind address as uvicorn needs it: surrounding blanks and IPv6 brackets removed. Raises
    BindRefused for anything that is neither an IP address nor a host name (e.g. inner blanks)."""
    h = (host or "").strip()
    if h.startswith("[") and h.endswith("]"):
        h = h[1:-1]
    try:
        return str(ipaddress.ip_address(h))
    except ValueError:
        pass
    if not _HOSTNAME.fullmatch(h):
        raise BindRefused(f"invalid --host {host!r}: expected an IP address (127.0.0.1, ::1) or a host name")
    return h


def is_loopback(host: str) -> bool:
    h = host.strip().strip("[]")
    if h.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(h).is_loopback
    except ValueError:
        return False  # a host name: it may resolve anywhere


TOKEN_MIN_CHARS = 32
TOKEN_MIN_DISTINCT = 10


def token_problem(token: str) -> str | None:
    """Why ``token`` is too weak to guard a non-loopback bind (None when it is fine): at least 32
    characters with at least 10 distinct ones, e.g. ``python -c 'import secrets; print(secrets.token_urlsafe(32))'``
    (43 characters, 256 bits). A loopback bind takes any token: only local processes reach it."""
    if len(token) < TOKEN_MIN_CHARS:
        return f"is {len(token)} characters; a non-loopback bind needs at least {TOKEN_MIN_CHARS}"
    if len(set(token)) < TOKEN_MIN_DISTINCT:
        return f"has only {len(set(token))} distinct characters; at least {TOKEN_MIN_DISTINCT} are needed"
    return None


def check_bind(host: str, token: str | None) -> None:
    if is_loopback(host):
        return
    if not token:
        raise BindRefused(f"refusing to serve on non-loopback address {host!r} without a bearer token: "
                          f"set {TOKEN_ENV} (clients then send 'Authorization: Bearer <token>'), "
                          "or bind 127.0.0.1")
    problem = token_problem(token)
    if problem:
        raise BindRefused(f"refusing to serve on non-loopback address {host!r}: {TOKEN_ENV} {problem} "
                          "(make one with: python -c 'import secrets; print(secrets.token_urlsafe(32))')")


class BearerAuth:
    """ASGI guard: every HTTP request must carry ``Authorization: Bearer <token>``."""

    def __init__(self, app, token: str):
        self.app = app
        self.token = token.encode()

    async def __call__(self, scope, receive, send):
        if scope["type"] == "http":
            got = next((v for k, v in scope.get("headers", []) if k.lower() == b"authorization"), b"")
            scheme, _, value = got.partition(b" ")
            if scheme.lower() != b"bearer" or not hmac.compare_digest(value.strip(), self.token):
                body = json.dumps({"error": "unauthorized",
                                   "message": "missing or wrong bearer token (Authorization: Bearer <token>)"}).encode()
                await send({"type": "http.response.start", "status": 401,
                            "headers": [(b"content-type", b"application/json"),
                                        (b"www-authenticate", b'Bearer realm="talkthrough"'),
                                        (b"content-length", str(len(body)).encode())]})
                await send({"type": "http.response.body", "body": body})
                return
        await self.app(scope, receive, send)

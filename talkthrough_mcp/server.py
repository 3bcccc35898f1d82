"""The MCP surface: registers the read tools and workflow prompts on the official SDK's MCPServer.

Thin by design: each tool is one call into :class:`talkthrough_mcp.reader.Reader`; this module
only maps results to content blocks (JSON text, JPEG image blocks) and reader errors to
``isError`` results. Transports: stdio (default) and streamable HTTP on loopback; a
non-loopback bind is refused unless a bearer token is configured, and a configured token is
always required.
"""

from __future__ import annotations

import base64
import hmac
import ipaddress
import json
import logging
import os
import sys
import threading
from typing import Annotated, Callable

from mcp.server.mcpserver import MCPServer
from mcp_types import CallToolResult, ImageContent, TextContent, ToolAnnotations
from pydantic import Field

from . import guidance
from .errors import ReadError
from .reader import ImageResult, Reader, default_reader, dumps

log = logging.getLogger("talkthrough_mcp")

VERSION = "0.1.0"
TOKEN_ENV = "TALKTHROUGH_MCP_TOKEN"
DEFAULT_PORT = 8765
READ_ONLY = ToolAnnotations(read_only_hint=True, destructive_hint=False, idempotent_hint=True,
                            open_world_hint=False)

RecordingId = Annotated[str, Field(description="recording id: 16 lowercase hex chars (from list_recordings/search)")]
StartMs = Annotated[int | None, Field(description="window start, ms from the recording start (>= 0)")]
EndMs = Annotated[int | None, Field(description="window end, ms from the recording start (>= start_ms)")]


# --------------------------------------------------------------------------- result mapping

def to_result(result: dict | ImageResult) -> CallToolResult:
    if isinstance(result, ImageResult):
        content: list = [TextContent(type="text", text=dumps(result.meta))]
        for img in result.images:
            content.append(TextContent(type="text", text=img.caption))
            content.append(ImageContent(type="image", data=base64.b64encode(img.data).decode("ascii"),
                                        mime_type=img.mime_type))
        return CallToolResult(content=content)
    return CallToolResult(content=[TextContent(type="text", text=dumps(result))])


def error_result(err: ReadError) -> CallToolResult:
    return CallToolResult(content=[TextContent(type="text", text=dumps(err.to_dict()))], is_error=True)


def call(fn: Callable, **kwargs) -> CallToolResult:
    """Run one reader call; reader errors become isError results, never protocol errors or crashes."""
    try:
        return to_result(fn(**kwargs))
    except ReadError as e:
        return error_result(e)
    except Exception as e:  # a bug or a damaged file: still a readable tool error
        log.exception("tool failed")
        err = ReadError(f"internal error: {type(e).__name__}: {e}".splitlines()[0][:300],
                        hint="retry; if it persists, reprocess the recording or report the bug")
        err.code = "internal"
        return error_result(err)


# --------------------------------------------------------------------------- server

def build_server(reader: Reader | None = None) -> MCPServer:
    rd = (lambda: reader) if reader is not None else default_reader
    mcp = MCPServer(name="talkthrough", title="Talkthrough recordings (read-only)",
                    instructions=guidance.INSTRUCTIONS, version=VERSION, log_level="WARNING")

    @mcp.tool(description=guidance.description("list_recordings"), annotations=READ_ONLY)
    def list_recordings(
        offset: Annotated[int, Field(description="skip this many recordings (>= 0)")] = 0,
        limit: Annotated[int, Field(description="page size, 1..100")] = 20,
    ) -> CallToolResult:
        return call(rd().list_recordings, offset=offset, limit=limit)

    @mcp.tool(description=guidance.description("get_transcript"), annotations=READ_ONLY)
    def get_transcript(
        id: RecordingId,
        start_ms: StartMs = None,
        end_ms: EndMs = None,
        speaker: Annotated[str | None, Field(description="speaker label (S1) or name; diarized only")] = None,
        format: Annotated[str, Field(description="json segments or srt (SubRip text)",
                                     json_schema_extra={"enum": ["json", "srt"]})] = "json",
        max_chars: Annotated[int, Field(description="response size cap, 1000..30000 characters")] = 30000,
    ) -> CallToolResult:
        return call(rd().get_transcript, recording_id=id, start_ms=start_ms, end_ms=end_ms, speaker=speaker,
                    format=format, max_chars=max_chars)

    @mcp.tool(description=guidance.description("get_frames"), annotations=READ_ONLY)
    def get_frames(
        id: RecordingId,
        start_ms: StartMs = None,
        end_ms: EndMs = None,
        include_duplicates: Annotated[bool, Field(description="also frames identical to the previous one")] = False,
        limit: Annotated[int, Field(description="images per call, 1..6")] = 6,
    ) -> CallToolResult:
        return call(rd().get_frames, recording_id=id, start_ms=start_ms, end_ms=end_ms,
                    include_duplicates=include_duplicates, limit=limit)

    @mcp.tool(description=guidance.description("get_moment"), annotations=READ_ONLY)
    def get_moment(
        id: RecordingId,
        t_ms: Annotated[int, Field(description="the instant, ms from the recording start")],
        window_ms: Annotated[int, Field(description="transcript +- this many ms around t_ms, 0..60000")] = 10000,
    ) -> CallToolResult:
        return call(rd().get_moment, recording_id=id, t_ms=t_ms, window_ms=window_ms)

    @mcp.tool(description=guidance.description("search"), annotations=READ_ONLY)
    def search(
        query: Annotated[str, Field(description="words to find (case and accents are ignored)")],
        id: Annotated[str | None, Field(description="limit to one recording id")] = None,
        limit: Annotated[int, Field(description="hits to return, 1..50")] = 10,
    ) -> CallToolResult:
        return call(rd().search, query=query, recording_id=id, limit=limit)

    @mcp.tool(description=guidance.description("extract_frame"), annotations=READ_ONLY)
    def extract_frame(
        id: RecordingId,
        t_ms: Annotated[int, Field(description="the exact instant, ms from the recording start")],
    ) -> CallToolResult:
        return call(rd().extract_frame, recording_id=id, t_ms=t_ms)

    spec = guidance.PROMPTS

    @mcp.prompt(name="triage_recording", description=spec["triage_recording"]["description"])
    def triage_recording(recording_id: str) -> str:
        return guidance.render("triage_recording", recording_id=recording_id)

    @mcp.prompt(name="meeting_actions", description=spec["meeting_actions"]["description"])
    def meeting_actions(recording_id: str) -> str:
        return guidance.render("meeting_actions", recording_id=recording_id)

    @mcp.prompt(name="correlate_with_logs", description=spec["correlate_with_logs"]["description"])
    def correlate_with_logs(recording_id: str, log_excerpt: str) -> str:
        return guidance.render("correlate_with_logs", recording_id=recording_id, log_excerpt=log_excerpt)

    return mcp


# --------------------------------------------------------------------------- HTTP guard

class BindRefused(RuntimeError):
    pass


def is_loopback(host: str) -> bool:
    if host.strip().lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip().strip("[]")).is_loopback
    except ValueError:
        return False  # a host name: it may resolve anywhere


def check_bind(host: str, token: str | None) -> None:
    if not is_loopback(host) and not token:
        raise BindRefused(f"refusing to serve on non-loopback address {host!r} without a bearer token: "
                          f"set {TOKEN_ENV} (clients then send 'Authorization: Bearer <token>'), "
                          "or bind 127.0.0.1")


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


# --------------------------------------------------------------------------- entry point

def _warm(reader: Reader) -> None:
    def run() -> None:
        try:
            reader.warm()
        except Exception:  # the first tool call retries and reports properly
            log.warning("index warm-up failed", exc_info=True)

    threading.Thread(target=run, name="talkthrough-index-warmup", daemon=True).start()


def serve(*, http: bool = False, host: str = "127.0.0.1", port: int = DEFAULT_PORT, token: str | None = None) -> int:
    """Run the server until the client disconnects (stdio) or the process is stopped (HTTP)."""
    token = token if token is not None else (os.environ.get(TOKEN_ENV) or None)
    if http:
        try:
            check_bind(host, token)
        except BindRefused as e:
            print(f"talkthrough mcp: {e}", file=sys.stderr)
            return 2
    reader = default_reader()
    server = build_server(reader)
    _warm(reader)
    if not http:
        server.run("stdio")
        return 0
    import uvicorn

    app = server.streamable_http_app(host=host)
    if token:
        app = BearerAuth(app, token)
    shown = f"[{host}]" if ":" in host else host
    print(f"talkthrough mcp: streamable HTTP on http://{shown}:{port}/mcp"
          + (" (bearer token required)" if token else ""), file=sys.stderr, flush=True)
    uvicorn.run(app, host=host, port=port, log_level="warning")
    return 0


def main(argv: list[str] | None = None) -> int:
    """``python -m talkthrough_mcp [--http] [--host H] [--port P]`` (same as ``talkthrough mcp``)."""
    import argparse

    ap = argparse.ArgumentParser(prog="talkthrough-mcp", description="Read-only MCP server over Talkthrough data.")
    ap.add_argument("--http", action="store_true", help="streamable HTTP instead of stdio")
    ap.add_argument("--host", default="127.0.0.1", help="HTTP bind address (non-loopback needs a token)")
    ap.add_argument("--port", type=int, default=DEFAULT_PORT, help="HTTP port")
    a = ap.parse_args(argv)
    return serve(http=a.http, host=a.host, port=a.port)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())

"""The MCP surface: registers the read tools and workflow prompts on the official SDK's MCPServer.

Thin by design: each tool is one call into :class:`talkthrough_assets.read.reader.Reader`; this module
only maps results to content blocks (JSON text, JPEG image blocks) and reader errors to
``isError`` results. Transports: stdio (default) and streamable HTTP on loopback; a
non-loopback bind is refused unless a bearer token is configured, and a configured token is
always required.
"""

from __future__ import annotations

import base64
import json
import logging
import os
import re
import sys
import threading
from typing import Annotated, Any, Callable

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.shared.exceptions import MCPError
from mcp_types import INVALID_PARAMS, CallToolResult, ImageContent, TextContent, ToolAnnotations
from pydantic import Field, StrictBool, StrictInt, StrictStr, ValidationError

from talkthrough_assets.core import config
from talkthrough_assets import store

from talkthrough_mcp import guidance
from talkthrough_assets.read.errors import InvalidArgument, ReadError
from talkthrough_mcp.http_guard import (TOKEN_ENV, TOKEN_MIN_CHARS, TOKEN_MIN_DISTINCT, BearerAuth, BindRefused, check_bind, is_loopback, normalize_host, token_problem)
from talkthrough_assets.read.reader import ImageResult, Reader, default_reader, dumps
from talkthrough_mcp.schemas import OUTPUT_SCHEMAS
from talkthrough_mcp.wire_schema import input_schema, output_schema

log = logging.getLogger("talkthrough_mcp")

VERSION = "0.2.0"
DEFAULT_PORT = 8765
RESPONSE_MAX_CHARS = 40_000      # hard ceiling on any JSON text block (every tool also budgets itself)
PROMPT_ARG_MAX_CHARS = 20_000
WARMUP_JOIN_S = 1.0
# destructive/idempotent hints mean something only when read_only_hint is false (MCP spec): not sent
READ_ONLY = ToolAnnotations(read_only_hint=True, open_world_hint=False)

# Strict types: JSON true is not the integer 1, "5" is not 5 (issue #15, item 6).
RecordingId = Annotated[StrictStr, Field(description="recording id", max_length=64)]
StartMs = Annotated[StrictInt | None, Field(description="window start, ms; omitted: 0")]
EndMs = Annotated[StrictInt | None, Field(description="window end, ms (>= start_ms); omitted: the end")]
# wall-clock questions (issue #36): read by talkthrough_assets.read.timeq
# (their grammar is said once, in the server instructions)
Since = Annotated[StrictStr | None, Field(max_length=80)]
Until = Annotated[StrictStr | None, Field(max_length=80)]
Tz = Annotated[StrictStr | None, Field(max_length=64)]


# --------------------------------------------------------------------------- result mapping

_ABS_PATH = re.compile(r"(?<![\w.])/(?:[^\s'\"/:]+/)+([^\s'\"/:]*)")


def scrub(text: str, keep: tuple[str, ...] = ()) -> str:
    """No server paths in anything sent to a client: the data root becomes <data root>, any other
    absolute path its last component. ``keep``: the client's own text quoted in ``text`` (an id it
    sent that looks like a path), left as sent (issue #26, item 7)."""
    kept = {f"\x00{i}\x00": k for i, k in enumerate(k for k in keep if k and k in text)}
    for mark, k in kept.items():
        text = text.replace(k, mark)
    for root in {store.data_location(), str(store.home())}:
        text = text.replace(root, "<data root>")
    text = _ABS_PATH.sub(lambda m: m.group(1) or "<path>", text)
    for mark, k in kept.items():
        text = text.replace(mark, k)
    return text


def _text(obj: dict) -> str:
    text = dumps(obj)
    if len(text) > RESPONSE_MAX_CHARS:  # a bug in a tool's own budget: never ship it
        raise RuntimeError(f"response of {len(text)} characters exceeds the {RESPONSE_MAX_CHARS} cap")
    return text


def to_result(result: dict | ImageResult) -> CallToolResult:
    if isinstance(result, ImageResult):
        content: list = [TextContent(type="text", text=_text(result.meta))]
        for img in result.images:
            content.append(TextContent(type="text", text=img.caption))
            content.append(ImageContent(type="image", data=base64.b64encode(img.data).decode("ascii"),
                                        mime_type=img.mime_type))
        return CallToolResult(content=content, structured_content=result.meta)
    return CallToolResult(content=[TextContent(type="text", text=_text(result))], structured_content=result)


def error_result(err: ReadError) -> CallToolResult:
    """An ``isError`` result whose one text block is the JSON ``{error, message, hint}``. No
    ``structuredContent``: it would have to match the tool's ``outputSchema`` (the success shape),
    and the TypeScript SDK validates it even on errors, replacing the error with a schema complaint
    (issue #26, item 1); every client reads the text block."""
    body = {k: scrub(v, getattr(err, "echo", ())) if isinstance(v, str) else v for k, v in err.to_dict().items()}
    return CallToolResult(content=[TextContent(type="text", text=dumps(body))], is_error=True)


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


_EXPECTED = {"int_type": "an integer", "int_parsing": "an integer", "bool_type": "true or false",
             "bool_parsing": "true or false", "string_type": "a string", "dict_type": "an object",
             "missing": "required", "extra_forbidden": "not an accepted argument"}


def validation_error(tool: str, exc: ValidationError, schema: dict | None) -> CallToolResult:
    """pydantic's report as one structured invalid_argument error (field names, expectations, the
    type that was sent; never the sent value itself, which may be huge)."""
    problems = []
    for e in exc.errors():
        loc = ".".join(str(p) for p in e["loc"] if not (isinstance(p, str) and p in ("int", "none", "str", "bool")))
        if e["type"] == "missing":
            problems.append(f"{loc} is required")
            continue
        if e["type"] == "string_too_long":
            got = len(e["input"]) if isinstance(e.get("input"), str) else "?"
            problems.append(f"{loc} is too long: at most {(e.get('ctx') or {}).get('max_length')} characters "
                            f"(got {got})")
            continue
        expected = _EXPECTED.get(e["type"])
        if expected is None:
            expected = re.sub(r"^(Input|Value) should (be |have )?", "", e.get("msg", "invalid")).rstrip(".")
        got = type(e.get("input")).__name__ if "input" in e else None
        got = {"bool": "boolean", "str": "string", "NoneType": "null", "dict": "object", "list": "array",
               "float": "number", "int": "integer"}.get(got, got)
        problems.append(f"{loc} must be {expected}" + (f" (got {got})" if got else ""))
    problems = list(dict.fromkeys(problems))
    accepted = sorted((schema or {}).get("properties", {}))
    err = InvalidArgument(f"{tool}: " + "; ".join(problems[:6]),
                          hint=f"accepted arguments: {', '.join(accepted)}" if accepted else None)
    return error_result(err)


class TalkthroughMCP(MCPServer):
    """MCPServer whose argument problems come back as structured ``invalid_argument`` tool errors
    (not pydantic text), and whose prompts reject bad arguments with a JSON-RPC invalid-params error
    (not a logged traceback)."""

    async def call_tool(self, name: str, arguments: dict[str, Any], context=None):
        tool = self._tool_manager.get_tool(name)
        if tool is None:
            known = ", ".join(t.name for t in self._tool_manager.list_tools())
            return error_result(ReadError.with_code("unknown_tool", f"no tool named {name[:60]!r}",
                                                    hint=f"tools: {known}"))
        unknown = sorted(set(arguments or {}) - set(tool.parameters.get("properties", {})))
        if unknown:
            shown = ", ".join(repr(u[:40]) for u in unknown[:5])
            return error_result(InvalidArgument(
                f"{name}: unknown argument(s) {shown}",
                hint=f"accepted arguments: {', '.join(sorted(tool.parameters.get('properties', {})))}"))
        try:
            return await super().call_tool(name, arguments, context)
        except ToolError as e:
            if isinstance(e.__cause__, ValidationError):
                return validation_error(name, e.__cause__, tool.parameters)
            raise

    async def get_prompt(self, name: str, arguments: dict[str, Any] | None = None, context=None):
        spec = guidance.PROMPTS.get(name)
        if spec is None:
            raise MCPError(INVALID_PARAMS, f"no prompt named {name[:60]!r}; prompts: {', '.join(guidance.PROMPTS)}",
                           {"error": "unknown_prompt"})
        args = arguments or {}
        problems = []
        for a in spec["arguments"]:
            v = args.get(a)
            cap = guidance.PROMPT_ARG_MAX_CHARS.get(a, PROMPT_ARG_MAX_CHARS)
            if not isinstance(v, str) or not v.strip():
                problems.append(f"{a} is required (a non-empty string)")
            elif len(v) > cap:
                problems.append(f"{a} is {len(v)} characters; at most {cap} are accepted")
            elif a == "recording_id" and not store.ID_RE.fullmatch(v.strip()):
                problems.append(f"recording_id must be 16 lowercase hex characters, got {v.strip()[:40]!r}")
        unknown = sorted(set(args) - set(spec["arguments"]))
        if unknown:
            problems.append(f"unknown argument(s): {', '.join(repr(u[:40]) for u in unknown[:5])}")
        if problems:
            raise MCPError(INVALID_PARAMS, f"prompt {name}: " + "; ".join(problems),
                           {"error": "invalid_argument", "arguments": list(spec["arguments"])})
        return await super().get_prompt(name, arguments, context)


# --------------------------------------------------------------------------- server

def build_server(reader: Reader | None = None) -> MCPServer:
    rd = (lambda: reader) if reader is not None else default_reader
    mcp = TalkthroughMCP(name="talkthrough", title="Talkthrough recordings (read-only)",
                         instructions=guidance.INSTRUCTIONS, version=VERSION, log_level="WARNING")

    @mcp.tool(description=guidance.description("list_recordings"), annotations=READ_ONLY)
    def list_recordings(
        offset: Annotated[StrictInt, Field(description="recordings to skip")] = 0,
        limit: Annotated[StrictInt, Field(description="page size, 1..100")] = 20,
        since: Since = None, until: Until = None, tz: Tz = None,
        person: Annotated[StrictStr | None, Field(description="a person", max_length=200)] = None,
    ) -> CallToolResult:
        return call(rd().list_recordings, offset=offset, limit=limit, since=since, until=until, tz=tz, person=person)

    @mcp.tool(description=guidance.description("get_transcript"), annotations=READ_ONLY)
    def get_transcript(
        id: RecordingId,
        start_ms: StartMs = None,
        end_ms: EndMs = None,
        speaker: Annotated[StrictStr | None, Field(description="speaker label (S1) or name",
                                                   max_length=200)] = None,
        format: Annotated[StrictStr, Field(description="json or srt",
                                           json_schema_extra={"enum": ["json", "srt"]})] = "json",
        max_chars: Annotated[StrictInt, Field(description="size cap, 1000..30000 chars")] = 30000,
        with_t_wall: Annotated[StrictBool, Field(description="t_wall on each segment")] = False,
    ) -> CallToolResult:
        return call(rd().get_transcript, recording_id=id, start_ms=start_ms, end_ms=end_ms, speaker=speaker,
                    format=format, max_chars=max_chars, with_t_wall=with_t_wall)

    @mcp.tool(description=guidance.description("get_frames"), annotations=READ_ONLY)
    def get_frames(
        id: RecordingId,
        start_ms: StartMs = None,
        end_ms: EndMs = None,
        at_ms: Annotated[StrictInt | None, Field(description="the frame on screen at this ms (not with start_ms/end_ms)")] = None,
        include_duplicates: Annotated[StrictBool, Field(description="also repeated frames")] = False,
        limit: Annotated[StrictInt | None, Field(description="images, 1..6; omitted: 6 (1 with at_ms)")] = None,
    ) -> CallToolResult:
        return call(rd().get_frames, recording_id=id, start_ms=start_ms, end_ms=end_ms, at_ms=at_ms,
                    include_duplicates=include_duplicates, limit=limit)

    @mcp.tool(description=guidance.description("get_moment"), annotations=READ_ONLY)
    def get_moment(
        id: RecordingId,
        t_ms: Annotated[StrictInt, Field(description="the instant, ms")],
        window_ms: Annotated[StrictInt, Field(description="transcript +- ms around t_ms, 0..60000")] = 10000,
    ) -> CallToolResult:
        return call(rd().get_moment, recording_id=id, t_ms=t_ms, window_ms=window_ms)

    @mcp.tool(description=guidance.description("get_moment_at"), annotations=READ_ONLY)
    def get_moment_at(
        at: Annotated[StrictStr, Field(description="wall time", max_length=80)],
        tz: Tz = None,
        window_ms: Annotated[StrictInt, Field(description="transcript +- ms, 0..60000")] = 10000,
    ) -> CallToolResult:
        return call(rd().get_moment_at, at=at, tz=tz, window_ms=window_ms)

    @mcp.tool(description=guidance.description("search"), annotations=READ_ONLY)
    def search(
        query: Annotated[StrictStr, Field(description="words to find", max_length=500)],
        id: Annotated[StrictStr | None, Field(description="only this recording id", max_length=64)] = None,
        speaker: Annotated[StrictStr | None, Field(description="only this speaker (S1 or name)",
                                                   max_length=200)] = None,
        limit: Annotated[StrictInt, Field(description="hits to return, 1..50")] = 10,
        since: Since = None, until: Until = None, tz: Tz = None,
    ) -> CallToolResult:
        return call(rd().search, query=query, recording_id=id, speaker=speaker, limit=limit, since=since,
                    until=until, tz=tz)

    @mcp.tool(description=guidance.description("extract_frame"), annotations=READ_ONLY)
    def extract_frame(
        id: RecordingId,
        t_ms: Annotated[StrictInt, Field(description="the instant, ms")],
        crop: Annotated[dict[str, StrictInt] | None, Field(
            description="region in source pixels",
            json_schema_extra={"properties": {k: {"type": "integer", "minimum": 0}
                                              for k in ("x", "y", "width", "height")},
                               "required": ["x", "y", "width", "height"]})] = None,
        full_resolution: Annotated[StrictBool, Field(description="native size, <= 4096 px")] = False,
    ) -> CallToolResult:
        return call(rd().extract_frame, recording_id=id, t_ms=t_ms, crop=crop, full_resolution=full_resolution)

    for name, schema in OUTPUT_SCHEMAS.items():  # advertised outputSchema; structuredContent is the JSON block
        tool = mcp._tool_manager.get_tool(name)
        tool.fn_metadata.output_schema = output_schema(schema)
        tool.parameters = input_schema(tool.parameters)  # optional arguments as plain types (issue #38, item 4)

    spec = guidance.PROMPTS

    @mcp.prompt(name="triage_recording", description=spec["triage_recording"]["description"])
    def triage_recording(recording_id: str) -> str:
        return guidance.render("triage_recording", recording_id=recording_id)

    @mcp.prompt(name="meeting_actions", description=spec["meeting_actions"]["description"])
    def meeting_actions(recording_id: str) -> str:
        return guidance.render("meeting_actions", recording_id=recording_id)

    @mcp.prompt(name="correlate_with_logs", description=spec["correlate_with_logs"]["description"])
    def correlate_with_logs(recording_id: str,
                            log_excerpt: str) -> str:
        return guidance.render("correlate_with_logs", recording_id=recording_id, log_excerpt=log_excerpt)

    @mcp.prompt(name="find_discussion", description=spec["find_discussion"]["description"])
    def find_discussion(topic: str) -> str:
        return guidance.render("find_discussion", topic=topic)

    @mcp.prompt(name="screen_at_remark", description=spec["screen_at_remark"]["description"])
    def screen_at_remark(recording_id: str,
                         remark: str) -> str:
        return guidance.render("screen_at_remark", recording_id=recording_id, remark=remark)

    @mcp.prompt(name="what_happened_at", description=spec["what_happened_at"]["description"])
    def what_happened_at(when: str) -> str:
        return guidance.render("what_happened_at", when=when)

    @mcp.prompt(name="speaker_summary", description=spec["speaker_summary"]["description"])
    def speaker_summary(recording_id: str,
                        speaker: str) -> str:
        return guidance.render("speaker_summary", recording_id=recording_id, speaker=speaker)

    for name, p in spec.items():  # each argument's description, from the one spec the templates use
        for a in mcp._prompt_manager.get_prompt(name).arguments or []:
            a.description = p["arguments"][a.name]

    return mcp


# --------------------------------------------------------------------------- entry point

class Warmup:
    """Builds the index on a background thread so the first search is fast; never blocks the
    transport. ``stop()`` asks it to end between batches and waits briefly for it."""

    def __init__(self, reader: Reader):
        self.reader = reader
        self.stopping = threading.Event()
        self.thread = threading.Thread(target=self._run, name="talkthrough-index-warmup", daemon=True)

    def _run(self) -> None:
        try:
            self.reader.warm(stop=self.stopping)
        except Exception:  # the first tool call retries and reports properly
            if not self.stopping.is_set():
                log.warning("index warm-up failed", exc_info=True)

    def start(self) -> "Warmup":
        self.thread.start()
        return self

    def stop(self, timeout: float = WARMUP_JOIN_S) -> bool:
        """True when the thread has ended."""
        if self.thread.is_alive():
            print("talkthrough mcp: shutting down during the index warm-up; stopping it", file=sys.stderr, flush=True)
        self.stopping.set()
        self.thread.join(timeout)
        return not self.thread.is_alive()


def _exit_now(rc: int) -> None:
    """Leave without interpreter finalization: a daemon thread still inside DuckDB/Arrow native code
    would be force-unwound there ("FATAL: exception not rethrown", SIGABRT). Nothing to persist: the
    server is read-only."""
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except Exception:
            pass
    os._exit(rc)


def _finish(warmup: Warmup, rc: int) -> int:
    if not warmup.stop():
        _exit_now(rc)
    return rc


def serve(*, http: bool = False, host: str = "127.0.0.1", port: int = DEFAULT_PORT, token: str | None = None) -> int:
    """Run the server until the client disconnects (stdio: EOF on stdin) or the process is stopped
    (HTTP). Exits 0 in both cases, also while the index is still warming up."""
    token = token if token is not None else config.get(TOKEN_ENV)
    if http:
        try:
            host = normalize_host(host)
            check_bind(host, token)
        except BindRefused as e:
            print(f"talkthrough mcp: {e}", file=sys.stderr)
            return 2
    reader = default_reader()
    server = build_server(reader)
    warmup = Warmup(reader).start()
    if not http:
        try:
            server.run("stdio")
        except KeyboardInterrupt:
            pass
        return _finish(warmup, 0)
    import uvicorn

    app = server.streamable_http_app(host=host)
    if token:
        app = BearerAuth(app, token)
    shown = f"[{host}]" if ":" in host else host
    print(f"talkthrough mcp: streamable HTTP on http://{shown}:{port}/mcp"
          + (" (bearer token required)" if token else ""), file=sys.stderr, flush=True)
    try:
        uvicorn.run(app, host=host, port=port, log_level="warning")
    except KeyboardInterrupt:
        pass
    return _finish(warmup, 0)


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

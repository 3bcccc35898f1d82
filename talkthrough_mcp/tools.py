"""The MCP tools and workflow prompts, registered on the official SDK's MCPServer.

Thin by design: each tool is one call into :class:`talkthrough_assets.read.reader.Reader`;
:mod:`talkthrough_mcp.results` maps its answer or error to a tool result, :mod:`talkthrough_mcp.guidance` says
how to use it, :mod:`talkthrough_mcp.wire_schema` shapes its schemas for the wire. Serving (stdio, HTTP) is
:mod:`talkthrough_mcp.server`.
"""

from __future__ import annotations

from typing import Annotated, Any

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.shared.exceptions import MCPError
from mcp_types import INVALID_PARAMS, CallToolResult, ToolAnnotations
from pydantic import Field, StrictBool, StrictInt, StrictStr, ValidationError

import talkthrough_assets
from talkthrough_assets import store
from talkthrough_assets.read.errors import InvalidArgument, ReadError
from talkthrough_assets.read.reader import Reader, default_reader

from talkthrough_mcp import guidance
from talkthrough_mcp.results import call, error_result, validation_error
from talkthrough_mcp.schemas import OUTPUT_SCHEMAS
from talkthrough_mcp.wire_schema import input_schema, output_schema

PROMPT_ARG_MAX_CHARS = 20_000
# destructive/idempotent hints mean something only when read_only_hint is false (MCP spec): not sent
READ_ONLY = ToolAnnotations(read_only_hint=True, open_world_hint=False)

# Strict types: JSON true is not the integer 1, "5" is not 5.
# (what an id and a *_ms field are is said once, in the server instructions)
RecordingId = Annotated[StrictStr, Field(max_length=64)]


def bounds(lo: int, hi: int | None = None) -> dict:
    """An integer argument's range, advertised in its inputSchema (the reader checks it, with a hint)."""
    return {"json_schema_extra": {"minimum": lo, **({"maximum": hi} if hi is not None else {})}}


StartMs = Annotated[StrictInt | None, Field(description="from; omitted: 0", **bounds(0))]
EndMs = Annotated[StrictInt | None, Field(description="to (>= start_ms); omitted: the end", **bounds(0))]
InstantMs = Annotated[StrictInt, Field(description="the instant, ms", **bounds(0))]
WindowMs = Annotated[StrictInt, Field(description="transcript +- ms around the instant", **bounds(0, 60000))]
# wall-clock questions: read by talkthrough_assets.read.timeq
# (their grammar is said once, in the server instructions)
Since = Annotated[StrictStr | None, Field(max_length=80)]
Until = Annotated[StrictStr | None, Field(max_length=80)]
Tz = Annotated[StrictStr | None, Field(max_length=64)]


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
        # an explicit null for an optional argument means "omitted", for every tool and argument alike
        required = set(tool.parameters.get("required", ()))
        arguments = {k: v for k, v in (arguments or {}).items() if v is not None or k in required}
        unknown = sorted(set(arguments) - set(tool.parameters.get("properties", {})))
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
            elif a == "id" and not store.ID_RE.fullmatch(v.strip()):
                problems.append(f"id must be 16 lowercase hex characters, got {v.strip()[:40]!r}")
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
                         instructions=guidance.INSTRUCTIONS, version=talkthrough_assets.__version__, log_level="WARNING")

    @mcp.tool(description=guidance.description("list_recordings"), annotations=READ_ONLY)
    def list_recordings(
        offset: Annotated[StrictInt, Field(description="recordings to skip", **bounds(0))] = 0,
        limit: Annotated[StrictInt, Field(description="page size", **bounds(1, 100))] = 20,
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
        max_chars: Annotated[StrictInt, Field(description="size cap, chars", **bounds(1000, 30000))] = 30000,
        with_t_wall: Annotated[StrictBool, Field(description="t_wall on each segment")] = False,
    ) -> CallToolResult:
        return call(rd().get_transcript, recording_id=id, start_ms=start_ms, end_ms=end_ms, speaker=speaker,
                    format=format, max_chars=max_chars, with_t_wall=with_t_wall)

    @mcp.tool(description=guidance.description("get_frames"), annotations=READ_ONLY)
    def get_frames(
        id: RecordingId,
        start_ms: StartMs = None,
        end_ms: EndMs = None,
        at_ms: Annotated[StrictInt | None, Field(description="the frame on screen at this ms (not with start_ms/end_ms)",
                                                 **bounds(0))] = None,
        include_duplicates: Annotated[StrictBool, Field(description="also repeated frames")] = False,
        limit: Annotated[StrictInt | None, Field(description="images; omitted: 6 (1 with at_ms)", **bounds(1, 6))] = None,
    ) -> CallToolResult:
        return call(rd().get_frames, recording_id=id, start_ms=start_ms, end_ms=end_ms, at_ms=at_ms,
                    include_duplicates=include_duplicates, limit=limit)

    @mcp.tool(description=guidance.description("get_moment"), annotations=READ_ONLY)
    def get_moment(
        id: RecordingId,
        t_ms: InstantMs,
        window_ms: WindowMs = 10000,
    ) -> CallToolResult:
        return call(rd().get_moment, recording_id=id, t_ms=t_ms, window_ms=window_ms)

    @mcp.tool(description=guidance.description("get_moment_at"), annotations=READ_ONLY)
    def get_moment_at(
        at: Annotated[StrictStr, Field(description="wall time", max_length=80)],
        tz: Tz = None,
        window_ms: WindowMs = 10000,
    ) -> CallToolResult:
        return call(rd().get_moment_at, at=at, tz=tz, window_ms=window_ms)

    @mcp.tool(description=guidance.description("search"), annotations=READ_ONLY)
    def search(
        query: Annotated[StrictStr, Field(description="words to find", max_length=500)],
        id: Annotated[StrictStr | None, Field(description="only this recording id", max_length=64)] = None,
        speaker: Annotated[StrictStr | None, Field(description="only this speaker (S1 or name)",
                                                   max_length=200)] = None,
        limit: Annotated[StrictInt, Field(description="hits to return", **bounds(1, 50))] = 10,
        since: Since = None, until: Until = None, tz: Tz = None,
    ) -> CallToolResult:
        return call(rd().search, query=query, recording_id=id, speaker=speaker, limit=limit, since=since,
                    until=until, tz=tz)

    @mcp.tool(description=guidance.description("extract_frame"), annotations=READ_ONLY)
    def extract_frame(
        id: RecordingId,
        t_ms: InstantMs,
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
        tool.parameters = input_schema(tool.parameters)  # optional arguments as plain types

    spec = guidance.PROMPTS

    @mcp.prompt(name="triage_recording", description=spec["triage_recording"]["description"])
    def triage_recording(id: str) -> str:
        return guidance.render("triage_recording", id=id)

    @mcp.prompt(name="meeting_actions", description=spec["meeting_actions"]["description"])
    def meeting_actions(id: str) -> str:
        return guidance.render("meeting_actions", id=id)

    @mcp.prompt(name="correlate_with_logs", description=spec["correlate_with_logs"]["description"])
    def correlate_with_logs(id: str, log_excerpt: str) -> str:
        return guidance.render("correlate_with_logs", id=id, log_excerpt=log_excerpt)

    @mcp.prompt(name="find_discussion", description=spec["find_discussion"]["description"])
    def find_discussion(topic: str) -> str:
        return guidance.render("find_discussion", topic=topic)

    @mcp.prompt(name="screen_at_remark", description=spec["screen_at_remark"]["description"])
    def screen_at_remark(id: str, remark: str) -> str:
        return guidance.render("screen_at_remark", id=id, remark=remark)

    @mcp.prompt(name="what_happened_at", description=spec["what_happened_at"]["description"])
    def what_happened_at(when: str) -> str:
        return guidance.render("what_happened_at", when=when)

    @mcp.prompt(name="speaker_summary", description=spec["speaker_summary"]["description"])
    def speaker_summary(id: str, speaker: str) -> str:
        return guidance.render("speaker_summary", id=id, speaker=speaker)

    for name, p in spec.items():  # each argument's description, from the one spec the templates use
        for a in mcp._prompt_manager.get_prompt(name).arguments or []:
            a.description = p["arguments"][a.name]

    return mcp



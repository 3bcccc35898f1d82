"""What every MCP session loads: the tools/list answer (issue #38, items 4 and 5). Built in process from
the same ``build_server`` the stdio/HTTP server runs; the Inspector CLI test (tests/e2e/test_mcp_issue38.py)
sends every optional argument through a real TypeScript client."""

from __future__ import annotations

import json

import anyio

from talkthrough_mcp.tools import build_server

# 2k per tool: #38 cut six tools from 25.7k to 11.9k; #36's get_moment_at is the seventh
TOOLS_PER_TOOL_CHARS = 2_000


def _tools() -> list[dict]:
    async def go():
        return await build_server().list_tools()
    return [t.model_dump(mode="json", by_alias=True, exclude_none=True) for t in anyio.run(go)]


def test_tools_list_is_under_2k_characters_a_tool_compact():
    tools = _tools()
    size = len(json.dumps({"tools": tools}, separators=(",", ":")))
    assert size < TOOLS_PER_TOOL_CHARS * len(tools), (size, len(tools))
    for t in tools:  # the guidance is still there: 10+ examples, an output schema
        assert t["description"].count("\n- ") >= 10, t["name"]
        assert t["outputSchema"]["type"] == "object" and t["outputSchema"]["required"], t["name"]


def test_every_optional_argument_is_declared_by_its_plain_type():
    """No anyOf [T, null]: clients that convert text by the declared type (the Inspector CLI) can send it."""
    for t in _tools():
        schema = t["inputSchema"]
        assert "title" not in json.dumps(schema), t["name"]
        for name, prop in schema["properties"].items():
            assert "anyOf" not in prop and "oneOf" not in prop, (t["name"], name, prop)
            assert prop.get("type") in ("integer", "string", "boolean", "object"), (t["name"], name, prop)
            assert prop.get("default", 0) is not None, (t["name"], name, prop)
    props = {t["name"]: t["inputSchema"]["properties"] for t in _tools()}
    assert props["get_transcript"]["start_ms"]["type"] == "integer"
    assert props["get_frames"]["at_ms"]["type"] == "integer" and props["get_frames"]["limit"]["type"] == "integer"
    assert props["extract_frame"]["crop"]["type"] == "object"

"""What every MCP session loads: the tools/list answer (issue #38, items 4 and 5). Built in process from
the same ``build_server`` the stdio/HTTP server runs; the Inspector CLI test (tests/e2e/test_mcp_issue38.py)
sends every optional argument through a real TypeScript client."""

from __future__ import annotations

import json

import anyio
from mcp_types import ListToolsResult

from talkthrough_mcp.tools import TOOLS, build_server

# issue #38, item 5: tools/list was 25.7k characters compact for six tools; it must stay under 12k (11.6k for the
# seven tools of #36), and no tool may take more than 2k of it
TOOLS_LIST_MAX_CHARS = 12_000
TOOLS_PER_TOOL_CHARS = 2_000


def _listing() -> dict:
    """The tools/list result as it travels (camelCase, None fields dropped), as bench/bench_answer_size.py counts it."""
    async def go():
        return await build_server().list_tools()
    return ListToolsResult(tools=anyio.run(go)).model_dump(mode="json", by_alias=True, exclude_none=True)


def _tools() -> list[dict]:
    return _listing()["tools"]


def test_tools_list_is_under_12k_characters_compact_and_under_2k_a_tool():
    listing = _listing()
    tools = listing["tools"]
    assert [t["name"] for t in tools] == [fn.__name__ for fn in TOOLS]
    size = len(json.dumps(listing, separators=(",", ":")))
    assert size < TOOLS_LIST_MAX_CHARS, size
    for t in tools:
        assert len(json.dumps(t, separators=(",", ":"))) < TOOLS_PER_TOOL_CHARS, t["name"]
    for t in tools:  # the guidance is still there: 10+ examples, an output schema
        assert t["description"].count("\n- ") >= 10, t["name"]
        out = t["outputSchema"]
        assert out["type"] == "object" and out["required"], t["name"]
        assert set(out["properties"]) == set(out["required"]) and all("type" in p or "enum" in p
                                                                     for p in out["properties"].values()), t["name"]
    frames = {t["name"]: t for t in tools}["get_frames"]["outputSchema"]["properties"]["frames"]
    assert {"ms", "valid_from_ms", "ocr_text"} <= set(frames["items"]["required"])  # nested: required names only


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

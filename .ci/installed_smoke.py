"""The installed product, as a user has it: run from outside the checkout with the wheel's own `talkthrough`.

1. a real MCP session over stdio (`talkthrough mcp`, the SDK's client): the tools are listed, every recording
   that `talkthrough process fixtures/` stored is listed, and one transcript is read back;
2. an operator's DAGSTER_HOME/dagster.yaml is byte-identical after a command, which says in one line what it lacks.

Usage: python -P installed_smoke.py DATA_ROOT EXPECTED_RECORDINGS MEDIA_FILE (one of those recordings)
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path

import anyio
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

TALKTHROUGH = str(Path(sys.executable).with_name("talkthrough"))


def mcp_session(home: str, expected: int) -> None:
    params = StdioServerParameters(command=TALKTHROUGH, args=["mcp"],
                                   env={"TALKTHROUGH_HOME": home, "TALKTHROUGH_MCP_REFRESH_S": "0"})

    async def run() -> None:
        with anyio.fail_after(300):
            async with stdio_client(params) as (r, w), ClientSession(r, w) as s:
                await s.initialize()
                tools = {t.name for t in (await s.list_tools()).tools}
                assert {"list_recordings", "get_transcript", "search"} <= tools, tools
                listed = await s.call_tool("list_recordings", {})
                assert not listed.is_error, listed.content[0].text
                recs = listed.structured_content["recordings"]
                assert len(recs) == expected, (len(recs), expected)
                spoken = next(r for r in recs if r["counts"]["segments"])
                text = await s.call_tool("get_transcript", {"id": spoken["id"]})
                assert not text.is_error and text.content[0].text.strip(), text
                print(f"mcp: {len(tools)} tools, {len(recs)} recordings, transcript of {spoken['id']} read")

    anyio.run(run)


def operator_home_kept(home: str, media: str) -> None:
    with tempfile.TemporaryDirectory() as op:
        yaml = Path(op, "dagster.yaml")
        yaml.write_bytes(b"# an operator's instance\ntelemetry:\n  enabled: false\n")
        before = yaml.read_bytes()
        r = subprocess.run([TALKTHROUGH, "process", "--force", media], capture_output=True, text=True, timeout=300,
                           env={**os.environ, "TALKTHROUGH_HOME": home, "DAGSTER_HOME": op})
        assert r.returncode == 0, r.stderr
        assert yaml.read_bytes() == before, "the operator's dagster.yaml was rewritten"
        said = [line for line in r.stderr.splitlines() if "left as it is" in line]
        assert len(said) == 1, r.stderr
        print(f"operator DAGSTER_HOME kept byte for byte; said: {said[0]}")


if __name__ == "__main__":
    import talkthrough_assets

    where = Path(talkthrough_assets.__file__).resolve()
    assert "site-packages" in where.parts, f"talkthrough_assets imported from {where}, not the installed wheel"
    mcp_session(sys.argv[1], int(sys.argv[2]))
    operator_home_kept(sys.argv[1], sys.argv[3])

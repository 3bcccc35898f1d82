"""Issue #38, item 4: every optional argument of every tool reaches the server from the MCP Inspector CLI
(the TypeScript SDK client), which converts ``--tool-arg k=v`` text only by the declared ``type``. Each
optional argument the listing declares is sent, and its effect is checked in the answer. Real `talkthrough
mcp` processes over stdio, the committed fixtures processed once (the session's ``processed``)."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

import fixture_facts as F
import mcp_inspector
from mcp_env import inspector_env_args, server_env
from test_mcp_issue26 import INSPECTOR_TIMEOUT_S, TALKTHROUGH, _tool_call

CONNECT_TIMEOUT_MS = 60_000  # a loaded CI machine starts `talkthrough mcp` in more than the CLI's 15 s default


@pytest.fixture(scope="module")
def inspector() -> list[str]:
    return mcp_inspector.inspector_command()


def _inspect(inspector: list[str], home: Path, *args: str) -> tuple[int, dict | None, str]:
    """One Inspector CLI run against `talkthrough mcp` over stdio: (exit code, its JSON output, all text).
    The CLI starts the server with its own small environment: PYTHONPATH is handed on (mcp_env)."""
    cmd = [*inspector, "--connect-timeout", str(CONNECT_TIMEOUT_MS), *inspector_env_args(home),
           TALKTHROUGH, "mcp", *args]
    res = subprocess.run(cmd, capture_output=True, text=True, timeout=INSPECTOR_TIMEOUT_S,
                         env={**os.environ, "PATH": f"{Path(inspector[0]).parent}{os.pathsep}{os.environ['PATH']}"})
    try:
        out, _ = json.JSONDecoder().raw_decode(res.stdout.lstrip())
    except json.JSONDecodeError:
        out = None
    return res.returncode, out, res.stdout + res.stderr


def calls(sc: str, tv: str) -> list[tuple[str, dict, callable]]:
    """(tool, arguments, check of the answer): together they send every optional argument of every tool."""
    return [
        ("list_recordings", {"offset": 1, "limit": 2},
         lambda p: p["offset"] == 1 and p["limit"] == 2 and p["returned"] == 2),
        # asking by wall time (#36): the screencast starts 2026-03-14 09:26:53 UTC; until a day keeps the day
        ("list_recordings", {"since": "2026-03-14", "until": "2026-03-14", "tz": "UTC"},
         lambda p: sc in [r["id"] for r in p["recordings"]]),
        ("list_recordings", {"person": "Nobody Enrolled"}, lambda p: p["returned"] == 0),
        ("search", {"query": "rollback", "since": "2026-03-14 09:00", "until": "2026-03-14 10:00", "tz": "UTC"},
         lambda p: p["returned"] >= 1 and all(h["recording"] == sc for h in p["hits"])),
        ("get_moment_at", {"at": "2026-03-14 09:27:06", "tz": "UTC", "window_ms": 3000},
         lambda p: any(m["recording"] == sc and m["t_ms"] == 13000 for m in p["moments"])),
        ("get_transcript", {"id": tv, "start_ms": 5000, "end_ms": 12000, "speaker": "S1", "max_chars": 2000,
                            "with_t_wall": True},
         lambda p: (p["start_ms"], p["end_ms"]) == (5000, 12000) and p["segments"]
         and all(s["speaker"] == "S1" and "t_wall" in s and s["t1_ms"] > 5000 and s["t_ms"] <= 12000
                 for s in p["segments"])),
        ("get_transcript", {"id": tv, "format": "srt"}, lambda p: p["format"] == "srt" and "-->" in p["srt"]),
        ("get_frames", {"id": sc, "start_ms": 5000, "end_ms": 20000, "include_duplicates": True, "limit": 2},
         lambda p: p["include_duplicates"] is True and p["returned"] == 2 and p["truncated"] is True
         and all(5000 <= f["ms"] <= 20000 for f in p["frames"])),
        ("get_frames", {"id": sc, "at_ms": 13000, "limit": 2},
         lambda p: p["at_ms"] == 13000 and p["on_screen_frame_ms"] is not None
         and 12000 <= p["on_screen_frame_ms"] <= 13000 and p["returned"] == 2),
        ("get_moment", {"id": sc, "t_ms": 13000, "window_ms": 3000},
         lambda p: (p["transcript"]["start_ms"], p["transcript"]["end_ms"]) == (10000, 16000)),
        ("search", {"query": "the", "id": tv, "speaker": "S2", "limit": 1},
         lambda p: p["returned"] == 1 and all(h["recording"] == tv and h.get("speaker") == "S2" for h in p["hits"])),
        ("extract_frame", {"id": sc, "t_ms": 13000, "crop": {"x": 100, "y": 50, "width": 320, "height": 180},
                           "full_resolution": True},
         lambda p: p["crop"] == {"x": 100, "y": 50, "width": 320, "height": 180} and p["full_resolution"] is True
         and (p["width"], p["height"]) == (320, 180)),
    ]


def test_item4_every_optional_argument_of_every_tool_reaches_the_server_from_the_inspector_cli(
        processed, pristine_home, inspector):
    sc = processed[F.SCREENCAST_NAME]["recording_id"]
    tv = processed[F.TWO_VOICES_NAME]["recording_id"]
    rc, listing, raw = _inspect(inspector, pristine_home, "--method", "tools/list")
    assert rc == 0 and listing, raw[-2000:]
    optional = {(t["name"], a) for t in listing["tools"] for a in t["inputSchema"]["properties"]
                if a not in t["inputSchema"].get("required", [])}
    plan = calls(sc, tv)
    assert optional <= {(tool, a) for tool, args, _ in plan for a in args}, "an optional argument is not sent"
    for t in listing["tools"]:  # declared by a type the CLI converts (not anyOf [T, null]): issue #38, item 4
        for a, prop in t["inputSchema"]["properties"].items():
            assert prop.get("type") in ("integer", "number", "boolean", "string", "object"), (t["name"], a, prop)
    for tool, args, check in plan:
        rc, out, raw = _inspect(inspector, pristine_home, *_tool_call(tool, args))
        assert out is not None and rc == 0, (tool, args, raw[-2000:])
        assert out.get("isError") in (None, False), (tool, args, out["content"][0]["text"][:500])
        payload = json.loads(out["content"][0]["text"])
        assert check(payload), (tool, args, json.dumps(payload)[:1500])


def test_item5_a_limit_out_of_range_comes_back_with_a_hint(processed, pristine_home, inspector):
    sc = processed[F.SCREENCAST_NAME]["recording_id"]
    for tool, args in [("get_frames", {"id": sc, "limit": 9}), ("search", {"query": "budget", "limit": 0}),
                       ("list_recordings", {"limit": 500})]:
        rc, out, raw = _inspect(inspector, pristine_home, *_tool_call(tool, args))
        assert out is not None, (tool, raw[-2000:])
        body = json.loads(out["content"][0]["text"])
        assert out["isError"] is True and body["error"] == "invalid_argument", (tool, body)
        assert "limit" in body["message"] and "limit" in body["hint"], (tool, body)


def test_item5_get_frames_images_are_small_and_their_text_stays_legible(processed, pristine_home, tmp_path):
    """get_frames serves each stored keyframe re-encoded to <= 1024 px (images.AGENT_MAX_SIDE, the smallest
    size at which 14-px screen text still reads: bench/bench_frame_legibility.py), and RapidOCR (the
    pipeline's engine) still reads every on-screen word of the fixture from the image the client got."""
    import base64
    import io

    import anyio
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client
    from PIL import Image

    from talkthrough_assets.stages import ocr
    from talkthrough_assets.stages.ocr import engine as ocr_engine
    from talkthrough_assets.read import images

    sc = processed[F.SCREENCAST_NAME]["recording_id"]

    async def frames():
        params = StdioServerParameters(command=TALKTHROUGH, args=["mcp"], env=server_env(pristine_home))
        with anyio.fail_after(300):
            async with stdio_client(params) as (r, w), ClientSession(r, w) as s:
                await s.initialize()
                return await s.call_tool("get_frames", {"id": sc})

    res = anyio.run(frames)
    assert not res.is_error
    meta = json.loads(res.content[0].text)
    blocks = [c for c in res.content if c.type == "image"]
    assert len(blocks) == meta["returned"] == 4, meta
    engine, status = ocr_engine.engine_status(True)
    assert engine is not None, status
    for frame, block in zip(meta["frames"], blocks):
        data = base64.b64decode(block.data)
        with Image.open(io.BytesIO(data)) as img:
            assert max(img.size) == images.AGENT_MAX_SIDE and img.format == "JPEG", img.size
        assert len(block.data) < 60_000, len(block.data)  # was ~110 k of base64 per frame at 1568 px
        path = tmp_path / f"{frame['ms']}.jpg"
        path.write_bytes(data)
        read = F.ocr_normalize(ocr.read_image(engine, path).text)
        scene = next(s for s in F.SCREENCAST_SCENES if s["start_ms"] <= frame["ms"] < s["end_ms"])
        missing = [k for k in scene["ocr_keywords"] if k not in read]
        assert not missing, (frame["ms"], missing, read)

"""MCP read server: a real stdio client session against the installed `talkthrough mcp` command over
the session's processed fixtures, streamable HTTP smoke + bearer-token checks, and the reader's BM25
maths / incremental index on a small synthetic library. No mocks."""

from __future__ import annotations

import base64
import io
import json
import math
import os
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

import anyio
import pytest
from PIL import Image

import fixture_facts as F
from mcp_env import server_env
from talkthrough_mcp.tools import TOOLS as SERVED

TALKTHROUGH = shutil.which("talkthrough") or str(Path(sys.executable).with_name("talkthrough"))
SEVEN = {"list_recordings", "get_transcript", "get_frames", "get_moment", "search", "extract_frame", "get_moment_at"}
TOOLS = {fn.__name__ for fn in SERVED}  # every tool talkthrough_mcp/tools.py declares
PROMPTS = {"triage_recording", "meeting_actions", "correlate_with_logs", "find_discussion", "screen_at_remark",
           "speaker_summary", "what_happened_at"}
SESSION_TIMEOUT_S = 240


# --------------------------------------------------------------------------- helpers

def _payload(res) -> dict:
    return json.loads(res.content[0].text)


def _error(res) -> dict:
    assert res.is_error, res.content[0].text
    err = json.loads(res.content[0].text)
    assert err["error"] and err["message"], err
    assert res.structured_content is None  # errors are not the outputSchema shape (issue #26, item 1)
    return err


def _images(res) -> list[bytes]:
    return [base64.b64decode(c.data) for c in res.content if c.type == "image"]


def _snapshot(root: Path) -> dict[str, tuple[int, int]]:
    out = {}
    for p in root.rglob("*"):
        if p.is_file():
            st = p.stat()
            out[str(p.relative_to(root))] = (st.st_size, st.st_mtime_ns)
    return out


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _wait_port(port: int, proc: subprocess.Popen, timeout: float = 90) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise AssertionError(f"server exited early ({proc.returncode}): {proc.stderr.read()}")
        try:
            socket.create_connection(("127.0.0.1", port), 0.2).close()
            return
        except OSError:
            time.sleep(0.1)
    raise AssertionError(f"server did not listen on {port} within {timeout}s")


def _stop(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(10)


# --------------------------------------------------------------------------- the stdio session

async def _drive(home: Path, ids: dict[str, str]) -> dict:
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client
    from mcp.shared.exceptions import MCPError

    sc, mt, tv, sv = (ids[F.SCREENCAST_NAME], ids[F.MEETING_NAME], ids[F.TWO_VOICES_NAME], ids[F.SILENT_NAME])
    params = StdioServerParameters(command=TALKTHROUGH, args=["mcp"],
                                   env=server_env(home))
    out: dict = {}
    with anyio.fail_after(SESSION_TIMEOUT_S):
        async with stdio_client(params) as (r, w), ClientSession(r, w) as s:
            out["init"] = await s.initialize()
            out["tools"] = (await s.list_tools()).tools
            out["prompts"] = (await s.list_prompts()).prompts
            out["prompt_triage"] = await s.get_prompt("triage_recording", {"id": sc})
            out["prompt_logs"] = await s.get_prompt("correlate_with_logs",
                                                    {"id": sc, "log_excerpt": "10:27:01 ERROR 503"})
            try:  # the tools' argument name is the only one: the old prompt argument is refused, by name
                out["prompt_old_arg"] = await s.get_prompt("triage_recording", {"recording_id": sc})
            except MCPError as e:
                out["prompt_old_arg"] = e
            calls = {
                "list_all": ("list_recordings", {}),
                "list_p1": ("list_recordings", {"limit": 2}),
                "list_p2": ("list_recordings", {"offset": 2, "limit": 2}),
                "tr_sc": ("get_transcript", {"id": sc}),
                "tr_sc_range": ("get_transcript", {"id": sc, "start_ms": 6000, "end_ms": 12000}),
                "tr_sc_wall": ("get_transcript", {"id": sc, "with_t_wall": True}),
                "tr_sc_srt": ("get_transcript", {"id": sc, "format": "srt"}),
                "tr_tv": ("get_transcript", {"id": tv}),
                "tr_tv_s1": ("get_transcript", {"id": tv, "speaker": "S1"}),
                "tr_sv": ("get_transcript", {"id": sv}),
                "fr_sc": ("get_frames", {"id": sc}),
                "fr_sv": ("get_frames", {"id": sv, "limit": 1}),
                "mo_sc": ("get_moment", {"id": sc, "t_ms": 13000}),
                "mo_mt": ("get_moment", {"id": mt, "t_ms": 6000}),
                "se_checkout": ("search", {"query": "checkout"}),
                "se_forecast": ("search", {"query": "forecast"}),
                **{f"se_ocr_{kw}": ("search", {"query": kw, "id": sc, "limit": 50})
                   for scene in F.SCREENCAST_SCENES for kw in scene["ocr_keywords"]},
                "se_folded": ("search", {"query": "Chéckout"}),
                "se_database": ("search", {"query": "database", "limit": 50}),
                "se_scoped": ("search", {"query": "database", "id": mt}),
                "se_and": ("search", {"query": "gateway timeout"}),
                "se_or": ("search", {"query": "budget xylophone"}),
                "se_none": ("search", {"query": "xylophone"}),
                "ex_sc": ("extract_frame", {"id": sc, "t_ms": 13000}),
                "err_malformed": ("get_transcript", {"id": "not-an-id"}),
                "err_upper": ("get_frames", {"id": sc.upper()}),
                "err_unknown": ("get_transcript", {"id": "0123456789abcdef"}),
                "err_range": ("get_transcript", {"id": sc, "start_ms": 9000, "end_ms": 1000}),
                "err_negative": ("get_frames", {"id": sc, "start_ms": -5}),
                "err_past_end": ("get_moment", {"id": sc, "t_ms": 10_000_000}),
                "err_audio_frames": ("get_frames", {"id": mt}),
                "err_audio_extract": ("extract_frame", {"id": mt, "t_ms": 1000}),
                "err_frames_limit": ("get_frames", {"id": sc, "limit": 7}),
                "err_search_limit": ("search", {"query": "budget", "limit": 51}),
                "err_search_empty": ("search", {"query": "?!"}),
                "err_speaker": ("get_transcript", {"id": sc, "speaker": "S1"}),
                "err_format": ("get_transcript", {"id": sc, "format": "xml"}),
            }
            for key, (tool, args) in calls.items():
                out[key] = await s.call_tool(tool, args)
            # continuation after truncation: follow next_start_ms until the transcript is complete
            out["tr_pages"] = await _follow(s, "get_transcript", {"id": tv, "max_chars": 1000}, most=50)
            # frames pagination over duplicates
            out["fr_pages"] = await _follow(s, "get_frames", {"id": sc, "include_duplicates": True, "limit": 6},
                                            most=20)
    return out


async def _follow(s, tool: str, args: dict, most: int) -> list:
    """The pages of ``tool`` from ``args`` on, each asked from the previous page's next_start_ms, until
    one is not truncated (at most ``most`` pages)."""
    pages = []
    for _ in range(most):
        res = await s.call_tool(tool, args)
        pages.append(res)
        p = _payload(res)
        if not p["truncated"]:
            break
        args = {**args, "start_ms": p["next_start_ms"]}
    return pages


@pytest.fixture(scope="module")
def ids(processed) -> dict[str, str]:
    return {name: s["recording_id"] for name, s in processed.items()}


@pytest.fixture(scope="module")
def session(processed, pristine_home, ids) -> dict:
    before = _snapshot(pristine_home)
    out = anyio.run(_drive, pristine_home, ids)
    after = _snapshot(pristine_home)
    out["changed_files"] = sorted(k for k in set(before) | set(after) if before.get(k) != after.get(k))
    return out


# --------------------------------------------------------------------------- discovery

def _required(tool: str) -> set[str]:
    """The arguments a tool declares without a default (its first parameter is the reader)."""
    import inspect

    fn = next(f for f in SERVED if f.__name__ == tool)
    return {p.name for p in list(inspect.signature(fn).parameters.values())[1:] if p.default is p.empty}


def test_discovery_tools_schemas_and_guidance(session):
    from talkthrough_mcp import guidance

    tools = {t.name: t for t in session["tools"]}
    assert set(tools) == TOOLS and TOOLS >= SEVEN
    assert session["init"].server_info.name == "talkthrough"
    # one version everywhere: the installed distribution's (pyproject.toml), as the package and the manifest say
    from importlib.metadata import version

    import talkthrough_assets
    assert session["init"].server_info.version == talkthrough_assets.__version__ == version("talkthrough")
    req = {"get_transcript": {"id"}, "get_frames": {"id"}, "get_moment": {"id", "t_ms"},
           "search": {"query"}, "extract_frame": {"id", "t_ms"}, "list_recordings": set(), "get_moment_at": {"at"}}
    for name, t in tools.items():
        schema = t.input_schema
        assert schema["type"] == "object"
        assert set(schema.get("required", [])) == req.get(name, _required(name)), name
        assert t.annotations.read_only_hint is True
        assert "Examples:" in t.description
        lines = [ln[2:] for ln in t.description.splitlines() if ln.startswith("- ")]
        assert 10 <= len(lines) <= 15, name  # the seed's guidance layer (issue #26, item 8)
        assert all(len(ln) <= guidance.EXAMPLE_MAX_CHARS for ln in lines), name
    props = tools["get_transcript"].input_schema["properties"]
    assert {"start_ms", "end_ms", "speaker", "format", "max_chars"} <= set(props)
    assert props["format"]["enum"] == ["json", "srt"]
    assert {"include_duplicates", "limit"} <= set(tools["get_frames"].input_schema["properties"])
    # the edge cases the guidance promises are covered somewhere in the descriptions
    text = " ".join(t.description for t in tools.values()).lower()
    for needle in ("audio-only", "wall_clock null", "next_start_ms", "truncated"):
        assert needle in text, needle


def test_prompts(session, ids):
    from mcp.shared.exceptions import MCPError

    assert {p.name for p in session["prompts"]} == PROMPTS
    # a recording is `id` in every prompt, as in every tool
    tool_args = {t.name: set(t.input_schema["properties"]) for t in session["tools"]}
    assert "id" in tool_args["get_transcript"] and "recording_id" not in set().union(*tool_args.values())
    prompt_args = {p.name: [a.name for a in p.arguments] for p in session["prompts"]}
    assert "recording_id" not in sum(prompt_args.values(), []), prompt_args
    assert {n for n, args in prompt_args.items() if "id" in args} == {
        "triage_recording", "meeting_actions", "correlate_with_logs", "screen_at_remark", "speaker_summary"}, prompt_args
    old = session["prompt_old_arg"]
    assert isinstance(old, MCPError) and "id is required" in old.message and "'recording_id'" in old.message, old
    sc = ids[F.SCREENCAST_NAME]
    triage = session["prompt_triage"].messages[0].content.text
    assert sc in triage and "get_transcript" in triage
    logs = session["prompt_logs"].messages[0].content.text
    assert "10:27:01 ERROR 503" in logs and "recorded_at" in logs


# --------------------------------------------------------------------------- list / transcript

def test_list_recordings_paginated(session, ids):
    p = _payload(session["list_all"])
    assert p["total"] == 4 and p["next_offset"] is None
    by_id = {r["id"]: r for r in p["recordings"]}
    assert set(by_id) == set(ids.values())
    sc = by_id[ids[F.SCREENCAST_NAME]]
    assert sc["filename"] == F.SCREENCAST_NAME and sc["has_video"] and sc["has_audio"]
    assert abs(sc["duration_ms"] - F.SCREENCAST_DURATION_S * 1000) <= F.DURATION_TOLERANCE_S * 1000
    assert sc["recorded_at"].startswith("2026-03-14T09:26:53")
    assert sc["counts"]["segments"] >= 4 and sc["counts"]["unique_frames"] >= 4
    assert by_id[ids[F.MEETING_NAME]]["has_video"] is False
    p1, p2 = _payload(session["list_p1"]), _payload(session["list_p2"])
    assert len(p1["recordings"]) == 2 and p1["next_offset"] == 2
    assert len(p2["recordings"]) == 2 and p2["next_offset"] is None
    assert {r["id"] for r in p1["recordings"]} | {r["id"] for r in p2["recordings"]} == set(ids.values())


def test_transcript_has_times_wall_clock_and_keywords(session):
    p = _payload(session["tr_sc"])
    assert p["truncated"] is False and p["next_start_ms"] is None
    segs = p["segments"]
    text = " ".join(s["text"] for s in segs).lower()
    for kw in F.SCREENCAST_KEYWORDS:
        assert kw in text, kw
    for s in segs:
        assert isinstance(s["t_ms"], int) and s["t1_ms"] >= s["t_ms"]
        assert "t_wall" not in s  # wall time once per response (wall_clock), per segment on request
    assert p["wall_clock"]["start_utc"].startswith("2026-03-14T09:26:53")
    walled = _payload(session["tr_sc_wall"])["segments"]
    assert [s["seq"] for s in walled] == [s["seq"] for s in segs]
    for s in walled:
        assert s["t_wall"].startswith("2026-03-14T09:2")
    # the window returns only segments overlapping 6..12 s: the gateway/timeout narration
    win = _payload(session["tr_sc_range"])["segments"]
    assert win and all(s["t1_ms"] > 6000 and s["t_ms"] <= 12000 for s in win)
    assert "gateway" in " ".join(s["text"] for s in win).lower()
    srt = _payload(session["tr_sc_srt"])["srt"]
    assert "-->" in srt and "00:00:0" in srt and "gateway" in srt.lower()


def test_transcript_of_silent_video_says_why(session):
    p = _payload(session["tr_sv"])
    assert p["segments"] == [] and p["transcript_available"] is False and p["reason"]


def test_transcript_truncation_continuation(session):
    pages = [_payload(r) for r in session["tr_pages"]]
    full = _payload(session["tr_tv"])["segments"]
    assert len(pages) >= 2 and pages[0]["truncated"] is True
    for res in session["tr_pages"]:
        assert len(res.content[0].text) <= 1000
    seen = [s["seq"] for p in pages for s in p["segments"]]
    assert len(seen) == len(set(seen)), "continuation repeated a segment"
    assert seen == [s["seq"] for s in full], "continuation lost or reordered segments"
    assert pages[-1]["truncated"] is False and pages[-1]["next_start_ms"] is None


def test_diarized_transcript_speakers(session):
    p = _payload(session["tr_tv"])
    assert p["diarized"], "two_voices.m4a was processed with diarize=True; its models come from ../shared"
    labels = {s["speaker"] for s in p["segments"]}
    assert labels == {"S1", "S2"}
    s1 = _payload(session["tr_tv_s1"])["segments"]
    assert s1 and {s["speaker"] for s in s1} == {"S1"}
    assert "welcome" in " ".join(s["text"] for s in s1).lower()


# --------------------------------------------------------------------------- frames / moment / extract

def test_get_frames_returns_jpeg_image_blocks(session):
    res = session["fr_sc"]
    assert not res.is_error
    meta = _payload(res)
    imgs = _images(res)
    assert 1 <= len(imgs) <= 6 and len(imgs) == len(meta["frames"])
    for data in imgs:
        assert data[:3] == b"\xff\xd8\xff"
        with Image.open(io.BytesIO(data)) as im:
            assert im.format == "JPEG" and max(im.size) <= 1568
    # unique frames only; every scene cut starts a new unique frame, whose OCR text is that scene's
    assert set(F.SCREENCAST_SCENE_STARTS_MS) <= {f["ms"] for f in meta["frames"]}
    for f in meta["frames"]:
        scene = next(sc for sc in F.SCREENCAST_SCENES if sc["start_ms"] <= f["ms"] < sc["end_ms"])
        assert f["t_wall"].startswith("2026-03-14T09:2")
        assert "duplicate_of" not in f
        assert any(k in F.ocr_normalize(f["ocr_text"] or "") for k in scene["ocr_keywords"])
    captions = [c.text for c in res.content[1:] if c.type == "text"]
    # the OCR text is in the JSON block only, not repeated in the captions (issue #26, item 5)
    assert len(captions) == len(imgs) and all(" ms" in c and "OCR" not in c for c in captions)


def test_get_frames_pagination_with_duplicates(session):
    pages = [_payload(r) for r in session["fr_pages"]]
    ms = [f["ms"] for p in pages for f in p["frames"]]
    assert len(pages) >= 2 and all(len(p["frames"]) <= 6 for p in pages)
    assert ms == sorted(set(ms)) and any("duplicate_of" in f for p in pages for f in p["frames"])
    assert all(len(_images(r)) == len(_payload(r)["frames"]) for r in session["fr_pages"])


def test_get_moment(session):
    res = session["mo_sc"]
    meta = _payload(res)
    assert 1 <= len(meta["frames"]) <= 3 and len(_images(res)) == len(meta["frames"])
    assert meta["on_screen_frame_ms"] == 12000  # 13 s is inside the ROLLBACK scene (12-18 s)
    assert 12000 in [f["ms"] for f in meta["frames"]]
    said = " ".join(s["text"] for s in meta["transcript"]["segments"]).lower()
    assert "restored" in said and meta["t_wall"].startswith("2026-03-14T09:27:06")
    audio = _payload(session["mo_mt"])
    assert audio["frames"] == [] and "audio-only" in audio["note"]
    assert "migration" in " ".join(s["text"] for s in audio["transcript"]["segments"]).lower()


def test_extract_frame_exact_instant(session, pristine_home, ids):
    res = session["ex_sc"]
    assert not res.is_error, res.content[0].text
    meta = _payload(res)
    assert 13000 <= meta["frame_ms"] < 13000 + 1000 / F.SCREENCAST_FPS + 1
    assert (meta["width"], meta["height"]) == (1568, 882)
    assert meta["source_size"] == [F.SCREENCAST_WIDTH, F.SCREENCAST_HEIGHT]
    (data,) = _images(res)
    with Image.open(io.BytesIO(data)) as im:
        extracted = im.convert("L").resize((196, 110))
    from PIL import ImageChops, ImageStat

    from talkthrough_assets import store

    def diff(ms: int) -> float:  # mean absolute grey difference to the stored keyframe at ms
        with Image.open(store.local_file(_keyframe_file(ids[F.SCREENCAST_NAME], ms))) as k:
            kk = k.convert("L").resize((196, 110))
        return ImageStat.Stat(ImageChops.difference(extracted, kk)).mean[0]

    # same scene as the stored 12 s keyframe (only a cursor blinks), unlike the 18 s one
    assert diff(12000) < 1.5 and diff(18000) > 3


def _keyframe_file(rid: str, ms: int) -> str:
    from talkthrough_assets import store

    return next(r["file"] for r in store.read_rows("keyframes", rid) if r["ms"] == ms)


# --------------------------------------------------------------------------- search

def _hits(session, key) -> list[dict]:
    res = session[key]
    assert not res.is_error, res.content[0].text
    return _payload(res)["hits"]


def test_search_transcript_keywords_across_two_recordings(session, ids):
    sc, mt = ids[F.SCREENCAST_NAME], ids[F.MEETING_NAME]
    hits = [h for h in _hits(session, "se_checkout") if h["source"] == "transcript"]
    assert hits and hits[0]["recording"] == sc
    lo, hi = F.SCREENCAST_SCENES[1]["narration_ms"]
    assert lo - 1000 <= hits[0]["t_ms"] <= hi
    assert hits[0]["frame_ms"] == 6000  # the ERROR 503 screen was showing
    assert hits[0]["t_wall"].startswith("2026-03-14T09:2") and "checkout" in hits[0]["snippet"].lower()
    hits = _hits(session, "se_forecast")
    assert hits[0]["recording"] == mt and hits[0]["source"] == "transcript" and hits[0]["frame_ms"] is None
    start, end, _ = F.MEETING_LINES[3]
    assert start - 1000 <= hits[0]["t_ms"] <= end and hits[0]["t_wall"].startswith("2026-04-02T15:00:1")
    recs = {h["recording"] for h in _hits(session, "se_database")}
    assert {mt, ids[F.TWO_VOICES_NAME]} <= recs
    assert {h["recording"] for h in _hits(session, "se_scoped")} == {mt}
    for key in ("se_checkout", "se_database"):
        assert all(len(h["snippet"]) <= 160 for h in _hits(session, key))


def test_search_ocr_word_points_into_its_scene(session, ids):
    """Each scene's on-screen words (unique to that scene) lead to OCR hits inside that scene."""
    for scene in F.SCREENCAST_SCENES:
        found = 0
        for kw in scene["ocr_keywords"]:
            hits = [h for h in _hits(session, f"se_ocr_{kw}") if h["source"] == "ocr"]
            for h in hits:
                assert h["recording"] == ids[F.SCREENCAST_NAME]
                assert scene["start_ms"] <= h["t_ms"] < scene["end_ms"], (kw, h)
                assert h["frame_ms"] == h["t_ms"] and kw in F.ocr_normalize(h["snippet"])
                assert h["t_wall"].startswith("2026-03-14T09:2")
            found += bool(hits)
        assert found >= 1, scene["title"]  # OCR may glue words ("ERROR503GATEWAYTIMEOUT"): one is enough


def test_search_folding_and_and_or_semantics(session):
    assert [(h["recording"], h["t_ms"]) for h in _hits(session, "se_folded")] == \
        [(h["recording"], h["t_ms"]) for h in _hits(session, "se_checkout")]
    p = _payload(session["se_and"])
    assert p["mode"] == "and" and p["hits"] and "note" not in p
    p = _payload(session["se_or"])
    assert p["mode"] == "or" and p["hits"] and p["unmatched_terms"] == ["xylophone"]
    assert "budget" in p["note"] and "xylophone" in p["note"] and all(h["matched"] == ["budget"] for h in p["hits"])
    p = _payload(session["se_none"])
    assert p["hits"] == [] and "xylophone" in p["note"]


# --------------------------------------------------------------------------- errors and safety

@pytest.mark.parametrize("key,code", [
    ("err_malformed", "invalid_argument"), ("err_upper", "invalid_argument"), ("err_unknown", "unknown_recording"),
    ("err_range", "invalid_argument"), ("err_negative", "invalid_argument"), ("err_past_end", "invalid_argument"),
    ("err_audio_frames", "audio_only"), ("err_audio_extract", "audio_only"), ("err_frames_limit", "invalid_argument"),
    ("err_search_limit", "invalid_argument"), ("err_search_empty", "invalid_argument"),
    ("err_speaker", "invalid_argument"), ("err_format", "invalid_argument"),
])
def test_errors_are_structured_tool_errors(session, key, code):
    err = _error(session[key])
    assert err["error"] == code, err
    assert len(err["message"]) < 300


def test_session_never_wrote_under_the_data_root(session):
    assert session["changed_files"] == []


# --------------------------------------------------------------------------- streamable HTTP

async def _http_session(url: str, headers: dict | None = None) -> tuple[set[str], dict]:
    from mcp import ClientSession
    from mcp.client.streamable_http import streamable_http_client
    from mcp.shared._httpx_utils import create_mcp_http_client

    with anyio.fail_after(120):
        async with create_mcp_http_client(headers=headers) as http, \
                streamable_http_client(url, http_client=http) as (r, w), ClientSession(r, w) as s:
            await s.initialize()
            tools = {t.name for t in (await s.list_tools()).tools}
            res = await s.call_tool("search", {"query": "checkout"})
            assert not res.is_error, res.content[0].text
            return tools, _payload(res)


def _start_http(tt_home: Path, port: int, token: str | None = None) -> subprocess.Popen:
    env = {k: v for k, v in os.environ.items() if k != "TALKTHROUGH_MCP_TOKEN"}
    env["TALKTHROUGH_HOME"] = str(tt_home)
    if token:
        env["TALKTHROUGH_MCP_TOKEN"] = token
    return subprocess.Popen([TALKTHROUGH, "mcp", "--http", "--port", str(port)], env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)


def test_streamable_http_smoke(processed, pristine_home, ids):
    port = _free_port()
    proc = _start_http(pristine_home, port)
    try:
        _wait_port(port, proc)
        tools, hits = anyio.run(_http_session, f"http://127.0.0.1:{port}/mcp")
        assert tools == TOOLS
        assert hits["hits"][0]["recording"] == ids[F.SCREENCAST_NAME]
    finally:
        _stop(proc)


def test_streamable_http_requires_configured_token(processed, tt_home):
    import httpx

    port, token = _free_port(), "t0ken-" + os.urandom(8).hex()
    proc = _start_http(tt_home, port, token)
    try:
        _wait_port(port, proc)
        body = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}
        hdrs = {"Accept": "application/json, text/event-stream"}
        r = httpx.post(f"http://127.0.0.1:{port}/mcp", json=body, headers=hdrs, timeout=30)
        assert r.status_code == 401 and "bearer" in r.headers.get("www-authenticate", "").lower()
        r = httpx.post(f"http://127.0.0.1:{port}/mcp", json=body, timeout=30,
                       headers={**hdrs, "Authorization": "Bearer wrong"})
        assert r.status_code == 401
        tools, _ = anyio.run(_http_session, f"http://127.0.0.1:{port}/mcp", {"Authorization": f"Bearer {token}"})
        assert tools == TOOLS
    finally:
        _stop(proc)


def test_non_loopback_bind_without_token_is_refused(tt_home):
    env = {k: v for k, v in os.environ.items() if k != "TALKTHROUGH_MCP_TOKEN"}
    env["TALKTHROUGH_HOME"] = str(tt_home)
    port = _free_port()
    r = subprocess.run([TALKTHROUGH, "mcp", "--http", "--host", "0.0.0.0", "--port", str(port)], env=env,
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 2
    assert "TALKTHROUGH_MCP_TOKEN" in r.stderr and "0.0.0.0" in r.stderr


def test_bind_guard_rules():
    from talkthrough_mcp.http_guard import BindRefused, check_bind, is_loopback

    assert is_loopback("127.0.0.1") and is_loopback("::1") and is_loopback("localhost") and is_loopback("127.8.0.1")
    assert not is_loopback("0.0.0.0") and not is_loopback("192.168.1.5") and not is_loopback("example.com")
    check_bind("127.0.0.1", None)
    check_bind("127.0.0.1", "x")  # loopback: any token
    check_bind("0.0.0.0", "k3Jq9-vXw2_ZpL8mN4rT6yB1cF5hG7dA0sE")
    with pytest.raises(BindRefused):
        check_bind("0.0.0.0", None)
    with pytest.raises(BindRefused):
        check_bind("::", "")
    # issue #26, item 7: a non-loopback bind needs a token of >= 32 characters, >= 10 distinct
    for weak in ("x", "secret", "a" * 64, "abababababababababababababababab12"):
        with pytest.raises(BindRefused, match="TALKTHROUGH_MCP_TOKEN"):
            check_bind("0.0.0.0", weak)


# --------------------------------------------------------------------------- reader on a synthetic library

def _bm25(tf, dl, avgdl, n, df, k1=1.2, b=0.75):
    return math.log(1 + (n - df + 0.5) / (df + 0.5)) * tf * (k1 + 1) / (tf + k1 * (1 - b + b * dl / avgdl))


def _write_recording(rid: str, transcript: list[tuple[int, str]], ocr: list[tuple[int, str]] = (),
                     keyframes: list[tuple[int, int | None]] = (), tz: int | None = 60) -> None:
    """A recording as the pipeline publishes it: its tables, then its manifest (built by the real
    manifest stage), which is what the read server serves."""
    from talkthrough_assets import store
    from manifests import stage_build

    wc = {"start_utc": "2026-05-01T08:00:00.000+00:00", "tz_offset_min": tz, "source": "recorded_at",
          "confidence": "exact", "available": True}
    store.write_table("wall_clock", rid, [wc])
    segs = [{"seq": i, "t0_ms": t, "t1_ms": t + 900, "text": text} for i, (t, text) in enumerate(transcript)]
    store.write_table("segments", rid, segs)
    ocr_rows = [{"ms": ms, "text": text} for ms, text in ocr]
    store.write_table("ocr", rid, ocr_rows)
    frames = [{"ms": ms, "file": f"frames/{rid}/g/t{ms:08d}.jpg"} for ms, _ in keyframes]
    dedup = [{"ms": ms, "duplicate_of": dup} for ms, dup in keyframes]
    store.write_table("keyframes", rid, frames)
    store.write_table("dedup", rid, dedup)
    probe = {"path": f"/nonexistent/{rid[:4]}.mp4", "filename": f"{rid[:4]}.mp4", "kind": "video",
             "duration_ms": 600_000, "size_bytes": 1, "has_audio": True, "has_video": True}
    m = stage_build(
        recording_id=rid, probe=probe, wall_clock=wc,
        transcript={"available": True, "reason": None, "language": "en", "model": "test"}, segments=segs,
        words=[], diarization=None, turns=[], speakers=[], speaker_segments=[], keyframes=frames, dedup=dedup,
        ocr=ocr_rows, settings={"max_frames": 1000, "ocr": True}).to_json()
    store.put_json(store.manifest_key(rid), m)


A, B, C = "aaaaaaaaaaaaaaaa", "bbbbbbbbbbbbbbbb", "cccccccccccccccc"


@pytest.fixture
def library(tmp_path, monkeypatch):
    """Two synthetic recordings written through store.write_table into a private data root."""
    monkeypatch.setenv("TALKTHROUGH_HOME", str(tmp_path))
    _write_recording(A, [(0, "alpha beta gamma"), (5000, "Alpha ALPHA delta")])
    _write_recording(B, [(0, "beta epsilon"), (2500, "zeta eta theta iota")], ocr=[(1000, "ÄLPHA screen")],
                     keyframes=[(0, None), (1000, None), (2000, 1000)], tz=None)
    from talkthrough_assets.read.reader import Reader

    return _AsSent(Reader(refresh_interval=0))


class _AsSent:
    """A reader whose answers are the JSON a client receives (each typed answer's ``dump()``)."""

    def __init__(self, reader):
        self._reader = reader

    def __getattr__(self, name):
        call = getattr(self._reader, name)
        return lambda *args, **kwargs: call(*args, **kwargs).dump()


def test_bm25_scores_match_the_formula(library):
    res = library.search("alpha")
    got = [(h["recording"], h["source"], h["t_ms"], h["score"]) for h in res["hits"]]
    # transcript: N=4 docs, avgdl=(3+3+2+4)/4=3, df(alpha)=2; ocr: N=1, avgdl=2, df=1
    assert got == [
        (A, "transcript", 5000, round(_bm25(2, 3, 3, 4, 2), 3)),
        (A, "transcript", 0, round(_bm25(1, 3, 3, 4, 2), 3)),
        (B, "ocr", 1000, round(_bm25(1, 2, 2, 1, 1), 3)),
    ]
    assert res["mode"] == "and" and res["total_matches"] == 3
    # scoped search keeps the global IDF
    scoped = library.search("alpha", recording_id=B)
    assert [(h["recording"], h["score"]) for h in scoped["hits"]] == [(B, got[2][3])]
    # t_wall: recording-local offset when known, UTC otherwise; frame_ms: the unique frame on screen
    assert res["hits"][0]["t_wall"] == "2026-05-01T09:00:05.000+01:00"
    assert res["hits"][2]["t_wall"] == "2026-05-01T08:00:01.000+00:00" and res["hits"][2]["frame_ms"] == 1000
    assert library.search("theta")["hits"][0]["frame_ms"] == 1000  # t=2500 -> keyframe 2000, a duplicate of 1000


def test_and_first_then_or_with_note(library):
    res = library.search("alpha beta")
    assert res["mode"] == "and" and [(h["recording"], h["t_ms"]) for h in res["hits"]] == [(A, 0)]
    res = library.search("alpha epsilon")
    assert res["mode"] == "or" and res["matched_terms"] == ["alpha", "epsilon"] and res["unmatched_terms"] == []
    assert "alpha" in res["note"] and "epsilon" in res["note"]
    assert {tuple(h["matched"]) for h in res["hits"]} == {("alpha",), ("epsilon",)}


def test_index_refreshes_changed_and_removed_partitions(library):
    from talkthrough_assets import store

    assert library.search("omega")["hits"] == []
    _write_recording(C, [(0, "omega alpha")])
    hits = library.search("omega")["hits"]
    assert [h["recording"] for h in hits] == [C]
    # IDF follows the library: a third alpha document lowers alpha's weight in A
    assert library.search("alpha")["hits"][0]["score"] == round(_bm25(2, 3, 2.8, 5, 3), 3)
    for table in store.TABLES:
        store.delete_partition(table, C)
    store.manifest_path(C).unlink()
    assert library.search("omega")["hits"] == []
    assert library.list_recordings()["total"] == 2


def test_transcript_pages_respect_the_cap(library):
    from talkthrough_assets import store

    _write_recording(A, [(i * 1000, f"sentence number {i} " + "x" * 60) for i in range(60)])
    seen, start = [], None
    from talkthrough_assets.read.args import dumps

    for _ in range(100):
        page = library.get_transcript(A, start_ms=start, max_chars=1000)
        assert len(dumps(page)) <= 1000
        seen += [s["seq"] for s in page["segments"]]
        if not page["truncated"]:
            break
        start = page["next_start_ms"]
    assert seen == list(range(60))


def test_snippet_is_bounded_and_centered_on_the_match():
    from talkthrough_assets.read.search import snippet

    text = ("lorem ipsum " * 30) + "the Café incident was resolved " + ("dolor sit amet " * 30)
    s = snippet(text, {"cafe"})
    assert len(s) <= 160 and "Café" in s and s.startswith("…") and s.endswith("…")
    assert snippet("short text", {"x"}) == "short text"
    assert "NEEDLE" in snippet("x" * 400 + " NEEDLE", {"needle"})

"""Issue #26: the MCP server for real clients. Tool errors reach the official MCP Inspector CLI (the
TypeScript SDK, which validates results against each tool's outputSchema); extract_frame never serves
another file's frame while the source path is swapped under it. Real server processes, real clients,
the committed fixtures. No mocks."""

from __future__ import annotations

import base64
import json
import os
import shutil
import subprocess
import sys
import threading
from pathlib import Path

import anyio
import pytest

import fixture_facts as F
import mcp_inspector
from mcp_env import inspector_env_args, server_env
from test_mcp_robustness import _copy_home, _point_source

TALKTHROUGH = shutil.which("talkthrough") or str(Path(sys.executable).with_name("talkthrough"))
SESSION_TIMEOUT_S = 300
INSPECTOR_TIMEOUT_S = 120


@pytest.fixture(scope="module")
def ids(processed) -> dict[str, str]:
    return {name: s["recording_id"] for name, s in processed.items()}


# --------------------------------------------------------------------------- item 1: the Inspector CLI

@pytest.fixture(scope="module")
def inspector() -> list[str]:
    return mcp_inspector.inspector_command()


def _inspect(inspector: list[str], home: Path, *args: str) -> tuple[int, dict | None, str]:
    """One Inspector CLI run against `talkthrough mcp` over stdio: (exit code, its JSON output, stderr)."""
    cmd = [*inspector, *inspector_env_args(home), TALKTHROUGH, "mcp", *args]
    res = subprocess.run(cmd, capture_output=True, text=True, timeout=INSPECTOR_TIMEOUT_S,
                         env={**os.environ, "PATH": f"{Path(inspector[0]).parent}{os.pathsep}{os.environ['PATH']}"})
    try:  # the result, then (for an isError result) a line of the CLI's own: {"error": {"code": "tool_is_error"}}
        out, _ = json.JSONDecoder().raw_decode(res.stdout.lstrip())
    except json.JSONDecodeError:
        out = None
    return res.returncode, out, res.stdout + res.stderr


def _tool_call(tool: str, args: dict) -> list[str]:
    out = ["--method", "tools/call", "--tool-name", tool]
    for k, v in args.items():
        out += ["--tool-arg", f"{k}={json.dumps(v) if not isinstance(v, str) else v}"]
    return out


def error_cases(ids: dict[str, str]) -> dict[str, tuple[str, dict, str]]:
    sc, mt = ids[F.SCREENCAST_NAME], ids[F.MEETING_NAME]
    return {
        "unknown_recording": ("get_transcript", {"id": "0123456789abcdef"}, "unknown_recording"),
        "malformed_id": ("get_transcript", {"id": "not-an-id"}, "invalid_argument"),
        "audio_only_frames": ("get_frames", {"id": mt}, "audio_only"),
        "audio_only_extract": ("extract_frame", {"id": mt, "t_ms": 1000}, "audio_only"),
        "past_end": ("get_moment", {"id": sc, "t_ms": 10_000_000}, "invalid_argument"),
        "bad_range": ("get_transcript", {"id": sc, "start_ms": 9000, "end_ms": 1000}, "invalid_argument"),
        "search_limit": ("search", {"query": "budget", "limit": 51}, "invalid_argument"),
        "list_offset_huge": ("list_recordings", {"offset": 2 ** 63}, "invalid_argument"),
        "unknown_argument": ("list_recordings", {"bogus": 1}, "invalid_argument"),
        "limit_range": ("get_frames", {"id": sc, "limit": 7}, "invalid_argument"),
        "time_form": ("get_moment_at", {"at": "next tuesday"}, "invalid_argument"),  # issue #36
    }


def test_item1_every_error_code_and_hint_reaches_the_inspector_cli(processed, pristine_home, ids, inspector):
    """The TypeScript SDK client (Inspector CLI) sees each error's code, message and hint, never a
    'Structured content does not match the tool's output schema' in its place."""
    seen_codes = set()
    for key, (tool, args, code) in error_cases(ids).items():
        rc, out, raw = _inspect(inspector, pristine_home, *_tool_call(tool, args))
        assert out is not None, f"{key}: no JSON from the Inspector (rc {rc}): {raw[-2000:]}"
        assert "output schema" not in raw.lower() and "structured content" not in raw.lower(), (key, raw[-2000:])
        assert out.get("isError") is True, (key, out)
        assert "structuredContent" not in out, (key, out)
        body = json.loads(out["content"][0]["text"])
        assert body["error"] == code, (key, body)
        assert body["message"], (key, body)
        if code in ("unknown_recording", "audio_only") or key == "unknown_argument":
            assert body.get("hint"), (key, body)
        seen_codes.add(code)
    assert seen_codes == {"unknown_recording", "invalid_argument", "audio_only"}


def test_item1_successes_validate_in_the_inspector_and_schemas_are_portable(processed, pristine_home, ids,
                                                                              inspector):
    """Successful results pass the TypeScript SDK's outputSchema validation (structuredContent present);
    the tool listing has no error-severity portability problems (--strict)."""
    sc, tv = ids[F.SCREENCAST_NAME], ids[F.TWO_VOICES_NAME]
    for tool, args in [("list_recordings", {}), ("get_transcript", {"id": tv}), ("search", {"query": "checkout"}),
                       ("get_frames", {"id": sc, "limit": 1}), ("get_moment", {"id": sc, "t_ms": 13000}),
                       ("extract_frame", {"id": sc, "t_ms": 13000}),
                       # asked in wall time (issue #36): the answers with their `time` / moments validate too
                       ("get_moment_at", {"at": "2026-03-14T09:27:06Z"}),
                       ("list_recordings", {"since": "2026-03-14", "tz": "UTC"}),
                       ("search", {"query": "checkout", "since": "2026-03-14", "until": "2026-03-14"})]:
        rc, out, raw = _inspect(inspector, pristine_home, *_tool_call(tool, args))
        assert rc == 0 and out is not None, (tool, raw[-2000:])
        assert out.get("isError") in (None, False), (tool, out)
        assert isinstance(out.get("structuredContent"), dict), (tool, raw[-1000:])
    rc, out, raw = _inspect(inspector, pristine_home, "--method", "tools/list", "--strict")
    assert rc == 0, raw[-3000:]
    assert {t["name"] for t in out["tools"]} >= {"list_recordings", "search", "extract_frame"}


# --------------------------------------------------------------------------- item 2: extract_frame race

RACE_CALLS = 300
RACE_T_MS = 3000


def test_item2_extract_frame_never_serves_a_file_swapped_over_the_source(processed, pristine_home, ids, tmp_path):
    """The source path is swapped between the recording's bytes and another video in a loop while 300
    extract_frame calls run: every successful answer is the recording's own frame (byte-identical to an
    unswapped decode); the others are source_unavailable errors."""

    sc = ids[F.SCREENCAST_NAME]
    home = _copy_home(pristine_home, tmp_path / "home")
    src_dir = tmp_path / "sources"
    src_dir.mkdir()
    src = src_dir / "screencast.mp4"
    own, other = tmp_path / "own.mp4", tmp_path / "other.mp4"
    shutil.copyfile(F.SCREENCAST_PATH, own)
    shutil.copyfile(F.SILENT_PATH, other)
    os.link(own, src)
    _point_source(home, sc, src)

    stop = threading.Event()
    swaps = [0]

    def swapper():
        i = 0
        while not stop.is_set():
            tmp = src_dir / f".swap{i % 2}"
            os.link(other if i % 2 == 0 else own, tmp)
            os.replace(tmp, src)
            swaps[0] += 1
            i += 1
            stop.wait(0.002)
        tmp = src_dir / ".swap-final"
        os.link(own, tmp)
        os.replace(tmp, src)

    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client

    params = StdioServerParameters(command=TALKTHROUGH, args=["mcp"],
                                   env=server_env(home))

    async def run() -> tuple:
        with anyio.fail_after(SESSION_TIMEOUT_S):
            async with stdio_client(params) as (r, w), ClientSession(r, w) as s:
                await s.initialize()
                ref = await s.call_tool("extract_frame", {"id": sc, "t_ms": RACE_T_MS})
                t = threading.Thread(target=swapper, daemon=True)
                t.start()
                try:
                    results = [await s.call_tool("extract_frame", {"id": sc, "t_ms": RACE_T_MS})
                               for _ in range(RACE_CALLS)]
                finally:
                    stop.set()
                    t.join(10)
                return ref, results

    ref, results = anyio.run(run)
    assert not ref.is_error, ref.content[0].text
    want = [base64.b64decode(c.data) for c in ref.content if c.type == "image"]
    assert len(want) == 1
    ok = wrong = refused = 0
    for res in results:
        if res.is_error:
            body = json.loads(res.content[0].text)
            assert body["error"] == "source_unavailable", body
            refused += 1
            continue
        meta = json.loads(res.content[0].text)
        got = [base64.b64decode(c.data) for c in res.content if c.type == "image"]
        if got == want and meta["exact"] is True and meta["frame_ms"] == json.loads(ref.content[0].text)["frame_ms"]:
            ok += 1
        else:
            wrong += 1
    assert swaps[0] > RACE_CALLS, f"only {swaps[0]} swaps: the race was not exercised"
    assert wrong == 0, f"{wrong} of {RACE_CALLS} calls served another file's frame ({ok} right, {refused} refused)"
    assert ok > 0 and refused > 0, (ok, refused)


# --------------------------------------------------------------------------- item 7: smaller defects

@pytest.fixture(scope="module")
def defects(processed, pristine_home, ids) -> dict:
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client
    from mcp.shared.exceptions import MCPError

    params = StdioServerParameters(command=TALKTHROUGH, args=["mcp"],
                                   env=server_env(pristine_home))
    calls = {
        "offset_huge": ("list_recordings", {"offset": 2 ** 63}),
        "offset_past": ("list_recordings", {"offset": 50}),
        "survey_s1": ("search", {"query": "survey", "speaker": "S1"}),
        "survey_s2": ("search", {"query": "survey", "speaker": "S2"}),
        "passwd": ("get_transcript", {"id": "/etc/passwd"}),
        "rollback": ("search", {"query": "rollback"}),
        "phrase": ("search", {"query": '"roll back"'}),
        "phrase_reversed": ("search", {"query": '"back roll"'}),
        "list": ("list_recordings", {}),
        "moment": ("get_moment", {"id": ids[F.SCREENCAST_NAME], "t_ms": 13000}),
    }
    prompts = {
        "p_bad_id": ("triage_recording", {"id": "x" * 20_000}),
        "p_path_id": ("screen_at_remark", {"id": "../etc", "remark": "checkout"}),
        "p_topic": ("find_discussion", {"topic": "database migration"}),
        "p_remark": ("screen_at_remark", {"id": ids[F.SCREENCAST_NAME], "remark": "gateway timeout"}),
        "p_speaker": ("speaker_summary", {"id": ids[F.TWO_VOICES_NAME], "speaker": "S2"}),
    }

    async def run() -> dict:
        out: dict = {}
        with anyio.fail_after(SESSION_TIMEOUT_S):
            async with stdio_client(params) as (r, w), ClientSession(r, w) as s:
                await s.initialize()
                out["prompts"] = (await s.list_prompts()).prompts
                for key, (tool, args) in calls.items():
                    out[key] = await s.call_tool(tool, args)
                for key, (name, args) in prompts.items():
                    try:
                        out[key] = await s.get_prompt(name, args)
                    except MCPError as e:
                        out[key] = e
        return out

    return anyio.run(run)


def _body(res) -> dict:
    return json.loads(res.content[0].text)


def test_item7_offsets_ids_and_speaker_scoped_suggestions(defects):
    err = _body(defects["offset_huge"])
    assert defects["offset_huge"].is_error and err["error"] == "invalid_argument", err
    assert "ConversionException" not in err["message"] and "offset" in err["message"]
    past = _body(defects["offset_past"])
    assert past["returned"] == 0 and past["next_offset"] is None
    # the user's own id is echoed as sent, not rewritten by the path scrubber
    err = _body(defects["passwd"])
    assert err["error"] == "invalid_argument" and "'/etc/passwd'" in err["message"], err
    # "survey" is in the library (said by S2): no spelling suggestion for S1, a clear note instead
    s1 = _body(defects["survey_s1"])
    assert s1["returned"] == 0 and "did_you_mean" not in s1, s1
    assert s1["found_elsewhere"] == ["survey"] and "'S1'" in s1["note"], s1
    assert _body(defects["survey_s2"])["returned"] >= 1


def test_item7_item8_prompts_check_ids_and_describe_arguments(defects, ids):
    from mcp.shared.exceptions import MCPError

    assert len(defects["prompts"]) == 7  # what_happened_at (#36) is the seventh
    for p in defects["prompts"]:
        assert p.description and p.arguments, p.name
        for a in p.arguments:
            assert a.required and a.description, (p.name, a.name)
    for key in ("p_bad_id", "p_path_id"):
        e = defects[key]
        assert isinstance(e, MCPError) and ": id " in e.message and len(e.message) < 500, (key, e)
    assert "database migration" in defects["p_topic"].messages[0].content.text
    assert ids[F.SCREENCAST_NAME] in defects["p_remark"].messages[0].content.text
    assert 'speaker="S2"' in defects["p_speaker"].messages[0].content.text


def test_item7_speaker_names_match_by_word():
    from talkthrough_assets.read.transcript import name_matches

    assert name_matches("Alice Stone", "alice") and name_matches("Alice  Stone", "alice stone")
    assert name_matches("Alice Stone", "stone")
    assert not name_matches("Alice Stone", "ali") and not name_matches(None, "alice")


# --------------------------------------------------------------------------- item 3: no wait for the warm-up

def test_item3_list_and_search_answer_during_the_index_warmup(processed, pristine_home, ids, tmp_path):
    """A library of 4000 recordings: the first list_recordings and search, sent right after initialize,
    answer from the part indexed so far and say so ('index': 'warming (n of N ...)') instead of waiting
    for the whole build; get_transcript answers as usual; once built, the marker is gone."""
    import hashlib

    home = _copy_home(pristine_home, tmp_path / "big")
    originals = sorted((home / "manifests").glob("*.json"))
    data = [json.loads(p.read_text()) for p in originals]
    for i in range(4000):
        rid = hashlib.sha256(f"issue26-replica-{i}".encode()).hexdigest()[:16]
        (home / "manifests" / f"{rid}.json").write_text(json.dumps(dict(data[i % len(data)], job_id=rid)))

    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client

    params = StdioServerParameters(command=TALKTHROUGH, args=["mcp"],
                                   env=server_env(home, TALKTHROUGH_MCP_WARM_WAIT_S="0"))  # (default 5 s)

    async def run() -> dict:
        out: dict = {}
        with anyio.fail_after(SESSION_TIMEOUT_S * 2):
            async with stdio_client(params) as (r, w), ClientSession(r, w) as s:
                await s.initialize()
                out["list"] = await s.call_tool("list_recordings", {"limit": 5})
                out["search"] = await s.call_tool("search", {"query": "checkout"})
                out["tr"] = await s.call_tool("get_transcript", {"id": ids[F.SCREENCAST_NAME]})
                for _ in range(600):  # until the build is done
                    out["later"] = await s.call_tool("list_recordings", {"limit": 5})
                    if "index" not in _body(out["later"]):
                        break
                    await anyio.sleep(0.5)
                out["search_later"] = await s.call_tool("search", {"query": "checkout"})
        return out

    out = anyio.run(run)
    first, se = _body(out["list"]), _body(out["search"])
    assert not out["list"].is_error and not out["search"].is_error
    assert first["index"].startswith("warming (") and first["index"].endswith(" of 4004 recordings indexed)"), first
    n = int(first["index"].split("(")[1].split()[0])
    assert n < 4004 and first["total"] < 4004
    assert "index" in se or se["returned"] > 0
    assert not out["tr"].is_error and _body(out["tr"])["segments"]
    later = _body(out["later"])
    assert "index" not in later and later["total"] == 4004
    assert "index" not in _body(out["search_later"]) and _body(out["search_later"])["total_matches"] >= 1000


def test_item7_phrases_and_a_glued_word_finds_the_spoken_one(defects, ids):
    """'rollback' finds the OCR'd ROLLBACK and the spoken "roll back"; a quoted phrase needs its words
    adjacent and in order."""
    sc = ids[F.SCREENCAST_NAME]
    rb = _body(defects["rollback"])
    assert rb["split_words"] == {"rollback": "roll back"}, rb
    sources = {h["source"] for h in rb["hits"] if h["recording"] == sc}
    assert sources == {"transcript", "ocr"}, rb
    spoken = next(h for h in rb["hits"] if h["source"] == "transcript")
    assert "roll back" in spoken["snippet"].lower()
    ph = _body(defects["phrase"])
    assert ph["phrases"] == ["roll back"] and ph["returned"] >= 1
    assert all("roll back" in h["snippet"].lower() for h in ph["hits"]), ph
    rev = _body(defects["phrase_reversed"])
    assert rev["returned"] == 0 and "adjacent" in rev["note"], rev


def test_item6_one_wall_clock_shape_and_vocabulary(defects):
    listing = _body(defects["list"])
    moment = _body(defects["moment"])
    for r in listing["recordings"]:
        if r["wall_clock"] is not None:
            assert set(r["wall_clock"]) == {"start_utc", "tz_offset_min", "source", "confidence"}, r
    assert set(moment["wall_clock"]) == {"start_utc", "tz_offset_min", "source", "confidence"}
    # tz_offset_min null: t_wall is rendered in UTC, as the schema says
    if moment["wall_clock"]["tz_offset_min"] is None:
        assert moment["t_wall"].endswith("+00:00")

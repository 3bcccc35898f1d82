"""The MCP server as real clients meet it (the Inspector and load-client findings of issue #15): the installed
`talkthrough mcp` command driven by the mcp SDK's stdio client, over data the real pipeline made from
the committed fixtures. No mocks."""

from __future__ import annotations

import base64
import functools
import io
import json
import os
import re
import shutil
import subprocess
import threading
import time
from pathlib import Path

import anyio
import pytest
from PIL import Image

import fixture_facts as F
from mcp_env import server_env
from test_mcp import TALKTHROUGH, TOOLS, _free_port, _http_session, _stop, _wait_port

SESSION_TIMEOUT_S = 240


# --------------------------------------------------------------------------- helpers

def _payload(res) -> dict:
    assert not res.is_error, res.content[0].text
    return json.loads(res.content[0].text)


def _error(res) -> dict:
    assert res.is_error, res.content[0].text
    err = json.loads(res.content[0].text)
    assert err["error"] and err["message"], err
    assert res.structured_content is None  # an error is not the tool's outputSchema shape (issue #26, item 1)
    return err


def _params(home: Path, **env):
    from mcp import StdioServerParameters

    return StdioServerParameters(command=TALKTHROUGH, args=["mcp"],
                                 env=server_env(home, **env))


async def _calls(home: Path, calls: dict[str, tuple[str, dict]], errlog=None, **env) -> dict:
    """One stdio session: run every (tool, args) call; also returns the tool listing."""
    from mcp import ClientSession
    from mcp.client.stdio import stdio_client

    out: dict = {}
    with anyio.fail_after(SESSION_TIMEOUT_S):
        async with stdio_client(_params(home, **env), **({"errlog": errlog} if errlog else {})) as (r, w), \
                ClientSession(r, w) as s:
            await s.initialize()
            out["tools"] = (await s.list_tools()).tools
            for key, (tool, args) in calls.items():
                out[key] = await s.call_tool(tool, args)
    return out


def _copy_home(src: Path, dst: Path) -> Path:
    shutil.copytree(src, dst, ignore=shutil.ignore_patterns("dagster", "locks"))
    return dst


def _point_source(home: Path, recording_id: str, src: Path) -> None:
    """Make ``src`` the recording's source in the data root ``home``: its sources row and manifest say so."""
    from talkthrough_assets import store

    os.environ["TALKTHROUGH_HOME"], old = str(home), os.environ["TALKTHROUGH_HOME"]
    try:
        st = src.stat()
        store.write_table("sources", recording_id, [{"path": str(src), "filename": src.name,
                                                     "size_bytes": st.st_size, "mtime": st.st_mtime,
                                                     "seen_at": "2026-01-01T00:00:00.000+00:00"}])
        m = json.loads(store.manifest_path(recording_id).read_text())
        m["media"]["path"] = str(src)
        store.put_json(store.manifest_key(recording_id), m)
    finally:
        os.environ["TALKTHROUGH_HOME"] = old


def _replicate_manifests(home: Path, n: int) -> None:
    """A big library for load-type checks: the four real manifests published under n more ids."""
    import hashlib

    from talkthrough_assets import store

    originals = sorted((home / "manifests").glob("*.json"))
    data = [json.loads(p.read_text()) for p in originals]
    for i in range(n):
        rid = hashlib.sha256(f"replica-{i}".encode()).hexdigest()[:16]
        m = dict(data[i % len(data)], job_id=rid)
        (home / "manifests" / f"{rid}.json").write_text(json.dumps(m))
        store.check_id(rid)


@pytest.fixture(scope="module")
def ids(processed) -> dict[str, str]:
    return {name: s["recording_id"] for name, s in processed.items()}


# --------------------------------------------------------------------------- item 1: one generation

def test_search_and_transcript_show_one_generation_during_a_rewrite(processed, tmp_path):
    """A diarized recording is re-transcribed (vocabulary change) while a client polls search and
    get_transcript: every response names one published generation, its content is that
    generation's, and search never points into a transcript other than the one get_transcript shows
    for the same generation."""
    from fixture_facts import unique_copy

    from talkthrough_assets.app import service

    src = unique_copy(F.TWO_VOICES_PATH, tmp_path / "gen two voices.m4a", "issue15-generation")
    rid = service.process(src, overrides={"diarize": True, "num_speakers": 2})["recording_id"]
    home = Path(os.environ["TALKTHROUGH_HOME"])
    seen: dict[str, list] = {"tr": [], "se": []}
    started, done = threading.Event(), threading.Event()
    failure: list[BaseException] = []

    async def poll():
        from mcp import ClientSession
        from mcp.client.stdio import stdio_client

        with anyio.fail_after(SESSION_TIMEOUT_S):
            async with stdio_client(_params(home)) as (r, w), ClientSession(r, w) as s:
                await s.initialize()
                seen["tr"].append(_payload(await s.call_tool("get_transcript", {"id": rid})))
                started.set()
                while True:
                    finished = done.is_set()
                    seen["se"].append(_payload(await s.call_tool("search", {"query": "survey", "id": rid,
                                                                            "limit": 50})))
                    seen["tr"].append(_payload(await s.call_tool("get_transcript", {"id": rid})))
                    if finished:
                        break
                    await anyio.sleep(0.05)

    def client():
        try:
            anyio.run(poll)
        except BaseException as e:  # reported by the test body
            failure.append(e)
            started.set()

    t = threading.Thread(target=client, daemon=True)
    t.start()
    try:
        assert started.wait(120) and not failure, failure
        out = service.process(src, overrides={"vocabulary": "weekly sync, survey report, dark theme"})
        assert out["status"] == "processed", out
    finally:
        done.set()
        t.join(SESSION_TIMEOUT_S)
    assert not failure, failure
    by_gen: dict[str, list] = {}
    for tr in seen["tr"]:
        assert not tr["truncated"]
        segs = [(s["seq"], s["t_ms"], s["t1_ms"], s.get("speaker"), s["text"]) for s in tr["segments"]]
        assert by_gen.setdefault(tr["generation"], segs) == segs, "one generation, two transcripts"
    assert len(by_gen) == 2, f"expected the old and the new generation, saw {list(by_gen)}"
    first, last = seen["tr"][0]["generation"], seen["tr"][-1]["generation"]
    assert first != last
    hits = [(h, se["recordings"][h["recording"]]["generation"]) for se in seen["se"] for h in se["hits"]]
    assert hits and len(seen["se"]) >= 3
    for h, gen in hits:
        assert gen in by_gen, h
        segs = by_gen[gen]
        holder = [s for s in segs if s[1] <= h["t_ms"] <= s[2]]
        assert holder, f"hit at {h['t_ms']} ms is outside every segment of generation {h['generation']}"
        flat = " ".join(holder[0][4].split())
        assert h["snippet"].strip("…") in flat, (h["snippet"], flat)
        assert h["speaker"] == holder[0][3]


# --------------------------------------------------------------------------- item 2: word-level t_ms

def test_search_points_at_the_first_matched_word(processed, pristine_home, ids):
    from talkthrough_assets import store

    sc, tv = ids[F.SCREENCAST_NAME], ids[F.TWO_VOICES_NAME]
    out = anyio.run(_calls, pristine_home, {
        "checkout": ("search", {"query": "checkout", "id": sc}),
        "friday": ("search", {"query": "friday", "id": tv}),
        "two": ("search", {"query": "timeout gateway", "id": sc}),
    })
    os.environ["TALKTHROUGH_HOME"], old = str(pristine_home), os.environ["TALKTHROUGH_HOME"]
    try:
        words = {rid: store.read_rows("words", rid) for rid in (sc, tv)}
        segments = {rid: store.read_rows("segments", rid) for rid in (sc, tv)}
    finally:
        os.environ["TALKTHROUGH_HOME"] = old

    def first_word(rid: str, stem: str, lo: int, hi: int) -> int:
        return min(w["t0_ms"] for w in words[rid] if stem in w["word"].lower() and lo <= w["t0_ms"] <= hi)

    for key, rid, stem in (("checkout", sc, "checkout"), ("friday", tv, "friday"), ("two", sc, "gateway")):
        hit = next(h for h in _payload(out[key])["hits"] if h["source"] == "transcript")
        seg = next(s for s in segments[rid] if s["t0_ms"] <= hit["t_ms"] <= s["t1_ms"])
        assert hit["t_ms"] == first_word(rid, stem, seg["t0_ms"], seg["t1_ms"]), (key, hit)
        assert hit["t_ms"] > seg["t0_ms"], f"{key}: still the segment start"


# --------------------------------------------------------------------------- item 3: EOF during warm-up

def test_client_disconnect_during_index_warmup_exits_cleanly(processed, pristine_home, tmp_path):
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client

    home = _copy_home(pristine_home, tmp_path / "big")
    _replicate_manifests(home, 5000)  # a few seconds of index warm-up
    rc_file, err_file = tmp_path / "rc.txt", tmp_path / "stderr.txt"
    params = StdioServerParameters(
        command="sh", args=["-c", f'"{TALKTHROUGH}" mcp; echo "rc=$?" > "{rc_file}"'],
        env={**server_env(home), "PATH": os.environ.get("PATH", "/usr/bin:/bin")})

    async def connect_and_leave():
        with open(err_file, "w") as errlog, anyio.fail_after(120):
            async with stdio_client(params, errlog=errlog) as (r, w), ClientSession(r, w) as s:
                await s.initialize()
                assert {t.name for t in (await s.list_tools()).tools} == TOOLS  # answered while warming up

    for attempt in range(3):  # the Inspector hit the abort 3 out of 3 times
        anyio.run(connect_and_leave)
        deadline = time.monotonic() + 10
        while not rc_file.exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        err = err_file.read_text()
        assert rc_file.exists(), f"server did not exit within the client's grace period: {err}"
        assert rc_file.read_text().strip() == "rc=0", err
        assert "FATAL" not in err and "Traceback" not in err and "Aborted" not in err, err
        assert "during the index warm-up" in err, "the disconnect did not land during the warm-up"
        rc_file.unlink()


# --------------------------------------------------------------------------- item 4: source identity

def test_same_size_bytes_with_a_reset_mtime_are_not_served_as_the_recording(processed, pristine_home, ids,
                                                                                     tmp_path):

    sc = ids[F.SCREENCAST_NAME]
    home = _copy_home(pristine_home, tmp_path / "home")
    src = tmp_path / "sources dir" / "screencast copy.mp4"
    src.parent.mkdir()
    shutil.copyfile(F.SCREENCAST_PATH, src)
    _point_source(home, sc, src)  # the recording was processed from this path (same bytes, same id)

    from mcp import ClientSession
    from mcp.client.stdio import stdio_client

    async def run() -> tuple:
        with anyio.fail_after(SESSION_TIMEOUT_S):
            async with stdio_client(_params(home)) as (r, w), ClientSession(r, w) as s:
                await s.initialize()
                before = await s.call_tool("extract_frame", {"id": sc, "t_ms": 13000})
                st = src.stat()
                with open(src, "r+b") as f:  # same size, different bytes, then the old mtime back
                    f.seek(st.st_size // 2)
                    chunk = f.read(64)
                    f.seek(st.st_size // 2)
                    f.write(bytes(b ^ 0xFF for b in chunk))
                os.utime(src, ns=(st.st_atime_ns, st.st_mtime_ns))
                assert (src.stat().st_size, src.stat().st_mtime_ns) == (st.st_size, st.st_mtime_ns)
                after = await s.call_tool("extract_frame", {"id": sc, "t_ms": 13000})
                return before, after

    before, after = anyio.run(run)
    assert _payload(before)["exact"] is True
    err = _error(after)
    assert err["error"] == "source_unavailable" and "sha256 changed" in err["message"], err
    assert str(tmp_path) not in json.dumps(err), "error leaks a server path"


# --------------------------------------------------------------------------- item 5: capped responses

def test_query_length_and_every_response_are_capped(processed, pristine_home, ids, tmp_path):
    from talkthrough_assets.read.listing import LIST_MAX_CHARS
    from talkthrough_assets.read.search import SEARCH_MAX_CHARS, SEARCH_MAX_QUERY_CHARS
    from talkthrough_mcp.results import RESPONSE_MAX_CHARS

    home = _copy_home(pristine_home, tmp_path / "big")
    _replicate_manifests(home, 400)
    sc = ids[F.SCREENCAST_NAME]
    out = anyio.run(functools.partial(_calls, TALKTHROUGH_MCP_WARM_WAIT_S="600"), home, {
        "huge_query": ("search", {"query": "checkout " * 12_000}),
        "huge_unique": ("search", {"query": " ".join(f"w{i}" for i in range(20_000))}),
        "max_query": ("search", {"query": ("gateway timeout " * 40)[:SEARCH_MAX_QUERY_CHARS], "limit": 50}),
        "common": ("search", {"query": "the", "limit": 50}),
        "list": ("list_recordings", {"limit": 100}),
        "frames": ("get_frames", {"id": sc, "include_duplicates": True}),
        "moment": ("get_moment", {"id": sc, "t_ms": 13000, "window_ms": 60000}),
        "transcript": ("get_transcript", {"id": sc}),
        "huge_speaker": ("get_transcript", {"id": sc, "speaker": "S" * 50_000}),
    })  # WARM_WAIT 600: answers over the whole library, however slow the warm-up
    sizes = {k: len(v.content[0].text) for k, v in out.items() if k != "tools"}
    assert all(n <= RESPONSE_MAX_CHARS for n in sizes.values()), sizes
    for key in ("huge_query", "huge_unique", "huge_speaker"):
        err = _error(out[key])
        assert err["error"] == "invalid_argument" and "too long" in err["message"], err
        assert sizes[key] < 400, sizes
    common = _payload(out["common"])
    assert sizes["common"] <= SEARCH_MAX_CHARS and common["total_matches"] > common["returned"] and common["more"]
    assert _payload(out["max_query"])["hits"]
    listing = _payload(out["list"])
    assert sizes["list"] <= LIST_MAX_CHARS and listing["total"] == 404
    assert listing["returned"] <= 100 and listing["next_offset"] == listing["returned"]


# --------------------------------------------------------------------------- item 6: argument validation

VALIDATION_CASES = [
    ("get_transcript", {"start_ms": True}, "start_ms"),
    ("get_transcript", {"start_ms": "5000"}, "start_ms"),
    ("get_transcript", {"max_chars": 2500.5}, "max_chars"),
    ("get_frames", {"include_duplicates": "yes"}, "include_duplicates"),
    ("get_frames", {"limit": False}, "limit"),
    ("get_moment", {}, "t_ms"),
    ("search", {"query": 42}, "query"),
    ("list_recordings", {"offset": True}, "offset"),
    ("extract_frame", {"t_ms": 1000, "crop": [0, 0, 10, 10]}, "crop"),
    ("get_transcript", {"startms": 5}, "startms"),
]


@pytest.mark.parametrize("tool,args,field", VALIDATION_CASES)
def test_schema_violations_are_structured_invalid_argument(validation_session, ids, tool, args, field):
    res = validation_session[(tool, json.dumps(args, sort_keys=True))]
    err = _error(res)
    assert err["error"] == "invalid_argument", err
    assert field in err["message"] and len(err["message"]) < 300, err
    text = res.content[0].text.lower()
    assert "pydantic" not in text and "validation error" not in text and "errors.pydantic.dev" not in text
    assert "accepted arguments" in err["hint"]


@pytest.fixture(scope="module")
def validation_session(processed, pristine_home, ids) -> dict:
    sc = ids[F.SCREENCAST_NAME]
    calls = {}
    for tool, args, _ in VALIDATION_CASES:
        full = dict(args) if tool in ("search", "list_recordings") else {"id": sc, **args}
        calls[(tool, json.dumps(args, sort_keys=True))] = (tool, full)
    out = anyio.run(_calls, pristine_home, {str(i): c for i, c in enumerate(calls.values())})
    return {k: out[str(i)] for i, k in enumerate(calls)}


# --------------------------------------------------------------------------- items 7 + 8 + 9: one session

@pytest.fixture(scope="module")
def session(processed, pristine_home, ids, tmp_path_factory) -> dict:
    sc, tv, mt = ids[F.SCREENCAST_NAME], ids[F.TWO_VOICES_NAME], ids[F.MEETING_NAME]
    errlog_path = tmp_path_factory.mktemp("errlog") / "stderr.txt"
    calls = {
        # item 7
        "plural": ("search", {"query": "dashboards", "id": sc}),
        "singular": ("search", {"query": "dashboard", "id": sc}),
        "typo": ("search", {"query": "dashbord"}),
        "glued": ("search", {"query": "gateway", "id": sc, "limit": 50}),
        "glued_timeouts": ("search", {"query": "timeouts", "id": sc, "limit": 50}),
        "one_letter": ("search", {"query": "s"}),
        # item 8
        "at": ("get_frames", {"id": sc, "at_ms": 13000}),
        "at3": ("get_frames", {"id": sc, "at_ms": 13000, "limit": 3}),
        "at_dup": ("get_frames", {"id": sc, "at_ms": 13000, "include_duplicates": True}),
        "all_frames": ("get_frames", {"id": sc}),
        "at_and_range": ("get_frames", {"id": sc, "at_ms": 1, "start_ms": 0}),
        "moment_tv": ("get_moment", {"id": tv, "t_ms": 9000, "window_ms": 5000}),
        "moment_mt": ("get_moment", {"id": mt, "t_ms": 6000}),
        "tr_tv": ("get_transcript", {"id": tv}),
        "se_s2": ("search", {"query": "survey report friday", "speaker": "S2"}),
        "se_s1": ("search", {"query": "survey", "speaker": "s1"}),
        "se_any": ("search", {"query": "survey"}),
        "se_speaker_not_diarized": ("search", {"query": "budget", "id": mt, "speaker": "S1"}),
        "crop": ("extract_frame", {"id": sc, "t_ms": 13000, "crop": {"x": 100, "y": 50, "width": 640, "height": 360}}),
        "crop_big": ("extract_frame", {"id": sc, "t_ms": 13000,
                                       "crop": {"x": 0, "y": 0, "width": 1920, "height": 1080}}),
        "crop_outside": ("extract_frame", {"id": sc, "t_ms": 13000,
                                           "crop": {"x": 1900, "y": 0, "width": 100, "height": 100}}),
        "full": ("extract_frame", {"id": sc, "t_ms": 13000, "full_resolution": True}),
        "scaled": ("extract_frame", {"id": sc, "t_ms": 13000}),
        "list": ("list_recordings", {}),
        "tr_sc": ("get_transcript", {"id": sc}),
        # item 9
        "unknown": ("get_transcript", {"id": "0123456789abcdef"}),
        "srt_s2": ("get_transcript", {"id": tv, "speaker": "S2", "format": "srt"}),
        "srt_all": ("get_transcript", {"id": tv, "format": "srt"}),
    }

    async def run():
        from mcp import ClientSession
        from mcp.client.stdio import stdio_client
        from mcp.shared.exceptions import MCPError

        out: dict = {}
        with open(errlog_path, "w") as errlog, anyio.fail_after(SESSION_TIMEOUT_S):
            async with stdio_client(_params(pristine_home), errlog=errlog) as (r, w), ClientSession(r, w) as s:
                await s.initialize()
                out["tools"] = (await s.list_tools()).tools
                for key, (tool, args) in calls.items():
                    out[key] = await s.call_tool(tool, args)
                for key, (name, args) in {"prompt_missing": ("triage_recording", {}),
                                          "prompt_blank": ("correlate_with_logs", {"id": sc,
                                                                                   "log_excerpt": "  "}),
                                          "prompt_huge": ("correlate_with_logs", {"id": sc,
                                                                                  "log_excerpt": "x" * 50_000}),
                                          "prompt_unknown": ("no_such_prompt", {})}.items():
                    try:
                        out[key] = await s.get_prompt(name, args)
                    except MCPError as e:
                        out[key] = e
                out["prompt_ok"] = await s.get_prompt("triage_recording", {"id": sc})
        out["stderr"] = errlog_path.read_text()
        return out

    return anyio.run(run)


def test_plurals_typos_glued_ocr_and_no_one_letter_terms(session, pristine_home, ids, monkeypatch):
    sc = ids[F.SCREENCAST_NAME]
    plural, singular = _payload(session["plural"]), _payload(session["singular"])
    assert plural["hits"] and [(h["source"], h["t_ms"]) for h in plural["hits"]] == \
        [(h["source"], h["t_ms"]) for h in singular["hits"]]
    typo = _payload(session["typo"])
    assert typo["hits"] == [] and typo["did_you_mean"] == {"dashbord": ["dashboard"]}
    assert "dashboard" in typo["note"]
    for key, word in (("glued", "gateway"), ("glued_timeouts", "timeout")):
        p = _payload(session[key])
        ocr = [h for h in p["hits"] if h["source"] == "ocr"]
        # the ERROR 503 screen: rapidocr-onnxruntime 1.x glued its words (ERROR503GATEWAYTIMEOUT), found through
        # a substring match; rapidocr 3.x may read them apart, found as words
        assert [h["t_ms"] for h in ocr] == [6000], p
        assert word.upper() in ocr[0]["snippet"].upper().replace(" ", "")
        if "GATEWAYTIMEOUT" in ocr[0]["snippet"].upper():
            assert p["ocr_substring_matches"][word] == ["gatewaytimeout"]
        else:
            assert word.upper() in re.split(r"[^A-Z0-9]+", ocr[0]["snippet"].upper()), ocr[0]["snippet"]
            assert word not in p.get("ocr_substring_matches", {})
        assert any(h["source"] == "transcript" for h in p["hits"])
    err = _error(session["one_letter"])
    assert err["error"] == "invalid_argument" and "one-letter" in err["message"]
    # no one-letter fragment (the s of "Dashboard's", the t of "don't") is in the index
    monkeypatch.setenv("TALKTHROUGH_HOME", str(pristine_home))
    from talkthrough_assets.read.reader import Reader

    rd = Reader(refresh_interval=0)
    rd.warm()
    n = rd.index.query("SELECT count(*) AS n FROM m_df WHERE length(term) = 1 AND NOT regexp_matches(term, '^[0-9]$')")
    assert n[0]["n"] == 0 and rd.index.query("SELECT count(*) AS n FROM m_df")[0]["n"] > 100
    assert len(rd.index.view.where) == 4  # every recording indexed (from the pipeline's search index)
    assert sc in {r["recording"] for r in rd.index.query("SELECT recording FROM m_recordings")}


def test_frames_at_instant_and_validity(session):
    at = _payload(session["at"])
    assert at["on_screen_frame_ms"] == 12000 and [f["ms"] for f in at["frames"]] == [12000]
    assert (at["frames"][0]["valid_from_ms"], at["frames"][0]["valid_to_ms"]) == (12000, 18000)
    assert "ROLLBACK" in at["frames"][0]["ocr_text"]
    assert len([c for c in session["at"].content if c.type == "image"]) == 1
    assert sorted(f["ms"] for f in _payload(session["at3"])["frames"]) == [6000, 12000, 18000]
    dup = _payload(session["at_dup"])["frames"][0]  # the stored keyframe at/before 13 s: 12 s or a duplicate of it
    assert 12000 <= dup["ms"] <= 13000 and dup.get("duplicate_of") == (None if dup["ms"] == 12000 else 12000)
    assert (dup["valid_from_ms"], dup["valid_to_ms"]) == (dup["ms"], 18000)
    frames = _payload(session["all_frames"])["frames"]
    assert [(f["valid_from_ms"], f["valid_to_ms"]) for f in frames] == [(0, 6000), (6000, 12000), (12000, 18000),
                                                                      (18000, frames[-1]["valid_to_ms"])]
    assert frames[-1]["valid_to_ms"] >= 23_000
    assert _error(session["at_and_range"])["error"] == "invalid_argument"


def test_moment_speakers_and_search_speaker_filter(session):
    m = _payload(session["moment_tv"])
    spk = m["speakers_in_range"]
    assert {s["speaker"] for s in spk} == {"S1", "S2"} and m["speaker_at_t"] == "S2"
    assert sum(s["talk_ms"] for s in spk) <= 10_000 and all(s["talk_ms"] > 0 for s in spk)
    assert _payload(session["moment_mt"])["speakers_in_range"] is None
    segs = _payload(session["tr_tv"])["segments"]
    s2 = _payload(session["se_s2"])
    assert s2["hits"] and all(h["speaker"] == "S2" for h in s2["hits"])
    for h in s2["hits"]:
        holder = [s for s in segs if s["t_ms"] <= h["t_ms"] <= s["t1_ms"]]
        assert holder and holder[0]["speaker"] == "S2"
    assert _payload(session["se_any"])["hits"]
    s1 = _payload(session["se_s1"])  # only S2 talks about the survey
    assert s1["hits"] == [] and "S1" not in json.dumps(s1["hits"]) and "said by" in s1["note"]
    assert _error(session["se_speaker_not_diarized"])["error"] == "invalid_argument"


def test_extract_frame_crop_and_full_resolution(session):
    def image(key):
        (c,) = [c for c in session[key].content if c.type == "image"]
        with Image.open(io.BytesIO(base64.b64decode(c.data))) as im:
            return im.size

    crop = _payload(session["crop"])
    assert crop["crop"] == {"x": 100, "y": 50, "width": 640, "height": 360} and image("crop") == (640, 360)
    assert (crop["width"], crop["height"]) == (640, 360) and crop["scaled"] is False
    assert image("crop_big") == (1568, 882) and _payload(session["crop_big"])["scaled"] is True
    assert _error(session["crop_outside"])["error"] == "invalid_argument"
    full = _payload(session["full"])
    assert image("full") == (F.SCREENCAST_WIDTH, F.SCREENCAST_HEIGHT) and full["full_resolution"] is True
    assert image("scaled") == (1568, 882)


def test_every_tool_has_an_output_schema_and_structured_content(session):
    import jsonschema

    tools = {t.name: t for t in session["tools"]}
    assert set(tools) == TOOLS
    for t in tools.values():
        assert t.output_schema and t.output_schema["type"] == "object", t.name
        jsonschema.Draft202012Validator.check_schema(t.output_schema)
    by_tool = {"list": "list_recordings", "tr_sc": "get_transcript", "at": "get_frames", "moment_tv": "get_moment",
               "se_s2": "search", "crop": "extract_frame", "srt_s2": "get_transcript", "moment_mt": "get_moment"}
    for key, tool in by_tool.items():
        res = session[key]
        assert not res.is_error
        # the SDK client already validated structured_content against outputSchema; it is the JSON block
        assert res.structured_content == json.loads(res.content[0].text), key
        jsonschema.validate(res.structured_content, tools[tool].output_schema)


def test_no_server_paths_in_errors(session, pristine_home):
    err = _error(session["unknown"])
    assert err["error"] == "unknown_recording" and str(pristine_home) not in err["message"]
    for key, res in session.items():
        if hasattr(res, "is_error") and res.is_error:
            assert str(pristine_home) not in res.content[0].text and "/tmp/" not in res.content[0].text, key


def test_srt_cues_are_numbered_without_gaps(session):
    import re

    for key in ("srt_s2", "srt_all"):
        srt = _payload(session[key])["srt"]
        cues = [int(n) for n in re.findall(r"(?m)^(\d+)\n\d\d:\d\d:\d\d,\d{3} --> ", srt)]
        assert cues == list(range(1, len(cues) + 1)) and len(cues) >= 2, (key, cues)
    assert "[S1]" not in _payload(session["srt_s2"])["srt"]


def test_bad_prompt_arguments_are_invalid_params_not_tracebacks(session, ids):
    from mcp.shared.exceptions import MCPError
    from mcp_types import INVALID_PARAMS

    for key, needle in (("prompt_missing", "id is required"), ("prompt_blank", "log_excerpt is required"),
                        ("prompt_huge", "at most"), ("prompt_unknown", "no prompt named")):
        e = session[key]
        assert isinstance(e, MCPError), (key, e)
        assert e.code == INVALID_PARAMS and needle in e.message and "Traceback" not in e.message, (key, e.message)
    assert ids[F.SCREENCAST_NAME] in session["prompt_ok"].messages[0].content.text
    assert "Traceback" not in session["stderr"], session["stderr"]


def test_host_with_blanks_is_normalized_not_a_crash(processed, pristine_home):
    port = _free_port()
    env = {k: v for k, v in os.environ.items() if k != "TALKTHROUGH_MCP_TOKEN"}
    env["TALKTHROUGH_HOME"] = str(pristine_home)
    proc = subprocess.Popen([TALKTHROUGH, "mcp", "--http", "--host", "127.0.0.1 ", "--port", str(port)], env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        _wait_port(port, proc)
        tools, hits = anyio.run(_http_session, f"http://127.0.0.1:{port}/mcp")
        assert tools == TOOLS and hits["hits"]
    finally:
        _stop(proc)
    r = subprocess.run([TALKTHROUGH, "mcp", "--http", "--host", "127.0.0.1 evil", "--port", str(port)], env=env,
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 2 and "invalid --host" in r.stderr and "Traceback" not in r.stderr


def test_host_normalization_rules():
    from talkthrough_mcp.http_guard import BindRefused, normalize_host

    assert normalize_host(" 127.0.0.1\t") == "127.0.0.1" and normalize_host("[::1]") == "::1"
    assert normalize_host("localhost ") == "localhost"
    for bad in ("", "   ", "127.0.0.1 x", "a b", "host/../x"):
        with pytest.raises(BindRefused):
            normalize_host(bad)

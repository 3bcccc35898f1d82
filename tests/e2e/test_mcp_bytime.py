"""Asking by wall time (issue #36), end to end: the session's processed fixtures copied to a data root of their
own, the meeting re-anchored 10 min after the screencast and the two-voices call 5 s after the meeting (an
overlap) through the real `talkthrough process --recorded-at` (only wall_clock and manifest run again), then a
real MCP client over stdio (`talkthrough mcp`, TZ=Europe/Paris) and the `talkthrough at` / `recordings --since`
commands: queries in wall time land on the right recording and the right second, overlaps answer both, every
answer states its zone, and wrong forms answer a one-line correction."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import anyio
import pytest

import fixture_facts as F

TALKTHROUGH = shutil.which("talkthrough") or str(Path(sys.executable).with_name("talkthrough"))
SESSION_TIMEOUT_S = 240
MEETING_AT = "2026-03-14T09:36:53Z"         # the screencast starts 2026-03-14T09:26:53Z (its creation_time)
TWO_VOICES_AT = "2026-03-14T09:36:58+00:00"  # 5 s into the 20-s meeting: they overlap from 09:36:58 to 09:37:13


def _env(home: Path, **extra: str) -> dict[str, str]:
    return {**os.environ, "TALKTHROUGH_HOME": str(home), "DAGSTER_HOME": str(home / "dagster"),
            "TALKTHROUGH_MCP_REFRESH_S": "0", **extra}


@pytest.fixture(scope="module")
def ids(processed) -> dict[str, str]:
    return {name: s["recording_id"] for name, s in processed.items()}


@pytest.fixture(scope="module")
def home(processed, pristine_home, tmp_path_factory) -> Path:
    home = tmp_path_factory.mktemp("bytime") / "home"
    shutil.copytree(pristine_home, home, ignore=shutil.ignore_patterns("dagster", "locks"))
    for name, at in ((F.MEETING_NAME, MEETING_AT), (F.TWO_VOICES_NAME, TWO_VOICES_AT)):
        r = subprocess.run([TALKTHROUGH, "process", str(F.FIXTURES_DIR / name), "--recorded-at", at, "--json"],
                           env=_env(home), capture_output=True, text=True, timeout=600)
        assert r.returncode == 0, r.stderr[-2000:]
        summary = json.loads(r.stdout)[0]
        assert summary["status"] == "processed" and set(summary["stages_run"]) == {"wall_clock", "manifest"}, summary
    return home


async def _drive(home: Path, calls: dict) -> dict:
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client

    params = StdioServerParameters(command=TALKTHROUGH, args=["mcp"], env=_env(home, TZ="Europe/Paris"))
    out: dict = {}
    with anyio.fail_after(SESSION_TIMEOUT_S):
        async with stdio_client(params) as (r, w), ClientSession(r, w) as s:
            await s.initialize()
            out["tools"] = {t.name: t for t in (await s.list_tools()).tools}
            out["prompt"] = await s.get_prompt("what_happened_at", {"when": "yesterday 14:30"})
            for key, (tool, args) in calls.items():
                out[key] = await s.call_tool(tool, args)
    return out


@pytest.fixture(scope="module")
def session(home, ids) -> dict:
    calls = {
        "at_screen": ("get_moment_at", {"at": "2026-03-14T09:27:06Z"}),
        "at_overlap": ("get_moment_at", {"at": "2026-03-14 10:37:00"}),  # the server's zone: Europe/Paris
        "at_ny": ("get_moment_at", {"at": "2026-03-14 05:37:20", "tz": "America/New_York", "window_ms": 2000}),
        "at_gap": ("get_moment_at", {"at": "2026-03-14T09:32:00Z"}),
        "at_relative": ("get_moment_at", {"at": "2h ago"}),
        "list_window": ("list_recordings", {"since": "2026-03-14 10:30", "until": "2026-03-14 10:40"}),
        "list_day": ("list_recordings", {"since": "2026-03-14", "until": "2026-03-14", "tz": "UTC"}),
        "list_week": ("list_recordings", {"since": "last week"}),
        "list_all": ("list_recordings", {}),
        "se_all": ("search", {"query": "console", "limit": 50}),  # the window title: on screen in every scene
        "se_title": ("search", {"query": "console", "since": "2026-03-14T09:27:05Z", "until": "2026-03-14T09:27:11Z",
                                "limit": 50}),
        "se_window": ("search", {"query": "version", "since": "2026-03-14T09:27:05Z",
                                 "until": "2026-03-14T09:27:11Z", "limit": 50}),
        "se_none": ("search", {"query": "checkout", "since": "2026-03-14T09:36:00Z", "until": "2026-03-14T09:38:00Z"}),
        "err_future": ("get_moment_at", {"at": "next tuesday"}),
        "err_span": ("get_moment_at", {"at": "yesterday"}),
        "err_tz": ("get_moment_at", {"at": "14:30", "tz": "Mars/Olympus"}),
        "err_since": ("list_recordings", {"since": "14"}),
        "err_dst": ("search", {"query": "deploy", "since": "2026-03-29 02:30"}),
        "err_order": ("list_recordings", {"since": "2026-03-14 11:00", "until": "2026-03-14 10:00"}),
    }
    return anyio.run(_drive, home, calls)


def _json(res) -> dict:
    assert not res.is_error, res.content[0].text
    return json.loads(res.content[0].text)


def test_an_instant_lands_on_the_right_recording_and_second(session, ids):
    a = _json(session["at_screen"])
    assert a["tz"] == "Europe/Paris" and a["at"] == "2026-03-14T10:27:06+01:00" and a["covering"] == 1
    [m] = a["moments"]
    assert m["recording"] == ids[F.SCREENCAST_NAME] and m["t_ms"] == 13_000
    assert m["t_wall"] == "2026-03-14T09:27:06.000+00:00"  # the recording's own zone is unknown: UTC
    assert m["wall_clock"]["source"] == "creation_time" and m["wall_clock"]["confidence"] == "medium"
    assert m["on_screen_frame_ms"] == 12_000 and [f["ms"] for f in m["frames"]] == [12_000]  # ROLLBACK scene
    assert "ROLLBACK" in F.ocr_normalize(m["frames"][0]["ocr_text"])
    assert any("restored" in s["text"].lower() for s in m["transcript"]["segments"])
    images = [c for c in session["at_screen"].content if c.type == "image"]
    captions = [c.text for c in session["at_screen"].content if c.type == "text"][1:]
    assert len(images) == 1 and captions == [
        "screencast.mp4: frame 12000 ms (2026-03-14T09:27:05.000+00:00), 1024x576 of 1568x882 (extract_frame for detail)"]
    assert session["at_screen"].structured_content == a


def test_overlapping_recordings_both_answer_each_at_its_own_offset(session, ids):
    a = _json(session["at_overlap"])
    assert a["at"] == "2026-03-14T10:37:00+01:00" and a["covering"] == 2
    got = {m["recording"]: m for m in a["moments"]}
    assert set(got) == {ids[F.MEETING_NAME], ids[F.TWO_VOICES_NAME]}
    mt, tv = got[ids[F.MEETING_NAME]], got[ids[F.TWO_VOICES_NAME]]
    assert (mt["t_ms"], tv["t_ms"]) == (7_000, 2_000)
    assert mt["t_wall"] == tv["t_wall"] == "2026-03-14T09:37:00.000+00:00"
    for m in (mt, tv):
        assert m["wall_clock"]["source"] == "recorded_at" and m["wall_clock"]["confidence"] == "exact"
        assert m["frames"] == [] and "low_confidence" not in m  # audio-only, anchored exactly
    assert tv["speakers_in_range"] is not None and mt["speakers_in_range"] is None  # two_voices is diarized
    ny = _json(session["at_ny"])  # 05:37:20 EDT = 09:37:20 UTC: after the meeting's end, inside the call
    assert ny["tz"] == "America/New_York" and ny["at"] == "2026-03-14T05:37:20-04:00"
    assert [(m["recording"], m["t_ms"]) for m in ny["moments"]] == [(ids[F.TWO_VOICES_NAME], 22_000)]
    assert ny["moments"][0]["transcript"]["start_ms"] == 20_000  # window_ms=2000 around 22 s


def test_a_gap_names_the_nearest_recordings_and_relative_forms_answer(session, ids):
    g = _json(session["at_gap"])
    assert g["covering"] == 0 and g["moments"] == [] and "no recording covers" in g["note"]
    assert g["nearest"]["before"]["recording"] == ids[F.SCREENCAST_NAME]
    assert g["nearest"]["after"]["recording"] == ids[F.MEETING_NAME]
    assert g["nearest"]["after"]["start"] == "2026-03-14T10:36:53+01:00"
    r = _json(session["at_relative"])  # relative to the server's clock (December): nothing recorded then
    assert r["covering"] == 0 and r["tz"] == "Europe/Paris"


def test_listing_and_search_by_wall_time(session, ids):
    w = _json(session["list_window"])
    assert {i["id"] for i in w["recordings"]} == {ids[F.MEETING_NAME], ids[F.TWO_VOICES_NAME]} and w["total"] == 2
    assert w["time"] == {"tz": "Europe/Paris", "since": "2026-03-14T10:30:00+01:00",
                         "until": "2026-03-14T10:40:00+01:00"}
    d = _json(session["list_day"])
    assert {i["id"] for i in d["recordings"]} == {ids[F.SCREENCAST_NAME], ids[F.MEETING_NAME],
                                                  ids[F.TWO_VOICES_NAME]}  # the silent video is 03-15
    assert d["time"]["tz"] == "UTC" and d["time"]["until"] == "2026-03-15T00:00:00+00:00"
    wk = _json(session["list_week"])
    assert wk["total"] == 0 and wk["time"]["tz"] == "Europe/Paris"
    assert "time" not in _json(session["list_all"]) and _json(session["list_all"])["total"] == 4
    everywhere = _json(session["se_all"])
    inside = _json(session["se_window"])
    assert inside["time"]["since"] == "2026-03-14T10:27:05+01:00" and inside["hits"]
    assert all(h["recording"] == ids[F.SCREENCAST_NAME] and 12_000 <= h["t_ms"] <= 18_000 for h in inside["hits"])
    assert {h["source"] for h in inside["hits"]} == {"ocr", "transcript"}  # "version 41 restored": said and shown
    title = _json(session["se_title"])
    assert title["hits"] and all(12_000 <= h["t_ms"] <= 18_000 for h in title["hits"])
    assert {h["t_ms"] for h in everywhere["hits"] if h["recording"] == ids[F.SCREENCAST_NAME]} > \
        {h["t_ms"] for h in title["hits"]}  # outside the window too, but not in that answer
    none = _json(session["se_none"])
    assert none["hits"] == [] and none["found_elsewhere"] == ["checkout"] and "in that time" in none["note"]


def test_wrong_forms_answer_a_one_line_correction(session):
    want = {"err_future": "recordings are in the past", "err_span": "is a span, not an instant",
            "err_tz": "unknown time zone 'Mars/Olympus'", "err_since": "'14' alone is ambiguous; write a time as 14:00",
            "err_dst": "2026-03-29T02:30 does not exist in Europe/Paris", "err_order": "is before since"}
    for key, says in want.items():
        res = session[key]
        assert res.is_error, key
        err = json.loads(res.content[0].text)
        assert err["error"] == "invalid_argument" and says in err["message"] and "\n" not in err["message"], err


def test_the_guidance_shows_the_time_forms(session):
    import jsonschema

    tools = session["tools"]
    for key, tool in (("at_overlap", "get_moment_at"), ("list_window", "list_recordings"), ("se_window", "search")):
        jsonschema.validate(session[key].structured_content, tools[tool].output_schema)
    assert set(tools["get_moment_at"].input_schema["required"]) == {"at"}
    for name in ("list_recordings", "search"):
        assert {"since", "until", "tz"} <= set(tools[name].input_schema["properties"]), name
    text = " ".join(t.description for t in tools.values())
    for form in ("yesterday", "2h ago", "14:30", "2026-03-14 14:32", "tz="):
        assert form in text, form
    prompt = session["prompt"].messages[0].content.text
    assert 'get_moment_at(at="yesterday 14:30")' in prompt and "low_confidence" in prompt


def test_the_cli_prints_the_same_moment_and_lists_by_time(home, session, ids):
    env = _env(home, TZ="Europe/Paris")
    r = subprocess.run([TALKTHROUGH, "at", "2026-03-14 09:27:06", "--tz", "UTC", "--json"], env=env,
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-2000:]
    cli = json.loads(r.stdout)
    mcp = _json(session["at_screen"])
    assert cli["tz"] == "UTC" and cli["at"] == "2026-03-14T09:27:06+00:00"
    assert [(m["recording"], m["t_ms"], m["on_screen_frame_ms"]) for m in cli["moments"]] == \
        [(m["recording"], m["t_ms"], m["on_screen_frame_ms"]) for m in mcp["moments"]]
    text = subprocess.run([TALKTHROUGH, "at", "2026-03-14 10:37:00"], env=env, capture_output=True, text=True,
                          timeout=300)
    assert text.returncode == 0, text.stderr[-2000:]
    assert "2 recording(s) cover it" in text.stdout and "meeting_audio.m4a" in text.stdout
    assert "+7.000 s" in text.stdout and "+2.000 s" in text.stdout and "anchor: recorded_at, exact" in text.stdout
    bad = subprocess.run([TALKTHROUGH, "at", "tomorrow"], env=env, capture_output=True, text=True, timeout=300)
    assert bad.returncode == 2 and "recordings are in the past" in bad.stderr
    ls = subprocess.run([TALKTHROUGH, "recordings", "--since", "2026-03-14 09:30", "--until", "2026-03-14 09:40",
                         "--tz", "UTC", "--json"], env=env, capture_output=True, text=True, timeout=300)
    assert ls.returncode == 0, ls.stderr[-2000:]
    assert {r["recording"] for r in json.loads(ls.stdout)} == {ids[F.MEETING_NAME], ids[F.TWO_VOICES_NAME]}
    assert "2 recording(s) from 2026-03-14T09:30:00+00:00 to 2026-03-14T09:40:00+00:00 (UTC)" in ls.stderr

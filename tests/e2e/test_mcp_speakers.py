"""get_speakers over a real MCP session (`talkthrough mcp` over stdio) on a data root holding one diarized and
one undiarized recording's published manifests: talk time, turns and share per speaker, most first, the
confirmed name beside its label; the undiarized one says why it has none."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import anyio

from mcp_env import server_env
from talkthrough_assets import store
from talkthrough_assets.pipeline import settings as S
from talkthrough_assets.stages import manifest
from talkthrough_assets.stages.turns.labels import roster

TALKTHROUGH = shutil.which("talkthrough") or str(Path(sys.executable).with_name("talkthrough"))
TURNS = [{"t0_ms": 0, "t1_ms": 8_000, "speaker": "S1"}, {"t0_ms": 8_600, "t1_ms": 20_000, "speaker": "S2"},
         {"t0_ms": 20_500, "t1_ms": 30_000, "speaker": "S1"}]
SEGS = [{"seq": 0, "t0_ms": 500, "t1_ms": 7_000, "text": "Morning."},
        {"seq": 1, "t0_ms": 9_000, "t1_ms": 19_000, "text": "The build is green."}]


def _publish(rid: str, diarized: bool) -> None:
    spk = [dict(s, source_seq=s["seq"], speaker=w) for s, w in zip(SEGS, ("S1", "S2"))]
    m = manifest.build(
        recording_id=rid,
        probe={"path": "/x/call.m4a", "filename": f"{rid[:4]}.m4a", "kind": "audio", "duration_ms": 30_000,
               "size_bytes": 10, "has_audio": True, "has_video": False},
        wall_clock=None, transcript={"available": True, "language": "en", "model": "tiny.en"}, segments=SEGS,
        words=[], diarization={"requested": diarized, "available": diarized, "detected_num_speakers": 2},
        turns=TURNS if diarized else [], speakers=roster(TURNS) if diarized else [],
        speaker_segments=spk if diarized else [], keyframes=[], dedup=[], ocr=[], settings=dict(S.DEFAULTS),
        speaker_names={"S2": "Bob"} if diarized else {})
    store.put_json(store.manifest_key(rid), m)


def test_get_speakers_over_mcp(tmp_path, monkeypatch):
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client

    monkeypatch.setenv("TALKTHROUGH_HOME", str(tmp_path))
    _publish("0123456789abcdef", diarized=True)
    _publish("fedcba9876543210", diarized=False)
    params = StdioServerParameters(command=TALKTHROUGH, args=["mcp"], env=server_env(tmp_path))

    async def run():
        async with stdio_client(params) as (r, w), ClientSession(r, w) as s:
            await s.initialize()
            listed = {t.name: t for t in (await s.list_tools()).tools}
            return (listed["get_speakers"], await s.call_tool("get_speakers", {"id": "0123456789abcdef"}),
                    await s.call_tool("get_speakers", {"id": "fedcba9876543210"}),
                    await s.call_tool("get_speakers", {"id": "0000000000000000"}))

    tool, two, none, unknown = anyio.run(run)
    assert tool.annotations.read_only_hint and set(tool.output_schema["required"]) >= {"speakers", "diarized"}
    got = two.structured_content
    assert not two.is_error and got["diarized"] is True and "note" not in got
    assert [(s["speaker"], s["talk_ms"], s["turns"], s["first_ms"]) for s in got["speakers"]] == [
        ("S1", 17_500, 2, 0), ("S2", 11_400, 1, 8_600)]
    assert got["speakers"][1]["speaker_name"] == "Bob" and "speaker_name" not in got["speakers"][0]
    assert abs(sum(s["share"] for s in got["speakers"]) - 1) < 0.01
    assert none.structured_content["speakers"] == [] and "diarize" in none.structured_content["note"]
    assert unknown.is_error and '"unknown_recording"' in unknown.content[0].text

"""People across recordings (issue #35), with real sherpa-onnx voiceprints through the real Dagster job and
CLI: the turns stage stores a voiceprint per label; `talkthrough name` enrols a voice; a later recording of
the same voice gets a voice match (manifest, summary, check, MCP) while a voice never enrolled gets none;
the name is applied only with --apply-voice-names, marked as applied by voice; rename; forget of the person
and of the recordings leaves nothing behind in any table or file of the data root."""

from __future__ import annotations

import json
import os
import shutil
import sys
from pathlib import Path

import anyio
from fixture_facts import TWO_VOICES_PATH, VOICES_AGAIN_PATH, unique_copy
from typer.testing import CliRunner

from talkthrough_assets.cli import main as cli
from talkthrough_assets.pipeline import freshness
from talkthrough_assets.app import service
from talkthrough_assets.app.summary import summary
from talkthrough_assets.pipeline import settings as S
from talkthrough_assets import store
from talkthrough_assets.stages import manifest as manifest_stage
from talkthrough_assets.stages.turns import CODE_VERSION
from talkthrough_assets.stages.turns import voices
from talkthrough_assets.read.reader import Reader

DIARIZE = {"diarize": True, "num_speakers": 2}
TALKTHROUGH = shutil.which("talkthrough") or str(Path(sys.executable).with_name("talkthrough"))


def _mcp(calls: dict[str, tuple[str, dict]]) -> dict:
    """One real MCP session over stdio (`talkthrough mcp`) on this data root: each call's structured result."""
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client

    params = StdioServerParameters(command=TALKTHROUGH, args=["mcp"], env={
        "TALKTHROUGH_HOME": str(store.home()), "TALKTHROUGH_MCP_REFRESH_S": "0", "PYTHONSAFEPATH": "1",
        **({"PYTHONPATH": os.environ["PYTHONPATH"]} if os.environ.get("PYTHONPATH") else {})})

    async def run() -> dict:
        out = {}
        with anyio.fail_after(300):
            async with stdio_client(params) as (r, w), ClientSession(r, w) as s:
                await s.initialize()
                for key, (tool, args) in calls.items():
                    res = await s.call_tool(tool, args)
                    assert not res.is_error, res.content[0].text
                    out[key] = res.structured_content
        return out

    return anyio.run(run)


def _manifest(rid: str) -> dict:
    return store.get_json(store.manifest_key(rid))


def _speakers(rid: str) -> dict[str, dict]:
    return {s["label"]: s for s in _manifest(rid)["transcript"]["diarization"]["speakers"]}


def _finished(rid: str) -> dict[str, str]:
    return {r["stage"]: r["finished_at"] for r in store.read_rows("stage_runs", rid, part=None)}


def _files_mentioning(text: bytes) -> list[str]:
    """Every file of the data root holding ``text`` (Dagster's own run storage and the model files aside: a
    Whisper vocabulary has "Alice" in it)."""
    hits = []
    for p in store.home().rglob("*"):
        if p.is_file() and p.relative_to(store.home()).parts[0] not in ("dagster", "models") and text in p.read_bytes():
            hits.append(str(p.relative_to(store.home())))
    return sorted(hits)


def test_enrol_recognise_apply_rename_forget(tt_home, tmp_path, monkeypatch):
    # a data root of its own: people are library-wide, and other tests name the session's speakers
    # (test_diarization names S1 of the two-voice meeting "Alice Chen")
    monkeypatch.setenv("TALKTHROUGH_HOME", str(tmp_path / "home"))
    runner = CliRunner()
    a = service.process(unique_copy(TWO_VOICES_PATH, tmp_path / "weekly sync.m4a", "people"), overrides=DIARIZE)
    b = service.process(VOICES_AGAIN_PATH, overrides=DIARIZE)
    assert a["status"] == "processed" and b["status"] == "processed", (a, b)
    ra, rb = a["recording_id"], b["recording_id"]

    # 1. voiceprints: one per label, from the turns stage (its code version), CAM++ 192-dim, unit norm
    prints = {v["label"]: v for v in store.read_rows("voiceprints", ra)}
    assert set(prints) == {"S1", "S2"}
    for v in prints.values():
        assert len(v["embedding"]) == 192 and abs(sum(x * x for x in v["embedding"]) - 1) < 1e-3
        assert v["speech_ms"] > 8000 and v["windows"] >= 5 and "campplus" in v["model"]
    assert {r["stage"]: r["code_version"] for r in store.read_rows("stage_runs", ra, part=None)}["turns"] == CODE_VERSION
    assert not any("voice_match" in s for s in _speakers(rb).values())  # nobody enrolled yet

    # 2. enrol: S2 of the first meeting is slt (fixture_facts.TWO_VOICE_TURNS); only manifests re-run
    before = _finished(rb)
    r = runner.invoke(cli.app, ["name", ra, "S2=Alice Chen"])
    assert r.exit_code == 0, r.output
    assert "voices enrolled: S2 as Alice Chen" in r.output
    rows = store.read_rows("people", ra)
    assert [(x["person"], x["label"]) for x in rows] == [("Alice Chen", "S2")] and rows[0]["named_at"]

    # 3. recognition in the later meeting, through its manifest only (turns did not re-run)
    after = _finished(rb)
    assert after["manifest"] != before["manifest"] and after["turns"] == before["turns"]
    spk = _speakers(rb)
    match = spk["S2"]["voice_match"]  # slt again, other words
    assert match["person"] == "Alice Chen" and match["score"] >= voices.SUGGEST_SIMILARITY and not match["applied"]
    assert match["hint"] == f"voice match {match['score']:.2f} to Alice Chen, 1 recording"
    assert "voice_match" not in spk["S1"]  # awb: never enrolled
    assert "speaker_names" not in _manifest(rb)["transcript"]["diarization"]
    assert summary(rb)["voice_matches"] == {"S2": match["hint"]}
    check = manifest_stage.voice_check(rb)
    assert not check.passed and "S2: voice match" in check.description
    assert manifest_stage.voice_check(ra).passed
    assert freshness.plan(rb) == []  # the published matches are current

    people = json.loads(runner.invoke(cli.app, ["people", "--json"]).output)
    assert [(p["person"], p["recordings"]) for p in people] == [("Alice Chen", 1)]
    assert people[0]["speech_s"] > 8

    reader = Reader(refresh_interval=0)
    page = reader.get_transcript(rb).dump()
    assert page["voice_hints"] == {"S2": match["hint"]} and "speaker_names" not in page
    only = reader.get_transcript(rb, speaker="Alice Chen").dump()
    assert only["returned"] and {s["speaker"] for s in only["segments"]} == {"S2"}
    listed = reader.list_recordings(person="alice chen").dump()
    assert {i["id"]: i["person"] for i in listed["recordings"]} == {
        ra: [{"speaker": "S2", "by": "confirmed"}], rb: [{"speaker": "S2", "by": match["hint"]}]}
    assert reader.get_transcript(ra).name_sources == {"S2": "confirmed"}
    # what an agent gets over MCP (stdio, the SDK checks each result against the tool's outputSchema)
    got = _mcp({"list": ("list_recordings", {"person": "Alice Chen"}), "b": ("get_transcript", {"id": rb}),
                "alice": ("get_transcript", {"id": rb, "speaker": "Alice Chen"}), "a": ("get_transcript", {"id": ra})})
    assert {i["id"] for i in got["list"]["recordings"]} == {ra, rb}
    assert got["b"]["voice_hints"] == {"S2": match["hint"]}
    assert {s["speaker"] for s in got["alice"]["segments"]} == {"S2"}
    assert got["a"]["speaker_names"] == {"S2": "Alice Chen"} and got["a"]["name_sources"] == {"S2": "confirmed"}

    # 4. applied by voice only when asked for (a setting: only the manifest re-runs), and marked so
    if match["score"] >= voices.APPLY_SIMILARITY:
        applied = service.process(VOICES_AGAIN_PATH, overrides={"apply_voice_names": True})
        assert applied["stages_run"] == ["manifest"], applied
        di = _manifest(rb)["transcript"]["diarization"]
        assert di["speaker_names"] == {"S2": "Alice Chen"} and di["speaker_name_sources"] == {"S2": "voice"}
        assert _speakers(rb)["S2"]["voice_match"]["applied"] and manifest_stage.voice_check(rb).passed
        page = reader.get_transcript(rb).dump()
        assert page["name_sources"] == {"S2": "voice"} and "voice_hints" not in page
        word = store.read_rows("speaker_segments", rb)[-1]["text"].split()[-1].strip(".,").lower()
        hits = reader.search(word, speaker="Alice Chen", limit=50).dump()["hits"]
        assert hits and {h["recording"] for h in hits} <= {ra, rb}
        assert all(h.get("speaker_name_by") == "voice" for h in hits if h["recording"] == rb)

    # 5. rename is one command, everywhere
    r = runner.invoke(cli.app, ["people", "rename", "alice chen", "Alice C."])
    assert r.exit_code == 0, r.output
    assert S.load_overrides(ra)["speaker_names"] == {"S2": "Alice C."}
    assert _speakers(rb)["S2"]["voice_match"]["person"] == "Alice C."

    # 6. forget the person: enrolment, the named label's voiceprint, the name, every match
    dry = runner.invoke(cli.app, ["people", "forget", "Alice C."])
    assert dry.exit_code == 1 and "--yes" in dry.output
    r = runner.invoke(cli.app, ["people", "forget", "Alice C.", "--yes", "--json"])
    assert r.exit_code == 0, r.output
    out = json.loads(r.output)
    assert out["recordings"] == [ra] and out["voiceprints_removed"] == 1 and rb in out["rechecked"]
    assert not store.has_partition("people", ra)
    assert [v["label"] for v in store.read_rows("voiceprints", ra)] == ["S1"]
    assert not any("voice_match" in s for s in _speakers(rb).values())
    assert "speaker_names" not in _manifest(rb)["transcript"]["diarization"]
    assert "speaker_names" not in S.load_overrides(ra)
    assert json.loads(runner.invoke(cli.app, ["people", "--json"]).output) == []
    assert runner.invoke(cli.app, ["people", "forget", "Alice C.", "--yes"]).exit_code == 2  # clear error
    con = store.connect()
    try:
        assert con.execute("SELECT count(*) FROM people").fetchone()[0] == 0
    finally:
        con.close()
    assert _files_mentioning(b"Alice") == []

    # 7. forget of a recording removes its voiceprints (and enrolments) with its tables
    runner.invoke(cli.app, ["name", ra, "S1=Bob Stone"])
    assert [p["person"] for p in json.loads(runner.invoke(cli.app, ["people", "--json"]).output)] == ["Bob Stone"]
    for rid in (ra, rb):
        service.forget(rid)
        for table in ("voiceprints", "people"):
            assert not store.partition_dir(table, rid).exists()
    assert json.loads(runner.invoke(cli.app, ["people", "--json"]).output) == []
    assert _files_mentioning(b"Bob Stone") == []

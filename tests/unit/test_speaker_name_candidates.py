"""OCR name candidates for diarized speakers (#13 item 5): a meeting recorded in speaker view, where the
active speaker's name label is on screen while they talk. No fixture has on-screen names (the committed
screencast shows deploy dashboards, the two-voice fixture is audio only), so the OCR rows below are what
RapidOCR returns for such frames: one line per text box, toolbar buttons and the window title included.

Where the candidates are made is a graph question: they need ``turns`` and ``ocr``, which sit on
different branches. The manifest stage is the one stage downstream of both, so a re-OCR re-runs only
``ocr`` and ``manifest``, a diarize amend only ``turns`` and ``manifest``, and neither re-runs Whisper."""

from __future__ import annotations

import inspect

import pytest

from manifests import stage_build
from talkthrough_assets.pipeline import settings as S
from talkthrough_assets.pipeline.stagespec import downstream
from talkthrough_assets.stages import turns as diarize
from talkthrough_assets.model.manifest import validate
from talkthrough_assets.stages.turns.labels import roster
from talkthrough_assets.stages.turns.speaker_names import name_candidates

pytestmark = pytest.mark.unit


def T(t0, t1, s):
    return {"t0_ms": t0, "t1_ms": t1, "speaker": s}


# Zoom, speaker view, 42 s: Alice (S1) and Bob (S2) take turns; the recorder's own self-view tile
# ("Carol Diaz") is on screen throughout. The big tile switches about a second after a turn starts.
TURNS = [T(0, 8_000, "S1"), T(8_600, 20_000, "S2"), T(20_500, 30_000, "S1"), T(31_000, 42_000, "S2")]
CHROME = "Zoom Meeting\nSpeaker View\nRecording...\nMute\nStart Video\nParticipants 3\nChat\nShare Screen\nLeave"
OCR = [  # rows of the ocr table: one per unique keyframe (dedup drops the unchanged ones)
    {"ms": 0, "text": f"{CHROME}\nAlice Chen\nCarol Diaz"},
    {"ms": 9_500, "text": f"{CHROME}\nBob Stone (Host)\nCarol Diaz"},
    {"ms": 21_500, "text": f"{CHROME}\nAlice Chen\nCarol Diaz"},
    {"ms": 32_000, "text": f"{CHROME}\nBob Stone (Host)\nCarol Diaz"},
]


def test_each_speaker_gets_the_name_shown_while_they_talk():
    c = name_candidates(TURNS, OCR)
    assert c["S1"][0] == "Alice Chen" and c["S2"][0] == "Bob Stone"  # "(Host)" dropped
    shown = {n for names in c.values() for n in names}
    assert "Carol Diaz" not in shown  # the self-view tile is on screen through everyone's speech
    assert not shown & {"Zoom Meeting", "Speaker View", "Mute", "Start Video", "Chat", "Share Screen", "Leave"}


def test_the_manifest_carries_them_as_hints_next_to_the_roster():
    speakers = roster(TURNS)
    m = stage_build(
        recording_id="0123456789abcdef",
        probe={"path": "/x/call.mp4", "filename": "call.mp4", "kind": "video", "duration_ms": 42_000,
               "size_bytes": 10, "has_audio": True, "has_video": True},
        wall_clock=None, transcript={"available": True, "language": "en", "model": "tiny.en"},
        segments=[], words=[], diarization={"requested": True, "available": True, "detected_num_speakers": 2},
        turns=TURNS, speakers=speakers, speaker_segments=[],
        keyframes=[{"ms": o["ms"], "file": f"frames/x/g/t{o['ms']:08d}.jpg"} for o in OCR],
        dedup=[{"ms": o["ms"], "duplicate_of": None} for o in OCR], ocr=OCR, settings=dict(S.DEFAULTS, ocr=True),
        speaker_names={"S2": "Bob"}).to_json()
    assert validate(m) == []
    block = m["transcript"]["diarization"]
    by_label = {s["label"]: s for s in block["speakers"]}
    assert by_label["S1"]["name_candidates"][0] == "Alice Chen"
    assert by_label["S2"]["name_candidates"][0] == "Bob Stone"
    assert block["speaker_names"] == {"S2": "Bob"}  # names are only what `talkthrough name` set


def test_without_ocr_a_speaker_has_no_candidates_key():
    m = stage_build(
        recording_id="0123456789abcdef",
        probe={"path": "/x/call.m4a", "filename": "call.m4a", "kind": "audio", "duration_ms": 42_000,
               "size_bytes": 10, "has_audio": True, "has_video": False},
        wall_clock=None, transcript=None, segments=[], words=[],
        diarization={"requested": True, "available": True}, turns=TURNS, speakers=roster(TURNS),
        speaker_segments=[], keyframes=[], dedup=[], ocr=[], settings=dict(S.DEFAULTS)).to_json()
    assert all("name_candidates" not in s for s in m["transcript"]["diarization"]["speakers"])


def test_candidates_are_made_where_turns_and_ocr_meet_not_in_turns():
    """The graph facts the placement rests on, and no dead candidate input on the turns stage."""
    assert S.ordered(downstream({"ocr"})) == ["ocr", "manifest"]  # a re-OCR never re-diarizes
    assert S.ordered(downstream({"turns"})) == ["turns", "manifest"]  # a diarize amend never re-OCRs
    assert {"turns", "ocr"} <= set(S.DEPS["manifest"])
    assert "ocr_texts" not in inspect.signature(diarize.run_turns).parameters
    assert all("name_candidates_json" not in r for r in roster(TURNS))


def test_agents_get_unconfirmed_hints_only_for_unnamed_speakers(tmp_path, monkeypatch):
    """get_transcript over MCP's reader: S1 has no confirmed name, so its on-screen candidates come as
    `name_hints` with the note that they are unconfirmed; S2 was named, so it gets no hint."""
    import json

    from talkthrough_assets import store
    from talkthrough_assets.read.reader import Reader

    monkeypatch.setenv("TALKTHROUGH_HOME", str(tmp_path))
    rid = "0123456789abcdef"
    segs = [{"seq": 0, "t0_ms": 500, "t1_ms": 7_000, "text": "Morning, let's start."},
            {"seq": 1, "t0_ms": 9_000, "t1_ms": 19_000, "text": "The build is green."}]
    spk = [dict(s, source_seq=s["seq"], speaker=w) for s, w in zip(segs, ("S1", "S2"))]
    m = stage_build(
        recording_id=rid,
        probe={"path": "/x/call.mp4", "filename": "call.mp4", "kind": "video", "duration_ms": 42_000,
               "size_bytes": 10, "has_audio": True, "has_video": True},
        wall_clock=None, transcript={"available": True, "language": "en", "model": "tiny.en"},
        segments=segs, words=[], diarization={"requested": True, "available": True, "detected_num_speakers": 2},
        turns=TURNS, speakers=roster(TURNS), speaker_segments=spk,
        keyframes=[{"ms": o["ms"], "file": f"frames/{rid}/g/t{o['ms']:08d}.jpg"} for o in OCR],
        dedup=[{"ms": o["ms"], "duplicate_of": None} for o in OCR], ocr=OCR, settings=dict(S.DEFAULTS, ocr=True),
        speaker_names={"S2": "Bob"}).to_json()
    store.put_json(store.manifest_key(rid), m)
    out = json.loads(json.dumps(Reader().get_transcript(rid).dump()))
    assert out["diarized"] and out["speaker_names"] == {"S2": "Bob"}
    assert out["name_hints"] == {"S1": ["Alice Chen"]}
    assert "unconfirmed" in out["name_hints_note"]

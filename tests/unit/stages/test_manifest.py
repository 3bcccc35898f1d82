"""`manifest_schema_valid` judges the published bytes, read back from the data root: it passes on a
valid manifest and fails, saying why, on a missing, damaged or schema-breaking one."""

from __future__ import annotations

import dataclasses
import json

import pytest

from talkthrough_assets.pipeline import stagerun
from talkthrough_assets.stages import runner
from talkthrough_assets import store
from talkthrough_assets.pipeline import settings as S
from talkthrough_assets.model import manifest as model
from talkthrough_assets.model.manifest import recording_row
from talkthrough_assets.stages import manifest as manifest_stage

RID = "0123456789abcdef"


def test_manifest_check_reads_what_was_published(tmp_path, monkeypatch):
    monkeypatch.setenv("TALKTHROUGH_HOME", str(tmp_path))
    check = stagerun.verify_check("manifest_schema_valid", RID)
    assert not check.passed and "no published manifest" in check.description

    store.put_bytes(store.manifest_key(RID), b'{"schema": "talkthrough-manifest/v1", "recording_id": ')
    check = stagerun.verify_check("manifest_schema_valid", RID)
    assert not check.passed and "unreadable manifest" in check.description

    store.put_json(store.manifest_key(RID), {"schema": model.SCHEMA, "recording_id": RID})
    check = stagerun.verify_check("manifest_schema_valid", RID)
    assert not check.passed and check.description  # the schema's problems, named

    good = json.loads(json.dumps(_valid_manifest()))
    assert model.validate(good) == []
    store.put_json(store.manifest_key(RID), good)
    assert stagerun.verify_check("manifest_schema_valid", RID) == runner.CheckResult(
        name="manifest_schema_valid", passed=True, description=model.SCHEMA)


def _valid_manifest() -> dict:
    probe = {"path": "/rec/demo.mp4", "filename": "demo.mp4", "kind": "screen", "container": "mov,mp4",
             "duration_ms": 2000, "size_bytes": 1000, "width": 64, "height": 36, "fps": 30.0,
             "video_codec": "h264", "audio_codec": None, "has_audio": False, "has_video": True,
             "tags_json": "{}", "file_mtime": 0.0, "cap_hit": False, "max_seconds": 0, "rotation": 0}
    return manifest_stage.build(recording_id=RID, probe=probe, wall_clock=None, transcript=None, segments=[],
                                words=[], keyframes=[], dedup=[], ocr=[], diarization=None, turns=[],
                                speakers=[], speaker_segments=[], settings={}, frames_reason=None).to_json()


def _manifest_with_a_wall_clock_and_speakers() -> dict:
    probe = {"path": "/rec/call.m4a", "filename": "call.m4a", "kind": "audio", "container": "mov,mp4",
             "duration_ms": 61_500, "size_bytes": 5000, "width": None, "height": None, "fps": None,
             "video_codec": None, "audio_codec": "aac", "has_audio": True, "has_video": False,
             "tags_json": "{}", "file_mtime": 0.0, "cap_hit": False, "max_seconds": 0, "rotation": 0}
    wc = {"available": True, "start_utc": "2026-03-02T09:15:00.000+00:00", "tz_offset_min": 60,
          "source": "creation_time", "confidence": "medium"}
    transcript = {"available": True, "reason": None, "language": "en", "model": "tiny.en"}
    segments = [{"seq": 0, "t0_ms": 0, "t1_ms": 900, "text": "hello"}]
    diarization = {"available": True, "requested": True, "reason": None}
    speakers = [{"label": "S1", "talk_time_ms": 900, "turn_count": 1, "first_ms": 0, "last_ms": 900}]
    return manifest_stage.build(recording_id=RID, probe=probe, wall_clock=wc, transcript=transcript,
                                segments=segments, words=[], keyframes=[], dedup=[], ocr=[], diarization=diarization,
                                turns=[{"t0_ms": 0, "t1_ms": 900, "speaker": "S1"}], speakers=speakers,
                                speaker_segments=[], settings={}, frames_reason=None).to_json()


def test_the_mcp_library_row_is_the_recordings_row_less_paths():
    from talkthrough_assets.read import index, snapshot

    m = _manifest_with_a_wall_clock_and_speakers()
    row = recording_row(model.Manifest.from_json(m), "/data/manifests/x.json")
    assert row.recorded_at == "2026-03-02T09:15:00.000+00:00" and row.tz_offset_min == 60
    assert row.duration_ms == 61_500 and row.diarized and row.speaker_count == 1
    snap = snapshot.build(RID, json.loads(json.dumps(m)))
    assert snap.rec == dataclasses.replace(row, manifest_path=None)
    # the search index's listing row (what list_recordings shows): the same row less its paths
    assert index.snapshot_parts(snap)[0] == {"recording": RID, **{k: v for k, v in row.to_json().items()
                                                          if k not in ("path", "size_bytes", "manifest_path")}}
    assert dataclasses.asdict(snap.wall_clock) == m["wall_clock"] == {
        "start_utc": "2026-03-02T09:15:00.000+00:00", "tz_offset_min": 60, "source": "creation_time",
        "confidence": "medium"}


def test_a_recording_without_a_wall_clock_has_none_everywhere():
    from talkthrough_assets.model.manifest import recording_row
    from talkthrough_assets.model.wallclock import view
    from talkthrough_assets.stages import wall_clock as wallclock

    assert view(dataclasses.asdict(wallclock.NULL_WALL_CLOCK)) is None and view(None) is None
    m = _valid_manifest()
    assert m["wall_clock"] is None and recording_row(model.Manifest.from_json(m)).recorded_at is None


def _manifest_inputs():
    probe = {"path": "/x/a.mp4", "filename": "a.mp4", "kind": "video", "duration_ms": 12_345, "size_bytes": 10,
             "width": 1920, "height": 1080, "video_codec": "h264", "has_audio": True, "has_video": True,
             "cap_hit": False}
    return dict(
        recording_id="0123456789abcdef", probe=probe,
        wall_clock={"available": True, "start_utc": "2026-03-14T09:26:53.000+00:00", "tz_offset_min": None,
                    "source": "creation_time", "confidence": "medium"},
        transcript={"available": True, "reason": None, "language": "en", "model": "tiny.en"},
        segments=[{"seq": 0, "t0_ms": 0, "t1_ms": 900, "text": "héllo"}],
        words=[{"seq": 0, "idx": 0, "t0_ms": 0, "t1_ms": 900, "word": " héllo"}],
        diarization={"requested": False}, turns=[], speakers=[], speaker_segments=[],
        keyframes=[{"ms": 0, "file": "frames/x/g/t00000000.jpg"}, {"ms": 1000, "file": "frames/x/g/t00001000.jpg"}],
        dedup=[{"ms": 0, "duplicate_of": None}, {"ms": 1000, "duplicate_of": 0}],
        ocr=[{"ms": 0, "text": "DEPLOY"}], settings=dict(S.DEFAULTS, ocr=True),
    )


def test_manifest_round_trip_and_validation():
    m = manifest_stage.build(**_manifest_inputs()).to_json()
    assert model.validate(m) == []
    again = model.loads(model.dumps(m))
    assert isinstance(again, model.Manifest) and again.to_json() == m
    assert m["frames"]["count"] == 2 and m["frames"]["unique_count"] == 1
    assert m["frames"]["items"][1]["duplicate_of"] == 0 and m["frames"]["items"][0]["ocr_text"] == "DEPLOY"
    assert "diarization" not in m["transcript"]  # not requested -> block absent
    broken = dict(m, schema="other/v9")
    with pytest.raises(ValueError, match="schema"):
        model.loads(json.dumps(broken))

"""`manifest_schema_valid` judges the published bytes, read back from the data root: it passes on a
valid manifest and fails, saying why, on a missing, damaged or schema-breaking one."""

from __future__ import annotations

import json

from talkthrough_assets import pipeline, store
from talkthrough_assets.stages import manifest as manifest_stage

RID = "0123456789abcdef"


def test_manifest_check_reads_what_was_published(tmp_path, monkeypatch):
    monkeypatch.setenv("TALKTHROUGH_HOME", str(tmp_path))
    check = pipeline.verify_check("manifest_schema_valid", RID)
    assert not check.passed and "no published manifest" in check.description

    store.put_bytes(store.manifest_key(RID), b'{"schema": "talkthrough-manifest/v1", "recording_id": ')
    check = pipeline.verify_check("manifest_schema_valid", RID)
    assert not check.passed and "unreadable manifest" in check.description

    store.put_json(store.manifest_key(RID), {"schema": manifest_stage.SCHEMA, "recording_id": RID})
    check = pipeline.verify_check("manifest_schema_valid", RID)
    assert not check.passed and check.description  # the schema's problems, named

    good = json.loads(json.dumps(_valid_manifest()))
    assert manifest_stage.validate(good) == []
    store.put_json(store.manifest_key(RID), good)
    assert pipeline.verify_check("manifest_schema_valid", RID) == pipeline.CheckResult(
        name="manifest_schema_valid", passed=True, description=manifest_stage.SCHEMA)


def _valid_manifest() -> dict:
    probe = {"path": "/rec/demo.mp4", "filename": "demo.mp4", "kind": "screen", "container": "mov,mp4",
             "duration_ms": 2000, "size_bytes": 1000, "width": 64, "height": 36, "fps": 30.0,
             "video_codec": "h264", "audio_codec": None, "has_audio": False, "has_video": True,
             "tags_json": "{}", "file_mtime": 0.0, "cap_hit": False, "max_seconds": 0, "rotation": 0}
    return manifest_stage.build(recording_id=RID, probe=probe, wall_clock=None, transcript=None, segments=[],
                                words=[], keyframes=[], dedup=[], ocr=[], diarization=None, turns=[],
                                speakers=[], speaker_segments=[], settings={}, frames_reason=None)

"""The manifest's JSON Schema is generated from its typed records and shipped with the package; every manifest
the stage publishes, and every one ``manifest_schema_valid``/``doctor`` reads back, is checked against it."""

from __future__ import annotations

import dataclasses
import json
from importlib import resources

import pytest

from manifests import stage_build
from talkthrough_assets import store
from talkthrough_assets.core.errors import StageError
from talkthrough_assets.model import manifest as model
from talkthrough_assets.stages import manifest as manifest_stage

RID = "0123456789abcdef"
PROBE = {"path": "/rec/demo.mp4", "filename": "demo.mp4", "kind": "video", "duration_ms": 2000, "size_bytes": 1000,
         "width": 64, "height": 36, "video_codec": "h264", "has_audio": False, "has_video": True, "cap_hit": False}
REGENERATE = "python -m talkthrough_assets.model.manifest talkthrough_assets/model/manifest.schema.json"


def _build(**kw) -> model.Manifest:
    args = dict(recording_id=RID, probe=PROBE, wall_clock=None, transcript=None, segments=[], words=[],
                keyframes=[{"ms": 0, "file": "frames/x/g/t0.jpg"}, {"ms": 1000, "file": "frames/x/g/t1.jpg"}],
                dedup=[{"ms": 0, "duplicate_of": None}, {"ms": 1000, "duplicate_of": 0}], ocr=[{"ms": 0, "text": "HI"}],
                diarization=None, turns=[], speakers=[], speaker_segments=[], settings={"max_frames": 60, "ocr": True})
    return stage_build(**(args | kw))


def test_the_shipped_schema_is_the_one_the_records_generate():
    shipped = resources.files("talkthrough_assets.model").joinpath(model.SCHEMA_FILE).read_text(encoding="utf-8")
    assert shipped == model.schema_text(), f"manifest.schema.json is stale: regenerate it with `{REGENERATE}`"
    schema = json.loads(shipped)
    assert schema["$id"] == model.SCHEMA and schema["additionalProperties"] is False
    assert set(schema["required"]) == {"schema", "job_id", "created_at", "media", "wall_clock", "transcript",
                                       "frames", "caps", "tool_versions"}
    # a field added after v1 first shipped is not required: manifests published before it still validate
    transcript = schema["$defs"]["Transcript"]
    assert "quality" not in transcript["required"] and "diarization" not in transcript["required"]


def test_the_json_keeps_its_shape_optional_keys_left_out_nulls_kept():
    m = _build().to_json()
    assert model.validate(m) == []
    assert list(m) == ["schema", "job_id", "created_at", "media", "wall_clock", "transcript", "frames", "caps",
                       "tool_versions"]
    assert m["wall_clock"] is None and "diarization" not in m["transcript"]
    assert "header_duration_s" not in m["media"] and m["frames"]["reason"] is None
    assert m["frames"]["items"] == [{"ms": 0, "file": "frames/x/g/t0.jpg", "ocr_text": "HI"},
                                    {"ms": 1000, "file": "frames/x/g/t1.jpg", "duplicate_of": 0}]
    assert model.validate(_build()) == []  # the typed manifest, checked as the JSON it publishes


def test_a_manifest_that_breaks_the_schema_is_named_where():
    m = _build().to_json()
    m["frames"]["items"][1]["ms"] = "1000"
    del m["caps"]
    m["transcript"]["sgements"] = []
    problems = model.validate(m)
    assert "frames.items[1].ms: '1000' is not of type 'integer'" in problems
    assert any(p.startswith("(top level): 'caps' is a required property") for p in problems)
    assert any("sgements" in p and "transcript" in p for p in problems)
    assert model.validate([1]) == ["not a JSON object but list"]
    bad = dict(_build().to_json(), partial={"covered_ms": [5, 1]})
    assert model.validate(bad) == ["partial.covered_ms is not a [start, end] pair of milliseconds"]
    with pytest.raises(ValueError, match="frames.items"):
        model.loads(json.dumps(m))


def test_the_stage_refuses_a_manifest_off_the_schema_and_publishes_nothing(tmp_path, monkeypatch):
    monkeypatch.setenv("TALKTHROUGH_HOME", str(tmp_path))
    store.write_table("probe", RID, [dict(PROBE, kind=None, has_video=False)])  # a probe row without its kind
    opts = manifest_stage.Options(speaker_names=None, apply_voice_names=False, max_seconds=0, max_frames=60,
                                  scene_threshold=0.04, ocr=True)
    with pytest.raises(StageError, match=r"does not fit talkthrough-manifest/v1 .*media\.kind: None is not of type"):
        manifest_stage.run(RID, opts)
    assert store.get_json(store.manifest_key(RID)) is None and store.read_rows("recordings", RID) == []
    broken = _build()
    broken = dataclasses.replace(broken, frames=dataclasses.replace(broken.frames, count=3))
    with pytest.raises(StageError, match="frames.count does not match frames.items"):
        manifest_stage.checked(broken)


def test_the_listing_row_is_the_same_from_the_typed_manifest_and_its_json():
    m = _build()
    again = model.Manifest.from_json(json.loads(json.dumps(m.to_json())))
    assert again == m and model.recording_row(m, "/m.json") == model.recording_row(again, "/m.json")


def _hour_manifest() -> model.Manifest:
    """A one-hour recording's manifest: 2 000 segments of three speakers, 10 000 words, 600 keyframes."""
    segs = [{"seq": i, "source_seq": i, "t0_ms": i * 1800, "t1_ms": i * 1800 + 1700, "text": "so the budget " * 3,
             "speaker": f"S{i % 3 + 1}"} for i in range(2000)]
    kf = [{"ms": i * 6000, "file": f"frames/x/g/t{i}.jpg"} for i in range(600)]
    dedup = [{"ms": i * 6000, "duplicate_of": None if i % 3 == 0 else (i - i % 3) * 6000} for i in range(600)]
    m = _build(probe=dict(PROBE, duration_ms=3_600_000), speaker_segments=segs, keyframes=kf, dedup=dedup,
               ocr=[{"ms": i * 6000, "text": "SLIDE"} for i in range(0, 600, 3)],
               transcript={"available": True, "reason": None, "language": "en", "model": "t"})
    words = [(i * 360, i * 360 + 300, " word") for i in range(10_000)]
    return dataclasses.replace(m, transcript=dataclasses.replace(m.transcript, words=words))


def test_the_typed_load_gives_back_what_was_written():
    m = _hour_manifest()
    data = json.dumps(m.to_json())
    back = model.Manifest.from_json(json.loads(data))
    assert back == m and back.to_json() == json.loads(data)
    assert isinstance(back.transcript.segments[5], model.Segment) and back.transcript.segments[5].speaker == "S3"
    assert back.transcript.words[1] == (360, 660, " word") and back.frames.items[1].duplicate_of == 0
    assert model.loads(json.dumps(_build().to_json())) == _build()  # checked, then typed


def test_the_typed_load_reads_manifests_of_earlier_writers():
    old = _build().to_json()
    # before words, quality, the speaker count, frames' reason and header durations were written
    for key in ("words", "quality"):
        old["transcript"].pop(key, None)
    old["frames"].pop("reason")
    old["media"]["duration_s"] = 2  # JSON's int for a float
    old["media"]["retired_key"] = "x"  # a key a later version no longer writes is not read
    old["wall_clock"] = {"start_utc": None, "tz_offset_min": None, "source": None, "confidence": None}
    old["partial"] = {"covered_ms": [0, 15000]}  # a provisional generation with only its covered span
    m = model.Manifest.from_json(old)
    assert m.transcript.words == [] and m.transcript.quality is None and m.frames.reason is None
    assert m.media.duration_s == 2.0 and m.wall_clock is None  # an anchor without a time is no anchor
    assert m.partial == model.Partial(covered_ms=(0, 15000))
    assert model.recording_row(m).duration_ms == 2000
    bad = dict(_build().to_json(), frames={"count": 1})
    with pytest.raises(ValueError, match="frames"):
        model.Manifest.from_json(bad)


def test_the_typed_load_from_bytes_is_the_same_and_says_when_it_is_not_json():
    m = _hour_manifest()
    assert model.Manifest.from_json_bytes(json.dumps(m.to_json()).encode()) == m
    old = dict(_build().to_json(), wall_clock={"start_utc": None, "tz_offset_min": None, "source": None,
                                               "confidence": None})
    assert model.Manifest.from_json_bytes(json.dumps(old)).wall_clock is None  # read as from_json reads it
    with pytest.raises(json.JSONDecodeError):
        model.Manifest.from_json_bytes(b'{"schema": "talkthrough-manifest/v1", "job_id": ')
    with pytest.raises(ValueError, match="frames"):
        model.Manifest.from_json_bytes(json.dumps(dict(_build().to_json(), frames={"count": 1})))

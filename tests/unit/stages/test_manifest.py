"""`manifest_schema_valid` judges the published bytes, read back from the data root: it passes on a
valid manifest and fails, saying why, on a missing, damaged or schema-breaking one."""

from __future__ import annotations

import dataclasses
import json

import pytest

from manifests import stage_build
from talkthrough_assets.pipeline import stagerun
from talkthrough_assets.stages import runner
from talkthrough_assets import store
from talkthrough_assets.pipeline import settings as S
from talkthrough_assets.model import manifest as model
from talkthrough_assets.model.manifest import recording_row

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
    return stage_build(recording_id=RID, probe=probe, wall_clock=None, transcript=None, segments=[],
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
    return stage_build(recording_id=RID, probe=probe, wall_clock=wc, transcript=transcript,
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

    assert view(wallclock.NULL_WALL_CLOCK) is None and view(None) is None
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
    m = stage_build(**_manifest_inputs()).to_json()
    assert model.validate(m) == []
    again = model.loads(model.dumps(m))
    assert isinstance(again, model.Manifest) and again.to_json() == m
    assert m["frames"]["count"] == 2 and m["frames"]["unique_count"] == 1
    assert m["frames"]["items"][1]["duplicate_of"] == 0 and m["frames"]["items"][0]["ocr_text"] == "DEPLOY"
    assert "diarization" not in m["transcript"]  # not requested -> block absent
    broken = dict(m, schema="other/v9")
    with pytest.raises(ValueError, match="schema"):
        model.loads(json.dumps(broken))


def _stored_tables() -> dict[str, list]:
    """One diarized screencast's stored records, every table the manifest stage reads."""
    from talkthrough_assets.model.frames import Band, FrameChange, Keyframe, OcrBox, OcrFrame, Tag
    from talkthrough_assets.model.media import ProbeRow, WallClockRow
    from talkthrough_assets.model.transcript import Evidence, Segment, Span, TranscriptMeta, Word
    from talkthrough_assets.model.turns import DiarizationRow, SpeakerSegment, SpeakerStats, Turn

    box = OcrBox(box=((1.0, 2.0), (30.5, 2.0), (30.5, 12.0), (1.0, 12.0)), text="Alice Chen", score=0.98)
    return {
        "probe": [ProbeRow(path="/x/a.mp4", filename="a.mp4", kind="video", duration_ms=4000, size_bytes=10,
                           width=640, height=360, video_codec="h264", has_audio=True, has_video=True,
                           tags=(Tag("creation_time", "2026-03-02T09:15:00Z"),))],
        "wall_clock": [WallClockRow(available=True, start_utc="2026-03-02T09:15:00.000+00:00", tz_offset_min=60,
                                    source="creation_time", confidence="medium")],
        "transcripts": [TranscriptMeta(
            available=True, reason=None, language="en", language_probability=0.99, model="tiny.en",
            segment_count=2, dropped_count=1, speech_ms=3100, uncovered_ms=400,
            dropped=(Span(3000, 3500, "repetition (ratio 3.1)", "bye bye bye", None, 3, Evidence(p=0.5)),),
            uncovered=(Span(3500, 3900, "decoded again: no words"),))],
        "segments": [Segment(0, 900, "Hello.", -0.2, 0.01, seq=0), Segment(900, 1800, "Bye.", -0.3, 0.02, seq=1)],
        "words": [Word(0, 0, 900, " Hello.", 0.9, seq=0), Word(0, 900, 1800, " Bye.", 0.8, seq=1)],
        "diarization": [DiarizationRow(available=True, requested=True, reason=None, engine="sherpa-onnx",
                                       detected_num_speakers=2, speaker_count="2 found")],
        "turns": [Turn(0, 900, "S1"), Turn(900, 1800, "S2")],
        "speakers": [SpeakerStats("S1", 900, 1, 0, 900), SpeakerStats("S2", 900, 1, 900, 1800)],
        "speaker_segments": [SpeakerSegment(0, 0, 0, 900, "S1", "Hello.", ("S2",)),
                             SpeakerSegment(1, 1, 900, 1800, "S2", "Bye.", None)],
        "keyframes": [Keyframe(0, "frames/x/g/t0.jpg", None, 640, 360, "interval"),
                      Keyframe(1000, "frames/x/g/t1.jpg", 0.4, 640, 360, "scene"),
                      Keyframe(1500, "frames/x/g/t2.jpg", None, 640, 360, "interval")],
        "dedup": [FrameChange(0, "00ff", None, None), FrameChange(1000, "00fe", None, (Band(0, 10, 320, 60),)),
                  FrameChange(1500, "00fe", 1000, None)],
        "ocr": [OcrFrame(0, "Alice Chen", (box,), 0.98, "rapidocr"),
                OcrFrame(1000, "Bob Stone\nShare Screen", (), None, "rapidocr")],
    }


def _as_earlier_version(table: str, rows: list) -> None:
    """``rows`` as the version before the struct columns wrote them: spans, bands, boxes and tags as JSON text."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    legacy = {"transcripts": {"dropped", "doubtful", "uncovered"}, "dedup": {"changed"}, "ocr": {"boxes"},
              "probe": {"tags"}}[table]
    out = []
    for r in map(dataclasses.asdict, rows):
        for k in legacy:
            v = r.pop(k)
            if table == "dedup":
                k, v = "changed_json", None if v is None else [[b["x0"], b["y0"], b["x1"], b["y1"]] for b in v]
            elif table in ("ocr", "probe"):
                k, v = f"{k}_json", v if table == "ocr" else {t["key"]: t["value"] for t in v}
            r[k] = None if v is None else json.dumps(v)
        out.append(r)
    text = {"dropped", "doubtful", "uncovered", "changed_json", "boxes_json", "tags_json"}
    fields = [pa.field(f.name, pa.string() if f.name in text else f.type)
              for f in store.SCHEMAS[table] if f.name in out[0]]
    assert not legacy & {f.name for f in fields} - text  # the struct columns are not in the file
    path = store.table_path(table, RID)
    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.Table.from_pylist(out, schema=pa.schema(fields)), path)


def test_the_stage_builds_the_same_manifest_from_partitions_an_earlier_version_wrote(tmp_path, monkeypatch):
    """``build_stored`` reads every upstream table as its record: the struct columns of now, and the JSON text an
    earlier version stored in their place (a user's data root), make the same manifest."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from talkthrough_assets.stages import manifest as manifest_stage

    opts = manifest_stage.Options(speaker_names={"S2": "Bob"}, apply_voice_names=False, max_seconds=14400,
                                  max_frames=60, scene_threshold=0.04, ocr=True)
    got = {}
    for form in ("now", "earlier"):
        monkeypatch.setenv("TALKTHROUGH_HOME", str(tmp_path / form))
        for table, rows in _stored_tables().items():
            if form == "earlier" and table in ("transcripts", "dedup", "ocr", "probe"):
                _as_earlier_version(table, rows)
            else:
                store.write_table(table, RID, rows)
        got[form] = dict(manifest_stage.build_stored(RID, opts).to_json(), created_at=None)
    for table in ("transcripts", "dedup", "ocr", "probe"):  # the files the earlier form wrote hold JSON text
        file_types = pq.read_schema(tmp_path / "earlier" / store.table_key(table, RID)).types
        assert not any(pa.types.is_struct(t) or pa.types.is_list(t) for t in file_types), table
    assert got["earlier"] == got["now"] and model.validate(dict(got["now"], created_at="x")) == []
    m = got["now"]
    assert m["wall_clock"]["tz_offset_min"] == 60 and m["media"]["has_video"]
    assert [(s["speaker"], s.get("overlap")) for s in m["transcript"]["segments"]] == [("S1", ["S2"]), ("S2", None)]
    assert m["transcript"]["words"] == [[0, 900, " Hello."], [900, 1800, " Bye."]]
    assert m["transcript"]["quality"]["dropped_why"] == {"repetition": 3}
    assert m["transcript"]["quality"]["uncovered"] == [[3500, 3900, "decoded again: no words"]]
    di = m["transcript"]["diarization"]
    assert di["turns"] == [[0, 900, "S1"], [900, 1800, "S2"]] and di["speaker_names"] == {"S2": "Bob"}
    assert [s["name_candidates"] for s in di["speakers"]] == [["Alice Chen"], ["Bob Stone", "Alice Chen"]]
    assert di["speaker_count"] == "2 found" and di["speaker_name_sources"] == {"S2": "confirmed"}
    assert [(i["ms"], i.get("duplicate_of"), i.get("ocr_text")) for i in m["frames"]["items"]] == [
        (0, None, "Alice Chen"), (1000, None, "Bob Stone\nShare Screen"), (1500, 1000, None)]
    assert (m["frames"]["count"], m["frames"]["unique_count"]) == (3, 2)

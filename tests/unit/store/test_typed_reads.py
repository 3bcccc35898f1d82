"""store.read_rows / read_one with ``record=``: stored rows read back as the typed records the stages wrote, from
real Parquet partitions, those an earlier version wrote (JSON-string columns, missing columns) included."""

from __future__ import annotations

import dataclasses
import json

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from talkthrough_assets import store
from talkthrough_assets.model.frames import Band, FrameChange, Keyframe, OcrBox, OcrFrame, Tag
from talkthrough_assets.model.media import ProbeRow, Source, WallClockRow
from talkthrough_assets.model.transcript import Evidence, Segment, Span, TranscriptMeta
from talkthrough_assets.model.turns import DiarizationRow, SpeakerSegment, Turn, Voiceprint

RID = "0123456789abcdef"
BOX = OcrBox(box=((1.0, 2.0), (30.5, 2.0), (30.5, 12.0), (1.0, 12.0)), text="DEPLOY", score=0.98)
PROBE = ProbeRow(path="/x/a.mov", filename="a.mov", kind="video", container="mov,mp4", duration_ms=4000,
                 size_bytes=1234, width=640, height=360, fps=30.0, video_codec="h264", audio_codec="aac",
                 has_audio=True, has_video=True, tags=(Tag("creation_time", "2026-03-02T09:15:00Z"),),
                 file_mtime=1.5e9, max_seconds=14400, header_duration_ms=None)


@pytest.fixture
def root(tmp_path, monkeypatch):
    monkeypatch.setenv("TALKTHROUGH_HOME", str(tmp_path))
    return tmp_path


def _old_file(table: str, rows: list[dict], types: dict | None = None) -> None:
    """A partition as an earlier version wrote it: only ``rows``' columns, those in ``types`` of that type."""
    fields = [pa.field(f.name, (types or {}).get(f.name, f.type)) for f in store.SCHEMAS[table] if f.name in rows[0]]
    path = store.table_path(table, RID)
    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.Table.from_pylist(rows, schema=pa.schema(fields)), path)


def test_each_record_reads_back_equal_to_what_was_written(root):
    written = {
        "probe": [PROBE],
        "sources": [Source(path="/x/a.mov", filename="a.mov", size_bytes=1234, mtime=1.5e9, seen_at="2026-01-01")],
        "wall_clock": [WallClockRow(available=True, start_utc="2026-03-02T09:15:00.000+00:00", tz_offset_min=60,
                                    source="creation_time", confidence="high")],
        "segments": [Segment(0, 900, "Hello.", -0.2, 0.01, seq=0), Segment(900, 1800, "Bye.", -0.3, 0.02, seq=1)],
        "turns": [Turn(0, 900, "SPEAKER_00"), Turn(900, 1800, "SPEAKER_01")],
        "speaker_segments": [SpeakerSegment(0, 0, 0, 900, "SPEAKER_00", "Hello.", ("SPEAKER_01",)),
                             SpeakerSegment(1, 1, 900, 1800, None, "Bye.", None)],
        "voiceprints": [Voiceprint("SPEAKER_00", (0.5, 0.25), 3, 900, "campplus")],
        "diarization": [DiarizationRow(available=False, requested=True, reason="models missing")],
        "keyframes": [Keyframe(0, "frames/x/t00000000.jpg", None, 640, 360, "interval")],
        "dedup": [FrameChange(0, "00ff", None, None), FrameChange(1000, "00fe", None, (Band(0, 10, 320, 60),)),
                  FrameChange(2000, "00fe", 1000, None)],
        "ocr": [OcrFrame(0, "DEPLOY", (BOX,), 0.98, "rapidocr"), OcrFrame(1000, "", (), None, None)],
    }
    for table, rows in written.items():
        store.write_table(table, RID, rows)
        back = store.read_rows(table, RID, record=type(rows[0]))
        assert back == rows, table
        assert store.read_one(table, RID, record=type(rows[0])) == rows[0]


def test_nested_records_and_spans_come_back_as_records(root):
    ev = Evidence(p=0.97, p_en=0.001, speech_s=4.2, word_p=0.41)
    meta = TranscriptMeta(available=True, reason=None, language="en", language_probability=0.99, model="tiny.en",
                          segment_count=1, dropped_count=1, dropped=(Span(100, 900, "repetition", "bye bye", None,
                                                                          2, ev),),
                          uncovered=(Span(4000, 4800, "decoded again: no words"),))
    store.write_table("transcripts", RID, [meta])
    back = store.read_one("transcripts", RID, record=TranscriptMeta)
    assert back == meta and isinstance(back.dropped[0].evidence, Evidence)


def test_a_transcripts_row_with_json_spans_reads_as_the_record(root):
    span = Span(100, 900, "repetition", "bye bye", None, 2, Evidence(p=0.5))
    row = {f.name: None for f in store.SCHEMAS["transcripts"]}
    row.update(available=True, language="en", segment_count=1, dropped_count=1,
               dropped=json.dumps([dataclasses.asdict(span)]), doubtful="[]", uncovered=None)
    _old_file("transcripts", [row], {k: pa.string() for k in ("dropped", "doubtful", "uncovered")})
    back = store.read_one("transcripts", RID, record=TranscriptMeta)
    assert back.dropped == (span,) and back.doubtful == () and back.uncovered is None


def test_partitions_written_before_the_struct_columns_read_as_records(root):
    _old_file("dedup", [{"ms": 1000, "dhash": "00fe", "duplicate_of": None, "changed_json": "[[0, 10, 320, 60]]"},
                        {"ms": 2000, "dhash": "00fe", "duplicate_of": 1000, "changed_json": None}])
    assert store.read_rows("dedup", RID, record=FrameChange) == [
        FrameChange(1000, "00fe", None, (Band(0, 10, 320, 60),)), FrameChange(2000, "00fe", 1000, None)]

    boxes = json.dumps([{"box": [list(p) for p in BOX.box], "text": BOX.text, "score": BOX.score}])
    _old_file("ocr", [{"ms": 0, "text": "DEPLOY", "boxes_json": boxes, "mean_score": 0.98, "engine": "e"}])
    assert store.read_one("ocr", RID, record=OcrFrame) == OcrFrame(0, "DEPLOY", (BOX,), 0.98, "e")

    # a probe row from before ``tags`` (and ``header_duration_ms``, ``rotation``): tags from tags_json, the rest
    # NULL or its default
    old = {k: v for k, v in dataclasses.asdict(PROBE).items() if k not in ("tags", "header_duration_ms", "rotation")}
    _old_file("probe", [{**old, "tags_json": json.dumps({"creation_time": "2026-03-02T09:15:00Z"})}])
    back = store.read_one("probe", RID, record=ProbeRow)
    assert back == dataclasses.replace(PROBE, rotation=None)
    assert back.tag_map == {"creation_time": "2026-03-02T09:15:00Z"}


def test_columns_the_record_lacks_are_ignored_and_nothing_stored_is_none(root):
    store.write_table("dedup", RID, [FrameChange(0, "00ff", None, None)])
    assert store.read_one("dedup", RID) == {"ms": 0, "dhash": "00ff", "duplicate_of": None, "changed": None,
                                            "changed_json": None}

    @dataclasses.dataclass(frozen=True)
    class JustMs:
        ms: int
        note: str = "default kept"

    assert store.read_rows("dedup", RID, record=JustMs) == [JustMs(0)]
    assert store.read_one("turns", RID, record=Turn) is None and store.read_rows("turns", RID, record=Turn) == []
    with pytest.raises(TypeError):
        store.read_rows("dedup", RID, record=dict)

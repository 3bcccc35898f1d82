"""Typed records of the frame branch and the turns stage stored whole (nested records as Arrow structs), and the
columns earlier versions stored as JSON strings (``changed_json``, ``boxes_json``, ``tags_json``) still read."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.parquet as pq

from talkthrough_assets import store
from talkthrough_assets.model import frames
from talkthrough_assets.model.frames import Band, FrameChange, OcrBox, OcrFrame
from talkthrough_assets.model.turns import TurnsOutput
from talkthrough_assets.stages.runner import digest
from talkthrough_assets.store.integrity import file_problem
from talkthrough_assets.store.schemas import as_row

RID = "0123456789abcdef"
BOX = {"box": [[1.0, 2.0], [30.5, 2.0], [30.5, 12.0], [1.0, 12.0]], "text": "DEPLOY", "score": 0.98}
OCR_BOX = OcrBox(box=tuple(tuple(p) for p in BOX["box"]), text="DEPLOY", score=0.98)


def _old_file(table: str, columns: dict) -> None:
    """A partition as the previous version wrote it: the JSON string column, no struct column."""
    schema = pa.schema([f for f in store.SCHEMAS[table] if f.name in columns])
    path = store.table_path(table, RID)
    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.table({k: [v] for k, v in columns.items()}, schema=schema), path)


def test_records_are_stored_as_structs_and_read_back_as_before(tmp_path, monkeypatch):
    monkeypatch.setenv("TALKTHROUGH_HOME", str(tmp_path))
    rows = [FrameChange(ms=0, dhash="00ff", duplicate_of=None, changed=None),
            FrameChange(ms=1000, dhash="00fe", duplicate_of=None, changed=(Band(0, 10, 320, 60),)),
            FrameChange(ms=2000, dhash="00fe", duplicate_of=1000, changed=None)]
    store.write_table("dedup", RID, rows)
    back = store.read_rows("dedup", RID)
    assert [frames.bands(r) for r in back] == [None, [[0, 10, 320, 60]], None]
    assert pq.read_schema(store.table_path("dedup", RID)).field("changed").type == pa.list_(
        pa.struct([("x0", pa.int64()), ("y0", pa.int64()), ("x1", pa.int64()), ("y1", pa.int64())]))

    store.write_table("ocr", RID, [OcrFrame(ms=0, text="DEPLOY", boxes=(OCR_BOX,), mean_score=0.98, engine="e")])
    assert frames.boxes(store.read_one("ocr", RID)) == (OCR_BOX,)
    # a record hashes as the mapping it is stored as (a stage's data version does not move)
    assert digest(rows) == digest([as_row(r) for r in rows])


def test_a_partition_written_before_the_struct_columns_still_reads(tmp_path, monkeypatch):
    monkeypatch.setenv("TALKTHROUGH_HOME", str(tmp_path))
    _old_file("dedup", {"ms": 1000, "dhash": "00fe", "duplicate_of": None, "changed_json": "[[0, 10, 320, 60]]"})
    _old_file("ocr", {"ms": 0, "text": "DEPLOY", "boxes_json": '[{"box": [[1.0, 2.0], [30.5, 2.0], [30.5, 12.0], '
                      '[1.0, 12.0]], "text": "DEPLOY", "score": 0.98}]', "mean_score": 0.98, "engine": "e"})
    _old_file("probe", {"filename": "a.mov", "tags_json": '{"creation_time": "2026-03-02T09:15:00.000000Z"}'})
    for table in ("dedup", "ocr", "probe"):
        assert file_problem(store.table_path(table, RID), table, deep=True) is None  # not "damaged" to doctor
    assert frames.bands(store.read_one("dedup", RID)) == [[0, 10, 320, 60]]
    assert frames.boxes(store.read_one("ocr", RID)) == (OCR_BOX,)
    assert frames.tags(store.read_one("probe", RID)) == {"creation_time": "2026-03-02T09:15:00.000000Z"}
    # and the new form of the same
    store.write_table("probe", RID, [{"filename": "a.mov", "tags": [{"key": "creation_time", "value": "x"}]}])
    assert frames.tags(store.read_one("probe", RID)) == {"creation_time": "x"}


def test_the_turns_output_is_stored_as_records(tmp_path, monkeypatch):
    monkeypatch.setenv("TALKTHROUGH_HOME", str(tmp_path))
    out = TurnsOutput.of({
        "diarization": {"available": True, "requested": True, "reason": None, "speaker_count": "as given"},
        "turns": [{"t0_ms": 0, "t1_ms": 900, "speaker": "S1"}],
        "speakers": [{"label": "S1", "talk_time_ms": 900, "turn_count": 1, "first_ms": 0, "last_ms": 900}],
        "speaker_segments": [{"seq": 0, "source_seq": 0, "t0_ms": 0, "t1_ms": 900, "speaker": "S1", "text": "hi",
                              "overlap": []}],
        "voiceprints": [{"label": "S1", "embedding": [0.6, 0.8], "windows": 2, "speech_ms": 900, "model": "m"}]})
    store.write_table("diarization", RID, [out.diarization])
    store.write_table("speaker_segments", RID, out.speaker_segments)
    store.write_table("voiceprints", RID, out.voiceprints)
    assert store.read_one("diarization", RID)["speaker_count"] == "as given"
    assert store.read_one("speaker_segments", RID)["overlap"] == []
    assert store.read_one("voiceprints", RID)["embedding"] == [0.6000000238418579, 0.800000011920929]

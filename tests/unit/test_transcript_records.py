"""model.transcript: the segments stage's records stored whole (spans as Arrow list<struct> columns), and a
transcripts row written earlier, its spans as JSON strings, still read by the store, the integrity check, the
DuckDB views and transcribe.quality."""

from __future__ import annotations

import dataclasses
import json

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from talkthrough_assets import store
from talkthrough_assets.model.transcript import Decoded, Evidence, Segment, Span, TranscriptMeta, Word, spans
from talkthrough_assets.store.records import as_record
from talkthrough_assets.stages.segments import transcribe as T

RID = "0123456789abcdef"


def _transcript():
    dropped = (Span(100, 900, "repetition (compression ratio 3.1 > 2.4)", "bye bye bye", words=3),
               Span(2000, 2600, "spoken language is de (p=0.97, P(en)=0.001, 4.2 s of speech, word probability "
                    "0.41); the English-only model tiny.en cannot transcribe it", "Guten Tag", "de", 2,
                    Evidence(p=0.97, p_en=0.001, speech_s=4.2, word_p=0.41)))
    return T.finish(Decoded(
        model="tiny.en", audio_ms=5000, language="en", language_probability=0.99, elapsed_s=1.5,
        segments=(Segment(1000, 1900, "Hello there.", -0.2, 0.01, seq=0),),
        words=(Word(0, 1000, 1400, " Hello", 0.9, seq=0), Word(1, 1400, 1900, " there.", 0.8, seq=0)),
        dropped=dropped, doubtful=(Span(3000, 3500, "kept: spoken language is nl", "Okay.", "nl"),),
        uncovered=(Span(4000, 4800, "decoded again: no words"),), speech_ms=3200))


def test_the_stage_hands_its_records_to_the_store_whole_and_the_spans_read_back_as_structs(tmp_path, monkeypatch):
    monkeypatch.setenv("TALKTHROUGH_HOME", str(tmp_path))
    out = _transcript()
    store.write_table("transcripts", RID, [out.meta])
    store.write_table("segments", RID, out.segments)
    store.write_table("words", RID, out.words)
    assert pq.read_schema(store.table_path("transcripts", RID)).field("dropped").type == pa.list_(store.schemas.SPAN)
    row = store.read_one("transcripts", RID)
    assert spans(row["dropped"]) == out.meta.dropped and spans(row["uncovered"]) == out.meta.uncovered
    assert (row["dropped_count"], row["dropped_words"], row["uncovered_ms"]) == (2, 5, 800)
    assert [Word(**w) for w in store.read_rows("words", RID)] == list(out.words)
    typed = store.read_one("transcripts", RID, record=TranscriptMeta)
    assert typed == out.meta and T.quality(typed) == T.quality(out.meta)
    assert T.quality(typed).dropped_why == {"repetition": 3, "spoken language is de": 2}
    with store.connect() as con:
        got = con.execute("SELECT d.evidence.p_en FROM (SELECT unnest(dropped) AS d FROM transcripts) "
                          "WHERE d.lang = 'de'").fetchall()
    assert got == [(0.001,)]


def _write_older_row(meta) -> None:
    """The row as the previous version wrote it: its spans as JSON strings (dropped without "lang")."""
    row = dataclasses.asdict(meta)
    row["dropped"] = json.dumps([{k: v for k, v in d.items() if k != "lang" and v is not None}
                                 for d in row["dropped"]], ensure_ascii=False)
    for k in ("doubtful", "uncovered"):
        row[k] = json.dumps([{k2: v for k2, v in d.items() if v is not None} for d in row[k]], ensure_ascii=False)
    fields = [pa.field(k, pa.string()) if k in ("dropped", "doubtful", "uncovered") else f
              for f in store.SCHEMAS["transcripts"] for k in [f.name]]
    path = store.table_path("transcripts", RID)
    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.Table.from_pylist([row], schema=pa.schema(fields)), path)


def test_a_transcripts_row_written_with_json_spans_still_reads(tmp_path, monkeypatch):
    monkeypatch.setenv("TALKTHROUGH_HOME", str(tmp_path))
    meta = _transcript().meta
    _write_older_row(meta)
    assert store.integrity.file_problem(store.table_path("transcripts", RID), "transcripts", deep=True) is None
    row = store.read_one("transcripts", RID)
    assert [(d.t0_ms, d.reason, d.words) for d in spans(row["dropped"])] == [
        (d.t0_ms, d.reason, d.words) for d in meta.dropped]
    assert spans(row["dropped"])[1].evidence == meta.dropped[1].evidence
    assert T.quality(store.read_one("transcripts", RID, record=TranscriptMeta)) == T.quality(meta)
    # a reader handed the raw JSON string (a row read some other way) gets the same spans
    raw = pq.read_table(store.table_path("transcripts", RID)).to_pylist()[0]
    assert isinstance(raw["uncovered"], str) and spans(raw["uncovered"]) == meta.uncovered
    assert T.quality(as_record(TranscriptMeta, raw)) == T.quality(meta)


def test_old_and_new_rows_share_one_duckdb_view(tmp_path, monkeypatch):
    monkeypatch.setenv("TALKTHROUGH_HOME", str(tmp_path))
    meta = _transcript().meta
    _write_older_row(meta)
    other = "fedcba9876543210"
    store.write_table("transcripts", other, [meta])
    with store.connect() as con:
        got = con.execute("SELECT recording, len(dropped), dropped[1].reason FROM transcripts "
                          "ORDER BY recording").fetchall()
    assert got == [(RID, 2, meta.dropped[0].reason), (other, 2, meta.dropped[0].reason)]


def test_spans_reads_every_stored_form():
    assert spans(None) == () and spans("") == () and spans("[]") == ()
    s = Span(1, 2, "why", "text", words=1)
    assert spans([dataclasses.asdict(s)]) == (s,) and spans((s,)) == (s,)
    assert spans(json.dumps([{"t0_ms": 1, "t1_ms": 2, "reason": "why", "text": "text"}]))[0].word_count == 1
    with pytest.raises(dataclasses.FrozenInstanceError):
        s.t0_ms = 5  # type: ignore[misc]

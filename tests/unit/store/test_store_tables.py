"""store.tables: atomic partition writes, schema-checked rows, id/key validation, the DuckDB views."""

from __future__ import annotations

import os

import pyarrow.parquet as pq
import pytest

from talkthrough_assets import store

RID = "0123456789abcdef"


def test_ids_are_validated(tmp_path, monkeypatch):
    monkeypatch.setenv("TALKTHROUGH_HOME", str(tmp_path))
    for bad in ("../../etc/passwd", "0123456789ABCDEF", "abc", "0123456789abcdef0"):
        with pytest.raises(store.InvalidRecordingId):
            store.table_path("segments", bad)
    with pytest.raises(PermissionError):
        store.check_key("../outside.jpg")

def test_atomic_write_keeps_previous_file_on_failure(tmp_path, monkeypatch):
    monkeypatch.setenv("TALKTHROUGH_HOME", str(tmp_path))
    rid = "0123456789abcdef"
    store.write_table("segments", rid, [{"seq": 0, "t0_ms": 0, "t1_ms": 5, "text": "old"}])

    class Boom(Exception):
        pass

    def rows():
        yield {"seq": 0, "t0_ms": 0, "t1_ms": 5, "text": "new"}
        raise Boom

    with pytest.raises(Boom):
        store.write_table("segments", rid, rows())
    assert [r["text"] for r in store.read_rows("segments", rid)] == ["old"]
    with pytest.raises(Exception):  # schema violation: nothing replaced
        store.write_table("segments", rid, [{"seq": "not-an-int"}])
    assert [r["text"] for r in store.read_rows("segments", rid)] == ["old"]
    leftovers = [p for p in store.partition_dir("segments", rid).iterdir() if p.name.startswith(".tmp-")]
    assert leftovers == []
    assert pq.read_table(store.table_path("segments", rid)).num_rows == 1

def test_duckdb_views_exist_before_any_data(tmp_path, monkeypatch):
    monkeypatch.setenv("TALKTHROUGH_HOME", str(tmp_path))
    con = store.connect()
    assert con.execute("SELECT count(*) FROM segments").fetchone() == (0,)
    assert con.execute("SELECT count(*) FROM frames").fetchone() == (0,)
    path = store.ensure_catalog()
    assert path.exists() and os.path.getsize(path) > 0


def test_a_row_with_a_column_its_schema_lacks_is_refused_loudly_and_nothing_is_replaced(tmp_path, monkeypatch):
    monkeypatch.setenv("TALKTHROUGH_HOME", str(tmp_path))
    store.write_table("segments", RID, [{"seq": 0, "t0_ms": 0, "t1_ms": 5, "text": "old"}])
    with pytest.raises(store.SchemaMismatch, match=r"table 'segments' has no column 'speaker'.*store.SCHEMAS"):
        store.write_table("segments", RID, [{"seq": 0, "t0_ms": 0, "t1_ms": 5, "text": "new", "speaker": "A"}])
    assert [r["text"] for r in store.read_rows("segments", RID)] == ["old"]


def test_a_column_left_out_of_a_row_reads_back_as_null(tmp_path, monkeypatch):
    monkeypatch.setenv("TALKTHROUGH_HOME", str(tmp_path))
    store.write_table("segments", RID, [{"seq": 0, "t0_ms": 0, "t1_ms": 5}])
    assert store.read_rows("segments", RID) == [
        {"seq": 0, "t0_ms": 0, "t1_ms": 5, "text": None, "avg_logprob": None, "no_speech_prob": None}]

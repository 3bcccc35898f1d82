"""Integration: the committed fixtures through the real Dagster job with real models."""

from __future__ import annotations

import json
import shutil
from datetime import timedelta

import pytest
from dagster import DagsterEventType
from dagster_records import materialized_in_run, new_run, run_ids
from fixture_facts import (
    CREATION_TIMES, FIXTURES_DIR, MEETING, MEETING_NAME, SCREENCAST, SCREENCAST_NAME, SCREENCAST_SCENES,
    SILENT_NAME, SILENT_SCENES, ocr_normalize,
)

from talkthrough_assets.stages import runner
from talkthrough_assets.app import service
from talkthrough_assets.app import runs
from talkthrough_assets import store
from talkthrough_assets.stages import keyframes as keyframes_stage
from talkthrough_assets.pipeline.settings import STAGES
from talkthrough_assets.model.manifest import validate as validate_manifest
from talkthrough_assets.stages.wall_clock import parse_iso


def _words(rid: str) -> str:
    return " ".join(s["text"] for s in store.read_rows("segments", rid)).lower()


def _materialized_in_run(run_id: str, rid: str) -> set[str]:
    return materialized_in_run(runs.instance(), run_id, rid, STAGES)


def test_keywords_survive_transcription(processed):
    for name, facts in ((SCREENCAST_NAME, SCREENCAST), (MEETING_NAME, MEETING)):
        text = _words(processed[name]["recording_id"])
        missing = [k for k in facts["keywords"] if k not in text]
        assert len(missing) <= 1, (name, missing, text)


def test_a_keyframe_lands_within_1_5_s_of_every_scene_change(processed):
    for name, scenes in ((SCREENCAST_NAME, SCREENCAST_SCENES), (SILENT_NAME, SILENT_SCENES)):
        frames = [f["ms"] for f in store.read_rows("keyframes", processed[name]["recording_id"])]
        for s in scenes:
            assert any(s["start_ms"] <= ms <= s["start_ms"] + 1500 for ms in frames), (name, s["start_ms"], frames)


def test_ocr_reads_every_scene_and_duplicates_are_not_read_twice(processed):
    for name, scenes in ((SCREENCAST_NAME, SCREENCAST_SCENES), (SILENT_NAME, SILENT_SCENES)):
        rid = processed[name]["recording_id"]
        ocr = store.read_rows("ocr", rid)
        dups = {d["ms"] for d in store.read_rows("dedup", rid) if d["duplicate_of"] is not None}
        assert dups and not dups & {o["ms"] for o in ocr}
        for s in scenes:
            text = ocr_normalize(" ".join(o["text"] for o in ocr if s["start_ms"] <= o["ms"] < s["end_ms"]))
            found = [k for k in s["ocr_keywords"] if k in text]
            assert len(found) >= len(s["ocr_keywords"]) - 1, (name, s["title"], text)


def test_wall_clock_equals_the_tag(processed):
    for name, summary in processed.items():
        wc = summary["wall_clock"]
        assert wc["source"] == "creation_time" and wc["confidence"] == "medium"
        assert parse_iso(wc["start_utc"]) == parse_iso(CREATION_TIMES[name])
    seg = processed[SCREENCAST_NAME]["preview"][1]
    # t_wall = anchor + offset, rendered in UTC (creation_time carries no zone)
    expected = parse_iso(CREATION_TIMES[SCREENCAST_NAME]) + timedelta(milliseconds=seg["t_ms"])
    assert seg["t_wall"] == expected.isoformat(timespec="milliseconds")


def test_audio_only_and_video_only_behave(processed):
    audio = processed[MEETING_NAME]
    assert audio["kind"] == "audio" and audio["frames"]["count"] == 0 and audio["transcript"]["available"]
    video = processed[SILENT_NAME]
    assert video["kind"] == "video" and video["frames"]["count"] > 0
    assert video["transcript"]["available"] is False and "no audio" in video["transcript"]["reason"]
    m = json.loads(store.manifest_path(video["recording_id"]).read_text())
    assert validate_manifest(m) == [] and m["transcript"]["available"] is False
    assert m["media"]["has_audio"] is False


def test_outputs_are_queryable_in_duckdb_across_recordings(processed):
    con = store.connect()
    ids = {r[0] for r in con.execute("SELECT recording FROM recordings").fetchall()}
    assert ids >= {s["recording_id"] for s in processed.values()}
    n = con.execute("SELECT count(DISTINCT recording) FROM segments").fetchone()[0]
    assert n >= 3
    top = con.execute("SELECT recording FROM terms WHERE term = 'gateway' GROUP BY 1").fetchall()
    assert (processed[SCREENCAST_NAME]["recording_id"],) in top
    assert store.ensure_catalog().exists()


def test_reprocessing_the_same_bytes_runs_nothing(processed, tmp_path):
    inst = runs.instance()
    before = run_ids(inst, processed[SCREENCAST_NAME]["recording_id"])
    copy = tmp_path / "same bytes, new name.mp4"
    shutil.copy(FIXTURES_DIR / SCREENCAST_NAME, copy)
    again = service.process(copy)
    assert again["status"] == "cached" and again["stages_run"] == []
    assert again["recording_id"] == processed[SCREENCAST_NAME]["recording_id"]
    assert run_ids(inst, again["recording_id"]) == before  # no Dagster run at all
    assert again["preview"] == processed[SCREENCAST_NAME]["preview"]


def test_forced_re_anchor_rematerializes_only_wall_clock_and_manifest(processed):
    rid = processed[SILENT_NAME]["recording_id"]
    seg_file = store.table_path("segments", rid).stat().st_mtime_ns
    before = run_ids(runs.instance(), rid)
    out = service.process(FIXTURES_DIR / SILENT_NAME, overrides={"recorded_at": "2026-03-15T12:00:00+02:00"})
    assert out["stages_run"] == ["wall_clock", "manifest"]
    assert _materialized_in_run(new_run(runs.instance(), rid, before).run_id, rid) == {"wall_clock", "manifest"}
    assert out["wall_clock"] == {"start_utc": "2026-03-15T10:00:00.000+00:00", "tz_offset_min": 120,
                                 "source": "recorded_at", "confidence": "exact"}
    assert store.table_path("segments", rid).stat().st_mtime_ns == seg_file
    # the override persists: a later plain process is a no-op and keeps the anchor
    assert service.process(FIXTURES_DIR / SILENT_NAME)["stages_run"] == []


def test_max_frames_change_reruns_only_the_visual_branch(processed):
    rid = processed[SILENT_NAME]["recording_id"]
    inst = runs.instance()
    before = run_ids(inst, rid)
    out = service.process(FIXTURES_DIR / SILENT_NAME, overrides={"max_frames": 3})
    assert out["stages_run"] == ["keyframes", "dedup", "ocr", "manifest"]
    run_id = new_run(inst, rid, before).run_id
    assert _materialized_in_run(run_id, rid) == {"keyframes", "dedup", "ocr", "manifest"}
    assert 1 <= out["frames"]["count"] <= 3
    m = json.loads(store.manifest_path(rid).read_text())
    assert m["caps"]["max_frames"] == 3 and m["frames"]["count"] == out["frames"]["count"]
    # only the live frame generations remain on disk and every indexed file exists
    assert keyframes_stage.frame_index_check(rid).passed
    # the asset checks ran in that run, and passed
    checks = inst.get_records_for_run(run_id, of_type=DagsterEventType.ASSET_CHECK_EVALUATION).records
    results = {r.event_log_entry.dagster_event.event_specific_data.check_name:
               r.event_log_entry.dagster_event.event_specific_data.passed for r in checks}
    assert results == {"frame_index_matches_disk": True, "manifest_schema_valid": True, "unnamed_speakers_matched": True}


@pytest.mark.parametrize("payload,expect", [
    (b"", "empty file"),
    (b"hello, I am a text file pretending to be a video\n" * 20, "not a readable media file"),
])
def test_bad_input_fails_with_a_reason_and_loses_nothing(processed, tmp_path, payload, expect):
    con = store.connect()
    before = con.execute("SELECT count(*) FROM segments").fetchone()[0]
    bad = tmp_path / "broken.mp4"
    bad.write_bytes(payload)
    out = service.process(bad)
    assert out["status"] == "failed" and expect in out["reason"]
    assert "Traceback" not in out["reason"]
    assert store.connect().execute("SELECT count(*) FROM segments").fetchone()[0] == before


def test_the_audio_and_visual_branches_ran_at_the_same_time(tt_home, tmp_path, monkeypatch):
    """One Dagster step runs the stages in 2 threads: Whisper overlaps the keyframe/OCR branch. On a data
    root of its own: in the shared one, Whisper's chunk results (content-addressed) may already exist from
    another test's copy of the same audio, and the segments stage then takes milliseconds."""
    monkeypatch.setenv("TALKTHROUGH_HOME", str(tmp_path / "home"))
    s = service.process(FIXTURES_DIR / SCREENCAST_NAME)
    assert s["status"] == "processed", s
    st = runner.stage_state(s["recording_id"])

    def span(stage):
        end = parse_iso(st[stage].finished_at).timestamp()
        return end - st[stage].elapsed_s, end

    s0, s1 = span("segments")
    overlap = max(min(s1, span(v)[1]) - max(s0, span(v)[0]) for v in ("keyframes", "dedup", "ocr"))
    assert overlap > 0.2, {k: span(k) for k in ("segments", "keyframes", "dedup", "ocr")}


def test_stages_sequential_setting_gives_the_same_outputs(processed, tmp_path, monkeypatch):
    """TALKTHROUGH_STAGE_WORKERS=1 runs the same stages one by one, with the same results."""
    from fixture_facts import FIXTURES_DIR as F

    src = tmp_path / "seq copy.mp4"
    src.write_bytes((F / SILENT_NAME).read_bytes() + b"\0")  # other bytes -> its own recording
    monkeypatch.setenv("TALKTHROUGH_STAGE_WORKERS", "1")
    out = service.process(src)
    assert out["status"] == "processed", out
    st = runner.stage_state(out["recording_id"])
    ends = sorted(st.values(), key=lambda r: r.finished_at)
    for a, b in zip(ends, ends[1:]):  # no two stages overlap
        start_b = parse_iso(b.finished_at).timestamp() - b.elapsed_s
        assert start_b >= parse_iso(a.finished_at).timestamp() - 0.05, (a.stage, b.stage)
    rid = out["recording_id"]
    seq = {t: store.read_rows(t, rid) for t in ("keyframes", "dedup", "ocr")}
    monkeypatch.setenv("TALKTHROUGH_STAGE_WORKERS", "2")
    again = service.process(src, force=True)
    assert again["status"] == "processed", again
    for t, rows in seq.items():
        new = store.read_rows(t, rid)
        assert [(r["ms"], r.get("duplicate_of"), r.get("text")) for r in new] == \
            [(r["ms"], r.get("duplicate_of"), r.get("text")) for r in rows], t

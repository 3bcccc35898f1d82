"""Amend matrix: each change re-materializes exactly what depends on it (checked in Dagster's
event log, not by reading code)."""

from __future__ import annotations

from dagster_records import materialized_in_run, new_run, run_ids, unsynced
from fixture_facts import FIXTURES_DIR, MEETING_NAME, SILENT_NAME

from talkthrough_assets.defs import assets as definitions
from talkthrough_assets.pipeline import freshness, stagerun
from talkthrough_assets.app import service
from talkthrough_assets.app import runs
from talkthrough_assets import store
from talkthrough_assets.pipeline.settings import STAGES


def _materialized_by(rid: str, before: set[str]) -> set[str]:
    """What the one run started since ``before`` (this partition's run ids then) materialized."""
    inst = runs.instance()
    return materialized_in_run(inst, new_run(inst, rid, before).run_id, rid, STAGES)


def test_vocabulary_change_reruns_segments_and_downstream_only(processed):
    rid = processed[MEETING_NAME]["recording_id"]
    frames_before = store.table_path("keyframes", rid).stat().st_mtime_ns
    runs_before = run_ids(runs.instance(), rid)
    out = service.process(FIXTURES_DIR / MEETING_NAME, overrides={"vocabulary": "quarterly budget, Thursday"})
    assert out["status"] == "processed"
    assert out["stages_run"] == ["segments", "turns", "manifest"]
    assert _materialized_by(rid, runs_before) == {"segments", "turns", "manifest"}
    assert store.table_path("keyframes", rid).stat().st_mtime_ns == frames_before
    assert "budget" in " ".join(s["text"] for s in store.read_rows("segments", rid)).lower()


def test_code_version_bump_marks_only_downstream_unsynced(processed, monkeypatch):
    rid = processed[SILENT_NAME]["recording_id"]
    inst = runs.instance()
    assert freshness.plan(rid) == []
    assert unsynced(inst, definitions.ASSETS, rid) == set()
    monkeypatch.setitem(stagerun.CODE_VERSIONS, "dedup", stagerun.CODE_VERSIONS["dedup"] + "-bumped")
    bumped = [definitions.build_stages_asset()]  # reads the bumped stagerun.CODE_VERSIONS
    # Dagster flags the bumped asset itself; its downstream follows only if dedup's data version changes
    assert unsynced(inst, bumped, rid) == {"dedup"}
    assert freshness.plan(rid) == ["dedup", "ocr", "manifest"]
    runs_before = run_ids(inst, rid)
    out = service.process(FIXTURES_DIR / SILENT_NAME)
    assert out["stages_run"] == ["dedup", "ocr", "manifest"]
    assert _materialized_by(rid, runs_before) == {"dedup", "ocr", "manifest"}
    assert freshness.plan(rid) == []
    monkeypatch.undo()  # back to the real code version: those three re-run once more, then in sync
    assert service.process(FIXTURES_DIR / SILENT_NAME)["stages_run"] == ["dedup", "ocr", "manifest"]
    assert freshness.plan(rid) == []
    assert unsynced(inst, definitions.ASSETS, rid) == set()

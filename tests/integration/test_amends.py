"""Amend matrix: each change re-materializes exactly what depends on it (checked in Dagster's
event log, not by reading code)."""

from __future__ import annotations

from dagster import AssetKey, DagsterEventType, Definitions
from fixture_facts import FIXTURES_DIR, MEETING_NAME, SILENT_NAME

from talkthrough_assets import definitions, pipeline, service, store
from talkthrough_assets.settings import STAGES


def _materialized_in_latest_run(rid: str) -> set[str]:
    inst = service.instance()
    run = inst.get_runs(limit=1)[0]
    assert run.tags.get("dagster/partition") == rid
    recs = inst.get_records_for_run(run.run_id, of_type=DagsterEventType.ASSET_MATERIALIZATION).records
    return {r.event_log_entry.dagster_event.asset_key.path[-1] for r in recs}


def _dagster_stale(assets, rid: str) -> set[str]:
    """What the UI's "Materialize unsynced" would pick for this partition."""
    from dagster._core.definitions.data_version import CachingStaleStatusResolver, StaleStatus
    from dagster._core.loader import LoadingContextForTest

    inst = service.instance()
    graph = Definitions(assets=assets).resolve_asset_graph()
    resolver = CachingStaleStatusResolver(inst, graph, LoadingContextForTest(inst))
    return {s for s in STAGES if resolver.get_status(AssetKey(s), rid) == StaleStatus.STALE}


def test_vocabulary_change_reruns_segments_and_downstream_only(processed):
    rid = processed[MEETING_NAME]["recording_id"]
    frames_before = store.table_path("keyframes", rid).stat().st_mtime_ns
    out = service.process(FIXTURES_DIR / MEETING_NAME, overrides={"vocabulary": "quarterly budget, Thursday"})
    assert out["status"] == "processed"
    assert out["stages_run"] == ["segments", "turns", "manifest"]
    assert _materialized_in_latest_run(rid) == {"segments", "turns", "manifest"}
    assert store.table_path("keyframes", rid).stat().st_mtime_ns == frames_before
    assert "budget" in " ".join(s["text"] for s in store.read_rows("segments", rid)).lower()


def test_code_version_bump_marks_only_downstream_unsynced(processed, monkeypatch):
    rid = processed[SILENT_NAME]["recording_id"]
    assert pipeline.plan(rid) == []
    assert _dagster_stale(definitions.ASSETS, rid) == set()
    monkeypatch.setitem(pipeline.CODE_VERSIONS, "dedup", pipeline.CODE_VERSIONS["dedup"] + "-bumped")
    bumped = [definitions.build_stages_asset()]  # reads the bumped pipeline.CODE_VERSIONS
    # Dagster flags the bumped asset itself; its downstream follows only if dedup's data version changes
    assert _dagster_stale(bumped, rid) == {"dedup"}
    assert pipeline.plan(rid) == ["dedup", "ocr", "manifest"]
    out = service.process(FIXTURES_DIR / SILENT_NAME)
    assert out["stages_run"] == ["dedup", "ocr", "manifest"]
    assert _materialized_in_latest_run(rid) == {"dedup", "ocr", "manifest"}
    assert pipeline.plan(rid) == []
    monkeypatch.undo()  # back to the real code version: those three re-run once more, then in sync
    assert service.process(FIXTURES_DIR / SILENT_NAME)["stages_run"] == ["dedup", "ocr", "manifest"]
    assert pipeline.plan(rid) == []

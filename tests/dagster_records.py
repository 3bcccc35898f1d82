"""What Dagster recorded about a recording's partition, read through Dagster's public API only
(``DagsterInstance.get_run_records`` / ``fetch_materializations``, ``RunsFilter``, ``AssetRecordsFilter``,
``DataProvenance``). No test picks "the latest run" of the whole instance: a test notes the runs of its
partition before it acts and then takes the one run it started, so the order modules run in (or a run of
another recording in between) cannot change what it reads."""

from __future__ import annotations

from collections.abc import Iterable

from dagster import AssetKey, AssetRecordsFilter, DagsterInstance, DagsterRun, DataProvenance, RunsFilter

PARTITION_TAG = "dagster/partition"  # set by Dagster on every run of one partition
DATA_VERSION_TAG = "dagster/data_version"  # stamped by Dagster on every materialization's tags
HISTORY = 100  # materializations of one stage of one recording looked at (a session makes a handful)


def run_ids(inst: DagsterInstance, rid: str) -> set[str]:
    """Ids of every run of this recording's partition so far."""
    return {r.dagster_run.run_id for r in inst.get_run_records(RunsFilter(tags={PARTITION_TAG: rid}))}


def new_run(inst: DagsterInstance, rid: str, before: set[str]) -> DagsterRun:
    """The one run of this partition that is not in ``before`` (the ids noted before the test acted)."""
    new = [r.dagster_run for r in inst.get_run_records(RunsFilter(tags={PARTITION_TAG: rid}))
           if r.dagster_run.run_id not in before]
    assert len(new) == 1, f"expected exactly one new run of partition {rid}, got {[r.run_id for r in new]}"
    return new[0]


def _records(inst: DagsterInstance, stage: str, rid: str, limit: int = HISTORY):
    return inst.fetch_materializations(AssetRecordsFilter(asset_key=AssetKey(stage), asset_partitions=[rid]),
                                       limit=limit).records


def materialized_in_run(inst: DagsterInstance, run_id: str, rid: str, stages: Iterable[str]) -> set[str]:
    """The stages that run materialized for this partition, from Dagster's event log."""
    return {s for s in stages if any(r.run_id == run_id for r in _records(inst, s, rid))}


def latest_materialization_id(inst: DagsterInstance, stage: str, rid: str) -> int | None:
    recs = _records(inst, stage, rid, limit=1)
    return recs[0].storage_id if recs else None


def _data_version(rec) -> str | None:
    return rec.asset_materialization.tags.get(DATA_VERSION_TAG) if rec is not None else None


def unsynced(inst: DagsterInstance, assets, rid: str) -> set[str]:
    """The stages Dagster reports unsynced for this partition (what the UI's "Materialize unsynced"
    picks): Dagster's versioning rule applied to the provenance it recorded on each stage's latest
    materialization. A stage is unsynced when the code version recorded differs from the definition's,
    its dependencies changed, or an upstream stage was materialized after the one it read with a
    different data version."""
    out = set()
    for asset in assets:
        for key in asset.keys:
            spec, stage = asset.get_asset_spec(key), key.path[-1]
            latest = _records(inst, stage, rid, limit=1)
            if not latest:
                continue  # never materialized: missing, not unsynced
            prov = DataProvenance.from_tags(latest[0].asset_materialization.tags or {})
            assert prov is not None, f"{stage}: Dagster recorded no provenance"
            deps = {d.asset_key for d in spec.deps}
            if (spec.code_version and spec.code_version != prov.code_version) or set(prov.input_data_versions) != deps:
                out.add(stage)
                continue
            for dep in deps:
                read = prov.input_storage_ids.get(dep)  # the upstream materialization this one read
                newer = inst.fetch_materializations(
                    AssetRecordsFilter(asset_key=dep, asset_partitions=[rid], after_storage_id=read), limit=1).records
                if newer:
                    then = inst.fetch_materializations(AssetRecordsFilter(
                        asset_key=dep, asset_partitions=[rid], before_storage_id=read + 1), limit=1).records \
                        if read is not None else []
                    if _data_version(then[0] if then else None) != _data_version(newer[0]):
                        out.add(stage)
    return out

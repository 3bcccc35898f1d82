"""A backfill's batch: several recordings in one run of the stages asset (its ``BackfillPolicy``), so one run
worker and one model load serve them all. Single-partition runs (CLI, drop folder, amends, repairs) never
come here.

The recordings run one after another, each under its own writer lock for all of its stages (two batches, or a
batch and a single run, never process one recording at once), and each is reported for its own partition:
its stages' materializations and check results as they are stored, a failed stage as an observation with its
reason. A failed recording does not stop the others; once they are all done the run fails, naming the failed
recording(s), so Dagster's partition view shows exactly those partitions failed and the others materialized.
"""

# no `from __future__ import annotations`: Dagster reads the op/resource annotations at definition time
import os
import socket

import dagster as dg

from talkthrough_assets import store
from talkthrough_assets.core import config
from talkthrough_assets.core.errors import InternalError
from talkthrough_assets.defs.asset_specs import materialization_metadata
from talkthrough_assets.defs.checks import CHECK_SEVERITY, CHECK_STAGE
from talkthrough_assets.defs.partitions import DURATION_TAG, FAILURE_TAG, FILENAME_TAG
from talkthrough_assets.defs.step_failure import stop
from talkthrough_assets.defs.run_context import duration, tag_run
from talkthrough_assets.pipeline import events, scheduler, sources, stagerun
from talkthrough_assets.pipeline import registry
from talkthrough_assets.pipeline.settings import DEPS

# Dagster's tag names for a materialization's provenance, as its MaterializeResult path stamps them (what
# the UI's "unsynced" reads): the code version, the data version, and per upstream asset the data version
# and the event read
_CODE_VERSION_TAG, _DATA_VERSION_TAG = "dagster/code_version", "dagster/data_version"
_USER_DATA_VERSION_TAG = "dagster/data_version_is_user_provided"
_INPUT_VERSION_TAG, _INPUT_POINTER_TAG = "dagster/input_data_version/", "dagster/input_event_pointer/"


def backfill_policy() -> dg.BackfillPolicy:
    """Up to TALKTHROUGH_BACKFILL_BATCH recordings per backfill run (read when the definitions load). On the
    Celery route a run is one task on one worker, so a backfill spreads over the workers only a run per recording:
    there the default is 1 (the workers pay the fixed cost side by side)."""
    from talkthrough_assets.defs import celery_route

    batch = config.get("TALKTHROUGH_BACKFILL_BATCH")
    if celery_route.enabled() and not config.is_set("TALKTHROUGH_BACKFILL_BATCH"):
        batch = 1
    return dg.BackfillPolicy.multi_run(max_partitions_per_run=batch)


def _check_event(stage: str, rid: str, name: str, passed: bool, description: str,
                 not_run: str | None = None) -> dg.AssetCheckEvaluation:
    """A check's result for ``rid``'s partition; ``not_run``: why it could not run (a warning, as on one run)."""
    return dg.AssetCheckEvaluation(
        asset_key=dg.AssetKey(stage), check_name=name, passed=passed, partition=rid, description=description,
        severity=dg.AssetCheckSeverity.WARN if not_run else CHECK_SEVERITY.get(name, dg.AssetCheckSeverity.WARN),
        metadata={"not_checked": dg.MetadataValue.text(not_run)} if not_run else {"detail": description})


def _provenance(context, stage: str, rid: str) -> dict:
    """The latest materialization of each upstream stage of ``rid`` (stored before this one: stages end
    upstream first): its data version and storage id, as tags."""
    tags = {}
    for dep in DEPS[stage]:
        recs = context.instance.fetch_materializations(
            dg.AssetRecordsFilter(asset_key=dg.AssetKey(dep), asset_partitions=[rid]), limit=1).records
        if recs:
            tags[_INPUT_VERSION_TAG + dep] = (recs[0].asset_materialization.tags or {}).get(_DATA_VERSION_TAG, "")
            tags[_INPUT_POINTER_TAG + dep] = str(recs[0].storage_id)
    return tags


def _materialized(context, stage: str, rid: str, res, md: dict, checks: set[str]):
    yield dg.AssetMaterialization(
        asset_key=stage, partition=rid, metadata=materialization_metadata(md),
        tags={_CODE_VERSION_TAG: stagerun.CODE_VERSIONS[stage], _DATA_VERSION_TAG: res.data_version,
              _USER_DATA_VERSION_TAG: "true", **_provenance(context, stage, rid)})
    for c in res.checks:
        if c.name in checks:
            yield _check_event(stage, rid, c.name, c.passed, c.description)


def _failed(rid: str, failures: list, checks: set[str], done: set[str]):
    """Record why ``rid``'s stages did not materialize (an observation per stage, its checks as not run);
    its one-line reason and the error behind it."""
    first = next((f for f in failures if not isinstance(f[2], events.Skipped)), failures[0])
    for stage, reason, _err in failures:
        if stage:
            text = reason if stage == first[0] else f"{stage}: not run because {first[1]}"
            yield dg.AssetObservation(asset_key=stage, partition=rid, description=text,
                                      metadata={"failure_reason": dg.MetadataValue.text(text)})
    for name in sorted(checks):
        if CHECK_STAGE[name] not in done:
            text = f"not checked: {CHECK_STAGE[name]} did not materialize for this recording ({first[1]})"
            yield _check_event(CHECK_STAGE[name], rid, name, False, text, not_run=first[1])
    return first[1], first[2]


def _one(context, rid: str, stages: list[str], checks: set[str], overrides: dict, loaded, after, durations: list,
         observer: events.Observer):
    """Run ``stages`` of one recording and report them for its partition; its failure (reason, error) or None.
    The recording's duration, once a stage has measured it, goes to ``durations``."""
    if not store.ID_RE.fullmatch(rid):
        yield from ()
        return f"partition {rid!r} is not a recording id (16 hex characters)", None
    names = sources.recording_names(rid)
    known = registry.known_duration_ms(rid, stages)  # None when probe runs again: then from its result
    durations.extend([known] if known is not None else [])
    named = {"filename": names[0]} if names else {}
    failures: list[tuple[str, str, Exception]] = []
    done: set[str] = set()
    try:
        with store.partition_lock(rid, timeout_s=stagerun.STAGE_LOCK_WAIT_S):
            for stage, res in scheduler.run_stages(rid, stages, overrides, engines=loaded, observer=observer):
                if res is events.STARTED or isinstance(res, events.Progress):
                    continue
                if isinstance(res, Exception):
                    reason = str(res) if isinstance(res, events.Skipped) else f"{stage}: {res.reason}"
                    failures.append((stage, reason, res))
                    continue
                done.add(stage)
                if res.metadata.get("duration_ms") is not None:
                    durations.append(res.metadata["duration_ms"])
                yield from _materialized(context, stage, rid, res,
                                         {**res.metadata, **named, **after(stage, rid, res, names)}, checks)
    except store.PartitionBusy as e:
        failures.append(("", str(e), e))
    for name in sorted(n for n in checks if CHECK_STAGE[n] not in stages):  # a check without its stage
        c = stagerun.verify_check(name, rid)
        yield _check_event(CHECK_STAGE[name], rid, name, c.passed, c.description)
    return (yield from _failed(rid, failures, checks, done)) if failures else None


def run_batch(context, rids: list[str], stages: list[str], checks: set[str], overrides: dict, loaded, after,
              observer: events.Observer = events.NOBODY):
    """Process the batch's recordings one after another, yielding each one's events as its stages end (Dagster
    stores them then); the run fails at the end, naming the failed ones."""
    label = {rid: sources.recording_filename(rid) or rid for rid in rids if store.ID_RE.fullmatch(rid)}
    tag_run(context, {FILENAME_TAG: registry.run_label(rids),
                      registry.RUNNER_TAG: f"{socket.gethostname()}:{os.getpid()}"})
    failed: dict[str, tuple[str, Exception | None]] = {}
    durations: list[float] = []
    for i, rid in enumerate(rids, 1):
        context.log.info(f"Recording {i}/{len(rids)}: {label.get(rid, rid)} ({rid})")
        outcome = yield from _one(context, rid, stages, checks, overrides, loaded, after, durations, observer)
        if outcome:
            failed[rid] = outcome
            context.log.error(f"{label.get(rid, rid)} ({rid}) failed: {outcome[0]}")
    # the runs list's duration column: the audio this batch processed, all recordings together
    tag_run(context, {DURATION_TAG: duration(sum(durations)) if durations else None})
    if not failed:
        context.log.info(f"all {len(rids)} recordings of this batch are stored")
        return
    summary = (f"{len(failed)} of {len(rids)} recording(s) failed, the others are stored: "
               + "; ".join(f"{label.get(r, r)} ({r}): {why}" for r, (why, _e) in failed.items()))
    tag_run(context, {FAILURE_TAG: summary[:200]})
    internal = next((e for _w, e in failed.values() if isinstance(e, InternalError)), None)
    if internal is not None:  # a bug or a broken install: keep the stack for whoever debugs
        raise dg.Failure(description=summary, allow_retries=False) from internal
    raise stop(summary)

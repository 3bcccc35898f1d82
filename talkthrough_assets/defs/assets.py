"""Dagster assets: one asset per stage, all partitioned by the recording id (sha256[:16]).

Thin by design: one subsettable multi-asset calls :func:`talkthrough_assets.pipeline.scheduler.run_stages`
and turns each stage's result into a ``MaterializeResult`` with its partitioned asset checks; what a stage
adds once it is stored is its ``StageSpec.after``. A stage failure on bad input ends the step with its one-line
reason and no Python stack (:func:`talkthrough_assets.defs.step_failure.stop`); an internal error keeps its
stack (a ``dagster.Failure``). A backfill's run holds several recordings (a partition range, its
``BackfillPolicy``): :mod:`.backfill` runs them one after another, each reported for its own partition.

The models the stages run on (Whisper, RapidOCR, the sherpa-onnx diarizer) are Dagster resources
(:mod:`talkthrough_assets.defs.resources`), injected into the stages asset, which hands them to the pipeline as
plain objects. The asset specs and the run config come from the stage specs (:mod:`.asset_specs`).
"""

# no `from __future__ import annotations`: Dagster reads the op/resource annotations at definition time
import dagster as dg

from talkthrough_assets import store
from talkthrough_assets.core.errors import InternalError, UsageError
from talkthrough_assets.defs import celery_route, sqlite_tuning
from talkthrough_assets.defs.asset_specs import StagesConfig, asset_specs, materialization_metadata
from talkthrough_assets.defs.backfill import backfill_policy, run_batch
from talkthrough_assets.defs.checks import CHECK_STAGE, check_every_recording, check_result, check_specs, not_checked
from talkthrough_assets.defs.partitions import DURATION_TAG, FAILURE_TAG, FILENAME_TAG, recordings_partitions
from talkthrough_assets.defs.step_failure import stop
from talkthrough_assets.defs.run_context import RunRefused, duration, recording_of_run, refused_failures, tag_run
from talkthrough_assets.pipeline import engines
from talkthrough_assets.pipeline import events, scheduler, sources, stagerun
from talkthrough_assets.pipeline import registry
from talkthrough_assets.pipeline.settings import as_run_config
from talkthrough_assets.pipeline.stagespec import BY_NAME
from talkthrough_assets.stages.ocr.engine import OcrEngine
from talkthrough_assets.stages.segments.engine import Whisper

sqlite_tuning.install()


def _not_materialized(stage: str, rid: str, reason: str) -> dg.AssetObservation:
    """Why this stage's partition did not materialize, as an observation of that asset partition: the
    partition view lists it beside the failed run (Dagster's own "failed to materialize" events are
    not stored by its SQLite storage)."""
    return dg.AssetObservation(asset_key=stage, partition=rid, description=reason,
                               metadata={"failure_reason": dg.MetadataValue.text(reason)})


def _after(context, stage: str, rid: str, res, names: list[str]) -> dict:
    """What the stage's spec adds once its output is stored (``StageSpec.after``); a warning when that fails."""
    after = BY_NAME[stage].after
    if after is None:
        return {}
    try:
        return after(rid, res, names)
    except Exception as e:  # never fails the run
        context.log.warning(str(e))
        return {}


def build_stages_asset(code_versions: dict[str, str] | None = None):
    """One multi-asset over the nine stage assets (one step, so independent stages of a recording
    run at once in threads, see scheduler.run_stages): each stage is still its own asset, with its own
    materialization, code version, checks and lineage, and any subset can be materialized alone."""

    @dg.multi_asset(name="talkthrough_stages", specs=asset_specs(code_versions or stagerun.CODE_VERSIONS),
                    check_specs=check_specs(), partitions_def=recordings_partitions, can_subset=True,
                    backfill_policy=backfill_policy(),
                    description="The nine Talkthrough stages of one recording.")
    def talkthrough_stages(context: dg.AssetExecutionContext, config: StagesConfig,
                           whisper: dg.ResourceParam[Whisper], ocr_engine: dg.ResourceParam[OcrEngine],
                           diarizer: dg.ResourceParam[engines.Diarizer], observer: dg.ResourceParam[events.Observer]):
        selected = [k.path[-1] for k in context.selected_asset_keys]
        selected_checks = {k.name for k in context.selected_asset_check_keys}
        loaded = engines.Engines(whisper=whisper, ocr=ocr_engine, diarizer=diarizer)
        overrides = {k: v for k, v in config.model_dump().items() if v is not None}
        if not context.has_partition_key and not selected:
            # the asset graph's "Execute all" on the checks (no partition): every recording's checks, each
            # result recorded for its own partition; the run succeeds (its unpartitioned plan shows as skipped)
            check_every_recording(context, sorted(selected_checks))
        elif context.has_partition_key_range and not context.has_partition_key:  # a backfill's batch
            yield from run_batch(context, list(context.partition_keys), selected, selected_checks, overrides, loaded,
                                 lambda stage, rid, res, names: _after(context, stage, rid, res, names), observer)
        else:
            yield from _one_recording(context, selected, selected_checks, overrides, loaded, observer)

    return talkthrough_stages


def _one_recording(context, selected: list[str], selected_checks: set[str], overrides: dict, loaded, observer):
    """The run of one recording's selected stages: a MaterializeResult per stage that succeeded, its checks, and
    the failures with their one-line reason (the step then ends with it)."""
    try:
        rid = recording_of_run(context)
    except RunRefused as refused:  # no check of it can run either (see not_checked)
        for name in sorted(selected_checks) if context.has_partition_key else ():
            yield not_checked(CHECK_STAGE[name], name, refused.reason)
        raise stop(refused.reason) from None
    refused = refused_failures(context, selected)  # a dropped file that is no recording: nothing runs
    # which file this is, and which process runs it (a run whose process is gone is marked, not left running)
    names = [] if refused else sources.recording_names(rid)
    tag_run(context, {FILENAME_TAG: names[0] if names else None,
                      DURATION_TAG: duration(registry.known_duration_ms(rid, selected)),
                      **celery_route.runner_tags()})
    failures: list[tuple[str, str, Exception]] = list(refused)  # (stage, one-line reason, error)
    materialized: set[str] = set()
    try:
        stages = () if refused else scheduler.run_stages(rid, selected, overrides, engines=loaded, observer=observer)
        for stage, res in stages:
            if isinstance(res, Exception):
                reason = str(res) if isinstance(res, events.Skipped) else f"{stage}: {res.reason}"
                failures.append((stage, reason, res))
            elif res is not events.STARTED and not isinstance(res, events.Progress):
                materialized.add(stage)
            yield from _stage_event(context, stage, rid, res, names, selected_checks)
    except (store.PartitionBusy, UsageError) as e:  # busy, or a setting it cannot take (run config, file)
        failures.append(("", str(e), e))
    # checks selected without their stage (UI: "Execute check"): re-verify what is on disk
    for name in sorted(selected_checks):
        if CHECK_STAGE[name] not in selected:
            yield check_result(CHECK_STAGE[name], stagerun.verify_check(name, rid))
    if failures:
        yield from _failed(context, rid, failures, selected, selected_checks, materialized)


def _stage_event(context, stage: str, rid: str, res, names: list[str], selected_checks: set[str]):
    """What one event of the scheduler becomes: a log line (a stage started, its progress) or, for a stage's
    result, its MaterializeResult with its checks (failures are collected by the caller)."""
    if res is events.STARTED:
        context.log.info(f'Started stage "{stage}"')
    elif isinstance(res, events.Progress):  # one line per chunk / per step of the keyframe scan
        eta = f", ETA {res['eta_s']:.0f} s" if res.get("eta_s") else ""
        what = res.get("what") or "the audio"
        context.log.info(f'Stage "{stage}": {100 * res["share"]:.0f} % of {what} ({res["text"]}){eta}')
    elif not isinstance(res, Exception):
        named = {"filename": names[0]} if names else {}
        md = {**res.metadata, **named, **_after(context, stage, rid, res, names)}
        # the stage that measures the recording's duration tags the run with it
        tag_run(context, {DURATION_TAG: duration(res.metadata.get("duration_ms"))})
        yield dg.MaterializeResult(
            asset_key=stage, metadata=materialization_metadata(md), data_version=dg.DataVersion(res.data_version),
            check_results=[check_result(stage, c) for c in res.checks if c.name in selected_checks])


def _failed(context, rid: str, failures: list[tuple[str, str, Exception]], selected: list[str],
            selected_checks: set[str], materialized: set[str]):
    """A run with failures: the first one's reason logged and tagged, each stage not materialized observed with
    why, its checks not checked; the step ends (with the stack only for an internal error)."""
    first = next((f for f in failures if not isinstance(f[2], events.Skipped)), failures[0])
    summary = first[1] + (f" ({len(failures) - 1} downstream stage(s) skipped)" if len(failures) > 1 else "")
    context.log.error(summary)
    tag_run(context, {FAILURE_TAG: first[1][:200]})
    for stage, reason, _err in failures:
        if stage:
            yield _not_materialized(stage, rid, reason if stage == first[0] else f"{stage}: not run because {first[1]}")
    for name in sorted(selected_checks):
        if CHECK_STAGE[name] in selected and CHECK_STAGE[name] not in materialized:
            yield not_checked(CHECK_STAGE[name], name, first[1])
    if isinstance(first[2], InternalError):
        # a bug or a broken install, not the input: keep the stack (and its cause) for whoever debugs
        raise dg.Failure(description=summary, metadata={"reason": first[1]}, allow_retries=False) from first[2]
    raise stop(summary) from None


talkthrough_stages = build_stages_asset()
ASSETS = [talkthrough_stages]


def settings_run_config(settings: dict | None) -> dict:
    """The run config that gives a run of the stages asset ``settings`` (checked; {} when there are none): how the
    CLI's and the drop folder's settings travel with their runs."""
    given = as_run_config(settings or {})
    return {"ops": {talkthrough_stages.op.name: {"config": given}}} if given else {}

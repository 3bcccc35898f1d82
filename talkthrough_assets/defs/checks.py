"""Dagster asset checks, partitioned: one result per recording, each check declared on its stage's
``StageSpec`` (:mod:`talkthrough_assets.pipeline.stagespec`). The stages asset evaluates them as its stages
materialize; the ``check_recording`` op re-verifies what is on disk now."""

# no `from __future__ import annotations`: Dagster reads the op/resource annotations at definition time
import warnings

import dagster as dg

from talkthrough_assets import store
from talkthrough_assets.defs.partitions import FILENAME_TAG, PARTITIONS_NAME, recordings_partitions
from talkthrough_assets.defs.step_failure import stop
from talkthrough_assets.defs.run_context import RunRefused, recording_of_run, tag_run
from talkthrough_assets.pipeline import sources, stagerun
from talkthrough_assets.stages import runner
from talkthrough_assets.pipeline.stagespec import SPECS

# (name, severity, description) per stage
CHECKS = {sp.name: [(c.name, getattr(dg.AssetCheckSeverity, c.severity), c.description) for c in sp.checks]
          for sp in SPECS if sp.checks}
CHECK_SEVERITY = {name: sev for checks in CHECKS.values() for name, sev, _ in checks}
CHECK_STAGE = {name: stage for stage, checks in CHECKS.items() for name, _, _ in checks}


def check_specs() -> list[dg.AssetCheckSpec]:
    """Every stage's checks, partitioned by recording."""
    with warnings.catch_warnings():  # partitioned checks are a "preview" feature in Dagster 1.13
        warnings.simplefilter("ignore")
        return [dg.AssetCheckSpec(name, asset=stage, description=desc, partitions_def=recordings_partitions)
                for stage, items in CHECKS.items() for name, _, desc in items]


def check_result(stage: str, c: runner.CheckResult) -> dg.AssetCheckResult:
    return dg.AssetCheckResult(asset_key=stage, check_name=c.name, passed=c.passed,
                               severity=CHECK_SEVERITY.get(c.name, dg.AssetCheckSeverity.WARN),
                               description=c.description, metadata={"detail": c.description})


def not_checked(stage: str, name: str, reason: str) -> dg.AssetCheckResult:
    """A check whose stage did not materialize in this run could not run: recorded for this partition as a
    warning that says why. Left unevaluated, Dagster records it as "Execution failed", and an asset whose
    latest check execution failed is marked failed as a whole, by one bad recording."""
    text = f"not checked: {stage} did not materialize for this recording ({reason})"
    return dg.AssetCheckResult(asset_key=stage, check_name=name, passed=False, severity=dg.AssetCheckSeverity.WARN,
                               description=text, metadata={"not_checked": dg.MetadataValue.text(reason)})


def log_check(context, name: str, rid: str) -> runner.CheckResult:
    """Re-verify check ``name`` of recording ``rid`` on disk and record the result for that partition."""
    c = stagerun.verify_check(name, rid)
    context.log_event(dg.AssetCheckEvaluation(
        asset_key=dg.AssetKey(CHECK_STAGE[name]), check_name=name, passed=c.passed, partition=rid,
        severity=CHECK_SEVERITY[name], description=c.description, metadata={"detail": c.description}))
    return c


def check_every_recording(context, names: list[str]) -> None:
    """Checks ``names`` of every recording, each result recorded for its partition (no partition picked)."""
    failed = []
    ids = context.instance.get_dynamic_partitions(PARTITIONS_NAME)
    for rid in ids:
        if not store.ID_RE.fullmatch(rid):
            continue
        failed += [f"{sources.recording_filename(rid) or rid}: {name}" for name in names
                   if not log_check(context, name, rid).passed]
    context.log.info(f"no recording picked: checked {', '.join(names)} of every recording ({len(ids)}), each "
                     f"result recorded for its partition; {len(failed)} failed" + (": " + "; ".join(failed[:20]) if failed else ""))


@dg.op(description="Re-verify every check of the picked recording against what is on disk now (no stage re-runs).")
def check_recording_op(context: dg.OpExecutionContext) -> None:
    try:
        rid = recording_of_run(context)
    except RunRefused as refused:
        raise stop(refused.reason) from None
    tag_run(context, {FILENAME_TAG: sources.recording_filename(rid)})
    for name in sorted(CHECK_STAGE):
        c = log_check(context, name, rid)
        context.log.info(f"{name}: {'passed' if c.passed else 'FAILED'}: {c.description}")

"""Running one stage of one recording (:func:`run_stage`): the stage module's ``run()``, as its StageSpec holds
it, under the recording's lock, recording what config/code produced it (stage_runs) and telling the run's observer.
Names no stage: what differs per stage is its StageSpec (``engines``, ``context``)."""

from __future__ import annotations

import threading
import time
from dataclasses import replace
from typing import Callable

from talkthrough_assets.model.runs import StageRun
from talkthrough_assets import store
from talkthrough_assets.core import stop as stop_flag
from talkthrough_assets.core.errors import DiskSpaceError, InternalError, StageError
from talkthrough_assets.pipeline import options
from talkthrough_assets.pipeline import settings as S
from talkthrough_assets.pipeline.disk import disk_reason
from talkthrough_assets.pipeline.engines import Engines
from talkthrough_assets.pipeline.engines import shared as shared_engines
from talkthrough_assets.pipeline.events import NOBODY, Observer, record
from talkthrough_assets.pipeline.stagespec import SPECS
from talkthrough_assets.stages import cpu_plan
from talkthrough_assets.stages.runner import CheckResult, RunContext, StageResult

CODE_VERSIONS = {sp.name: sp.code_version for sp in SPECS}  # from stagespec; tests may patch this dict
# each stage's run() (its module's), as its StageSpec holds it: (recording id, effective settings) -> StageResult
RUNNERS: dict[str, Callable[..., StageResult]] = {spec.name: spec.run for spec in SPECS}
# the stages whose run() also takes the loaded Engines (StageSpec.engines)
ENGINE_STAGES = frozenset(spec.name for spec in SPECS if spec.engines)
# the stages whose run() also takes the RunContext as keyword ``ctx`` (StageSpec.context)
CONTEXT_STAGES = frozenset(spec.name for spec in SPECS if spec.context)
_CHECKS = {c.name: c for spec in SPECS for c in spec.checks}

# A stage waits this long for another writer of the same recording before failing with a reason.
STAGE_LOCK_WAIT_S = 600.0


def verify_check(name: str, rid: str) -> CheckResult:
    """Re-evaluate a check from what is on disk now (the check executed on its own, e.g. from the UI)."""
    if name not in _CHECKS:
        raise KeyError(f"unknown check {name!r}")
    return _CHECKS[name].verify(rid)


def run_stage(stage: str, recording_id: str, overrides: dict | None = None,
              engines: Engines | None = None, stop: "threading.Event | None" = None, *,
              ctx: RunContext | None = None, observer: Observer = NOBODY) -> StageResult:
    """Run one stage for one recording with the run's settings ``overrides`` (over the persisted ones; kept
    only once the run succeeds, by its caller: :func:`settings.persist`); record success or failure.
    ``engines``: the loaded models (default: this process's, :func:`engines.shared`). ``stop``: set when the
    run is to stop; the stage then ends at its next checkpoint with :class:`stop.Interrupted`. ``ctx``: what the
    run tells the stage (the scheduler's; default: the stage alone, :meth:`RunContext.alone`). ``observer``: who
    watches the run (told the stage's start and end)."""
    with stop_flag.bound(stop):
        return _run_stage(stage, recording_id, overrides, engines, ctx, observer.stage)


def _run_stage(stage: str, recording_id: str, overrides: dict | None, engines: Engines | None,
               ctx: RunContext | None, notify: Callable[[str, str, str, dict], None]) -> StageResult:
    store.check_id(recording_id)
    notify(stage, recording_id, "started", {})
    cfg = S.effective(recording_id, overrides)
    t0 = time.perf_counter()
    base = StageRun(stage=stage, status="failed", config_hash=S.config_hash(stage, cfg),
                    code_version=CODE_VERSIONS[stage])
    try:
        with store.partition_lock(recording_id, timeout_s=STAGE_LOCK_WAIT_S):
            extra = (engines or shared_engines(),) if stage in ENGINE_STAGES else ()
            kw = {"ctx": ctx or RunContext.alone(recording_id, stage)} if stage in CONTEXT_STAGES else {}
            stop_flag.checkpoint()  # stopped while it waited for the lock
            with cpu_plan.running(stage):  # the thread plan (stages.cpu_plan) knows which stages run now
                result = RUNNERS[stage](recording_id, options.build(stage, cfg), *extra, **kw)
    except store.PartitionBusy as e:
        notify(stage, recording_id, "failed", {"reason": str(e)})
        raise StageError(str(e), stage=stage) from None
    except StageError as e:
        e.stage = e.stage or stage
        record(recording_id, replace(base, reason=e.reason, elapsed_s=time.perf_counter() - t0))
        notify(stage, recording_id, "failed", {"reason": e.reason})
        raise
    except Exception as e:  # unexpected: still leave a one-line reason behind
        disk = disk_reason(e, recording_id)
        if disk is not None:  # a full or read-only disk: the environment, said in one line
            err: StageError = DiskSpaceError(disk, stage=stage)
            record(recording_id, replace(base, reason=disk, elapsed_s=time.perf_counter() - t0))
        else:  # not a StageError: a bug or a broken dependency, never the input's fault; say so
            err = InternalError.wrap(e, stage)
            record(recording_id, replace(base, reason=err.reason, internal=True, elapsed_s=time.perf_counter() - t0))
        notify(stage, recording_id, "failed", {"reason": err.reason})
        raise err from e
    elapsed = time.perf_counter() - t0
    # a stage that succeeded with less than it wanted (unreadable stream ...) keeps its reason
    record(recording_id, replace(base, status="ok", reason=result.reason, elapsed_s=elapsed))
    result.metadata["elapsed_s"] = round(elapsed, 3)
    notify(stage, recording_id, "ok", result.metadata)
    return result

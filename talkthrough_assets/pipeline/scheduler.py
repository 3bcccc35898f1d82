"""The concurrent scheduler of a recording's stages (:func:`run_stages`): each stage as soon as the selected stages
it depends on are done, up to ``workers`` at a time. Names no stage: the branches that overlap
(``StageSpec.branch``) and the partial results published while a stage runs (``StageSpec.previews``) are its
StageSpec's; what the scheduler tells a stage run is its :class:`~talkthrough_assets.stages.runner.RunContext`."""

from __future__ import annotations

import queue
import threading
from concurrent.futures import FIRST_COMPLETED, ThreadPoolExecutor, wait
from typing import Any, Iterable

from talkthrough_assets import store
from talkthrough_assets.core import config
from talkthrough_assets.core.errors import StageError
from talkthrough_assets.pipeline import settings as S
from talkthrough_assets.pipeline.engines import Engines
from talkthrough_assets.pipeline.events import STARTED, Progress, Skipped, forget_failure
from talkthrough_assets.pipeline.stagerun import STAGE_LOCK_WAIT_S, run_stage
from talkthrough_assets.pipeline.stagespec import BY_NAME
from talkthrough_assets.stages.runner import RunContext


# Independent stages run at once: the branches (StageSpec.branch) are CPU-bound on different engines, so two
# workers overlap them. TALKTHROUGH_STAGE_WORKERS=1 runs stages one after another
# (same order, same outputs).
def stage_workers() -> int:
    return max(1, config.get("TALKTHROUGH_STAGE_WORKERS") or 1)


def beside(stage: str, stages: Iterable[str], workers: int) -> frozenset[str]:
    """The branches other than ``stage``'s that a run of ``stages`` on ``workers`` works on at the same time as
    it (RunContext.beside): none when its stages run one at a time or ``stage`` belongs to no branch."""
    own = BY_NAME[stage].branch
    if workers < 2 or not own:
        return frozenset()
    return frozenset(b for b in (BY_NAME[s].branch for s in stages) if b and b != own)


def run_stages(recording_id: str, stages: list[str], overrides: dict | None = None,
               workers: int | None = None, engines: Engines | None = None):
    """Run ``stages`` of one recording, each as soon as the selected stages it depends on are done,
    up to ``workers`` at a time (threads). Yields ``(stage, STARTED)`` when a stage starts and
    ``(stage, result)`` when it ends, in completion order, where a result is the stage's StageResult, a
    :class:`StageError`, or :class:`Skipped` for the downstream of a failure; ``(stage, Progress(info))``
    as a long stage reports it (``RunContext.progress``).
    The caller's thread does all the yielding (Dagster writes its events from there). ``engines``: the loaded
    models the stages run on (Dagster passes its resources; default: this process's, :func:`engines.shared`).
    ``overrides``: the run's settings; kept for the recording once every selected stage has succeeded."""
    selected = S.ordered(set(stages))
    forget_failure(recording_id)
    overrides = S.checked(overrides)  # a value its setting cannot take fails the run before any stage starts
    # a selected stage waits for every selected stage upstream of it, also through unselected ones (a repair
    # runs two stages alone, the later reading the earlier's new output through the stages between them)
    deps = {s: [d for d in _upstream(s) if d in selected] for s in selected}
    done: set[str] = set()
    failed: dict[str, str] = {}  # stage -> the failed stage it traces back to
    pending = list(selected)
    workers = workers or stage_workers()
    stop = threading.Event()  # set when the caller stops listening: the stage threads end at a checkpoint
    events: queue.SimpleQueue = queue.SimpleQueue()

    def context(stage: str) -> RunContext:
        return RunContext(recording_id, stage, beside=beside(stage, selected, workers),
                          on_progress=lambda info: events.put((stage, Progress(info))))

    previews: dict[str, Any] = {}  # stage -> what its StageSpec.previews hook made for this run (or None)
    reasons: dict[str, str] = {}
    # the run holds the recording's writer lock throughout; its stage threads re-enter it
    with store.partition_lock(recording_id, timeout_s=STAGE_LOCK_WAIT_S), \
            ThreadPoolExecutor(max_workers=workers, thread_name_prefix="stage") as pool:
        running: dict = {}
        try:
            while pending or running:
                for stage in list(pending):
                    bad = next((d for d in deps[stage] if d in failed), None)
                    if bad is not None:
                        pending.remove(stage)
                        failed[stage] = failed[bad]
                        yield stage, Skipped(stage, failed[bad])
                    elif all(d in done for d in deps[stage]) and len(running) < workers:
                        pending.remove(stage)
                        running[pool.submit(run_stage, stage, recording_id, overrides, engines, stop,
                                            ctx=context(stage))] = stage
                        yield stage, STARTED
                if not running:
                    continue
                finished, _ = wait(list(running), return_when=FIRST_COMPLETED, timeout=1.0)
                while not events.empty():
                    event = events.get()
                    _preview(previews, event[0], recording_id, selected, done, overrides)
                    yield event
                for fut in sorted(finished, key=lambda f: S.STAGES.index(running[f])):
                    stage = running.pop(fut)
                    try:
                        result = fut.result()
                    except StageError as e:
                        failed[stage] = stage
                        reasons.setdefault("first", f"{stage}: {e.reason}")
                        yield stage, e
                        continue
                    done.add(stage)
                    yield stage, result
            if overrides and not failed:  # the settings it succeeded with are the recording's from now on
                S.persist(recording_id, overrides)
        finally:  # normal end, an error or interrupt in the caller (Ctrl-C, SIGTERM), the generator closed
            stop.set()  # before the pool's exit waits for its threads: they end at their next checkpoint
            for made in previews.values():  # e.g. a partial generation that says the run stopped
                if made is not None:
                    made.ended(done, reasons.get("first", "the run was stopped"))


def _preview(previews: dict[str, Any], stage: str, rid: str, selected: list[str], done: set[str],
             overrides: dict) -> None:
    """A progress report of ``stage``: its StageSpec.previews hook (made once per run) publishes what is due."""
    hook = BY_NAME[stage].previews
    if hook is None or stage in done:
        return
    if stage not in previews:
        previews[stage] = hook(rid, lambda: S.effective(rid, overrides), selected, done)
    if previews[stage] is not None:
        previews[stage].progressed()


def _upstream(stage: str) -> set[str]:
    """Every stage ``stage`` depends on, directly or through others."""
    out, todo = set(), list(S.DEPS[stage])
    while todo:
        d = todo.pop()
        if d not in out:
            out.add(d)
            todo.extend(S.DEPS[d])
    return out

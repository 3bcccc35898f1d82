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
from talkthrough_assets.model.runs import StageRun
from talkthrough_assets.pipeline import settings as S
from talkthrough_assets.pipeline.engines import Engines
from talkthrough_assets.pipeline.engines import shared as shared_engines
from talkthrough_assets.pipeline.events import NOBODY, STARTED, Observer, Progress, Skipped, record
from talkthrough_assets.pipeline.stagerun import CODE_VERSIONS, STAGE_LOCK_WAIT_S, run_stage
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
               workers: int | None = None, engines: Engines | None = None, observer: Observer = NOBODY):
    """Run ``stages`` of one recording, each as soon as the selected stages it depends on are done,
    up to ``workers`` at a time (threads). Yields ``(stage, STARTED)`` when a stage starts and
    ``(stage, result)`` when it ends, in completion order, where a result is the stage's StageResult, a
    :class:`StageError`, or :class:`Skipped` for the downstream of a failure; ``(stage, Progress(info))``
    as a long stage reports it (``RunContext.progress``).
    The caller's thread does all the yielding (Dagster writes its events from there). ``engines``: the loaded
    models the stages run on (Dagster passes its resources; default: this process's, :func:`engines.shared`).
    ``overrides``: the run's settings; kept for the recording once every selected stage has succeeded.
    ``observer``: who watches the run besides its caller (told each stage's state and progress)."""
    selected = S.ordered(set(stages))
    overrides = S.checked(overrides)  # a value its setting cannot take fails the run before any stage starts
    early = _claim(recording_id, selected, overrides, engines)
    if early is not None:  # started before this run existed (start_early): its events, as they came
        yield from early.events()
        return
    yield from _execute(_Schedule(recording_id, selected, overrides, workers or stage_workers(), engines, observer))


def _execute(run: "_Schedule"):
    """The loop of :func:`run_stages` over one schedule, in the thread that consumes it."""
    recording_id, overrides = run.rid, run.overrides
    # the run holds the recording's writer lock throughout; its stage threads re-enter it
    with store.partition_lock(recording_id, timeout_s=STAGE_LOCK_WAIT_S), \
            ThreadPoolExecutor(max_workers=run.workers, thread_name_prefix="stage") as pool:
        try:
            while run.pending or run.running:
                yield from run.start_ready(pool)
                if run.running:
                    yield from run.collect(pool)
            if overrides and not run.failed:  # the settings it succeeded with are the recording's from now on
                S.persist(recording_id, overrides)
        finally:  # normal end, an error or interrupt in the caller (Ctrl-C, SIGTERM), the generator closed
            run.end()


class _Schedule:
    """The state of one :func:`run_stages` call: what is pending, running, done and failed, the stage threads'
    progress events, and the previews published while stages run."""

    def __init__(self, rid: str, selected: list[str], overrides: dict, workers: int, engines: Engines | None,
                 observer: Observer):
        self.rid, self.selected, self.overrides, self.workers = rid, selected, overrides, workers
        self.engines, self.observer = engines, observer
        # a selected stage waits for every selected stage upstream of it, also through unselected ones (a repair
        # runs two stages alone, the later reading the earlier's new output through the stages between them)
        self.deps = {s: [d for d in _upstream(s) if d in selected] for s in selected}
        self.pending, self.running, self.done = list(selected), {}, set()
        self.failed: dict[str, str] = {}  # stage -> the failed stage it traces back to
        self.first_failure: str | None = None
        self.stop = threading.Event()  # set when the caller stops listening: the stage threads end at a checkpoint
        self.events: queue.SimpleQueue = queue.SimpleQueue()
        self.previews: dict[str, Any] = {}  # stage -> what its StageSpec.previews hook made for this run (or None)

    def context(self, stage: str) -> RunContext:
        def on_progress(info: dict) -> None:
            self.observer.progress(stage, self.rid, info)
            self.events.put((stage, Progress(info)))

        return RunContext(self.rid, stage, beside=beside(stage, self.selected, self.workers), on_progress=on_progress)

    def start_ready(self, pool: ThreadPoolExecutor):
        """Skip the stages downstream of a failure; start those whose upstream is done, while a worker is free."""
        for stage in list(self.pending):
            bad = next((d for d in self.deps[stage] if d in self.failed), None)
            if bad is not None:
                self.pending.remove(stage)
                self.failed[stage] = self.failed[bad]
                yield stage, Skipped(stage, self.failed[bad])
            elif all(d in self.done for d in self.deps[stage]) and len(self.running) < self.workers:
                self.pending.remove(stage)
                self.running[pool.submit(run_stage, stage, self.rid, self.overrides, self.engines, self.stop,
                                         ctx=self.context(stage), observer=self.observer)] = stage
                yield stage, STARTED

    def collect(self, pool: ThreadPoolExecutor):
        """Wait up to a second for a stage to end; yield the progress reported meanwhile, then what ended, then
        the stages its end made ready, started before the caller records that end (Dagster's events of a stage's
        materialization are written while the next stage runs, not between the two)."""
        finished, _ = wait(list(self.running), return_when=FIRST_COMPLETED, timeout=1.0)
        while not self.events.empty():
            event = self.events.get()
            _preview(self.previews, event[0], self.rid, self.selected, self.done, self.overrides)
            yield event
        ended = []
        for fut in sorted(finished, key=lambda f: S.STAGES.index(self.running[f])):
            stage = self.running.pop(fut)
            try:
                ended.append((stage, fut.result()))
            except StageError as e:
                self.failed[stage] = stage
                self.first_failure = self.first_failure or f"{stage}: {e.reason}"
                ended.append((stage, e))
                continue
            self.done.add(stage)
        started = list(self.start_ready(pool)) if ended else []
        yield from ended
        yield from started

    def end(self) -> None:
        """Stop the stage threads at their next checkpoint (before the pool's exit waits for them); a preview
        still open says how the run ended (e.g. a partial generation that says the run stopped)."""
        self.stop.set()
        for made in self.previews.values():
            if made is not None:
                made.ended(self.done, self.first_failure or "the run was stopped")


class EarlyRun:
    """A schedule of one recording's stages started before the Dagster run that records it exists
    (:func:`start_early`): the CLI's ``process`` starts its stages while Dagster imports, opens its storage and
    creates the run in another thread, work that needs the interpreter more than the stages' native code does
    (bench/bench_cold_start.py). Its own thread drives the schedule and queues what it yields; the run's
    :func:`run_stages` of the same stages and settings takes it over (:meth:`events`) and yields the same events,
    in the order they came, as if it had started them itself. Its caller ends it (:meth:`end`) once that run
    returned, or failed to start: a schedule no run took over is stopped at its stages' next checkpoint."""

    _DONE = object()

    def __init__(self, rid: str, selected: list[str], overrides: dict, engines: Engines | None, observer: Observer):
        self.key = _key(rid, selected, overrides, engines)
        self.schedule = _Schedule(rid, selected, overrides, stage_workers(), engines, observer)
        self.queue: queue.SimpleQueue = queue.SimpleQueue()
        self.claimed = self.abandoned = False
        self.thread = threading.Thread(target=self._drive, name="early-stages", daemon=True)

    def _drive(self) -> None:
        try:
            for event in _execute(self.schedule):
                self.queue.put(event)
        except BaseException as e:  # noqa: BLE001 - raised again in the thread that takes the run over
            self.queue.put(e)
        finally:
            self.queue.put(self._DONE)

    def events(self):
        """What the schedule yields, from the run that took it over; closing this generator (the run stopped:
        Ctrl-C, a cancelled run) stops the stages, as closing :func:`run_stages` does."""
        try:
            while (event := self.queue.get()) is not self._DONE:
                if isinstance(event, BaseException):
                    raise event
                yield event
        finally:
            self.stop()

    def stop(self) -> None:
        """Ask its stages to stop at their next checkpoint (Ctrl-C before the run took it over): the run that
        takes it over records them stopped, as it would have stopped them itself."""
        self.schedule.stop.set()

    def end(self, why: str | None = None) -> None:
        """Stop what is still running unless a run took it over (that run has ended by now), and wait for the
        schedule's thread: nothing of it outlives its caller's hold on the recording's lock. When no run took it
        over (``why``: the reason, e.g. Ctrl-C before Dagster had created the run), each stage it finished is
        recorded failed with that reason: Dagster has no record of it, so the next ``process`` runs it again, in a
        run that records it."""
        with _EARLY_GUARD:
            if _EARLY.get(self.key[0]) is self:
                del _EARLY[self.key[0]]
        if self.claimed:
            self.thread.join()
        else:
            self._abandon(why or "its Dagster run did not take it over")

    def _abandon(self, why: str) -> None:
        """Stop it, wait for it, and record failed each stage it finished (once)."""
        self.stop()
        self.thread.join()
        if self.abandoned:
            return
        self.abandoned = True
        rid, cfg = self.schedule.rid, S.effective(self.schedule.rid, self.schedule.overrides)
        reason = f"{why} (finished before its run existed, so not recorded in Dagster: the next process runs it again)"
        for stage in S.ordered(self.schedule.done):
            record(rid, StageRun(stage=stage, status="failed", reason=reason, config_hash=S.config_hash(stage, cfg),
                                 code_version=CODE_VERSIONS[stage], elapsed_s=0.0))


_EARLY: dict[str, EarlyRun] = {}  # recording id -> its schedule started ahead, until a run takes it over
_EARLY_GUARD = threading.Lock()


def start_early(recording_id: str, stages: list[str], overrides: dict | None = None, engines: Engines | None = None,
                observer: Observer = NOBODY) -> EarlyRun:
    """Start ``stages`` of one recording now, for the :func:`run_stages` about to be called with the same stages,
    settings and engines (from a Dagster run being created meanwhile) to take over. The caller holds the
    recording's lock and calls :meth:`EarlyRun.end` when that run has returned (or did not start)."""
    selected = S.ordered(set(stages))
    early = EarlyRun(recording_id, selected, S.checked(overrides), engines, observer)
    with _EARLY_GUARD:
        if recording_id in _EARLY:
            raise RuntimeError(f"recording {recording_id} already has a schedule started ahead")
        _EARLY[recording_id] = early
    early.thread.start()
    return early


def _claim(rid: str, selected: list[str], overrides: dict, engines: Engines | None) -> EarlyRun | None:
    """The schedule started ahead for exactly this run, now taken over (None: there is none; one for other
    stages or settings is stopped, and this run starts its own once that one has ended)."""
    with _EARLY_GUARD:
        early = _EARLY.pop(rid, None)
        if early is not None and early.key == _key(rid, selected, overrides, engines):
            early.claimed = True
            return early
    if early is not None:  # before this run starts its own: what it finished is run again, by a recorded run
        early._abandon("a run of other stages or settings came first")
    return None


def _key(rid: str, selected: list[str], overrides: dict, engines: Engines | None) -> tuple:
    """What a run must share with a schedule started ahead to take it over: recording, stages, settings, engines."""
    return rid, tuple(selected), tuple(sorted((k, repr(v)) for k, v in overrides.items())), engines or shared_engines()


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

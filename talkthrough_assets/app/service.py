"""What the CLI (and tests) call: find files, hash, register partitions, run the Dagster job
for exactly the stale stages, and summarize. The Dagster job is the same one the UI and the
sensor launch, so there is one code path for processing. The runs themselves: :mod:`.runs`; the summary of a
recording: :mod:`.summary`.
"""

from __future__ import annotations

import os
import signal
import threading
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterable

from talkthrough_assets.core.errors import RebuildFailed, UsageError
from talkthrough_assets import store
from talkthrough_assets.model.media import ProbeRow
from talkthrough_assets.model.turns import SpeakerStats
from talkthrough_assets.app import runs
from talkthrough_assets.app.runs import (ACTIVE_STATUSES, fail_orphaned_runs, fail_stuck_run, instance, mark_killed_runs,
                                         run_error, run_stages, runs_of, storage_note)
from talkthrough_assets.app.summary import summary
from talkthrough_assets.core.ids import recording_id
# the Dagster instance this process opens (DAGSTER_HOME under the data root, SQLite or Postgres storage)
from talkthrough_assets.defs import storage_template
from talkthrough_assets.defs.instance import instance_soon
from talkthrough_assets.pipeline import disk, events, freshness, prewarm, scheduler, sources
from talkthrough_assets.pipeline import preflight
from talkthrough_assets.pipeline import registry
from talkthrough_assets.pipeline import settings as S
from talkthrough_assets.pipeline.events import NOBODY, Observer
from talkthrough_assets.pipeline.forget import forget_outputs
from talkthrough_assets.store import rejections


def recording_id_for(path: str | os.PathLike) -> str:
    return recording_id(path)


collect = registry.collect  # the CLI's file search, shared with the register_folder job


def register(path: str | os.PathLike, inst=None) -> str:
    return registry.register(path, inst or instance())


def register_many(paths: Iterable[str | os.PathLike], inst=None) -> list[str]:
    """Hash + register many files; add all new partitions in one call."""
    return registry.register_many(paths, inst or instance())


def process(path: str | os.PathLike, *, force: bool = False, overrides: dict | None = None,
            on_stages: Callable[[str, list[str]], None] | None = None, observer: Observer = NOBODY) -> dict:
    """Process one file; a second call on the same bytes with the same settings runs nothing. A full or
    read-only disk anywhere (stage outputs, Dagster's storage, the model cache, a lock) ends it with a one-line
    reason; a run whose outputs were all stored before Dagster's storage filled up is ``processed``, with a
    warning. ``on_stages``: told the stages planned; ``observer``: told each stage's state and progress."""
    t0 = time.perf_counter()
    rid = None
    try:
        rid = recording_id_for(path)
        return _process(path, rid, t0, force=force, overrides=overrides, on_stages=on_stages, observer=observer)
    except Exception as e:
        why = disk.disk_reason(e, rid)
        if why is None:
            raise
        out = {"recording_id": rid, "source": str(path), "stages_run": [],
               "elapsed_s": round(time.perf_counter() - t0, 3)}
        if rid and not isinstance(e, store.DiskRefused) and _all_stored(rid):
            fail_stuck_run(rid, why)
            out.update(summary(rid), status="processed", warning=f"outputs stored; Dagster's run record was not: {why}")
        else:
            if rid:
                fail_stuck_run(rid, why)
                freshness.record_unfinished(rid, why)
                out.update(summary(rid))
            out.update(status="failed", reason=why)
        out["source"] = str(path)
        return out


def _all_stored(rid: str) -> bool:
    """Every stage current and every output whole (the run that hit a full disk had finished its work)."""
    try:
        return bool(store.read_one("recordings", rid)) and not freshness.plan(rid)
    except Exception:
        return False


def _process(path, rid: str, t0: float, *, force: bool, overrides: dict | None,
             on_stages: Callable[[str, list[str]], None] | None, observer: Observer) -> dict:
    mark_killed_runs()  # a run a killed process left STARTED: marked even when nothing runs now
    store.tempfiles.sweep(store.recording_folders(rid))  # what a killed writer of this recording left
    sources.register_source(path, rid)
    if not force and not overrides and store.read_one("recordings", rid) and not freshness.plan(rid):
        # fast path: already processed with these settings; no Dagster import, no run
        return _outcome(rid, path, t0, _Ran("cached"))
    try:
        # one writer per recording: a second process of the same bytes is refused at once
        with store.partition_lock(rid, timeout_s=0.0):
            ran = _plan_and_run(path, rid, force, overrides, on_stages, observer)
    except store.PartitionBusy as e:
        return _outcome(rid, path, t0, _Ran("refused", reason=str(e)))
    return _outcome(rid, path, t0, ran)


@dataclass
class _Ran:
    """What one ``process`` call did: its status, the stages that ran (graph order), the Dagster result, a
    warning, and the reason of a failure (``reason``; else the first stage failure its observer saw)."""

    status: str
    stages: list[str] = field(default_factory=list)
    result: object = None
    warning: str | None = None
    reason: str | None = None
    seen_failure: str | None = None


def _plan_and_run(path, rid: str, force: bool, overrides: dict | None,
                  on_stages: Callable[[str, list[str]], None] | None, observer: Observer) -> _Ran:
    """Under the recording's lock: the stale stages (with the run's settings, checked), run as one Dagster run."""
    overrides = S.checked(overrides)  # the run's settings go with its run and are kept once it succeeded
    stages = freshness.plan(rid, force=force, given=overrides)
    if not stages:
        if overrides:  # what is stored was made with these settings already
            S.persist(rid, overrides)
        return _Ran("cached")
    if bad := preflight.rejected(path, rid, stages, observer):
        rejections.record_later(rid)  # ... and as a failed run for the UI, by a process of its own
        return _Ran("failed", [bad])  # recorded like a run's failure of that stage, without a run
    if on_stages:
        on_stages(rid, stages)
    ran = _Ran("processed")
    warming = threading.Lock()  # taken once: at the first stage's start

    def seen(stage, r, state, info):
        if state == "started" and warming.acquire(blocking=False):
            # the Python engine loads (RapidOCR's import) once the run's stages run, not beside Dagster's creation
            # of the run, which needs the interpreter just as much
            prewarm.prewarm_python(rid, stages, given=overrides)
        if r == rid and state in ("ok", "failed") and stage not in ran.stages:
            ran.stages.append(stage)
            if state == "failed" and ran.seen_failure is None:  # also when a full disk kept its row unwritten
                ran.seen_failure = f"{stage}: {info.get('reason')}"

    watching = Observer(on_stage=seen).joined(observer)
    # Dagster's import and instance in a thread (with the recording's partition and the run's event log ready
    # there), beside the stages, started here ahead of the run that takes them over, and the native engine loads
    # (Whisper) (bench/bench_cold_start.py)
    prepared: dict = {}
    opening = instance_soon(lambda inst: prepared.update(run_id=_before_run(inst, rid)))
    early = scheduler.start_early(rid, stages, overrides, observer=watching)
    why = None
    try:
        with _signals_stop(early):  # Dagster's own handlers take over while it executes the run's step
            try:
                prewarm.prewarm_native(rid, stages, given=overrides)
            finally:
                inst = opening.result()
            ran.result = run_stages(rid, stages, inst, settings=overrides, observer=watching,
                                    run_id=prepared.get("run_id"))
        if not early.claimed and runs.run_interrupted(ran.result):  # stopped before its step began
            why = runs.RUN_INTERRUPTED
    except KeyboardInterrupt:  # a second Ctrl-C before the run existed: it ends now, interrupted
        if early.claimed:
            raise
        why = runs.RUN_INTERRUPTED
        return _Ran("failed", reason=why)
    except Exception as e:
        why = disk.disk_reason(e, rid) or f"{type(e).__name__}: {e}"
        raise
    finally:  # the run took the stages over and returned, or never started: nothing of them runs on unrecorded
        early.end(why)
    ran.stages = [s for s in stages if s in ran.stages]  # graph order; a stage a failure upstream stopped is not listed
    _settle(rid, inst, ran)
    return ran


@contextmanager
def _signals_stop(early: scheduler.EarlyRun):
    """Ctrl-C or SIGTERM before the run's step took over the stages started ahead: they stop at their next
    checkpoint and the run, once created, records them stopped (or, stopped before its step began, leaves them to
    run again), so the command ends "interrupted", as for a signal during the run; a second one ends it at once
    (KeyboardInterrupt). Until Dagster executes the run, this handler takes the signal; while Dagster's own
    handlers hold it back for its next checkpoint, the signal's wake-up byte (``signal.set_wakeup_fd``, written
    whichever Python handler is installed) stops the stages at once. Only the main thread takes signals; a signal
    ignored (a command started in the background) stays ignored."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    told: list[int] = []

    def on_signal(signum, _frame) -> None:
        if told:
            raise KeyboardInterrupt
        told.append(signum)
        early.stop()

    before = {sig: was for sig in (signal.SIGINT, signal.SIGTERM)
              if (was := signal.getsignal(sig)) is not signal.SIG_IGN}
    for sig in before:
        signal.signal(sig, on_signal)
    read, write = os.pipe()
    os.set_blocking(write, False)
    old_fd = signal.set_wakeup_fd(write)
    watcher = threading.Thread(target=_stop_on_wakeup, args=(read, early, set(before)), daemon=True,
                               name="signal-wakeup")
    watcher.start()
    try:
        yield
    finally:
        signal.set_wakeup_fd(old_fd)
        os.close(write)  # the watcher reads the end of the pipe and ends
        watcher.join(5)
        os.close(read)
        for sig, was in before.items():
            signal.signal(sig, signal.SIG_DFL if was is None else was)


def _stop_on_wakeup(fd: int, early: scheduler.EarlyRun, signals: set[int]) -> None:
    """Stop ``early``'s stages once a byte naming one of ``signals`` comes through the wake-up pipe ``fd``."""
    while data := os.read(fd, 64):
        if any(b in signals for b in data):
            early.stop()


def _before_run(inst, rid: str) -> str | None:
    """What the run needs of Dagster's storage first: the recording's partition, and the run's id with its event
    log written ahead (:func:`storage_template.prepare_run`; None: Dagster makes the id and the log as the run
    starts)."""
    registry.ensure_partition(inst, rid)
    return storage_template.prepare_run(inst)


def _settle(rid: str, inst, ran: _Ran) -> None:
    """The run's status once Dagster's record of it is in: a full disk that kept only that record from being
    written leaves the run processed with a warning; one that stopped it before its stages finished, failed."""
    ran.status = "processed" if ran.result.success else "failed"
    disk = run_error(ran.result)
    if fail_stuck_run(rid, disk or storage_note(), inst) and not disk:
        disk = storage_note()  # its end could not be recorded: marked now, never left STARTED
    if disk and _all_stored(rid):  # every output stored; only Dagster's record of it failed
        ran.status, ran.warning = "processed", f"outputs stored; Dagster's run record was not: {disk}"
    elif disk and not ran.result.success and ran.seen_failure is None:
        freshness.record_unfinished(rid, disk)


def _outcome(rid: str, path, t0: float, ran: _Ran) -> dict:
    """The summary ``process`` returns."""
    out = summary(rid)
    out.update(status=ran.status, stages_run=ran.stages, elapsed_s=round(time.perf_counter() - t0, 3), source=str(path))
    if ran.warning:
        out["warning"] = ran.warning
    if ran.reason:
        out["reason"] = ran.reason
    elif ran.status == "failed":
        failed = events.failed_stage(rid)
        out["reason"] = (events.failure_reason(rid) or ran.seen_failure or run_error(ran.result)
                         or (runs.RUN_INTERRUPTED if runs.run_interrupted(ran.result) else None)
                         or "run failed (see the Dagster run log)")
        if failed and failed.internal:
            out["internal"] = True  # not the input's fault: the CLI says so and exits 3
    return out


def set_speaker_names(rid: str, assignments: list[str]) -> tuple[dict, list[str]]:
    """Apply ``S1=Alice``-style assignments (``S1=`` removes); rebuild only the manifest.

    Returns (names now in force, roster labels). UsageError: bad input; RebuildFailed: rebuild failed."""
    from talkthrough_assets.stages.turns import speaker_names

    store.check_id(rid)
    changes = speaker_names.parse_name_assignments(assignments)
    if not store.has_partition("sources", rid):
        raise UsageError(f"unknown recording {rid} (process it first)")
    roster = [s.label for s in store.read_rows("speakers", rid, record=SpeakerStats)]
    unknown = [k for k, v in changes.items() if v is not None and k not in roster]
    if unknown:
        have = ", ".join(roster) if roster else "none: run `talkthrough process FILE --diarize` first"
        raise UsageError(f"unknown speaker label(s) {', '.join(unknown)} (speakers: {have})")
    merged = speaker_names.merge_names(S.load_overrides(rid).get("speaker_names"), changes)
    S.save_overrides(rid, {"speaker_names": merged or None})
    from talkthrough_assets.app import people

    with store.partition_lock(rid, timeout_s=60):
        people.enrol(rid, merged)  # a named label's voice is enrolled under that person
        result = run_stages(rid, ["manifest"])
    if not result.success:
        raise RebuildFailed(events.failure_reason(rid) or "see the Dagster run log")
    people.recheck(manifest_again, exclude={rid})  # other recordings' voice matches: their manifests only
    return merged, roster


def manifest_again(rid: str) -> bool:
    """Re-materialize only ``manifest`` of ``rid`` (the caller holds its lock): voice matches changed."""
    return run_stages(rid, ["manifest"]).success


def resolve_recording(ref: str) -> str:
    """A recording id from what a person types: the id itself, or a path to the file (hashed)."""
    if store.ID_RE.fullmatch(ref or ""):
        return ref
    p = Path(ref).expanduser()
    if p.is_file():
        return recording_id_for(p)
    raise UsageError(f"{ref!r} is neither a recording id (16 hex characters) nor an existing file")


def forget(rid: str, inst=None) -> dict:
    """Remove a recording everywhere: every table's partition (search terms and aliases included), its search
    index part and merged postings, frames, WAV, manifest, settings and its Dagster partition (the UI's partition list no longer has it; the past
    runs' event log stays, as Dagster's SQL event log cannot wipe one partition). Refused (PartitionBusy)
    while a run of it is queued or in progress. UsageError: nothing is known of that id."""
    from dagster import DagsterRunStatus

    store.check_id(rid)
    inst = inst or instance()
    known = store.is_known(rid) or inst.has_dynamic_partition(registry.PARTITIONS_NAME, rid)
    if not known:
        raise UsageError(f"unknown recording {rid}: nothing stored and no Dagster partition")
    with store.partition_lock(rid, timeout_s=0.0):
        fail_orphaned_runs(inst, rid)
        pending = [getattr(DagsterRunStatus, s) for s in ("QUEUED", "NOT_STARTED", *ACTIVE_STATUSES)]
        runs = runs_of(inst, rid, pending)  # backfill batches that hold it included
        if runs:
            raise store.PartitionBusy(f"recording {rid} has {len(runs)} run(s) queued or in progress "
                                      f"({', '.join(r.run_id[:8] for r in runs)}); try again when they finish")
        removed = forget_outputs(rid)
        partition = inst.has_dynamic_partition(registry.PARTITIONS_NAME, rid)
        if partition:
            inst.delete_dynamic_partition(registry.PARTITIONS_NAME, rid)
    from talkthrough_assets.app import people

    people.recheck(manifest_again)  # its voiceprints and enrolments went with its tables: other recordings' matches change
    return {"recording_id": rid, "removed": removed, "dagster_partition_removed": partition}


def repair(rid: str | None = None) -> list[dict]:
    """Re-make what is missing or damaged (``datacheck``) of one recording or of every one: exactly the stages
    whose outputs are gone or torn (and the manifest), through the Dagster job; a torn ``sources`` file is
    re-written from the probed path; a stray file in a partition is moved aside (``store.set_aside``). One dict
    per recording that needed it (problems, files moved aside, stages run, status), and one for the temp files
    of writers that are gone (removed), after marking failed the runs a killed process left STARTED."""
    from talkthrough_assets.pipeline.datacheck import STRAY, check, recordings

    mark_killed_runs()
    store.integrity.forget_skipped()
    store.tables._schema_files_done.clear()  # a torn schema file is written anew
    store.ensure_schema_files()
    out = []
    temp = store.tempfiles.sweep(store.recording_folders(rid) if rid else None)
    if temp:
        out.append({"recording_id": None, "problems": [f"temp file of a writer that is gone: {p}" for p, _ in temp],
                    "removed": [p for p, _ in temp], "removed_bytes": sum(n for _, n in temp),
                    "set_aside": [], "stages_run": [], "status": "repaired"})
    for r in [store.check_id(rid)] if rid else recordings():
        problems = check(r)
        if not problems:
            continue
        row = {"recording_id": r, "problems": [p.line() for p in problems], "set_aside": [], "stages_run": [],
               "status": "repaired"}
        try:
            with store.partition_lock(r, timeout_s=0.0):
                strays = [p.key for p in problems if p.what == STRAY]
                row["set_aside"] = [{"file": was, "moved_to": now} for was, now in store.set_aside(strays)]
                if any(p.what == "table sources" for p in problems):
                    probed = store.read_one("probe", r, record=ProbeRow)
                    if probed and Path(probed.path).is_file() and recording_id_for(probed.path) == r:
                        sources.register_source(probed.path, r)
                stages = freshness.plan(r)
                if stages:
                    inst = instance()
                    registry.ensure_partition(inst, r)
                    result = run_stages(r, stages, inst)
                    row["stages_run"] = stages
                    if not result.success:
                        row.update(status="failed", reason=events.failure_reason(r) or "run failed (see the Dagster run log)")
        except store.PartitionBusy as e:
            row.update(status="refused", reason=str(e))
        left = check(r) if row["status"] == "repaired" else []
        if left:
            row.update(status="failed", reason="; ".join(p.line() for p in left[:3]))
        out.append(row)
    return out

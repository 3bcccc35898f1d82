"""Dagster runs as the CLI and the UI supervisor see them: open the instance, run stages of a recording
through the ``process_recording`` job (in this process), find the runs of this host whose process is gone and
mark them failed (or canceled), and record the end of a run that a full disk kept Dagster from recording."""

from __future__ import annotations

import os
import socket
from pathlib import Path
from typing import Iterable

from talkthrough_assets import store
from talkthrough_assets.core import config, proctree
from talkthrough_assets.defs.instance import PG_URL_ENV
from talkthrough_assets.defs.instance import instance as _open_instance
from talkthrough_assets.pipeline import registry

ORPHAN_TAG = registry.RUNNER_TAG  # host:pid of the process executing a run (set by the CLI and by the run itself)
ACTIVE_STATUSES = ("STARTING", "STARTED", "CANCELING")
# The tag Dagster's run launcher gives every run it launches (where its code server is): a run's tags are
# public (``DagsterRun.tags``) and this key is part of every stored run Dagster launched
LAUNCHED_TAG = ".dagster/grpc_info"

# runs of this process whose end Dagster's storage could not take (its disk full even after the ballast was
# released): recording id -> why. Marked at this process's next use of the instance (other processes mark them
# once this one is gone: run_marks), so a run never stays STARTED once there is room again.
_UNMARKED: dict[str, str] = {}


_swept_orphans = False  # this process marked the runs of this host whose process is gone, once


def instance():
    """The Dagster instance (:func:`talkthrough_assets.defs.instance.instance`), after recording the end of this
    process's runs that a full disk kept unrecorded and, once per process, of the runs of this host whose
    process is gone (a killed `process`): whichever command opens the instance next marks them."""
    global _swept_orphans
    inst = _open_instance()
    if not _swept_orphans:
        _swept_orphans = True
        try:
            fail_orphaned_runs(inst)
            _drop_marks(store.tempfiles.dead_run_marks())
        except Exception:  # storage that cannot take the mark now: a later command marks them
            pass
    for rid, why in list(_UNMARKED.items()):
        try:
            _mark_runs_failed(inst, rid, why)
            del _UNMARKED[rid]
        except Exception:  # still no room: the next call tries again
            break
    return inst


def _mark_runs_failed(inst, rid: str, why: str) -> bool:
    """Mark this process's unfinished runs of ``rid`` failed with ``why``; True when there was one. A run it
    created but never started (its storage failed while Dagster logged the run's planned events) counts too."""
    from dagster import DagsterRunStatus

    found = False
    for run in runs_of(inst, rid, [getattr(DagsterRunStatus, s) for s in ("NOT_STARTED", *ACTIVE_STATUSES)]):
        if _runner(inst, run) == (socket.gethostname(), os.getpid()):
            found = True
            inst.report_run_failed(run, f"run failed: {why}")
    return found


def _runner(inst, run) -> tuple[str, int] | None:
    """(host, pid) of the process executing ``run``: its runner tag, else (local storage only: no other
    machine shares it) the pid Dagster's run worker reported when it started."""
    host, _, pid = (run.tags.get(ORPHAN_TAG) or "").rpartition(":")
    if host and pid.isdigit():
        return host, int(pid)
    if config.get(PG_URL_ENV):
        return None
    from dagster import DagsterEventType

    for entry in inst.all_logs(run.run_id, of_type=DagsterEventType.ENGINE_EVENT):
        md = getattr(entry.dagster_event.event_specific_data, "metadata", None) or {}
        value = getattr(md.get("pid"), "value", None)
        if value is not None and str(value).isdigit():
            return socket.gethostname(), int(value)
    return None


# Dagster's run tags for a backfill run over several partitions (a batch of recordings, defs/backfill.py)
RANGE_START_TAG, RANGE_END_TAG = "dagster/asset_partition_range_start", "dagster/asset_partition_range_end"


def runs_of(inst, rid: str | None, statuses: list) -> list:
    """Runs in ``statuses`` of recording ``rid`` (all runs when None): its own runs, and the backfill batches
    whose partition range holds it (a range is the partitions between its ends, in the order they were added)."""
    from dagster import RunsFilter

    if rid is None:
        return list(inst.get_runs(RunsFilter(statuses=statuses)))
    own = list(inst.get_runs(RunsFilter(statuses=statuses, tags={"dagster/partition": rid})))
    batches = [r for r in inst.get_runs(RunsFilter(statuses=statuses)) if RANGE_START_TAG in r.tags]
    if batches:
        order = {k: i for i, k in enumerate(inst.get_dynamic_partitions(registry.PARTITIONS_NAME))}
        for run in batches:
            lo, hi, at = (order.get(k) for k in (run.tags[RANGE_START_TAG], run.tags.get(RANGE_END_TAG), rid))
            if None not in (lo, hi, at) and lo <= at <= hi:
                own.append(run)
    return own


def active_runs_here(inst, rid: str | None = None) -> list[tuple[object, int, bool]]:
    """Runs not finished (starting, started, canceling) whose process is on this host, as
    ``(run, pid, alive)``. Runs of other machines, and runs whose process is not known yet, are left out."""
    from dagster import DagsterRunStatus

    runs = runs_of(inst, rid, [getattr(DagsterRunStatus, s) for s in ACTIVE_STATUSES])
    out = []
    for run in runs:
        runner = _runner(inst, run)
        if runner and runner[0] == socket.gethostname():
            out.append((run, runner[1], proctree.alive(runner[1])))
    return out


def fail_orphaned_runs(inst, rid: str | None = None, canceled: Iterable[str] = (),
                       why: str = "") -> list[tuple[str, str]]:
    """Mark runs (of one recording, or all) whose process on this host is gone (killed, or a UI that
    stopped) as failed, or canceled if their cancellation was asked for (``canceled``), so they do not
    show as running forever nor hold their recording's slot in the run queue. Returns (run id, reason)."""
    from talkthrough_assets.defs import run_marks

    canceled = set(canceled)
    done = []
    for run, pid, alive in active_runs_here(inst, rid):
        if alive:
            continue
        reason = why or f"its process is gone (PID {pid} died, killed?) before the run finished"
        # its open step ends too (else the run page shows it executing), and a failure gets its tag
        run_marks.end_run(inst, run, reason, canceled=run.run_id in canceled or run.status.value == "CANCELING")
        done.append((run.run_id, reason))
    return done


def cancel_runs_here(inst) -> list[str]:
    """Ask every run a run launcher started on this host (a Dagster run worker, not a CLI process) to
    stop, as the UI's *Terminate* does; returns their ids."""
    asked = []
    for run, _pid, alive in active_runs_here(inst):
        if alive and launched(run):
            try:
                inst.run_launcher.terminate(run.run_id)
            except Exception:  # the code server is already gone: the run is marked after its process ends
                pass
            asked.append(run.run_id)
    return asked


def launched(run) -> bool:
    """Started by a run launcher (the UI's daemon or webserver), not executed in a CLI process."""
    return LAUNCHED_TAG in run.tags


def runs_finished(inst, run_ids: Iterable[str]) -> bool:
    return all((r := inst.get_run_by_id(i)) is None or r.is_finished for i in run_ids)


def run_stages(rid: str, stages: list[str], inst=None, tags: dict | None = None, settings: dict | None = None,
               observer=None, run_id: str | None = None):
    """Materialize ``stages`` of partition ``rid`` through the process_recording job (in-process), with the run's
    ``settings`` as its run config (the run's record in Dagster shows them; kept for the recording once the run
    succeeded), watched by ``observer`` (:class:`talkthrough_assets.pipeline.events.Observer`: the run's
    ``observer`` resource; default: nobody). A mark file
    (``store.run_marks_dir()``) stands while it runs: one left by a killed process tells a later command,
    without opening Dagster's storage, that a run may read STARTED (:func:`mark_killed_runs`). ``run_id``: the id
    :func:`~talkthrough_assets.defs.storage_template.prepare_run` gave ahead (default: prepared here)."""
    from dagster import AssetKey

    from talkthrough_assets.definitions import defs
    from talkthrough_assets.defs import sqlite_tuning, storage_template
    from talkthrough_assets.defs.resources import watched_by
    from talkthrough_assets.pipeline.events import NOBODY
    from talkthrough_assets.defs.assets import settings_run_config

    inst = inst or instance()
    fail_orphaned_runs(inst, rid)
    job = defs.resolve_job_def("process_recording")
    run_tags = {ORPHAN_TAG: f"{socket.gethostname()}:{os.getpid()}", **(tags or {})}
    mark = store.run_marks_dir() / f"{os.getpid()}.{rid}"
    try:
        mark.parent.mkdir(parents=True, exist_ok=True)
        mark.touch()
    except OSError:  # a full or read-only disk: the run itself says so
        pass
    try:
        # its events' SQLite connections never the last to their database; its observer told what happens
        with sqlite_tuning.holding(), watched_by(observer or NOBODY):
            return job.execute_in_process(
                instance=inst, partition_key=rid, asset_selection=[AssetKey(s) for s in stages],
                raise_on_error=False, tags=run_tags, run_id=run_id or storage_template.prepare_run(inst),
                run_config={"loggers": {"console": {"config": {"log_level": config.get("TALKTHROUGH_LOG_LEVEL")}}},
                            **settings_run_config(settings)},
            )
    finally:
        mark.unlink(missing_ok=True)


def _drop_marks(marks: Iterable[Path]) -> None:
    for m in marks:
        m.unlink(missing_ok=True)


def mark_killed_runs() -> list[tuple[str, str]]:
    """Mark failed the runs a killed process of this host left STARTED: Dagster's storage is opened only when a
    run mark says there is one (a listing otherwise: the cached `process` stays fast). (run id, reason) each."""
    dead = store.tempfiles.dead_run_marks()
    if not dead:
        return []
    done = []
    try:
        inst = _open_instance()
        for rid in sorted({m.name.partition(".")[2] for m in dead}):
            done += fail_orphaned_runs(inst, rid)
    except Exception:  # Dagster's storage cannot take it now: the marks stay for the next command
        return done
    _drop_marks(dead)
    return done


def storage_note() -> str:
    """Why a run's end may be unrecorded: Dagster's storage and the room left on its disk."""
    from talkthrough_assets.defs.instance import current_home

    home = str(current_home())
    free = store.diskfault.free_bytes(home)
    return f"Dagster could not record the run's end in its storage at {home} " \
           f"({0 if free is None else free / 1e6:.0f} MB free)"


def fail_stuck_run(rid: str, why: str, inst=None) -> bool:
    """Mark this process's unfinished Dagster runs of ``rid`` failed (a run never stays STARTED), releasing the
    ballast beside Dagster's storage when its disk is full; where even that fails, they are marked at this
    process's next use of the instance (:func:`instance`), or by the next run of the recording once this process
    is gone. True when there was one (or may be one, left to mark)."""
    from talkthrough_assets.defs.instance import release_reserve

    for attempt in range(2):
        try:
            inst = inst if inst is not None and not attempt else _open_instance()  # the caller's, opened once
            found = _mark_runs_failed(inst, rid, why)
            _UNMARKED.pop(rid, None)
            return found
        except Exception as e:
            if store.diskfault.kind(e) is None:
                return False
            if attempt or not release_reserve():
                _UNMARKED[rid] = why  # marked at the next use of the instance, once there is room
                return True


INTERRUPT_ERRORS = ("DagsterExecutionInterruptedError", "KeyboardInterrupt")
RUN_INTERRUPTED = ("interrupted: the run was stopped (Ctrl-C, SIGTERM or a cancelled run) between stages; what "
                   "its stages had finished is kept and a re-run resumes from there")


def run_interrupted(result) -> bool:
    """Whether the run ended because it was interrupted (Ctrl-C reached Dagster's own code between stages, where
    no stage could record it as its reason)."""
    for ev in getattr(result, "all_events", None) or ():
        err = getattr(getattr(ev, "event_specific_data", None), "error", None)
        if err is not None and (getattr(err, "cls_name", None) in INTERRUPT_ERRORS
                                or any(c in INTERRUPT_ERRORS for c in _causes(err))):
            return True
    return False


def _causes(err) -> list[str]:
    out, seen = [], err
    while (seen := getattr(seen, "cause", None)) is not None:
        out.append(getattr(seen, "cls_name", ""))
    return out


def run_error(result) -> str | None:
    """A disk fault the Dagster run itself hit (its storage full, its step failing outside any stage)."""
    for ev in getattr(result, "all_events", None) or ():
        err = getattr(getattr(ev, "event_specific_data", None), "error", None)
        if err is not None and store.diskfault.kind(Exception(err.to_string())) is not None:
            return store.diskfault.reason(Exception(err.to_string()), store.data_location())
    return None

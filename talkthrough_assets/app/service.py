"""What the CLI (and tests) call: find files, hash, register partitions, run the Dagster job
for exactly the stale stages, and summarize. The Dagster job is the same one the UI and the
sensor launch, so there is one code path for processing.
"""

from __future__ import annotations

import os
import socket
import time
from pathlib import Path
from typing import Callable, Iterable

from talkthrough_assets.core import config
from talkthrough_assets.pipeline import execute as pipeline
from talkthrough_assets.pipeline import registry
from talkthrough_assets.store import rejections
from talkthrough_assets import store
from talkthrough_assets.pipeline import settings as S
from talkthrough_assets.core.ids import recording_id
# the Dagster instance this process opens (DAGSTER_HOME under the data root, SQLite or Postgres storage)
from talkthrough_assets.defs.instance import (PG_URL_ENV, POSTGRES_STORAGE_YAML, _pin_pg_driver, ensure_dagster_home, instance_soon, instance_yaml)
from talkthrough_assets.defs.instance import instance as _open_instance

# runs of this process whose end Dagster's storage could not take (its disk full even after the ballast was
# released): recording id -> why. Marked at this process's next use of the instance (other processes mark them
# once this one is gone: run_marks), so a run never stays STARTED once there is room again.
_UNMARKED: dict[str, str] = {}


def instance():
    """The Dagster instance (:func:`instance.instance`), after recording the end of this process's runs that a
    full disk kept unrecorded."""
    inst = _open_instance()
    for rid, why in list(_UNMARKED.items()):
        try:
            _mark_runs_failed(inst, rid, why)
            del _UNMARKED[rid]
        except Exception:  # still no room: the next call tries again
            break
    return inst


def _mark_runs_failed(inst, rid: str, why: str) -> bool:
    """Mark this process's unfinished runs of ``rid`` failed with ``why``; True when there was one."""
    found = False
    for run, pid, _alive in active_runs_here(inst, rid):
        if pid == os.getpid():
            found = True
            inst.report_run_failed(run, f"run failed: {why}")
    return found
from talkthrough_assets.stages.segments import stage as chunkstore
from talkthrough_assets.stages import search_index
from talkthrough_assets.stages.segments import transcribe
from talkthrough_assets.stages import wall_clock as wallclock
from talkthrough_assets.stages import probe as probe_stage
from talkthrough_assets.stages.wall_clock import t_wall

PREVIEW_SEGMENTS = 15


def recording_id_for(path: str | os.PathLike) -> str:
    return recording_id(path)


collect = registry.collect  # the CLI's file search, shared with the register_folder job


def register(path: str | os.PathLike, inst=None) -> str:
    return registry.register(path, inst or instance())


def register_many(paths: Iterable[str | os.PathLike], inst=None) -> list[str]:
    """Hash + register many files; add all new partitions in one call."""
    return registry.register_many(paths, inst or instance())


ORPHAN_TAG = registry.RUNNER_TAG  # host:pid of the process executing a run (set by the CLI and by the run itself)
ACTIVE_STATUSES = ("STARTING", "STARTED", "CANCELING")


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


def active_runs_here(inst, rid: str | None = None) -> list[tuple[object, int, bool]]:
    """Runs not finished (starting, started, canceling) whose process is on this host, as
    ``(run, pid, alive)``. Runs of other machines, and runs whose process is not known yet, are left out."""
    from dagster import DagsterRunStatus, RunsFilter

    statuses = [getattr(DagsterRunStatus, s) for s in ACTIVE_STATUSES]
    runs = inst.get_runs(RunsFilter(statuses=statuses, tags={"dagster/partition": rid} if rid else {}))
    out = []
    for run in runs:
        runner = _runner(inst, run)
        if runner and runner[0] == socket.gethostname():
            out.append((run, runner[1], _alive(runner[1])))
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
        reason = why or f"its process ({pid}) died (killed?) before the run finished"
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
    from dagster._core.storage.tags import GRPC_INFO_TAG

    return GRPC_INFO_TAG in run.tags


def runs_finished(inst, run_ids: Iterable[str]) -> bool:
    return all((r := inst.get_run_by_id(i)) is None or r.is_finished for i in run_ids)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:  # a killed process not reaped yet is dead too
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return True


def run_stages(rid: str, stages: list[str], inst=None, tags: dict | None = None):
    """Materialize ``stages`` of partition ``rid`` through the process_recording job (in-process)."""
    from dagster import AssetKey

    from talkthrough_assets.defs.assets import defs

    inst = inst or instance()
    fail_orphaned_runs(inst, rid)
    job = defs.resolve_job_def("process_recording")
    run_tags = {ORPHAN_TAG: f"{socket.gethostname()}:{os.getpid()}", **(tags or {})}
    return job.execute_in_process(
        instance=inst, partition_key=rid, asset_selection=[AssetKey(s) for s in stages],
        raise_on_error=False, tags=run_tags,
        run_config={"loggers": {"console": {"config": {"log_level": config.get("TALKTHROUGH_LOG_LEVEL")}}}},
    )


def process(path: str | os.PathLike, *, force: bool = False, overrides: dict | None = None,
            on_stages: Callable[[str, list[str]], None] | None = None) -> dict:
    """Process one file; a second call on the same bytes with the same settings runs nothing. A full or
    read-only disk anywhere (stage outputs, Dagster's storage, the model cache, a lock) ends it with a one-line
    reason; a run whose outputs were all stored before Dagster's storage filled up is ``processed``, with a
    warning."""
    t0 = time.perf_counter()
    rid = None
    try:
        rid = recording_id_for(path)
        return _process(path, rid, t0, force=force, overrides=overrides, on_stages=on_stages)
    except Exception as e:
        why = pipeline.disk_reason(e, rid)
        if why is None:
            raise
        out = {"recording_id": rid, "source": str(path), "stages_run": [],
               "elapsed_s": round(time.perf_counter() - t0, 3)}
        if rid and not isinstance(e, store.DiskRefused) and _all_stored(rid):
            _fail_stuck_run(rid, why)
            out.update(summary(rid), status="processed", warning=f"outputs stored; Dagster's run record was not: {why}")
        else:
            if rid:
                _fail_stuck_run(rid, why)
                out.update(summary(rid))
            out.update(status="failed", reason=why)
        out["source"] = str(path)
        return out


def _all_stored(rid: str) -> bool:
    """Every stage current and every output whole (the run that hit a full disk had finished its work)."""
    try:
        return bool(store.read_one("recordings", rid)) and not pipeline.plan(rid)
    except Exception:
        return False


def _storage_note() -> str:
    from talkthrough_assets.defs.instance import current_home

    home = str(current_home())
    free = store.diskfault.free_bytes(home)
    return f"Dagster could not record the run's end in its storage at {home} " \
           f"({0 if free is None else free / 1e6:.0f} MB free)"


def _fail_stuck_run(rid: str, why: str, inst=None) -> bool:
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


def _process(path, rid: str, t0: float, *, force: bool, overrides: dict | None,
             on_stages: Callable[[str, list[str]], None] | None) -> dict:
    result, warning = None, None
    pipeline.register_source(path, rid)
    if not force and not overrides and store.read_one("recordings", rid) and not pipeline.plan(rid):
        # fast path: already processed with these settings; no Dagster import, no run
        out = summary(rid)
        out.update(status="cached", stages_run=[], elapsed_s=round(time.perf_counter() - t0, 3), source=str(path))
        return out
    try:
        # one writer per recording: a second process of the same bytes is refused at once
        with store.partition_lock(rid, timeout_s=0.0):
            if overrides:
                S.save_overrides(rid, overrides)
            stages = pipeline.plan(rid, force=force)
            status, ran = "cached", []
            if stages and "probe" in stages and rejected_by_probe(path, rid):
                status, ran = "failed", ["probe"]  # recorded like a run's probe failure, without a run
                rejections.record_later(rid)  # ... and as a failed run for the UI, by a process of its own
            elif on_stages:
                on_stages(rid, stages)
            if stages and not ran:
                # Dagster's import and instance in a thread, beside Whisper's (native) load here; RapidOCR's
                # (Python) import then overlaps the run's start and first stages (bench/bench_cold_start.py)
                opening = instance_soon()
                try:
                    pipeline.prewarm_whisper(rid, stages)
                finally:
                    inst = opening.result()
                pipeline.prewarm_ocr(rid, stages)
                registry.ensure_partition(inst, rid)

                def seen(stage, r, state, info):
                    if r == rid and state in ("ok", "failed") and stage not in ran:
                        ran.append(stage)

                pipeline.listeners.append(seen)
                try:
                    result = run_stages(rid, stages, inst)
                finally:
                    pipeline.listeners.remove(seen)
                status = "processed" if result.success else "failed"
                disk = _run_error(result)
                if _fail_stuck_run(rid, disk or _storage_note(), inst) and not disk:
                    disk = _storage_note()  # its end could not be recorded: marked now, never left STARTED
                if disk and _all_stored(rid):  # every output stored; only Dagster's record of it failed
                    status = "processed"
                    warning = f"outputs stored; Dagster's run record was not: {disk}"
                ran = [s for s in stages if s in ran]  # graph order; a stage a failure upstream stopped is not listed
    except store.PartitionBusy as e:
        out = summary(rid)
        out.update(status="refused", reason=str(e), stages_run=[], source=str(path),
                   elapsed_s=round(time.perf_counter() - t0, 3))
        return out
    out = summary(rid)
    out.update(status=status, stages_run=ran, elapsed_s=round(time.perf_counter() - t0, 3), source=str(path))
    if warning:
        out["warning"] = warning
    if status == "failed":
        failed = pipeline.failed_stage(rid)
        out["reason"] = pipeline.failure_reason(rid) or _run_error(result) or "run failed (see the Dagster run log)"
        if failed and failed.get("internal"):
            out["internal"] = True  # not the input's fault: the CLI says so and exits 3
    return out


def _run_error(result) -> str | None:
    """A disk fault the Dagster run itself hit (its storage full, its step failing outside any stage)."""
    for ev in getattr(result, "all_events", None) or ():
        err = getattr(getattr(ev, "event_specific_data", None), "error", None)
        if err is not None and store.diskfault.kind(Exception(err.to_string())) is not None:
            return store.diskfault.reason(Exception(err.to_string()), store.data_location())
    return None


def rejected_by_probe(path: str | os.PathLike, rid: str) -> bool:
    """A file the probe rejects in milliseconds (text renamed .mp4, 0 bytes, no streams) fails here,
    before a Dagster run is started (seconds of start-up for nothing): the probe stage runs in-process
    and records its failure and reason in ``stage_runs`` exactly as in a run. False: probe it in the run."""
    from talkthrough_assets.core.errors import BadMediaError, StageError
    from talkthrough_assets.stages import probe as probe_stage

    try:
        probe_stage.probe_file(path)
    except BadMediaError:
        try:
            pipeline.run_stage("probe", rid)
        except StageError:
            return True
    return False


def set_speaker_names(rid: str, assignments: list[str]) -> tuple[dict, list[str]]:
    """Apply ``S1=Alice``-style assignments (``S1=`` removes); rebuild only the manifest.

    Returns (names now in force, roster labels). ValueError: bad input; RuntimeError: rebuild failed."""
    from talkthrough_assets.stages.turns import speaker_names

    store.check_id(rid)
    changes = speaker_names.parse_name_assignments(assignments)
    if not store.has_partition("sources", rid):
        raise ValueError(f"unknown recording {rid} (process it first)")
    roster = [s["label"] for s in store.read_rows("speakers", rid)]
    unknown = [k for k, v in changes.items() if v is not None and k not in roster]
    if unknown:
        have = ", ".join(roster) if roster else "none: run `talkthrough process FILE --diarize` first"
        raise ValueError(f"unknown speaker label(s) {', '.join(unknown)} (speakers: {have})")
    merged = speaker_names.merge_names(S.load_overrides(rid).get("speaker_names"), changes)
    S.save_overrides(rid, {"speaker_names": merged or None})
    from talkthrough_assets.app import people

    with store.partition_lock(rid, timeout_s=60):
        people.enrol(rid, merged)  # a named label's voice is enrolled under that person (issue #35)
        result = run_stages(rid, ["manifest"])
    if not result.success:
        raise RuntimeError(pipeline.failure_reason(rid) or "see the Dagster run log")
    people.recheck(manifest_again, exclude={rid})  # other recordings' voice matches: their manifests only
    return merged, roster


def manifest_again(rid: str) -> bool:
    """Re-materialize only ``manifest`` of ``rid`` (the caller holds its lock): voice matches changed (issue #35)."""
    return run_stages(rid, ["manifest"]).success


def resolve_recording(ref: str) -> str:
    """A recording id from what a person types: the id itself, or a path to the file (hashed)."""
    if store.ID_RE.fullmatch(ref or ""):
        return ref
    p = Path(ref).expanduser()
    if p.is_file():
        return recording_id_for(p)
    raise ValueError(f"{ref!r} is neither a recording id (16 hex characters) nor an existing file")


def forget(rid: str, inst=None) -> dict:
    """Remove a recording everywhere: every table's partition (search terms and aliases included), its search
    index part and merged postings, frames, WAV, manifest, settings and its Dagster partition (the UI's partition list no longer has it; the past
    runs' event log stays, as Dagster's SQL event log cannot wipe one partition). Refused (PartitionBusy)
    while a run of it is queued or in progress. ValueError: nothing is known of that id."""
    from dagster import DagsterRunStatus, RunsFilter

    store.check_id(rid)
    inst = inst or instance()
    known = store.is_known(rid) or inst.has_dynamic_partition(registry.PARTITIONS_NAME, rid)
    if not known:
        raise ValueError(f"unknown recording {rid}: nothing stored and no Dagster partition")
    with store.partition_lock(rid, timeout_s=0.0):
        fail_orphaned_runs(inst, rid)
        pending = [getattr(DagsterRunStatus, s) for s in ("QUEUED", "NOT_STARTED", *ACTIVE_STATUSES)]
        runs = inst.get_runs(RunsFilter(statuses=pending, tags={"dagster/partition": rid}))
        if runs:
            raise store.PartitionBusy(f"recording {rid} has {len(runs)} run(s) queued or in progress "
                                      f"({', '.join(r.run_id[:8] for r in runs)}); try again when they finish")
        result_keys = chunkstore.keys_of(rid)
        removed = store.forget_recording(rid)
        removed += chunkstore.release(rid, result_keys)  # its Whisper/OCR results no other recording uses
        removed += search_index.forget(rid)  # its index part and its postings in the merged bucket
        partition = inst.has_dynamic_partition(registry.PARTITIONS_NAME, rid)
        if partition:
            inst.delete_dynamic_partition(registry.PARTITIONS_NAME, rid)
    from talkthrough_assets.app import people

    people.recheck(manifest_again)  # its voiceprints and enrolments went with its tables: other recordings' matches change
    return {"recording_id": rid, "removed": removed, "dagster_partition_removed": partition}


def repair(rid: str | None = None) -> list[dict]:
    """Re-make what is missing or damaged (``datacheck``) of one recording or of every one: exactly the stages
    whose outputs are gone or torn (and the manifest), through the Dagster job; a torn ``sources`` file is
    re-written from the probed path. One dict per recording that needed it: problems, stages run, status."""
    from talkthrough_assets.pipeline.datacheck import check, recordings

    store.integrity.forget_skipped()
    store.tables._schema_files_done.clear()  # a torn schema file is written anew
    store.ensure_schema_files()
    out = []
    for r in [store.check_id(rid)] if rid else recordings():
        problems = check(r)
        if not problems:
            continue
        row = {"recording_id": r, "problems": [p.line() for p in problems], "stages_run": [], "status": "repaired"}
        try:
            with store.partition_lock(r, timeout_s=0.0):
                if any(p.what == "table sources" for p in problems):
                    probed = store.read_one("probe", r) or {}
                    if probed.get("path") and Path(probed["path"]).is_file() and recording_id_for(probed["path"]) == r:
                        pipeline.register_source(probed["path"], r)
                stages = pipeline.plan(r)
                if stages:
                    inst = instance()
                    registry.ensure_partition(inst, r)
                    result = run_stages(r, stages, inst)
                    row["stages_run"] = stages
                    if not result.success:
                        row.update(status="failed", reason=pipeline.failure_reason(r) or "run failed (see the Dagster run log)")
        except store.PartitionBusy as e:
            row.update(status="refused", reason=str(e))
        left = check(r) if row["status"] == "repaired" else []
        if left:
            row.update(status="failed", reason="; ".join(p.line() for p in left[:3]))
        out.append(row)
    return out


def summary(rid: str) -> dict:
    """A short, context-friendly summary from stored outputs (no media access)."""
    rec = store.read_one("recordings", rid)
    out: dict = {"recording_id": rid, "manifest": store.data_location(store.manifest_key(rid)) if rec else None}
    if not rec:
        return out
    wc = store.read_one("wall_clock", rid)
    note = probe_stage.readable_note(store.read_one("probe", rid))  # the file ends before its header says
    if note:
        out["warning"] = note
    segs = store.read_rows("speaker_segments", rid) or store.read_rows("segments", rid)
    tr = store.read_one("transcripts", rid) or {}
    di = store.read_one("diarization", rid) or {}
    out.update({
        "filename": rec["filename"], "kind": rec["kind"], "duration_s": rec["duration_ms"] / 1000,
        # the other names the same bytes were registered under (issue #38, item 8: a copy prints them all)
        "aliases": [n for n in pipeline.recording_names(rid) if n != rec["filename"]],
        "wall_clock": wallclock.view(wc if wc and wc.get("available") else None),
        "transcript": {"available": rec["transcript_available"], "reason": tr.get("reason"),
                       "language": rec["language"], "segments": rec["segment_count"],
                       # chunks with a stored Whisper result (derived from the chunk keys), and failed ones
                       "coverage": (chunkstore.coverage(rid) or {}).get("text"),
                       "chunks_reason": pipeline.stage_reason(rid, "segments"),
                       **{k: v for k, v in transcribe.quality(tr).items() if k != "uncovered"}},
        "frames": {"count": rec["frame_count"], "unique": rec["unique_frame_count"],
                   "dir": store.data_location(store.frames_key(rid)),
                   "reason": pipeline.stage_reason(rid, "keyframes"), "contact_sheet": _contact_sheet(rid)},
        # the HTML page each run writes beside the manifest (`talkthrough report` writes one anywhere)
        "report": store.data_location(store.report_key(rid)) if store.exists(store.report_key(rid)) else None,
        "diarized": rec["diarized"], "speakers": rec["speaker_count"],
        # which count was used and why: given with --num-speakers, or found from the audio
        "speakers_note": di.get("speaker_count") if di.get("available") else None,
        # --diarize asked for and not done (models missing, no speech ...): why, here and not only in the manifest
        "diarization_reason": (di.get("reason") or "diarization failed") if di.get("requested")
        and not di.get("available") else None,
        "preview": [
            {"t_ms": s["t0_ms"], "t_wall": t_wall(wc, s["t0_ms"]), "text": s["text"],
             **({"speaker": s["speaker"]} if s.get("speaker") else {})}
            for s in segs[:PREVIEW_SEGMENTS]
        ],
        "more_segments": max(0, len(segs) - PREVIEW_SEGMENTS),
    })
    if rec["diarized"]:  # voice matches with enrolled people, as the published manifest shows them (issue #35)
        from talkthrough_assets.stages.turns import voices

        try:
            shown = voices.published_matches(store.get_json(store.manifest_key(rid)))
        except (OSError, ValueError):
            shown = {}
        if shown:
            out["voice_matches"] = {lab: m.get("hint") or voices.describe(m) for lab, m in shown.items()}
    return out


def _contact_sheet(rid: str) -> str | None:
    """The keyframes' contact sheet (a grid of up to 16 of them), where the keyframes stage wrote one."""
    rows = store.read_rows("keyframes", rid)
    if not rows:
        return None
    folder = rows[0]["file"].rpartition("/")[0]
    return store.data_location(f"{folder}/contact_sheet.jpg") if "contact_sheet.jpg" in store.list_names(folder) \
        else None


def list_recordings() -> list[dict]:
    con = store.connect()
    try:
        cur = con.execute("SELECT recording, filename, kind, duration_ms, recorded_at, segment_count, frame_count, "
                          "diarized FROM recordings ORDER BY recorded_at NULLS LAST, filename")
        cols = [d[0] for d in cur.description]
        rows = [dict(zip(cols, r)) for r in cur.fetchall()]
    finally:
        con.close()
    for r in rows:  # derived from the stored chunk keys, not recorded
        cov = chunkstore.coverage(r["recording"]) or {}
        r["coverage"] = cov.get("text")
        r["chunks"] = f"{cov['covered']}/{cov['chunks']}" if cov else None
    return rows


def find_recordings(text: str) -> list[dict]:
    """Registered recordings (processed, failed or not run yet) with a copy whose file name or path contains
    ``text`` (case-insensitive): the recording id is the Dagster partition to pick for that file."""
    con = store.connect()
    try:
        ids = [r[0] for r in con.execute(
            "SELECT DISTINCT recording FROM sources WHERE contains(lower(path), lower(?)) ORDER BY recording",
            [text]).fetchall()]
    finally:
        con.close()
    out = []
    for rid in ids:
        names = pipeline.recording_names(rid)
        processed = store.read_one("recordings", rid) is not None
        reason = pipeline.failure_reason(rid)
        out.append({"recording": rid, "filename": names[0] if names else None, "aliases": names[1:],
                    "state": "failed" if reason else "processed" if processed else "registered",
                    "reason": reason, "coverage": (chunkstore.coverage(rid) or {}).get("text")})
    return out

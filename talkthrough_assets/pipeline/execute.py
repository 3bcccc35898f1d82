"""Running stages: one stage of one recording (:func:`run_stage`: the stage module's ``run()``, as its
StageSpec holds it, under the recording's lock, recording what config/code produced it), the concurrent
scheduler of a recording's stages (:func:`run_stages`), what to re-run (:func:`plan`), model prewarm and
source registration. No Dagster here; Dagster assets are thin wrappers over :func:`run_stages`.
"""

from __future__ import annotations

import queue
import threading
import time
from contextlib import contextmanager
from datetime import datetime, timezone
from pathlib import Path
from typing import Callable

from talkthrough_assets.core import config
from talkthrough_assets.pipeline import datacheck
from talkthrough_assets.pipeline import options
from talkthrough_assets.pipeline import settings as S
from talkthrough_assets import store
from talkthrough_assets.pipeline.engines import Engines
from talkthrough_assets.pipeline.engines import shared as shared_engines
from talkthrough_assets.core import stop as stop_flag
from talkthrough_assets.core.errors import DiskSpaceError, InternalError, StageError
from talkthrough_assets.stages.segments import stage as chunkstore
from talkthrough_assets.stages import cpu_plan
from talkthrough_assets.stages import keyframes as keyframes_stage
from talkthrough_assets.stages import manifest as manifest_stage
from talkthrough_assets.pipeline import partial as partial_stage
from talkthrough_assets.stages import probe as probe_stage
from talkthrough_assets.stages import runner
from talkthrough_assets.stages.segments import transcribe as transcribe_stage
from talkthrough_assets.stages.runner import CheckResult, StageResult, source_path, stage_reason, stage_state  # noqa: F401
from talkthrough_assets.pipeline.stagespec import SPECS

CODE_VERSIONS = {sp.name: sp.code_version for sp in SPECS}  # from stagespec; tests may patch this dict


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="milliseconds")


# --------------------------------------------------------------------------- sources

def register_source(path: str | Path, recording_id: str) -> dict:
    """Record that ``path`` holds the bytes of ``recording_id`` (aliases accumulate)."""
    p = Path(path).resolve()
    st = p.stat()
    rows = store.read_rows("sources", recording_id)
    first_seen = next((r["seen_at"] for r in rows if r["path"] == str(p)), None)  # kept: the order is first sight
    rows = [r for r in rows if r["path"] != str(p)]
    row = {"path": str(p), "filename": p.name, "size_bytes": st.st_size, "mtime": st.st_mtime,
           "seen_at": first_seen or _now()}
    if first_seen and any(r == row for r in store.read_rows("sources", recording_id)):
        return row  # seen before as it is: nothing written (a read-only data root still serves it)
    store.write_table("sources", recording_id, rows + [row])
    return row


# --------------------------------------------------------------------------- stages and checks

# each stage's run() (its module's), as its StageSpec holds it: (recording id, effective settings) -> StageResult
RUNNERS: dict[str, Callable[..., StageResult]] = {spec.name: spec.run for spec in SPECS}
# the stages whose run() also takes the loaded Engines (StageSpec.engines)
ENGINE_STAGES = frozenset(spec.name for spec in SPECS if spec.engines)
_CHECKS = {c.name: c for spec in SPECS for c in spec.checks}

frame_index_check = keyframes_stage.frame_index_check
transcript_check = transcribe_stage.transcript_check
build_manifest = manifest_stage.build_stored


def verify_check(name: str, rid: str) -> CheckResult:
    """Re-evaluate a check from what is on disk now (the check executed on its own, e.g. from the UI)."""
    if name not in _CHECKS:
        raise KeyError(f"unknown check {name!r}")
    return _CHECKS[name].verify(rid)


def recording_names(rid: str) -> list[str]:
    """The file names of a recording's registered copies, first registered first: the first is the name a
    person knows it by (the run tag, every stage's metadata), the others are its aliases."""
    rows = store.read_rows("sources", rid) if store.has_partition("sources", rid) else []
    return list(dict.fromkeys(r["filename"] for r in sorted(rows, key=lambda r: r["seen_at"])))


def recording_filename(rid: str) -> str | None:
    """The name the recording was first registered under (a later copy under another name is an alias)."""
    names = recording_names(rid)
    return names[0] if names else None


# A stage waits this long for another writer of the same recording before failing with a reason.
STAGE_LOCK_WAIT_S = 600.0

# Progress hooks (stage, recording_id, "started"|"ok"|"failed", info); the CLI shows them live.
listeners: list[Callable[[str, str, str, dict], None]] = []


def _notify(stage: str, rid: str, state: str, info: dict) -> None:
    for fn in list(listeners):
        fn(stage, rid, state, info)


def run_stage(stage: str, recording_id: str, overrides: dict | None = None,
              engines: Engines | None = None, stop: "threading.Event | None" = None) -> StageResult:
    """Run one stage for one recording; persist ``overrides`` first; record success or failure.
    ``engines``: the loaded models (default: this process's, :func:`engines.shared`). ``stop``: set when the
    run is to stop; the stage then ends at its next checkpoint with :class:`stop.Interrupted`."""
    with stop_flag.bound(stop):
        return _run_stage(stage, recording_id, overrides, engines)


def _run_stage(stage: str, recording_id: str, overrides: dict | None, engines: Engines | None) -> StageResult:
    store.check_id(recording_id)
    _notify(stage, recording_id, "started", {})
    if overrides:
        S.save_overrides(recording_id, {k: v for k, v in overrides.items() if v is not None})
    cfg = S.effective(recording_id)
    t0 = time.perf_counter()
    base = {"stage": stage, "config_hash": S.config_hash(stage, cfg), "code_version": CODE_VERSIONS[stage]}
    try:
        with store.partition_lock(recording_id, timeout_s=STAGE_LOCK_WAIT_S):
            extra = (engines or shared_engines(),) if stage in ENGINE_STAGES else ()
            stop_flag.checkpoint()  # stopped while it waited for the lock
            with cpu_plan.running(stage):  # the thread plan: OCR widens when Whisper is not running
                result = RUNNERS[stage](recording_id, options.build(stage, cfg), *extra)
    except store.PartitionBusy as e:
        _notify(stage, recording_id, "failed", {"reason": str(e)})
        raise StageError(str(e), stage=stage) from None
    except StageError as e:
        e.stage = e.stage or stage
        _record(recording_id, dict(base, status="failed", reason=e.reason, elapsed_s=time.perf_counter() - t0))
        _notify(stage, recording_id, "failed", {"reason": e.reason})
        raise
    except Exception as e:  # unexpected: still leave a one-line reason behind
        disk = disk_reason(e, recording_id)
        if disk is not None:  # a full or read-only disk: the environment, said in one line
            err: StageError = DiskSpaceError(disk, stage=stage)
            _record(recording_id, dict(base, status="failed", reason=disk, elapsed_s=time.perf_counter() - t0))
        else:  # not a StageError: a bug or a broken dependency, never the input's fault; say so
            err = InternalError.wrap(e, stage)
            _record(recording_id, dict(base, status="failed", reason=err.reason, internal=True,
                                       elapsed_s=time.perf_counter() - t0))
        _notify(stage, recording_id, "failed", {"reason": err.reason})
        raise err from e
    elapsed = time.perf_counter() - t0
    # a stage that succeeded with less than it wanted (unreadable stream ...) keeps its reason
    _record(recording_id, dict(base, status="ok", reason=result.reason, elapsed_s=elapsed))
    result.metadata["elapsed_s"] = round(elapsed, 3)
    _notify(stage, recording_id, "ok", result.metadata)
    return result


# Independent stages run at once: the audio branch (audio -> segments -> turns) and the visual
# branch (keyframes -> dedup -> ocr) are CPU-bound on different engines, so two workers overlap
# them. TALKTHROUGH_STAGE_WORKERS=1 runs stages one after another (same order, same outputs).
def stage_workers() -> int:
    return max(1, config.get("TALKTHROUGH_STAGE_WORKERS") or 1)


STARTED = "started"  # yielded by run_stages when a stage is handed to a worker


class Skipped(Exception):
    """A stage not run because a stage it depends on failed in the same run."""

    def __init__(self, stage: str, upstream: str):
        super().__init__(f"{stage}: skipped ({upstream} failed)")
        self.stage, self.upstream = stage, upstream


VISUAL_STAGES = ("keyframes", "dedup", "ocr")
_shared_runs = runner.sharing_cpu  # recordings whose current run overlaps Whisper with the visual branch


@contextmanager
def _sharing(recording_id: str, stages: list[str], workers: int):
    shared = _both_branches(stages, workers)
    if shared:
        _shared_runs.add(recording_id)
    try:
        yield
    finally:
        _shared_runs.discard(recording_id)


def run_stages(recording_id: str, stages: list[str], overrides: dict | None = None,
               workers: int | None = None, engines: Engines | None = None):
    """Run ``stages`` of one recording, each as soon as the selected stages it depends on are done,
    up to ``workers`` at a time (threads). Yields ``(stage, STARTED)`` when a stage starts and
    ``(stage, result)`` when it ends, in completion order, where a result is the stage's StageResult, a
    :class:`StageError`, or :class:`Skipped` for the downstream of a failure; ``(stage, Progress(info))``
    as a long stage reports it (the segments stage after each chunk: ``runner.progress``). The caller's thread
    does all the yielding (Dagster writes its events from there). ``engines``: the loaded models the
    stages run on (Dagster passes its resources; default: this process's, :func:`engines.shared`)."""
    from concurrent.futures import FIRST_COMPLETED, ThreadPoolExecutor, wait

    selected = S.ordered(set(stages))
    _last_failure.pop(recording_id, None)
    if overrides:  # persisted once, before any stage reads the settings
        store.check_id(recording_id)
        S.save_overrides(recording_id, {k: v for k, v in overrides.items() if v is not None})
    # a selected stage waits for every selected stage upstream of it, also through unselected ones (a repair
    # runs keyframes and manifest alone: the manifest reads the new keyframes through dedup and ocr)
    deps = {s: [d for d in _upstream(s) if d in selected] for s in selected}
    done: set[str] = set()
    failed: dict[str, str] = {}  # stage -> the failed stage it traces back to
    pending = list(selected)
    workers = workers or stage_workers()
    stop = threading.Event()  # set when the caller stops listening: the stage threads end at a checkpoint
    # the run holds the recording's writer lock throughout; its stage threads re-enter it
    events: queue.SimpleQueue = queue.SimpleQueue()

    def on_progress(stage: str, rid: str, info: dict) -> None:
        if rid == recording_id:
            events.put((stage, Progress(info)))

    runner.progress_listeners.append(on_progress)
    previews: partial_stage.Publisher | None = None
    reasons: dict[str, str] = {}
    with _removing(runner.progress_listeners, on_progress), \
            store.partition_lock(recording_id, timeout_s=STAGE_LOCK_WAIT_S), \
            ThreadPoolExecutor(max_workers=workers, thread_name_prefix="stage") as pool, \
            _sharing(recording_id, selected, workers):
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
                        running[pool.submit(run_stage, stage, recording_id, None, engines, stop)] = stage
                        yield stage, STARTED
                if not running:
                    continue
                finished, _ = wait(list(running), return_when=FIRST_COMPLETED, timeout=1.0)
                while not events.empty():
                    event = events.get()
                    if event[0] == "segments" and "manifest" in selected and "segments" not in done:
                        previews = previews or _previews(recording_id, selected, done)
                        previews.chunk_done()  # a partial generation of the transcript so far, when one is due
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
        finally:  # normal end, an error or interrupt in the caller (Ctrl-C, SIGTERM), the generator closed
            stop.set()  # before the pool's exit waits for its threads: they end at their next checkpoint
            if previews is not None and "manifest" not in done:  # its partial generation says the run stopped
                previews.stopped(reasons.get("first", "the run was stopped"))


def _previews(recording_id: str, selected: list[str], done: set[str]) -> partial_stage.Publisher:
    """The partial generations of this run (#19 item 5, ``stages/partial.py``): its wall clock only once this
    run's is current (not selected: current already; selected: once done)."""
    def wall_clock() -> dict | None:
        return store.read_one("wall_clock", recording_id) if "wall_clock" not in selected or "wall_clock" in done \
            else None

    return partial_stage.Publisher(recording_id, S.effective(recording_id), wall_clock=wall_clock)


def _upstream(stage: str) -> set[str]:
    """Every stage ``stage`` depends on, directly or through others."""
    out, todo = set(), list(S.DEPS[stage])
    while todo:
        d = todo.pop()
        if d not in out:
            out.add(d)
            todo.extend(S.DEPS[d])
    return out


class Progress(dict):
    """A progress report of a running stage, as :func:`run_stages` yields it (share, text, eta_s)."""


@contextmanager
def _removing(listeners: list, fn):
    try:
        yield
    finally:
        if fn in listeners:
            listeners.remove(fn)


def _has_video(recording_id: str) -> bool:
    p = store.read_one("probe", recording_id)
    if p is not None:
        return bool(p.get("has_video"))
    try:  # before probe (prewarm): judge by the file name
        return source_path(recording_id).suffix.lower() not in probe_stage.AUDIO_EXTS - {".webm"}
    except StageError:
        return False


def _both_branches(stages: list[str], workers: int) -> bool:
    return workers >= 2 and "segments" in stages and bool(set(VISUAL_STAGES) & set(stages))


def _overlaps(recording_id: str, stages: list[str], workers: int) -> bool:
    return _both_branches(stages, workers) and _has_video(recording_id)


def prewarm(recording_id: str, stages: list[str], engines: Engines | None = None) -> None:
    """Load the engines the planned stages will need: Whisper here (:func:`prewarm_whisper`), then OCR in a
    background thread (:func:`prewarm_ocr`). Loads into ``engines`` (default: this process's, the ones
    Dagster's resources hand the run)."""
    prewarm_whisper(recording_id, stages, engines)
    prewarm_ocr(recording_id, stages, engines)


def prewarm_whisper(recording_id: str, stages: list[str], engines: Engines | None = None) -> None:
    """Load Whisper now, in the calling thread, when ``segments`` is planned (~0.5-1 s, native code: a
    thread importing Dagster meanwhile runs beside it). Not in a thread of its own: a CTranslate2 model
    loaded in a thread while Dagster was imported decoded its first chunk at ~5x the CPU (the 30-min bench
    meeting's first 3-min chunk: 74 s of CPU vs 13 s when loaded first, same output; bench/bench_partial.py,
    whose first partial transcript waited for it)."""
    if "segments" not in stages:
        return
    from talkthrough_assets.store.models import resolve_whisper

    engines = engines or shared_engines()
    cfg = S.effective(recording_id)
    threads = transcribe_stage.cpu_threads(shared=_overlaps(recording_id, stages, stage_workers()),
                                           override=config.get("TALKTHROUGH_WHISPER_THREADS"))
    _quietly(lambda: engines.whisper.warm(resolve_whisper(cfg.get("whisper_model"))[0], threads))


def prewarm_ocr(recording_id: str, stages: list[str], engines: Engines | None = None) -> None:
    """Start loading RapidOCR in a background thread when ``ocr`` is planned for a recording with a picture
    (ONNX Runtime releases the GIL while loading; the ocr stage waits for a load under way, never starting a
    second one). Its import is Python (~1.5 s here): the CLI starts it once Dagster's instance is open, so
    that it overlaps the run's start and the first stages (probe, audio, keyframes) rather than Dagster's
    own import, which needs the interpreter just as much."""
    engines = engines or shared_engines()
    if "ocr" in stages and S.effective(recording_id).get("ocr") and _may_have_video(recording_id):
        threading.Thread(target=_quietly, args=(lambda: engines.ocr.status(True),), daemon=True,
                         name="prewarm").start()


def _may_have_video(rid: str) -> bool:
    """From the probe row when there is one, else the source's extension (no media is opened here)."""
    row = store.read_one("probe", rid)
    if row is not None:
        return bool(row["has_video"])
    rows = store.read_rows("sources", rid)
    audio_only = probe_stage.AUDIO_EXTS - {".webm"}  # webm is as often video
    return not rows or Path(rows[-1]["path"]).suffix.lower() not in audio_only


def _quietly(fn) -> None:
    try:
        fn()
    except Exception:  # the stage itself reports a missing or broken model, with a reason
        pass


_last_failure: dict[str, str] = {}  # recording -> its last failure's "stage: reason" in this process


def _record(rid: str, row: dict) -> None:
    row["finished_at"] = _now()
    if row["status"] == "failed":
        _last_failure[rid] = f"{row['stage']}: {row['reason']}"
    try:
        store.write_table("stage_runs", rid, [row], part=row["stage"])
    except OSError as e:
        # a full disk that keeps the failure from being recorded must not hide its reason behind a second error
        if row["status"] != "failed" or store.diskfault.kind(e) is None:
            raise


def disk_reason(e: BaseException, rid: str | None = None) -> str | None:
    """``disk full at <path>: <n> MB free, <m> MB needed`` / ``read-only data root: <path>`` when ``e`` is a
    disk fault (anywhere: stage outputs, the model cache, Dagster's storage, a lock), else None; <m> is the
    probe preflight's estimate for the recording."""
    if store.diskfault.kind(e) is None:
        return None
    need = None
    probed = store.read_one("probe", rid) if rid else None
    if probed:
        try:
            need = sum(probe_stage.estimate_need(probed, S.effective(rid)).values())
        except Exception:  # an estimate only
            need = None
    return store.diskfault.reason(e, store.data_location(), need)


def plan(recording_id: str, *, force: bool = False) -> list[str]:
    """Stages to (re)run: missing, failed, changed config or code -> those plus their downstream."""
    if force:
        return list(S.STAGES)
    cfg = S.effective(recording_id)
    state = stage_state(recording_id)
    stale = set()
    for stage in S.STAGES:
        st = state.get(stage)
        if (st is None or st["status"] != "ok" or st["config_hash"] != S.config_hash(stage, cfg)
                or st["code_version"] != CODE_VERSIONS[stage] or (stage == "segments" and chunkstore.needs_retry(st))):
            stale.add(stage)
    if "turns" not in stale and cfg.get("diarize") and _diarization_models_appeared(recording_id):
        stale.add("turns")
    if "manifest" not in stale and cfg.get("diarize") and _voice_matches_changed(recording_id, cfg):
        stale.add("manifest")  # someone enrolled, renamed or forgotten since: only the manifest re-checks
    # outputs deleted or damaged since (a torn Parquet file, a removed manifest or frame folder): exactly the
    # stages that re-make them, and the manifest (datacheck)
    repair = datacheck.repair_stages(recording_id) if len(stale) < len(S.STAGES) else set()
    return S.ordered(S.downstream(stale) | repair)


def _voice_matches_changed(rid: str, cfg: dict) -> bool:
    from talkthrough_assets.stages.turns import voices

    try:
        return voices.hints_changed(rid, cfg.get("speaker_names") or None)
    except Exception:  # noqa: BLE001 - a damaged people partition never blocks processing
        return False


def _diarization_models_appeared(rid: str) -> bool:
    """A diarization that ran without its models is retried once they can be found (no download)."""
    row = store.read_one("diarization", rid)
    if not row or not row["requested"] or row["available"] or "diarization models" not in (row["reason"] or ""):
        return False
    from talkthrough_assets.stages.turns import models as diarize_models

    try:
        diarize_models.resolve_models(download=False, models_dir=config.get(diarize_models.ENV_MODELS_DIR))
    except diarize_models.ModelUnavailable:
        return False
    return True


def failed_stage(recording_id: str) -> dict | None:
    """The stage_runs row of a failed stage (its ``internal`` flag: a bug or a broken install), or None."""
    return next((r for r in stage_state(recording_id).values() if r["status"] == "failed"), None)


def failure_reason(recording_id: str) -> str | None:
    failed = failed_stage(recording_id)
    # the stage_runs row, else (a full disk kept it from being written) what this process saw
    return f"{failed['stage']}: {failed['reason']}" if failed else _last_failure.get(recording_id)

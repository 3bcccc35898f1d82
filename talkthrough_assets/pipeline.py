"""Per-partition stage runners: read upstream outputs from the store, call the stage function,
write outputs atomically, record what config/code produced them. No Dagster here.

Every runner returns ``{"metadata": {...}, "data_version": str}``; Dagster assets are thin
wrappers over :func:`run_stage`.
"""

from __future__ import annotations

import hashlib
import importlib
import inspect
import json
import time
from contextlib import contextmanager
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable

from . import config
from . import settings as S
from . import store
from .engines import Engines
from .engines import shared as shared_engines
from .errors import BadMediaError, InternalError, StageError
from .ids import recording_id
from .stagespec import SPECS
from .stages import audio as audio_stage
from .stages import dedup as dedup_stage
from .stages import keyframes as keyframes_stage
from .stages import manifest as manifest_stage
from .stages import ocr as ocr_stage
from .stages import probe as probe_stage
from .stages import terms as terms_stage
from .stages import transcribe as transcribe_stage
from .stages import wallclock as wallclock_stage

CODE_VERSIONS = {sp.name: sp.code_version for sp in SPECS}  # from stagespec; tests may patch this dict


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="milliseconds")


def _digest(obj: Any) -> str:
    return hashlib.sha256(json.dumps(obj, sort_keys=True, default=str).encode()).hexdigest()[:16]


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
    store.write_table("sources", recording_id, rows + [row])
    return row


def source_path(recording_id: str) -> Path:
    """The newest registered path that still exists (aliases are fallbacks)."""
    rows = store.read_rows("sources", recording_id)
    if not rows:
        raise StageError(f"recording {recording_id} has no registered source file", stage="probe")
    for r in sorted(rows, key=lambda r: r["seen_at"], reverse=True):
        if Path(r["path"]).exists():
            return Path(r["path"])
    raise StageError(f"source file is gone: {rows[-1]['path']} (moved or deleted since it was registered)",
                     stage="probe")


# --------------------------------------------------------------------------- stage runners

def _probe(rid: str, cfg: dict) -> dict:
    src = source_path(rid)
    if recording_id(src) != rid:  # hashed once per process: registration already did it
        raise StageError(f"{src.name} changed since it was registered (sha256 no longer matches {rid})")
    info = probe_stage.probe_file(src, max_seconds=cfg["max_seconds"])
    probe_stage.preflight_disk(info, store.home(), max_frames=int(cfg["max_frames"]),
                               min_free_bytes=config.get("TALKTHROUGH_MIN_FREE_BYTES"))
    store.write_table("probe", rid, [info])
    md = {"filename": src.name, "duration_s": round(info["duration_ms"] / 1000, 3),
          **{k: info[k] for k in ("kind", "duration_ms", "has_audio", "has_video", "width", "height", "cap_hit")}}
    return {"metadata": md, "data_version": _digest(info)}


def _probe_row(rid: str) -> dict:
    row = store.read_one("probe", rid)
    if row is None:
        raise StageError("probe output missing: materialize `probe` first")
    return row


def _wall_clock(rid: str, cfg: dict) -> dict:
    p = _probe_row(rid)
    try:
        wc = wallclock_stage.resolve(tags=p["tags_json"], duration_ms=p["duration_ms"], file_mtime=p["file_mtime"],
                                     recorded_at=cfg.get("recorded_at"))
    except ValueError as e:
        raise StageError(str(e)) from None
    store.write_table("wall_clock", rid, [wc])
    return {"metadata": {"start_utc": wc["start_utc"] or "null", "source": wc["source"] or "none",
                         "confidence": wc["confidence"] or "none"}, "data_version": _digest(wc)}


def _audio(rid: str, cfg: dict) -> dict:
    p = _probe_row(rid)
    dst = store.audio_path(rid)
    dst.parent.mkdir(parents=True, exist_ok=True)
    reason = None
    with store.atomic_path(dst) as tmp:
        try:
            if not p["has_audio"]:
                raise BadMediaError("no audio stream (video-only file)")
            res = audio_stage.extract_wav(p["path"], tmp, max_seconds=p["max_seconds"] if p["cap_hit"] else None)
        except BadMediaError as e:  # unreadable audio: an empty WAV and a reason; frames still go on
            reason = e.reason if not p["has_audio"] else f"audio stream could not be read: {e.reason}"
            audio_stage.write_silent_wav(tmp)
            res = {"samples": 0, "duration_ms": 0, "peak": 0}
    store.publish_file(dst, store.audio_key(rid))
    md = {"has_audio": p["has_audio"], "audio_ms": res["duration_ms"], "peak": res["peak"], "reason": reason or ""}
    return {"metadata": md, "data_version": _digest([p["path"], p["size_bytes"], res]), "reason": reason}


def _segments(rid: str, cfg: dict, engines: Engines) -> dict:
    from .models import resolve_whisper

    p = _probe_row(rid)
    ref, label = resolve_whisper(cfg.get("whisper_model"))
    peak = 0
    audio_reason = stage_reason(rid, "audio")
    if not p["has_audio"]:
        out = transcribe_stage.unavailable("no audio stream (video-only file)", label)
    elif audio_reason:
        out = transcribe_stage.unavailable(audio_reason, label)
    else:
        samples = audio_stage.load_wav(_wav(rid))  # read once: transcript + loudness check
        peak = audio_stage.peak(samples)
        out = transcribe_stage.transcribe(samples, model_ref=ref, model_label=label, language=cfg.get("language"),
                                          threads=_whisper_threads(shared=_shares_cpu(rid)),
                                          vocabulary=cfg.get("vocabulary"), beam_size=int(cfg.get("beam_size") or transcribe_stage.BEAM_SIZE),
                                          whisper=engines.whisper)
    store.write_table("segments", rid, out["segments"])
    store.write_table("words", rid, out["words"])
    docs = [(s["seq"], s["t0_ms"], s["text"]) for s in out["segments"]]
    store.write_table("terms", rid, terms_stage.term_rows("transcript", docs), part="transcript")
    store.write_table("transcripts", rid, [out["meta"]])
    m = out["meta"]
    head = " ".join(s["text"] for s in out["segments"][:5])[:400]
    md = {"available": m["available"], "reason": m["reason"] or "", "language": m["language"] or "",
          "segments": m["segment_count"], "words": m["word_count"], "transcript_head": head,
          "elapsed_s": m["elapsed_s"], "dropped_segments": m.get("dropped_count") or 0}
    checks = [transcript_check(p["has_audio"] and peak > 1000, m["segment_count"])]
    return {"metadata": md, "data_version": _digest(out["segments"]), "checks": checks}


def transcript_check(loud: bool, segment_count: int) -> dict:
    """Audible audio (peak above ~-30 dBFS) should yield a transcript; a warning, not a failure."""
    return {"name": "transcript_present_when_audible", "passed": (not loud) or segment_count > 0,
            "description": (f"audible audio, {segment_count} transcript segments" if loud
                            else "no audible audio: nothing expected")}


def verify_check(name: str, rid: str) -> dict:
    """Re-evaluate a check from what is on disk now (the check executed on its own, e.g. from the UI)."""
    if name == "frame_index_matches_disk":
        return frame_index_check(rid)
    if name == "manifest_schema_valid":
        try:
            published = store.get_json(store.manifest_key(rid))
            problems = (manifest_stage.validate(published) if published is not None
                        else ["no published manifest (materialize `manifest`)"])
        except (OSError, ValueError) as e:
            problems = [f"unreadable manifest: {e}"]
        return {"name": name, "passed": not problems,
                "description": "; ".join(problems) if problems else manifest_stage.SCHEMA}
    if name == "transcript_present_when_audible":
        probe = store.read_one("probe", rid) or {}
        peak = 0
        if probe.get("has_audio") and store.exists(store.audio_key(rid)):
            peak = audio_stage.peak(audio_stage.load_wav(_wav(rid)))
        return transcript_check(peak > 1000, len(store.read_rows("segments", rid)))
    raise KeyError(f"unknown check {name!r}")


def _whisper_threads(shared: bool) -> int:
    return transcribe_stage.cpu_threads(shared=shared, override=config.get("TALKTHROUGH_WHISPER_THREADS"))


def _wav(rid: str) -> Path:
    """The recording's 16 kHz WAV as a local file (this machine's copy when the data root is remote)."""
    return store.local_file(store.audio_key(rid))


def recording_names(rid: str) -> list[str]:
    """The file names of a recording's registered copies, first registered first: the first is the name a
    person knows it by (the run tag, every stage's metadata), the others are its aliases."""
    rows = store.read_rows("sources", rid) if store.has_partition("sources", rid) else []
    return list(dict.fromkeys(r["filename"] for r in sorted(rows, key=lambda r: r["seen_at"])))


def recording_filename(rid: str) -> str | None:
    """The name the recording was first registered under (a later copy under another name is an alias)."""
    names = recording_names(rid)
    return names[0] if names else None


def _turns(rid: str, cfg: dict, engines: Engines) -> dict:
    if not cfg.get("diarize"):
        row = {"available": False, "requested": False, "reason": "diarization not requested"}
        out = {"diarization": row, "turns": [], "speakers": [], "speaker_segments": []}
    else:
        p = _probe_row(rid)
        # no OCR name candidates here: ocr is not upstream of turns (the manifest stage derives them)
        out = engines.diarizer.run_turns(
            _wav(rid) if p["has_audio"] else None,
            segments=store.read_rows("segments", rid), words=store.read_rows("words", rid),
            num_speakers=cfg.get("num_speakers"), threshold=cfg.get("diarize_threshold"),
        )
    store.write_table("diarization", rid, [out["diarization"]])
    store.write_table("turns", rid, out["turns"])
    store.write_table("speakers", rid, out["speakers"])
    store.write_table("speaker_segments", rid, out["speaker_segments"])
    d = out["diarization"]
    md = {"requested": bool(d.get("requested")), "available": bool(d.get("available")),
          "reason": d.get("reason") or "", "speakers": len(out["speakers"]), "turns": len(out["turns"])}
    return {"metadata": md, "data_version": _digest([out["turns"], out["speaker_segments"]])}


def _keyframes(rid: str, cfg: dict) -> dict:
    p = _probe_row(rid)
    if not p["has_video"]:
        store.write_table("keyframes", rid, [])
        return {"metadata": {"frames": 0, "reason": "audio-only recording: no video stream"},
                "data_version": _digest([]), "checks": [frame_index_check(rid, [])]}
    gen = store.new_frames_generation(rid)
    try:
        res = keyframes_stage.extract(
            p["path"], gen, duration_s=p["duration_ms"] / 1000, max_frames=int(cfg["max_frames"]),
            scene_threshold=float(cfg["scene_threshold"]), max_seconds=p["max_seconds"] if p["cap_hit"] else None)
    except BadMediaError as e:
        # the video stream cannot be read (header-only, unknown codec ...): processed up to the damage,
        # i.e. no frames, a recorded reason, and the rest of the recording still goes through
        store.prune_frame_generations(rid, keep=set())
        store.write_table("keyframes", rid, [])
        reason = f"no keyframes: {e.reason}"
        return {"metadata": {"frames": 0, "reason": reason}, "data_version": _digest(["unreadable", e.reason]),
                "reason": reason, "checks": [frame_index_check(rid, [])]}
    except BaseException:
        store.prune_frame_generations(rid, keep=_live_generations(rid))
        raise
    rel = store.generation_key(gen)
    rows = [dict(f, file=f"{rel}/{f['file']}") for f in res["frames"]]
    previous = _live_generations(rid)
    store.publish_frames_generation(gen)  # the JPEGs first, then the table that points at them
    store.write_table("keyframes", rid, rows)
    # keep the previous generation one more round for readers that loaded the old table
    store.prune_frame_generations(rid, keep={gen.name} | previous)
    md = {"frames": len(rows), "floor_s": round(res["floor_s"], 3), "decoded_frames": res["decoded"],
          "decode_path": res["path"], "gops": res["gops"], "gops_decoded": res["gops_decoded"],
          "max_gop_s": res["max_gop_s"], "rotation": res["rotation"], "cap_hit": res["cap_hit"],
          "budget_skipped": res["budget_skipped"], "reason": res["reason"] or "", "frames_dir": str(gen)}
    if rows:
        md["contact_sheet"] = keyframes_stage.contact_sheet([gen / f["file"] for f in res["frames"]],
                                                            gen / "contact_sheet.jpg")
    return {"metadata": md, "data_version": _digest(rows), "checks": [frame_index_check(rid, rows)],
            "reason": res["reason"]}


def frame_index_check(rid: str, rows: list[dict] | None = None) -> dict:
    """Every indexed keyframe exists on disk."""
    rows = store.read_rows("keyframes", rid) if rows is None else rows
    listed: dict[str, set[str]] = {}  # one listing per generation folder, not a stat (a HEAD on S3) per frame

    def stored(key: str) -> bool:
        folder, _, name = key.rpartition("/")
        if folder not in listed:
            listed[folder] = set(store.list_names(folder))
        return name in listed[folder]

    missing = [r["file"] for r in rows if not stored(r["file"])]
    return {"name": "frame_index_matches_disk", "passed": not missing,
            "description": f"{len(rows) - len(missing)}/{len(rows)} indexed keyframes on disk"
            + (f"; missing e.g. {missing[0]}" if missing else "")}


def _live_generations(rid: str) -> set[str]:
    """Frame folders someone may still read: the keyframes table's and the published manifest's
    (MCP readers serve the manifest, which lags the table until the manifest stage runs)."""
    live = {Path(r["file"]).parent.name for r in store.read_rows("keyframes", rid)}
    published = store.get_json(store.manifest_key(rid), None) or {}
    live |= {Path(i["file"]).parent.name for i in (published.get("frames") or {}).get("items") or [] if i.get("file")}
    return live


def _dedup(rid: str, cfg: dict) -> dict:
    frames = store.read_rows("keyframes", rid)
    sigs = [dedup_stage.signature(store.local_file(f["file"], immutable=True)) for f in frames]
    rows = dedup_stage.mark(frames, sigs)
    store.write_table("dedup", rid, rows)
    unique = sum(1 for r in rows if r["duplicate_of"] is None)
    return {"metadata": {"frames": len(rows), "unique": unique}, "data_version": _digest(rows)}


def _ocr(rid: str, cfg: dict, engines: Engines) -> dict:
    frames = store.read_rows("keyframes", rid)
    dedup_by_ms = {d["ms"]: d for d in store.read_rows("dedup", rid)}
    unique = [(f, d) for f in frames for d in [dedup_by_ms.get(f["ms"]) or {}] if d.get("duplicate_of") is None]
    if unique or not cfg.get("ocr"):
        engine, status = engines.ocr.status(bool(cfg.get("ocr")))
    else:  # nothing to read (an audio file, no frames): the engine is not even loaded
        engine, status = None, "not run: no keyframes"
    rows, partial = [], 0
    if engine is not None:
        unique = [{"ms": f["ms"], "path": store.local_file(f["file"], immutable=True),
                   "bands": json.loads(d["changed_json"]) if d.get("changed_json") else None} for f, d in unique]
        for r in ocr_stage.read_frames(engine, unique):
            partial += r.pop("read") == "bands"
            rows.append({"engine": status, **r})
    store.write_table("ocr", rid, rows)
    docs = [(r["ms"], r["ms"], r["text"]) for r in rows if r["text"]]
    store.write_table("terms", rid, terms_stage.term_rows("ocr", docs), part="ocr")
    md = {"engine": status, "frames_read": len(rows), "frames_read_in_bands": partial,
          "frames_with_text": len(docs)}
    return {"metadata": md, "data_version": _digest(rows)}


def build_manifest(rid: str, cfg: dict) -> dict:
    keyframes = store.read_rows("keyframes", rid)
    turns, ocr = store.read_rows("turns", rid), store.read_rows("ocr", rid)
    speakers = store.read_rows("speakers", rid)  # the manifest adds their OCR name candidates
    frames_reason = stage_reason(rid, "keyframes")
    return manifest_stage.build(
        frames_reason=frames_reason, recording_id=rid, probe=_probe_row(rid), wall_clock=store.read_one("wall_clock", rid),
        transcript=store.read_one("transcripts", rid), segments=store.read_rows("segments", rid),
        words=store.read_rows("words", rid), diarization=store.read_one("diarization", rid),
        turns=turns, speakers=speakers,
        speaker_segments=store.read_rows("speaker_segments", rid), keyframes=keyframes,
        dedup=store.read_rows("dedup", rid), ocr=ocr, settings=cfg,
        speaker_names=cfg.get("speaker_names") or None,
    )


def _manifest(rid: str, cfg: dict) -> dict:
    m = build_manifest(rid, cfg)
    problems = manifest_stage.validate(m)
    if problems:
        raise StageError("manifest invalid: " + "; ".join(problems))
    path = store.put_json(store.manifest_key(rid), m)
    wc = m["wall_clock"] or {}
    tr = m["transcript"]
    di = tr.get("diarization") or {}
    row = {
        "filename": m["media"]["filename"], "path": m["media"]["path"], "kind": m["media"]["kind"],
        "duration_ms": int(round(m["media"]["duration_s"] * 1000)), "size_bytes": m["media"]["size_bytes"],
        "recorded_at": wc.get("start_utc"), "tz_offset_min": wc.get("tz_offset_min"),
        "wall_clock_source": wc.get("source"), "wall_clock_confidence": wc.get("confidence"),
        "language": tr.get("language"), "segment_count": len(tr["segments"]),
        "frame_count": m["frames"]["count"], "unique_frame_count": m["frames"]["unique_count"],
        "diarized": bool(di.get("available")), "speaker_count": len(di.get("speakers") or []),
        "has_audio": m["media"]["has_audio"], "has_video": m["media"]["has_video"],
        "transcript_available": tr["available"], "manifest_path": str(path), "processed_at": m["created_at"],
    }
    store.write_table("recordings", rid, [row])
    store.ensure_catalog()
    md = {"manifest": str(path), "duration_s": m["media"]["duration_s"], "segments": row["segment_count"],
          "frames": row["frame_count"], "unique_frames": row["unique_frame_count"],
          "recorded_at": row["recorded_at"] or "null",
          "transcript_head": " ".join(s["text"] for s in tr["segments"][:5])[:400]}
    stable = {k: v for k, v in m.items() if k != "created_at"}
    # what readers will get: the published bytes, read back from the data root (not the dict above)
    checks = [verify_check("manifest_schema_valid", rid)]
    return {"metadata": md, "data_version": _digest(stable), "manifest": m, "checks": checks}


# (recording id, effective settings) -> result; the stages in ENGINE_STAGES also take the Engines
def _runner(spec) -> Callable[..., dict]:
    """A stage's runner as its StageSpec names it ("stages.<module>:<function>"), else ``_<name>`` here."""
    if not spec.runner:
        return globals()[f"_{spec.name}"]
    module, _, attr = spec.runner.partition(":")
    return getattr(importlib.import_module(f"talkthrough_assets.{module}"), attr)


RUNNERS: dict[str, Callable[..., dict]] = {spec.name: _runner(spec) for spec in SPECS}
# the runners that take the Engines (an ``engines`` parameter)
ENGINE_STAGES = frozenset(s for s, fn in RUNNERS.items() if "engines" in inspect.signature(fn).parameters)


# A stage waits this long for another writer of the same recording before failing with a reason.
STAGE_LOCK_WAIT_S = 600.0

# Progress hooks (stage, recording_id, "started"|"ok"|"failed", info); the CLI shows them live.
listeners: list[Callable[[str, str, str, dict], None]] = []


def _notify(stage: str, rid: str, state: str, info: dict) -> None:
    for fn in list(listeners):
        fn(stage, rid, state, info)


def run_stage(stage: str, recording_id: str, overrides: dict | None = None,
              engines: Engines | None = None) -> dict:
    """Run one stage for one recording; persist ``overrides`` first; record success or failure.
    ``engines``: the loaded models (default: this process's, :func:`engines.shared`)."""
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
            result = RUNNERS[stage](recording_id, cfg, *extra)
    except store.PartitionBusy as e:
        _notify(stage, recording_id, "failed", {"reason": str(e)})
        raise StageError(str(e), stage=stage) from None
    except StageError as e:
        e.stage = e.stage or stage
        _record(recording_id, dict(base, status="failed", reason=e.reason, elapsed_s=time.perf_counter() - t0))
        _notify(stage, recording_id, "failed", {"reason": e.reason})
        raise
    except Exception as e:  # unexpected: still leave a one-line reason behind
        # not a StageError: a bug or a broken dependency, never the input's fault; say so
        err = InternalError.wrap(e, stage)
        _record(recording_id, dict(base, status="failed", reason=err.reason, internal=True,
                                   elapsed_s=time.perf_counter() - t0))
        _notify(stage, recording_id, "failed", {"reason": err.reason})
        raise err from e
    elapsed = time.perf_counter() - t0
    # a stage that succeeded with less than it wanted (unreadable stream ...) keeps its reason
    _record(recording_id, dict(base, status="ok", reason=result.get("reason"), elapsed_s=elapsed))
    result["metadata"]["elapsed_s"] = round(elapsed, 3)
    _notify(stage, recording_id, "ok", result["metadata"])
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
_shared_runs: set[str] = set()  # recordings whose current run overlaps Whisper with the visual branch


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
    ``(stage, result)`` when it ends, in completion order, where a result is the runner's dict, a
    :class:`StageError`, or :class:`Skipped` for the downstream of a failure. The caller's thread
    does all the yielding (Dagster writes its events from there). ``engines``: the loaded models the
    stages run on (Dagster passes its resources; default: this process's, :func:`engines.shared`)."""
    from concurrent.futures import FIRST_COMPLETED, ThreadPoolExecutor, wait

    selected = S.ordered(set(stages))
    if overrides:  # persisted once, before any stage reads the settings
        store.check_id(recording_id)
        S.save_overrides(recording_id, {k: v for k, v in overrides.items() if v is not None})
    deps = {s: [d for d in S.DEPS[s] if d in selected] for s in selected}
    done: set[str] = set()
    failed: dict[str, str] = {}  # stage -> the failed stage it traces back to
    pending = list(selected)
    workers = workers or stage_workers()
    # the run holds the recording's writer lock throughout; its stage threads re-enter it
    with store.partition_lock(recording_id, timeout_s=STAGE_LOCK_WAIT_S), \
            ThreadPoolExecutor(max_workers=workers, thread_name_prefix="stage") as pool, \
            _sharing(recording_id, selected, workers):
        running: dict = {}
        while pending or running:
            for stage in list(pending):
                bad = next((d for d in deps[stage] if d in failed), None)
                if bad is not None:
                    pending.remove(stage)
                    failed[stage] = failed[bad]
                    yield stage, Skipped(stage, failed[bad])
                elif all(d in done for d in deps[stage]) and len(running) < workers:
                    pending.remove(stage)
                    running[pool.submit(run_stage, stage, recording_id, None, engines)] = stage
                    yield stage, STARTED
            if not running:
                continue
            finished, _ = wait(list(running), return_when=FIRST_COMPLETED)
            for fut in sorted(finished, key=lambda f: S.STAGES.index(running[f])):
                stage = running.pop(fut)
                try:
                    result = fut.result()
                except StageError as e:
                    failed[stage] = stage
                    yield stage, e
                    continue
                done.add(stage)
                yield stage, result


def _shares_cpu(recording_id: str) -> bool:
    """Called when segments starts (probe has run): does the visual branch run beside it?"""
    return recording_id in _shared_runs and _has_video(recording_id)


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
    """Load the engines the planned stages will need in background threads (ONNX Runtime and
    CTranslate2 release the GIL while loading), so loading overlaps whatever runs first (the
    CLI: Dagster's import and startup). Loads into ``engines`` (default: this process's, the
    ones Dagster's resources hand the run)."""
    import threading

    engines = engines or shared_engines()
    cfg = S.effective(recording_id)
    jobs = []
    if "segments" in stages:
        from .models import resolve_whisper

        threads = _whisper_threads(shared=_overlaps(recording_id, stages, stage_workers()))
        jobs.append(lambda: engines.whisper.warm(resolve_whisper(cfg.get("whisper_model"))[0], threads))
    if "ocr" in stages and cfg.get("ocr") and _may_have_video(recording_id):
        jobs.append(lambda: engines.ocr.status(True))
    for job in jobs:
        threading.Thread(target=_quietly, args=(job,), daemon=True, name="prewarm").start()


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


def _record(rid: str, row: dict) -> None:
    row["finished_at"] = _now()
    store.write_table("stage_runs", rid, [row], part=row["stage"])


def stage_state(recording_id: str) -> dict[str, dict]:
    return {r["stage"]: r for r in store.read_rows("stage_runs", recording_id, part=None)}


def stage_reason(recording_id: str, stage: str) -> str | None:
    """Why a stage that ran produced less than it wanted (an unreadable stream ...), or None."""
    return (stage_state(recording_id).get(stage) or {}).get("reason")


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
                or st["code_version"] != CODE_VERSIONS[stage]):
            stale.add(stage)
    if "turns" not in stale and cfg.get("diarize") and _diarization_models_appeared(recording_id):
        stale.add("turns")
    return S.ordered(S.downstream(stale))


def _diarization_models_appeared(rid: str) -> bool:
    """A diarization that ran without its models is retried once they can be found (no download)."""
    row = store.read_one("diarization", rid)
    if not row or not row["requested"] or row["available"] or "diarization models" not in (row["reason"] or ""):
        return False
    from .stages.diarize import models as diarize_models

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
    return f"{failed['stage']}: {failed['reason']}" if failed else None

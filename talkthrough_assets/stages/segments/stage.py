"""The segments stage's ``run()`` and its chunk store: content-addressed Whisper results of audio chunks (the
logic is ``chunks.py``, the decode ``transcribe.py`` (its engine, rules and coverage pass beside it); paths and writes are ``store``'s:
``chunks/whisper/<kk>/<key>.bin``).

* Each recording's ``chunks`` table is its audio's chunk plan with each chunk's key. What is covered is
  derived from it, never recorded twice: a chunk is covered when a result is stored under its key
  (:func:`coverage`).
* Results are shared: the same samples under the same settings are decoded once, in any recording.
  :func:`gc` removes the results no recording's plan names (refused while any run holds a recording's
  lock); :func:`release` removes a forgotten recording's results that no other recording uses.
"""

from __future__ import annotations

import time
from contextlib import ExitStack
from dataclasses import dataclass, field

from talkthrough_assets import store
from talkthrough_assets.core.errors import StageError
from talkthrough_assets.stages import audio as audio_stage
from talkthrough_assets.stages.segments import chunks as C
from talkthrough_assets.stages.segments import engine as E
from talkthrough_assets.stages.segments import transcribe as T
from talkthrough_assets.stages.runner import (StageResult, digest, hms, probe_row, progress, sharing_cpu, stage_reason, wav_path)

FAILED_PREFIX = "Whisper failed on "  # the segments stage's reason when some chunks failed (re-run retries them)
GC_MIN_AGE_S = 600.0  # a result younger than this is kept by gc (a run that began meanwhile may be writing it)


@dataclass(frozen=True)
class Options:
    """What the segments stage runs with (built by ``pipeline.options`` from its settings and the environment)."""

    whisper_model: str | None  # the settings its config hash covers (transcribe.SETTINGS)
    language: str | None
    vocabulary: str | None
    beam_size: int
    device: str = field(metadata={"env": "TALKTHROUGH_DEVICE"})  # the engine: in the config hash too
    compute_type: str | None = field(metadata={"env": "TALKTHROUGH_COMPUTE_TYPE"})
    threads: int | None = field(metadata={"env": "TALKTHROUGH_WHISPER_THREADS"})  # None: engine.cpu_threads
    chunk_s: float = field(metadata={"env": "TALKTHROUGH_CHUNK_S"})


def engine_fingerprint(opts: Options) -> dict:
    """What, besides its settings, changes the segments stage's output (its StageSpec.engine)."""
    return {"device": opts.device, "compute_type": E.compute_type(opts.device, opts.compute_type)}


def fingerprint(opts: Options) -> str:
    """The chunk keys' settings part: what the segments config hash covers (settings.stage_config's shape)."""
    from talkthrough_assets.store.models import base_model_dir

    base = base_model_dir()
    stage_cfg = {k: getattr(opts, k) for k in T.SETTINGS}
    if (engine := engine_fingerprint(opts)):
        stage_cfg["_engine"] = engine
    return C.fingerprint(stage_cfg, base.name if base else None)


def load(key: str) -> bytes | None:
    return store.get_bytes(store.chunk_result_key(key))


def save(key: str, blob: bytes) -> None:
    store.put_bytes(store.chunk_result_key(key), blob)


def transcribe(rid: str, samples, opts: Options, *, on_chunk=None, **decode_kw) -> dict:
    """The segments stage's output for ``rid`` from its chunks (stored ones reused, the rest decoded and
    stored one by one); the chunk plan is written first, so coverage can be read while it runs. Adds
    ``"reason"`` when some chunks failed."""
    out = C.transcribe_chunked(samples, fp=fingerprint(opts), load=load, save=save, on_chunk=on_chunk,
                               chunk_s=opts.chunk_s,
                               on_plan=lambda rows: store.write_table("chunks", rid, rows), **decode_kw)
    failed = out["chunks"]["failed"]
    if failed:
        ranges = "; ".join(f"{hms(f['t0_ms'] / 1000)}-{hms(f['t1_ms'] / 1000)}: {f['reason']}" for f in failed)
        out["reason"] = (f"{FAILED_PREFIX}{len(failed)} of {out['chunks']['total']} chunks ({ranges}); "
                         "the next run decodes them again")
    return out


def clear_plan(rid: str) -> None:
    """No audio to chunk (video-only file, unreadable audio): no chunks."""
    store.write_table("chunks", rid, [])


def needs_retry(stage_run: dict | None) -> bool:
    """A segments run that left chunks undecoded is redone by the next run."""
    return bool(stage_run and (stage_run.get("reason") or "").startswith(FAILED_PREFIX))


def coverage(rid: str) -> dict | None:
    """{"chunks", "covered", "missing_ms": [[t0, t1]], "text": "41 of 52 chunks, 0:00-81:00"} from the
    recording's chunk plan and the stored keys; None before its segments stage has planned chunks."""
    rows = store.read_rows("chunks", rid)
    if not rows:
        return None
    rows.sort(key=lambda r: r["idx"])
    have = [store.exists(store.chunk_result_key(r["key"])) for r in rows]
    return {"chunks": len(rows), "covered": sum(have),
            "missing_ms": [[r["t0_ms"], r["t1_ms"]] for r, ok in zip(rows, have) if not ok],
            "text": C.covered_text(rows, have)}


# --------------------------------------------------------------------------- garbage

# kind -> (the table naming a recording's keys, the stored results' folder, key -> stored path)
KINDS = {"whisper": ("chunks", store.CHUNKS_PREFIX, store.chunk_result_key),
         "ocr": ("ocr_keys", store.OCR_RESULTS_PREFIX, store.ocr_result_key)}


def _partitions(table: str) -> list[str]:
    return [n.split("=", 1)[1] for n in store.list_names(f"tables/{table}")
            if n.startswith("recording=") and store.ID_RE.match(n.split("=", 1)[1])]


def _known_recordings() -> list[str]:
    ids = set(_partitions("sources"))
    for table, _, _ in KINDS.values():
        ids.update(_partitions(table))
    return sorted(ids)


def used_keys(kind: str = "whisper", exclude: str | None = None) -> dict[str, int]:
    """Key -> chunk length (ms; 0 for OCR) of every result some recording names (``exclude``: but that one)."""
    table = KINDS[kind][0]
    out: dict[str, int] = {}
    for rid in _partitions(table):
        if rid == exclude:
            continue
        for r in store.read_rows(table, rid):
            out[r["key"]] = r.get("t1_ms", 0) - r.get("t0_ms", 0)
    return out


def stored(kind: str = "whisper") -> dict[str, tuple]:
    """Key -> :func:`store.stamp` of every stored result of that kind."""
    prefix = KINDS[kind][1]
    out = {}
    for sub in store.list_names(prefix):
        for name, st in store.file_stamps(f"{prefix}/{sub}").items():
            if name.endswith(".bin"):
                out[name[:-4]] = st
    return out


def gc(*, dry_run: bool = False, min_age_s: float = GC_MIN_AGE_S) -> dict:
    """Remove the stored Whisper chunk and OCR results no recording names. Holds every known recording's lock
    meanwhile (PartitionBusy, nothing removed, when a run holds one), and keeps results younger than
    ``min_age_s`` (a recording registered meanwhile may be writing them). Reports the disk the kept Whisper
    results take per hour of the audio they cover."""
    out: dict = {"dry_run": dry_run}
    with ExitStack() as stack:
        for rid in _known_recordings() if not dry_run else ():  # a dry run only reads: no lock file written
            stack.enter_context(store.partition_lock(rid, timeout_s=0.0))
        now_ns = time.time_ns()
        for kind, (_, _, path_of) in KINDS.items():
            used, have = used_keys(kind), stored(kind)
            garbage = {k: st for k, st in have.items() if k not in used and now_ns - st[2] >= min_age_s * 1e9}
            if not dry_run:
                for k in garbage:
                    store.delete_file(path_of(k))
            kept = {k: st for k, st in have.items() if k not in garbage}
            out[kind] = {"removed": len(garbage), "removed_bytes": sum(st[1] for st in garbage.values()),
                         "kept": len(kept), "kept_bytes": sum(st[1] for st in kept.values())}
            if kind == "whisper":
                hours = sum(used[k] for k in kept if k in used) / 3.6e6
                out.update(out[kind], audio_hours=round(hours, 4),
                           bytes_per_audio_hour=round(out[kind]["kept_bytes"] / hours) if hours else None)
    return out


def release(rid: str, keys: dict[str, list[str]]) -> list[str]:
    """After ``rid`` is forgotten: remove those of its stored results (``keys``: kind -> keys) no other recording
    names. The caller holds ``rid``'s lock."""
    gone = []
    for kind, ks in keys.items():
        path_of = KINDS[kind][2]
        others = used_keys(kind, exclude=rid)
        for k in dict.fromkeys(ks):
            if k not in others and store.exists(path_of(k)):
                store.delete_file(path_of(k))
                gone.append(store.data_location(path_of(k)))
    return gone


def keys_of(rid: str) -> dict[str, list[str]]:
    """Kind -> the keys of ``rid``'s stored results (read before it is forgotten)."""
    return {kind: [r["key"] for r in store.read_rows(table, rid)] for kind, (table, _, _) in KINDS.items()}


def metadata(rid: str, report: dict | None) -> dict:
    """The segments stage's Dagster metadata about chunks: coverage and what this run did."""
    cov = coverage(rid)
    if cov is None:
        return {}
    md = {"coverage": cov["text"], "chunks": cov["chunks"], "chunks_covered": cov["covered"]}
    if report:
        md.update(chunks_reused=report["reused"], chunks_decoded=report["decoded"],
                  chunks_corrupt_recomputed=report["corrupt"], chunks_failed=len(report["failed"]),
                  chunks_unstored=report["unstored"], chunks_redecoded_without_context=report.get("recontext", 0))
    return md


# --------------------------------------------------------------------------- the stage

def _progress_to(rid: str):
    """on_chunk -> runner.progress: the share of the audio transcribed, and an ETA from the pace of the
    chunks decoded in this run (reused ones cost nothing)."""
    t0 = time.monotonic()
    state = {"decoded_ms": 0, "prev_ms": 0}

    def on_chunk(done: int, total: int, how: str, done_ms: int, total_ms: int) -> None:
        if how == "decoded":
            state["decoded_ms"] += done_ms - state["prev_ms"]
        state["prev_ms"] = done_ms
        pace = (time.monotonic() - t0) / state["decoded_ms"] if state["decoded_ms"] else None
        # next_share: where the chunk now decoding ends (about one more chunk's share): the CLI's bar moves
        # toward it between reports, never past it (issue #38, item 6)
        step = done_ms / done if done else total_ms / max(total, 1)
        progress("segments", rid, {"share": done_ms / max(total_ms, 1), "text": f"{done} of {total} chunks",
                                   "eta_s": pace * (total_ms - done_ms) if pace else None,
                                   "next_share": min(1.0, (done_ms + step) / max(total_ms, 1))})

    return on_chunk


def run(rid: str, opts: Options, engines) -> StageResult:
    from talkthrough_assets.store.models import resolve_whisper

    p = probe_row(rid)
    ref, label = resolve_whisper(opts.whisper_model)
    peak = 0
    audio_reason = stage_reason(rid, "audio")
    if not p["has_audio"] or audio_reason:
        out = T.unavailable(audio_reason or "no audio stream (video-only file)", label)
        clear_plan(rid)
    else:
        samples = audio_stage.load_wav(wav_path(rid))  # read once: transcript + loudness check
        peak = audio_stage.peak(samples)
        shared = rid in sharing_cpu and bool(p["has_video"])  # the visual branch runs beside it
        # in chunks, each stored as soon as it is decoded under a content key (stages/chunks.py)
        out = transcribe(rid, samples, opts, on_chunk=_progress_to(rid), model_ref=ref, model_label=label,
                         language=opts.language, threads=E.cpu_threads(shared=shared, override=opts.threads),
                         vocabulary=opts.vocabulary, beam_size=int(opts.beam_size), whisper=engines.whisper,
                         device=opts.device, compute=opts.compute_type)
        if not out["chunks"]["total"] - len(out["chunks"]["failed"]):
            raise StageError(out["reason"])
    store.write_table("segments", rid, out["segments"])
    store.write_table("words", rid, out["words"])
    store.write_table("transcripts", rid, [out["meta"]])
    m = out["meta"]
    head = " ".join(s["text"] for s in out["segments"][:5])[:400]
    md = {"available": m["available"], "reason": m["reason"] or "", "language": m["language"] or "",
          "segments": m["segment_count"], "words": m["word_count"], "transcript_head": head,
          "elapsed_s": m["elapsed_s"], "dropped_segments": m.get("dropped_count") or 0,
          **{k: v for k, v in T.quality(m).items() if k in ("dropped_words", "doubtful_segments", "speech_s",
                                                            "uncovered_speech_s")},
          **metadata(rid, out.get("chunks"))}
    checks = [T.transcript_check(p["has_audio"] and peak > 1000, m["segment_count"])]
    return StageResult(md, digest(out["segments"]), checks, reason=out.get("reason"))

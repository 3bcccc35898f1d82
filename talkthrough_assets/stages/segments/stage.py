"""The segments stage: its ``CODE_VERSION``, ``run()``, the hooks its StageSpec names (``prewarm``, ``stale``)
and its chunk store: content-addressed Whisper results of audio chunks (the logic is ``chunks.py``, Whisper and
the drop rules ``transcribe.py``; paths and writes are ``store``'s: ``chunks/whisper/<kk>/<key>.bin``).

* Each recording's ``chunks`` table is its audio's chunk plan with each chunk's key. What is covered is
  derived from it, never recorded twice: a chunk is covered when a result is stored under its key
  (:func:`coverage`).
* Results are shared: the same samples under the same settings are decoded once, in any recording.
  ``store.cache_gc`` removes the results no recording's plan names, and a forgotten recording's results that no
  other recording uses.
"""

from __future__ import annotations

import dataclasses
import time
from dataclasses import replace

from talkthrough_assets.model.runs import StageRun
from talkthrough_assets.model.transcript import Chunk, Coverage
from talkthrough_assets import store
from talkthrough_assets.core.errors import StageError
from talkthrough_assets.stages import audio as audio_stage
from talkthrough_assets.stages.segments import chunks as C
from talkthrough_assets.stages.segments import engine as E
from talkthrough_assets.stages.segments import transcribe as T
from talkthrough_assets.stages.segments.options import Options
from talkthrough_assets.stages.probe import has_video
from talkthrough_assets.stages.runner import RunContext, StageResult, digest, hms, probe_row, stage_reason, wav_path

# the segments stage's code version (stage_runs, Dagster's code version): bump it when the stage's tables change
CODE_VERSION = "19"
# the version of a chunk's decoding, part of every chunk's key: bump it (and CODE_VERSION) when what a chunk decodes
# to changes; CODE_VERSION alone re-makes the tables from the stored chunk results (17: the transcripts row's spans
# became structs, the chunks' words did not change; 18: the silent tail of a voice-activity region is not decoded
# again, and its uncovered span says so)
DECODE_VERSION = "18"
FAILED_PREFIX = "Whisper failed on "  # the segments stage's reason when some chunks failed (re-run retries them)


def engine_fingerprint(opts: Options) -> dict:
    """What, besides its settings, changes the segments stage's output (its StageSpec.engine)."""
    return {"device": opts.device, "compute_type": E.compute_type(opts.device, opts.compute_type)}


def fingerprint(opts: Options) -> str:
    """The chunk keys' settings part: what the segments config hash covers (settings.stage_config's shape)."""
    from talkthrough_assets.store.models import BASE_IN_MEMORY, base_model_installed

    stage_cfg = {k: getattr(opts, k) for k in T.SETTINGS}
    if (engine := engine_fingerprint(opts)):
        stage_cfg["_engine"] = engine
    return C.fingerprint(stage_cfg, BASE_IN_MEMORY if base_model_installed() else None, DECODE_VERSION)


def load(key: str) -> bytes | None:
    return store.get_bytes(store.chunk_result_key(key))


def save(key: str, blob: bytes) -> None:
    store.put_bytes(store.chunk_result_key(key), blob)


def transcribe(rid: str, samples, opts: Options, engine: E.Engine, *, on_chunk=None) -> C.Chunked:
    """The segments stage's output for ``rid`` from its chunks (stored ones reused, the rest decoded and
    stored one by one); the chunk plan is written first, so coverage can be read while it runs. Its ``reason``
    says which chunks failed, if any."""
    out = C.transcribe_chunked(samples, opts, engine, fp=fingerprint(opts), load=load, save=save, on_chunk=on_chunk,
                               on_plan=lambda rows: store.write_table("chunks", rid, rows))
    failed = out.report.failed
    if not failed:
        return out
    ranges = "; ".join(f"{hms(f.t0_ms / 1000)}-{hms(f.t1_ms / 1000)}: {f.reason}" for f in failed)
    return replace(out, reason=f"{FAILED_PREFIX}{len(failed)} of {out.report.total} chunks ({ranges}); "
                               "the next run decodes them again")


def clear_plan(rid: str) -> None:
    """No audio to chunk (video-only file, unreadable audio): no chunks."""
    store.write_table("chunks", rid, [])


def needs_retry(stage_run: StageRun | None) -> bool:
    """A segments run that left chunks undecoded is redone by the next run."""
    return bool(stage_run and (stage_run.reason or "").startswith(FAILED_PREFIX))


def stale(rid: str, cfg: dict, stage_run: StageRun | None, opts=None) -> bool:
    """Its StageSpec's ``stale``: re-run although settings and code are current when chunks were left undecoded."""
    return needs_retry(stage_run)


def coverage(rid: str) -> Coverage | None:
    """The recording's chunk plan against the stored keys; None before its segments stage has planned chunks."""
    rows = sorted(store.read_rows("chunks", rid, record=Chunk), key=lambda r: r.idx)
    if not rows:
        return None
    have = [store.exists(store.chunk_result_key(r.key)) for r in rows]
    return Coverage(chunks=len(rows), covered=sum(have),
                    missing_ms=tuple((r.t0_ms, r.t1_ms) for r, ok in zip(rows, have) if not ok),
                    text=C.covered_text(rows, have))


def metadata(rid: str, report: C.Report | None) -> dict:
    """The segments stage's Dagster metadata about chunks: coverage and what this run did."""
    cov = coverage(rid)
    if cov is None:
        return {}
    md = {"coverage": cov.text, "chunks": cov.chunks, "chunks_covered": cov.covered}
    if report:
        md.update(chunks_reused=report.reused, chunks_decoded=report.decoded,
                  chunks_corrupt_recomputed=report.corrupt, chunks_failed=len(report.failed),
                  chunks_unstored=report.unstored, chunks_redecoded_without_context=report.recontext)
    return md


# --------------------------------------------------------------------------- the stage

def _progress_to(ctx: RunContext):
    """on_chunk -> ``ctx.progress``: the share of the audio transcribed, and an ETA from the pace of the
    chunks decoded in this run (reused ones cost nothing)."""
    t0 = time.monotonic()
    state = {"decoded_ms": 0, "prev_ms": 0}

    def on_chunk(done: int, total: int, how: str, done_ms: int, total_ms: int) -> None:
        if how == "decoded":
            state["decoded_ms"] += done_ms - state["prev_ms"]
        state["prev_ms"] = done_ms
        pace = (time.monotonic() - t0) / state["decoded_ms"] if state["decoded_ms"] else None
        # next_share: where the chunk now decoding ends (about one more chunk's share): the CLI's bar moves
        # toward it between reports, never past it
        step = done_ms / done if done else total_ms / max(total, 1)
        ctx.progress({"share": done_ms / max(total_ms, 1), "text": f"{done} of {total} chunks",
                      "eta_s": pace * (total_ms - done_ms) if pace else None,
                      "next_share": min(1.0, (done_ms + step) / max(total_ms, 1))})

    return on_chunk


def prewarm(rid: str, opts: Options, engines, ctx: RunContext) -> None:
    """Its StageSpec's ``prewarm`` (native: the calling thread): load Whisper now (~0.5-1 s, native code: a
    thread importing Dagster meanwhile runs beside it). Not in a thread of its own: a CTranslate2 model loaded in
    a thread while Dagster was imported decoded its first chunk at ~5x the CPU (the 30-min bench meeting's first
    3-min chunk: 74 s of CPU vs 13 s when loaded first, same output; bench/bench_partial.py, whose first partial
    transcript waited for it). The language check's multilingual model is not loaded here: the stage loads it
    beside its first chunk's decode when its audio is not silent (``engine.load_checker_soon``; a multilingual model's
    recording never needs it; here it took ~0.9 s of CPU at every run's start)."""
    try:
        E.Engine.of(opts, engines.whisper, shared=bool(ctx.beside) and has_video(rid)).model()
    except Exception:  # the stage itself reports a missing or broken model, with a reason
        pass


def run(rid: str, opts: Options, engines, *, ctx: RunContext | None = None) -> StageResult:
    ctx = ctx or RunContext.alone(rid, "segments")
    p = probe_row(rid)
    peak, report, reason = 0, None, None
    audio_reason = stage_reason(rid, "audio")
    if not p.has_audio or audio_reason:
        from talkthrough_assets.store.models import resolve_whisper

        out = T.unavailable(audio_reason or "no audio stream (video-only file)", resolve_whisper(opts.whisper_model)[1])
        clear_plan(rid)
    else:
        samples = audio_stage.load_wav(wav_path(rid))  # read once: transcript + loudness check
        peak = audio_stage.peak(samples)
        shared = bool(ctx.beside) and p.has_video  # the visual branch runs beside it
        # in chunks, each stored as soon as it is decoded under a content key (chunks.py)
        done = transcribe(rid, samples, opts, E.Engine.of(opts, engines.whisper, shared=shared),
                          on_chunk=_progress_to(ctx))
        out, report, reason = done.transcript, done.report, done.reason
        if not report.total - len(report.failed):
            raise StageError(reason)
    store.write_table("segments", rid, out.segments)
    store.write_table("words", rid, out.words)
    store.write_table("transcripts", rid, [out.meta])
    m = out.meta
    head = " ".join(s.text for s in out.segments[:5])[:400]
    md = {"available": m.available, "reason": m.reason or "", "language": m.language or "",
          "segments": m.segment_count, "words": m.word_count, "transcript_head": head,
          "elapsed_s": m.elapsed_s, "dropped_segments": m.dropped_count,
          **{k: v for k, v in dataclasses.asdict(T.quality(m)).items()
             if k in ("dropped_words", "doubtful_segments", "speech_s", "uncovered_speech_s")},
          **metadata(rid, report)}
    checks = [T.transcript_check(p.has_audio and peak > audio_stage.AUDIBLE_PEAK, m.segment_count)]
    return StageResult(md, digest([dataclasses.asdict(s) for s in out.segments]), checks, reason=reason)

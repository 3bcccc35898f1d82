"""turns: the diarization stage function. The pipeline's ``turns`` runner calls :func:`run_turns`.

:func:`run_turns` diarizes the stage's 16 kHz WAV, labels speakers S1, S2 ... by first appearance,
merges labels that are the same voice (asked-for speakers that are not there), attributes Whisper
words/segments to speakers and builds the roster. Whisper's own segments/words are never modified.

The parts, one concern each:

* ``models``: finding, downloading (pinned URL + sha256) and verifying the ONNX models;
  ``$TALKTHROUGH_DIARIZATION_MODELS`` overrides;
* ``engine``: the sherpa-onnx engine (cached per process) and per-label voice embeddings;
* ``labels``: pure label/turn math (relabel, same-voice merges, roster);
* ``attribution``: pure word/segment -> speaker attribution;
* ``word_voices``: words Whisper wrote where no turn is get a speaker by their voice, or are counted;
* ``speaker_names``: OCR name candidates (made by the manifest stage, the one stage downstream of both
  ``turns`` and ``ocr``) and ``talkthrough name`` parsing.

No Dagster here; sherpa-onnx is imported lazily (only when diarization really runs).
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass, field, replace
from typing import Sequence

from talkthrough_assets.model.runs import StageRun
from talkthrough_assets import store
from talkthrough_assets.model.transcript import Segment, Word
from talkthrough_assets.model.turns import DiarizationRow, Turn, TurnsOutput
from talkthrough_assets.stages.runner import StageResult, digest, probe_row, wav_path
from talkthrough_assets.stages.turns.attribution import attribute_segments
from talkthrough_assets.stages.turns.engine import (ENV_THREADS, SAMPLE_RATE, WINDOW_SHIFT_RATIO, EngineCache, default_cache, with_threads, centroids, engine_version, run_engine)
from talkthrough_assets.stages.turns.labels import (AUTO, SAME_VOICE_CERTAIN, SAME_VOICE_SIMILARITY, labels_in_order, merge_labels, merge_to_count, parse_num_speakers, plan_merges, relabel, roster)
from talkthrough_assets.stages.turns.models import ENV_MODELS_DIR, ModelUnavailable, resolve_models
from talkthrough_assets.stages.turns.refine_models import refine_turns, window_vectors
from talkthrough_assets.stages.turns import voiceprints as voiceprints_mod
from talkthrough_assets.stages.turns.word_voices import fill_from_words

CODE_VERSION = "10"  # 10: nearest-voice reassignment repeated until stable (reassign_passes); 9: a transcript row names who else talks at the same time (overlap); 8: words with no turn under them get a speaker by their voice (word_voices)
ENGINE = "sherpa-onnx"

# a given count the engine's own N-way clustering fell short of (it clusters 10-s window embeddings, and
# two voices on one line can land in one cluster) is met from this finer clustering, merged down to N
FINE_THRESHOLD = 0.3
MIN_AUDIO_S = 1.0            # shorter audio: recorded as "too short", the engine is not run
SILENCE_PEAK = 1e-3          # peak below this (about -60 dBFS): silent audio, nothing to diarize


def _row(**kw) -> DiarizationRow:
    return DiarizationRow(**{"available": False, "requested": True, "reason": None, "engine": ENGINE,
                             "engine_version": engine_version(), "detected_num_speakers": 0, "elapsed_s": 0.0, **kw})


def run_turns(wav_path: str | os.PathLike | None, *, segments: Sequence[Segment], words: Sequence[Word],
              num_speakers: int | str | None, threshold: float | None, window_shift: float = WINDOW_SHIFT_RATIO,
              cache: EngineCache | None = None, models_dir: str | None = None,
              threads: int | None = None) -> TurnsOutput:
    """Diarize ``wav_path`` (16 kHz mono WAV; None = no audio stream) and attribute the transcript.
    ``models_dir``: ``$TALKTHROUGH_DIARIZATION_MODELS`` (see :func:`resolve_models`). ``threads``: ONNX threads
    per model (the stage's option; None: ``cache``'s own).

    ``num_speakers``: a count, or ``"auto"`` (also None / 0) to find it from the audio. A given count is
    honoured: the engine clusters into exactly that many (where its own clustering finds fewer, a finer
    clustering merged down to that many, kept if those are distinct voices: no two alike by
    SAME_VOICE_SIMILARITY), and labels are merged afterwards only when their voices are the same beyond
    doubt (SAME_VOICE_CERTAIN). Where N distinct voices cannot be had (the finer clustering finds fewer,
    or reaches N only by splitting one voice: measured on the AMI excerpts, where that doubled the DER),
    the audio cannot support the count: the automatic rules apply, and the reason is recorded. In auto mode labels whose voices are alike
    (SAME_VOICE_SIMILARITY) are one speaker, and a label with under a second of speech is absorbed.
    The row's ``speaker_count`` says which count was used and why ("as given (--num-speakers 4)", "found
    from the audio (--num-speakers auto)", "2 of the 3 given (--num-speakers 3): S3 merged into S1 ...").

    Returns the stage's records (its diarization row, turns, roster, speaker segments and voiceprints); every bad
    case (no audio, too short, silence, no models, no speech) is ``available=False`` with a reason.
    Name candidates are not made here: they need the OCR, which is not upstream of ``turns``
    (see ``speaker_names``)."""
    if threads is not None:
        cache = with_threads(cache or default_cache(), threads)
    t_start = time.perf_counter()
    parsed = parse_num_speakers(num_speakers)
    n_req = None if parsed == AUTO else int(parsed)
    thr = float(threshold) if threshold is not None else 0.5
    row = _row(requested_num_speakers=n_req, threshold=None if n_req else thr)

    def done(out: TurnsOutput | None = None, **kw) -> TurnsOutput:
        out = out or TurnsOutput.empty(row)
        return replace(out, diarization=replace(out.diarization, **kw,
                                                elapsed_s=round(time.perf_counter() - t_start, 3)))

    if wav_path is None:
        return done(reason="no audio stream (video-only file)")
    from talkthrough_assets.stages.audio import load_wav

    samples = load_wav(wav_path)
    dur_s = len(samples) / SAMPLE_RATE
    if dur_s < MIN_AUDIO_S:
        return done(reason=f"audio too short to diarize ({dur_s:.2f} s; needs at least {MIN_AUDIO_S:g} s)")
    if float(abs(samples).max()) < SILENCE_PEAK:
        return done(reason="no speech detected (silent audio)")
    try:
        models = resolve_models(models_dir=models_dir)
        row = replace(row, segmentation_model=models.label("segmentation"), embedding_model=models.label("embedding"))
        raw = run_engine(samples, models, n_req, thr, window_shift, cache=cache)
    except ModelUnavailable as e:
        return done(reason=str(e))
    turns = relabel(raw)
    if not turns:
        return done(reason="no speech detected")
    return done(_speakers(samples, turns, models, row, n_req=n_req, window_shift=window_shift, cache=cache,
                          segments=segments, words=words))


def _speakers(samples, turns: list[Turn], models, row: DiarizationRow, *, n_req: int | None, window_shift: float,
              cache, segments: Sequence[Segment], words: Sequence[Word]) -> TurnsOutput:
    """From the engine's first labelled turns to the stage's output: the count met or explained, alike voices
    merged, turns refined and filled from the words, the transcript attributed, the voiceprints; ``row`` with
    the fields they decide."""
    engine_found = len(labels_in_order(turns))
    short_why = None
    if n_req and engine_found < n_req:
        turns, engine_found, short_why = _finer(samples, turns, models, n_req, window_shift, cache)
    notes = []
    if engine_found > 1:
        turns, notes = _merge_alike(samples, turns, models, n_req, engine_found, cache)
    # two voices the segmentation gave one label are split (for a given count: only up to that count), and
    # VAD speech the segmentation left out goes to the nearest speaker (refine: measured on the AMI excerpts)
    found = len(labels_in_order(turns))
    known: dict = {}  # window start -> CAM++ embedding: the refinement's, reused by the voiceprints
    turns, split_notes = refine_turns(samples, turns, models, cache=cache, limit=(n_req - found) if n_req else None,
                                      known=known)
    notes += split_notes
    # words Whisper wrote where no turn is: a speaker by their voice, or none (counted) under the floor
    turns, by_voice, unassigned = fill_from_words(samples, turns, words, models, cache=cache)
    detected = len(labels_in_order(turns))
    count = _count(n_req, detected, engine_found, short_why, notes)

    def vectors_of(wins):
        import numpy as np

        todo = [w for w in wins if w[0] not in known]
        if todo:
            known.update(zip((w[0] for w in todo), window_vectors(samples, todo, models, cache=cache)))
        return np.asarray([known[w[0]] for w in wins])

    return TurnsOutput(
        diarization=replace(row, available=True, detected_num_speakers=detected, reason="; ".join(notes) or None,
                            speaker_count=count, words_by_voice=by_voice, words_unassigned=unassigned),
        turns=tuple(turns), speakers=tuple(roster(turns)),
        speaker_segments=tuple(attribute_segments(segments, words, turns)),
        voiceprints=tuple(voiceprints_mod.compute(samples, turns, vectors_of, models.label("embedding"), known)))


def _finer(samples, turns: list[Turn], models, n_req: int, window_shift: float, cache):
    """A given count the engine's clustering fell short of: met from a finer clustering merged down to it, kept
    if those are distinct voices. Returns (turns, the count the engine found, why it stays short or None)."""
    fine = relabel(run_engine(samples, models, None, FINE_THRESHOLD, window_shift, cache=cache))
    if len(labels_in_order(fine)) >= n_req:
        fine = merge_labels(fine, merge_to_count(fine, centroids(samples, fine, models, cache=cache), n_req))
    labs = labels_in_order(fine)
    cents = centroids(samples, fine, models, cache=cache) if len(labs) == n_req else {}
    alike = max(((float(cents[a] @ cents[b]), a, b) for i, a in enumerate(labs) for b in labs[i + 1:]
                 if a in cents and b in cents), default=None)
    if len(labs) == n_req and (alike is None or alike[0] < SAME_VOICE_SIMILARITY):
        return fine, n_req, None
    found = len(labels_in_order(turns))
    if len(labs) == n_req:  # N labels only by splitting one voice: the audio does not support N
        return turns, found, (f"{n_req} labels only by splitting one voice ({alike[1]} and {alike[2]} alike, "
                              f"similarity {alike[0]:.2f})")
    return turns, found, f"even a finer clustering finds only {len(labs)} voice{'s' if len(labs) != 1 else ''}"


def _merge_alike(samples, turns: list[Turn], models, n_req: int | None, engine_found: int, cache):
    """Labels that are one voice merged. A given count that the clustering met: only voices that are the same
    beyond doubt merge, and no label is absorbed for being short (the user said it is there). Auto, or a count
    the audio could not give: the automatic rules (alike voices merge, under a second of speech is absorbed)."""
    cents = centroids(samples, turns, models, cache=cache)
    labs = labels_in_order(turns)
    sims = {(a, b): float(cents[a] @ cents[b]) for i, a in enumerate(labs) for b in labs[i + 1:]
            if a in cents and b in cents}
    mapping, notes = (plan_merges(turns, sims, same_voice=SAME_VOICE_CERTAIN, min_speaker_ms=0)
                      if n_req and engine_found >= n_req else plan_merges(turns, sims))
    return (merge_labels(turns, mapping) if mapping else turns), notes


def _count(n_req: int | None, detected: int, engine_found: int, short_why: str | None, notes: list[str]) -> str:
    """The row's ``speaker_count`` (which count was used, and why); puts the count's own notes first in
    ``notes``."""
    if n_req and detected < n_req:
        why = "; ".join(([short_why] if short_why else []) + notes) or (
            f"the engine found speech for only {engine_found} speaker{'s' if engine_found != 1 else ''}")
        notes[:0] = [f"requested {n_req} speakers, {detected} distinct voice{'s' if detected != 1 else ''} found"] + (
            [short_why] if short_why else [])
        return f"{detected} of the {n_req} given (--num-speakers {n_req}): {why}"
    if n_req:
        return f"as given (--num-speakers {n_req})"
    if detected == 1:
        notes.insert(0, "one speaker detected")
    return "found from the audio (--num-speakers auto)"


@dataclass(frozen=True)
class Options:
    """What the turns stage runs with (built by ``pipeline.options`` from its settings and the environment)."""

    diarize: bool  # the settings its config hash covers
    num_speakers: str | None
    diarize_threshold: float | None
    threads: int = field(metadata={"env": ENV_THREADS})  # ONNX threads per model (engine.EngineCache.threads)
    # $TALKTHROUGH_DIARIZATION_MODELS: where its models are (stale: a run without them is retried once found)
    models_dir: str | None = field(default=None, metadata={"env": ENV_MODELS_DIR})


def run(rid: str, opts: Options, engines) -> StageResult:
    if not opts.diarize:
        rec = TurnsOutput.empty(DiarizationRow(available=False, requested=False, reason="diarization not requested"))
    else:
        p = probe_row(rid)
        # no OCR name candidates here: ocr is not upstream of turns (the manifest stage derives them)
        rec = engines.diarizer.run_turns(
            wav_path(rid) if p.has_audio else None,
            segments=store.read_rows("segments", rid, record=Segment), words=store.read_rows("words", rid, record=Word),
            num_speakers=opts.num_speakers, threshold=opts.diarize_threshold, threads=opts.threads,
        )
    store.write_table("diarization", rid, [rec.diarization])
    store.write_table("turns", rid, rec.turns)
    store.write_table("speakers", rid, rec.speakers)
    store.write_table("speaker_segments", rid, rec.speaker_segments)
    store.write_table("voiceprints", rid, rec.voiceprints)
    d = rec.diarization
    md = {"requested": bool(d.requested), "available": bool(d.available), "reason": d.reason or "",
          "speakers": len(rec.speakers), "turns": len(rec.turns)}
    return StageResult(md, digest([list(rec.turns), list(rec.speaker_segments)]))


def models_were_missing(row: DiarizationRow | None) -> bool:
    """Whether a requested diarization did not run because its models could not be found (not for the audio's
    sake: no speech, too short)."""
    return bool(row and row.requested and not row.available and "diarization models" in (row.reason or ""))


def stale(rid: str, cfg: dict, stage_run: StageRun | None, opts: "Options | None" = None) -> bool:
    """Its StageSpec's ``stale``: a diarization that ran without its models is retried once they can be found
    (no download)."""
    if not cfg.get("diarize"):
        return False
    if not models_were_missing(store.read_one("diarization", rid, record=DiarizationRow)):
        return False
    try:
        resolve_models(download=False, models_dir=opts.models_dir if opts else None)
    except ModelUnavailable:
        return False
    return True


__all__ = ["CODE_VERSION", "ENGINE", "run_turns"]

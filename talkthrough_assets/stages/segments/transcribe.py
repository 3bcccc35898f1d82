"""segments: faster-whisper on the 16 kHz WAV (CPU int8, beam 5, VAD on, word timestamps): :func:`decode` and the
transcript it makes. Repetition loops lose their tail, text over no voice activity and (for an English-only model)
segments whose audio is another language are dropped with a recorded reason (the rules: ``rules.py``), and speech no
segment covers is decoded again on its own (``coverage.py``). The model is the caller's :class:`Engine`
(``engine.py``); what to decode with, the stage's :class:`Options`, is passed whole. The stage's ``run()`` (in
chunks of the recording, each result kept) is ``stage.py``; ``chunks.transcribe`` is the same decode with nothing
stored."""

from __future__ import annotations

import re
import time
from dataclasses import dataclass, replace
from typing import Sequence

import numpy as np

from talkthrough_assets.core import stop
from talkthrough_assets import store
from talkthrough_assets.model.manifest import Quality
from talkthrough_assets.model.media import ProbeRow
from talkthrough_assets.model.transcript import (
    Decoded, Evidence, Segment, Span, Transcript, TranscriptMeta, Word, spans)
from talkthrough_assets.stages import audio as audio_stage
from talkthrough_assets.stages.segments import word_timing
from talkthrough_assets.stages.segments.word_timing import AlignedWord
from talkthrough_assets.stages.segments.coverage import Entry, recover, unsure
from talkthrough_assets.stages.segments.engine import Engine
from talkthrough_assets.stages.segments.options import Options
from talkthrough_assets.stages.segments.rules import (
    LANGUAGE_CHECK_MIN_P, LANGUAGE_CHECK_MIN_TOP_P, LANGUAGE_KEEP_WORD_P, LANGUAGE_MIN_SPEECH_S,
    LANGUAGE_SHORT_MAX_P_EN, _context, _doubtful, _has_speech, _impossible, _trimmed, check_groups,
    compression_ratio, core_speech, dropped_text, loop_cut, ms, speech_in, speech_regions, written_twice)
from talkthrough_assets.stages.runner import CheckResult, wav_path

SETTINGS = ("whisper_model", "language", "vocabulary", "beam_size")  # what the config hash (and chunk keys) cover
# Decoding, chosen with bench/bench_asr.py against bare faster-whisper with its defaults, same model, same run
# (eval clips, the 10-min screencast and the 30-min meeting of bench/make_long_media.py):
# * beam 5 (faster-whisper's default): greedy decoding lost words (pooled WER 9.5 % vs 6.6 % on read speech);
# * Whisper hears the whole recording with the text said before as context, as bare faster-whisper does. Cutting
#   the audio to VAD speech and/or dropping the context cost 5 points of WER on the 30-min meeting (13.6 % vs
#   8.1 % on its first 5 min; VAD filter alone 10.0 %). Voice activity is used as a gate instead: a segment whose
#   time span has no speech at all (Silero VAD, threshold 0.1) is dropped, which is what the filter protected against
#   (its speech, if it was real text given a wrong span, is left uncovered and decoded again: see COVERAGE_MIN_S);
# * no temperature fallback: faster-whisper's ladder re-decodes a failed window by sampling, random per call
#   (CTranslate2's sampler runs in its worker threads, which ctranslate2.set_random_seed does not reach);
#   beam search alone gives the same words every run (tests/integration/test_determinism.py);
# * a segment whose own text's compression ratio is over 2.4 (faster-whisper's repetition threshold, which it
#   applies per window: "the rest of the rest of the rest ...") loses its repeated tail (:func:`loop_cut`), or is
#   dropped when no loop can be cut off;
# * an English-only model's doubtful segments (see LANGUAGE_CHECK_*) get a language check by the multilingual
#   base model over the segment and its surrounding seconds: a segment whose audio is confidently not English
#   (P(en) < 0.05 and another language leads with p >= 0.8, see below) is dropped. Every drop is recorded with
#   its reason (transcripts.dropped).
#   The earlier per-window log-prob cut (-1.0) removed whole 30-s windows of real far-field speech.
# These choices are options.Decoding's defaults.
LOOP_RETRY_RATIO = 2.4  # a window whose text loops is decoded again without the text before it (engine.WhisperAdapter)


def decode(samples: np.ndarray, opts: Options, engine: Engine, *, prompt=None, recovering: bool = False,
           max_new_tokens: int | None = None, check_context=None, vad_regions=None) -> Decoded:
    """Transcribe ``samples`` (16 kHz mono float32) with ``engine``'s model as ``opts`` say (its settings and its
    :class:`~.options.Decoding`), through the drop rules. Times are ms from the first sample.

    ``prompt``: the tokens of the text said before (a chunk's context). ``recovering``: this is the coverage
    pass's decode of a span (its unsure segments are dropped without a language check); ``max_new_tokens`` caps
    what it writes; ``check_context`` = (samples, core, offset): the audio its language check hears.
    ``vad_regions``: :func:`speech_regions` of ``samples``, when the caller has them already.

    Nothing is deleted to fix a time span or a loop: a loop loses its repeated tail (:func:`loop_cut`), and a
    segment whose span holds no voice activity is dropped only as text: its speech, wherever it is, is left
    uncovered and decoded again (``coverage``). "doubtful": segments kept although the language check doubted
    them."""
    t_start = time.perf_counter()
    empty = Decoded(model=engine.model_label, audio_ms=int(len(samples) * 1000 / 16000))
    if len(samples) < 1600:  # < 0.1 s: nothing to transcribe
        return replace(empty, reason="no speech detected (audio shorter than 0.1 s)", elapsed_s=_since(t_start))
    regions = (vad_regions if vad_regions is not None else speech_regions(samples)) if opts.decoding.vad else None
    if regions == []:  # the gate would drop every segment: Whisper is not run at all (a silent screencast)
        return replace(empty, reason="no speech detected (no voice activity)", elapsed_s=_since(t_start))
    core = core_speech(regions) if regions is not None else [(0, len(samples))]
    res = _pass(samples, regions, core, opts, engine, prompt=prompt, recovering=recovering,
                max_new_tokens=max_new_tokens, check_context=check_context)
    gaps = (recover(samples, core, res.entries, res.dropped, res.doubtful, again=opts.decoding.coverage,
                    vocabulary=opts.vocabulary, redecode=_redecode(opts, engine)) if regions is not None else [])
    out = _numbered(empty, res, samples, opts, engine)
    return replace(out, uncovered=tuple(gaps), elapsed_s=_since(t_start),
                   speech_ms=int(sum(b - a for a, b in core) / 16),
                   core_ms=tuple((a // 16, b // 16) for a, b in core) if regions is not None else ())


def _since(t_start: float) -> float:
    return round(time.perf_counter() - t_start, 3)


def _redecode(opts: Options, engine: Engine):
    """The coverage pass's decode of a span: no word refinement and no coverage pass of its own."""
    sub = replace(opts, decoding=replace(opts.decoding, refine_words=False, coverage=False))
    return lambda part, **kw: decode(part, sub, engine, recovering=True, **kw)


@dataclass(slots=True)
class _Pass:
    """One Whisper decode through the drop rules: the kept entries, the dropped and doubtful spans (filled in
    further by the coverage pass), and the language Whisper detected."""

    entries: list[Entry]
    dropped: list[Span]
    doubtful: list[Span]
    language: str | None
    language_probability: float
    english_only: bool


def _numbered(empty: Decoded, res: _Pass, samples: np.ndarray, opts: Options, engine: Engine) -> Decoded:
    """The pass's entries in time order as numbered segments and words (word starts refined on ``samples``)."""
    entries = sorted(res.entries, key=lambda e: (e.seg.t0_ms, e.seg.t1_ms))
    segments = [replace(e.seg, seq=seq) for seq, e in enumerate(entries)]
    words = [replace(w, seq=seq) for seq, e in enumerate(entries) for w in e.words]
    if opts.decoding.refine_words:
        words = word_timing.refine(samples, words, engine.model_label)
        last = {w.seq: w.t1_ms for w in words}  # a segment ends where its last word ends
        segments = [replace(s, t1_ms=last.get(s.seq, s.t1_ms)) for s in segments]
    return replace(empty, language=res.language, language_probability=res.language_probability,
                   segments=tuple(segments), words=tuple(words),
                   dropped=tuple(sorted(res.dropped, key=lambda d: d.t0_ms)), doubtful=tuple(res.doubtful),
                   english_only=res.english_only, tokens=tuple(t for e in entries for t in e.tokens),
                   seg_tokens=tuple(e.tokens for e in entries))


def _pass(samples: np.ndarray, regions, core, opts: Options, engine: Engine, *, prompt, recovering: bool,
          max_new_tokens: int | None, check_context) -> _Pass:
    """One Whisper decode of ``samples`` through the drop rules."""
    d = opts.decoding
    dropped: list[Span] = []

    def drop(s, start: float, end: float, reason: str, lang: str | None = None, evidence=None) -> None:
        dropped.append(dropped_text(ms(start), ms(end), reason, s.text, lang=lang, evidence=evidence))

    with engine.whisper.lock:  # one model instance is not safe to share across concurrent transcribe calls
        model = engine.model()
        # words are aligned after decoding, window by window, on the decoder's own encoder output (see
        # word_timing.WindowAligner: decoding with word_timestamps=True lost the last words of a recording)
        aligner = word_timing.WindowAligner(model, len(samples))
        with model.hooks(on_encode=aligner.capture, loop_ratio=LOOP_RETRY_RATIO if d.loop_retry else None):
            seg_iter, info = model.transcribe(
                samples, language=opts.language or None, beam_size=int(opts.beam_size), vad_filter=False,
                word_timestamps=False, initial_prompt=prompt or opts.vocabulary or None,
                hotwords=opts.vocabulary or None, condition_on_previous_text=d.condition_on_previous_text,
                temperature=d.temperature, max_new_tokens=max_new_tokens,
            )
            aligner.language = info.language
            candidates, trimmed = _candidates(seg_iter, model, aligner, regions, d.max_compression_ratio, drop,
                                              dropped)
            aligned = aligner.finish()
        english_only = not model.model.is_multilingual
        check = engine.language_checker() if (d.language_check and english_only) else None
        bad = _impossible(candidates, aligned, drop)
        verdicts = {} if check is None else _verdicts(candidates, aligned, bad, trimmed, check, recovering,
                                                      check_context or (samples, core, 0))
    entries, doubts = _kept(candidates, aligned, bad, trimmed, verdicts, drop, engine.model_label)
    twice = written_twice([(e.seg.t0_ms, e.seg.t1_ms, e.seg.text) for e in entries])
    for i in sorted(twice):
        e = entries[i]
        dropped.append(dropped_text(e.seg.t0_ms, e.seg.t1_ms, "written twice: its words are those of the "
                                    "segment(s) kept over the same time", e.seg.text))
    entries = [e for i, e in enumerate(entries) if i not in twice]
    return _Pass(entries, dropped, doubts, info.language, float(info.language_probability), english_only)


def _candidates(seg_iter, model, aligner, regions, max_cr: float | None, drop, dropped: list[Span]):
    """Whisper's segments as they come, through the VAD gate and the repetition rule: (the candidates, the
    indices of those that lost a repeated tail). Each candidate is handed to ``aligner``."""
    candidates, trimmed = [], set()
    for s in seg_iter:
        stop.checkpoint()  # between Whisper windows (a chunk is lost whole when stopped, never half stored)
        aligner.seen(s)
        if regions is not None and not _has_speech(regions, s.start, s.end):
            drop(s, s.start, s.end, "no speech in its time span (voice activity detection)")
            continue
        if max_cr is not None and (cr := compression_ratio(s.text)) > max_cr:
            keep = loop_cut(s.text)
            cut = _trimmed(model, s, keep) if keep else None
            if cut is None or compression_ratio(cut.text) > max_cr:
                drop(s, s.start, s.end, f"repetition (compression ratio {cr:.1f} > {max_cr})")
                continue
            dropped.append(dropped_text(ms(s.start), ms(s.end), f"repeated tail cut (compression ratio {cr:.1f} > "
                                        f"{max_cr})", " ".join(s.text.split()[keep:])))
            trimmed.add(len(candidates))
            s = cut
        candidates.append(s)
        aligner.add(s)
    return candidates, trimmed


def _verdicts(candidates, aligned, bad: set[int], trimmed: set[int], check, recovering: bool,
              context) -> dict[int, tuple[str, float, float, float]]:
    """The language check of the doubtful candidates, in groups that share one check: {index: (language, p,
    P(en), seconds of speech heard)}. ``context`` = (samples, core, offset): the audio the check hears."""
    doubtful = [i for i, (s, a) in enumerate(zip(candidates, aligned)) if i not in bad
                and not (recovering and _unsure(s, a.words))
                and (i in trimmed or _doubtful(s.avg_logprob, a.words))]
    heard, heard_core, off = context
    verdicts: dict[int, tuple[str, float, float, float]] = {}
    for group in check_groups([(aligned[i].start, aligned[i].end) for i in doubtful]):
        t0, t1 = aligned[doubtful[group[0]]].start, max(aligned[doubtful[j]].end for j in group)
        a, b = _context(t0 + off / 16000, t1 + off / 16000, len(heard))
        speech_s = speech_in(heard_core, a, b)
        verdict = check(heard[a:b], padded=speech_s < LANGUAGE_MIN_SPEECH_S)
        verdicts.update((doubtful[j], (*verdict, speech_s)) for j in group)
    return verdicts


def _kept(candidates, aligned, bad: set[int], trimmed: set[int], verdicts: dict, drop,
          model_label: str | None) -> tuple[list[Entry], list[Span]]:
    """The candidates that are kept, as entries, after the language verdicts (a confident other language is
    dropped, a doubt on too little speech kept and recorded): (entries, doubtful spans)."""
    entries, doubts = [], []
    for i, (s, a) in enumerate(zip(candidates, aligned)):
        if i in bad:
            continue
        if i in verdicts:
            lang, p, p_en, speech_s = verdicts[i]
            probs = [w.probability for w in a.words]
            mean_p = sum(probs) / len(probs) if probs else 0.0
            short = speech_s < LANGUAGE_MIN_SPEECH_S
            loop_head = i in trimmed and lang != "en" and mean_p < LANGUAGE_KEEP_WORD_P  # a loop, not English
            if ((lang != "en" and p >= LANGUAGE_CHECK_MIN_TOP_P and p_en < LANGUAGE_CHECK_MIN_P) or loop_head) \
                    if not short else (lang != "en" and p_en < LANGUAGE_SHORT_MAX_P_EN):
                what = f"spoken language is {lang} (p={p:.2f}, P(en)={p_en:.3f}, {speech_s:.1f} s of speech"
                evidence = Evidence(p=round(p, 3), p_en=round(p_en, 4), speech_s=round(speech_s, 2),
                                    word_p=round(mean_p, 3))
                if not short or mean_p < LANGUAGE_KEEP_WORD_P:
                    drop(s, a.start, a.end, f"{what}, word probability {mean_p:.2f}); the English-only "
                         f"model {model_label} cannot transcribe it", lang, evidence)
                    continue
                doubts.append(Span(ms(a.start), ms(a.end), f"kept: {what}, but the English model's word "
                                   f"probability is {mean_p:.2f})", text=s.text.strip(), lang=lang,
                                   evidence=evidence))
        entries.append(Entry(
            Segment(ms(a.start), ms(a.end), s.text.strip(), float(s.avg_logprob), float(s.no_speech_prob)),
            tuple(Word(k, ms(w.start), ms(w.end), w.word, float(w.probability)) for k, w in enumerate(a.words)),
            tuple(int(t) for t in s.tokens)))
    return entries, doubts


def _unsure(s, words: Sequence[AlignedWord]) -> bool:
    """The coverage pass drops this segment whatever its language (:func:`coverage.unsure`)."""
    probs = [w.probability for w in words]
    return unsure(len(words), float(s.no_speech_prob), sum(probs) / len(probs) if probs else 0.0)


def finish(out: Decoded, *, available: bool = True) -> Transcript:
    """The stage's tables from :func:`decode`'s output (or the chunks' assembled): the ``transcripts`` row (the
    reason of an empty transcript; what was dropped, doubted and left uncovered), the segments and words."""
    reason, dropped = out.reason, out.dropped
    if not out.segments and reason is None:
        langs = sorted({d.lang for d in dropped if d.lang})
        if langs:
            reason = (f"no English speech: {len(dropped)} segment(s) dropped (spoken language "
                      f"{', '.join(langs)}; use --model base or --language)")
        elif dropped:
            reason = f"no speech detected ({len(dropped)} segment(s) dropped: {dropped[0].reason})"
        else:
            reason = "no speech detected"
    meta = TranscriptMeta(
        available=available, reason=reason, language=out.language, language_probability=out.language_probability,
        model=out.model, segment_count=len(out.segments), word_count=len(out.words), audio_ms=out.audio_ms,
        elapsed_s=out.elapsed_s, dropped_count=len(dropped), dropped=dropped,
        dropped_words=sum(d.word_count for d in dropped), doubtful_count=len(out.doubtful), doubtful=out.doubtful,
        speech_ms=int(out.speech_ms or 0), uncovered_ms=sum(g.t1_ms - g.t0_ms for g in out.uncovered),
        uncovered=out.uncovered)
    return Transcript(meta, out.segments, out.words)


def quality(meta: TranscriptMeta | None) -> Quality:
    """What the drop rules removed, what they kept in doubt and the speech left without words, from a
    transcripts row (its spans structs or, in a row written earlier, JSON; zeros for an older row or none)."""
    if meta is None:
        return Quality(dropped_segments=0, dropped_words=0, dropped_why={}, doubtful_segments=0, speech_s=0.0,
                       uncovered_speech_s=0.0, uncovered=[])
    why: dict[str, int] = {}
    for d in spans(meta.dropped):
        key = re.sub(r" \(.*", "", d.reason).split(";")[0]
        why[key] = why.get(key, 0) + d.word_count
    return Quality(dropped_segments=int(meta.dropped_count or 0), dropped_words=sum(why.values()), dropped_why=why,
                   doubtful_segments=int(meta.doubtful_count or 0), speech_s=round((meta.speech_ms or 0) / 1000, 1),
                   uncovered_speech_s=round((meta.uncovered_ms or 0) / 1000, 1),
                   uncovered=[(g.t0_ms, g.t1_ms, g.reason) for g in spans(meta.uncovered)])


def unavailable(reason: str, model_label: str | None = None) -> Transcript:
    """The stage's tables when there is nothing to transcribe (no audio stream, unreadable audio)."""
    return finish(Decoded(model=model_label, audio_ms=0, reason=reason), available=False)


def transcript_check(loud: bool, segment_count: int) -> CheckResult:
    """Audible audio (peak above ~-30 dBFS) should yield a transcript; a warning, not a failure."""
    return CheckResult("transcript_present_when_audible", (not loud) or segment_count > 0,
                       f"audible audio, {segment_count} transcript segments" if loud
                       else "no audible audio: nothing expected")


def verify(rid: str) -> CheckResult:
    """:func:`transcript_check` from what is stored now (the check run on its own)."""
    probe = store.read_one("probe", rid, record=ProbeRow)
    peak = 0
    if probe and probe.has_audio and store.exists(store.audio_key(rid)):
        peak = audio_stage.peak(audio_stage.load_wav(wav_path(rid)))
    return transcript_check(peak > audio_stage.AUDIBLE_PEAK, len(store.read_rows("segments", rid)))

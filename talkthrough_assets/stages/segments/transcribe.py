"""segments: faster-whisper on the 16 kHz WAV (CPU int8, beam 5, VAD on, word timestamps): :func:`decode` and the
transcript it makes. Repetition loops lose their tail, text over no voice activity and (for an English-only model)
segments whose audio is another language are dropped with a recorded reason (the rules: ``rules.py``), and speech no
segment covers is decoded again on its own (``coverage.py``). The models are loaded by a :class:`Whisper`
(``engine.py``) that the caller owns and passes in. The stage's ``run()`` (in chunks of the recording, each result
kept) is ``stage.py``; ``chunks.transcribe`` is the same decode with nothing stored."""

from __future__ import annotations

import json
import re
import time

import numpy as np

from talkthrough_assets.core import stop
from talkthrough_assets import store
from talkthrough_assets.stages import audio as audio_stage
from talkthrough_assets.stages.segments import word_timing
from talkthrough_assets.stages.segments.coverage import (
    recover, unsure)
from talkthrough_assets.stages.segments.engine import (
    DEVICE, Whisper, default_whisper, language_checker)
from talkthrough_assets.stages.segments.rules import (
    LANGUAGE_CHECK_MIN_P, LANGUAGE_CHECK_MIN_TOP_P, LANGUAGE_KEEP_WORD_P, LANGUAGE_MIN_SPEECH_S,
    LANGUAGE_SHORT_MAX_P_EN, LoopGuard, _context, _doubtful, _has_speech, _impossible, _trimmed, check_groups,
    compression_ratio, core_speech, loop_cut, speech_in, speech_regions)
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
#   (P(en) < 0.05 and another language leads with p >= 0.8, see below) is dropped. Every drop is recorded with its reason (transcripts.dropped).
#   The earlier per-window log-prob cut (-1.0) removed whole 30-s windows of real far-field speech.
CONDITION_ON_PREVIOUS_TEXT = True
BEAM_SIZE = 5
MAX_COMPRESSION_RATIO: float | None = 2.4
TEMPERATURE = (0.0,)  # no sampling fallback, see above
LOOP_RETRY_RATIO = 2.4  # a window whose text loops is decoded again without the text before it (rules.LoopGuard)


def _empty(meta: dict, reason: str, t_start: float) -> dict:
    meta.update(reason=reason, elapsed_s=round(time.perf_counter() - t_start, 3))
    return {"meta": meta, "segments": [], "words": [], "dropped": [], "tokens": [], "doubtful": [],
            "uncovered": [], "speech_ms": 0, "core_ms": []}


def decode(samples: np.ndarray, *, model_ref: str, model_label: str, language: str | None = None,
           vocabulary: str | None = None, beam_size: int = BEAM_SIZE, vad: bool = True,
           condition_on_previous_text: bool = CONDITION_ON_PREVIOUS_TEXT,
           max_compression_ratio: float | None = MAX_COMPRESSION_RATIO, temperature=TEMPERATURE,
           language_check: bool = True, threads: int | None = None, whisper: Whisper | None = None,
           device: str = DEVICE, compute: str | None = None,
           refine_words: bool = True, prompt: list[int] | None = None, coverage: bool = True,
           recovering: bool = False, max_new_tokens: int | None = None,
           check_context: tuple[np.ndarray, list, int] | None = None,
           loop_retry: bool = True, vad_regions: list[tuple[int, int]] | None = None) -> dict:
    """Decode ``samples`` and apply the drop rules: {"meta", "segments", "words", "dropped", "tokens", "doubtful",
    "uncovered", "speech_ms"} (times in ms from the first sample; each dropped segment keeps its "lang"; "tokens":
    the tokens of the segments kept, the context for what follows: a dropped segment's are not, so a
    hallucination over the silence at a chunk's end ("Okay. Okay. ...", dropped by the VAD gate) cannot become
    the next chunk's prompt); :func:`finish` makes it the stage's output. ``prompt``: the tokens said before (a
    previous chunk's context) instead of the vocabulary as the initial prompt. ``whisper``: where the model is
    loaded (default: :func:`default_whisper`), on ``device`` with ``compute`` (:func:`engine.compute_type`). ``language_check``: check the doubtful segments of an English-only
    model with the multilingual model's language detection (``recovering``: the coverage pass's decode of a span,
    whose segments it does not keep anyway, :func:`coverage.unsure`, are not checked). ``check_context``: (the
    chunk's samples, their core speech, where ``samples`` start in them): the check hears the chunk's audio around
    a segment (the coverage pass's spans; default: ``samples`` alone).
    ``refine_words``: move word starts onto the audio (:mod:`.word_timing`). ``coverage``: decode again, on its
    own, speech that no kept segment covers (:data:`COVERAGE_MIN_S`); what stays uncovered is listed with why.
    ``vad_regions``: :func:`speech_regions` of ``samples``, when the caller has them already.

    Nothing is deleted to fix a time span or a loop: a loop loses its repeated tail (:func:`loop_cut`), and a
    segment whose span holds no voice activity is dropped only as text: its speech, wherever it is, is left
    uncovered and decoded again. "doubtful": segments kept although the language check doubted them."""
    t_start = time.perf_counter()
    audio_ms = int(len(samples) * 1000 / 16000)
    meta = {"available": True, "reason": None, "language": None, "language_probability": None,
            "model": model_label, "segment_count": 0, "word_count": 0, "audio_ms": audio_ms, "elapsed_s": 0.0,
            "dropped_count": 0, "dropped": "[]"}
    if len(samples) < 1600:  # < 0.1 s: nothing to transcribe
        return _empty(meta, "no speech detected (audio shorter than 0.1 s)", t_start)
    whisper = whisper or default_whisper()
    regions = (vad_regions if vad_regions is not None else speech_regions(samples)) if vad else None
    if regions == []:  # the gate would drop every segment: Whisper is not run at all (a silent screencast)
        return _empty(meta, "no speech detected (no voice activity)", t_start)
    core = core_speech(regions) if regions is not None else [(0, len(samples))]
    opts = dict(model_ref=model_ref, model_label=model_label, language=language, vocabulary=vocabulary,
                beam_size=beam_size, condition_on_previous_text=condition_on_previous_text,
                max_compression_ratio=max_compression_ratio, temperature=temperature,
                language_check=language_check, threads=threads, whisper=whisper, device=device, compute=compute,
                loop_retry=loop_retry)
    res = _pass(samples, regions, core, prompt=prompt, recovering=recovering, max_new_tokens=max_new_tokens,
                check_context=check_context, **opts)
    entries, dropped, doubtful = res["entries"], res["dropped"], res["doubtful"]
    redecode = (lambda part, **kw: decode(part, **opts, refine_words=False, coverage=False, recovering=True, **kw))
    gaps = (recover(samples, core, entries, dropped, doubtful, again=coverage, vocabulary=vocabulary, redecode=redecode)
            if regions is not None else [])
    entries.sort(key=lambda e: (e["seg"]["t0_ms"], e["seg"]["t1_ms"]))
    segments, words, tokens, seg_tokens = [], [], [], []
    for seq, e in enumerate(entries):
        segments.append(dict(e["seg"], seq=seq))
        words += [dict(w, seq=seq) for w in e["words"]]
        tokens += e["tokens"]
        seg_tokens.append(e["tokens"])
    dropped.sort(key=lambda d: d["t0_ms"])
    if refine_words:
        words = word_timing.refine(samples, words, model_label)
        last = {w["seq"]: w["t1_ms"] for w in words}  # a segment ends where its last word ends
        segments = [dict(s, t1_ms=last.get(s["seq"], s["t1_ms"])) for s in segments]
    info = res["info"]
    meta.update(language=info.language, language_probability=float(info.language_probability),
                segment_count=len(segments), word_count=len(words), dropped_count=len(dropped),
                elapsed_s=round(time.perf_counter() - t_start, 3))
    return {"meta": meta, "segments": segments, "words": words, "dropped": dropped, "tokens": tokens,
            "seg_tokens": seg_tokens, "doubtful": doubtful, "uncovered": gaps, "english_only": res["english_only"],
            "speech_ms": int(sum(b - a for a, b in core) / 16),
            "core_ms": [[a // 16, b // 16] for a, b in core] if regions is not None else []}


def _pass(samples: np.ndarray, regions, core, *, model_ref: str, model_label: str, language, vocabulary,
          beam_size: int, condition_on_previous_text: bool, max_compression_ratio, temperature, language_check: bool,
          threads, whisper: Whisper, device: str, compute: str | None, prompt, recovering: bool,
          max_new_tokens: int | None = None, check_context=None, loop_retry: bool = True) -> dict:
    """One Whisper decode of ``samples`` through the drop rules: {"entries", "dropped", "doubtful", "info"}."""
    dropped: list[dict] = []
    with whisper.lock:  # one model instance is not safe to share across concurrent transcribe calls
        model = whisper.model(model_ref, threads, device, compute)
        # words are aligned after decoding, window by window, on the decoder's own encoder output (see
        # word_timing.WindowAligner: decoding with word_timestamps=True lost the last words of a recording)
        aligner = word_timing.WindowAligner(model, len(samples))
        with aligner, LoopGuard(model, LOOP_RETRY_RATIO if loop_retry else None):
            seg_iter, info = model.transcribe(
                samples, language=language or None, beam_size=beam_size, vad_filter=False,
                word_timestamps=False, initial_prompt=prompt or vocabulary or None, hotwords=vocabulary or None,
                condition_on_previous_text=condition_on_previous_text, temperature=temperature,
                max_new_tokens=max_new_tokens,
            )
            aligner.language = info.language
            english_only = not model.model.is_multilingual
            check = language_checker(whisper, threads, device, compute) if (language_check and english_only) else None

            def drop(s, start: float, end: float, reason: str, lang: str | None = None) -> None:
                dropped.append({"t0_ms": int(round(start * 1000)), "t1_ms": int(round(end * 1000)),
                                "reason": reason, "text": s.text.strip(), "lang": lang,
                                "words": len(s.text.split())})

            candidates, trimmed = [], set()
            for s in seg_iter:
                stop.checkpoint()  # between Whisper windows (a chunk is lost whole when stopped, never half stored)
                aligner.seen(s)
                if regions is not None and not _has_speech(regions, s.start, s.end):
                    drop(s, s.start, s.end, "no speech in its time span (voice activity detection)")
                    continue
                if max_compression_ratio is not None and (cr := compression_ratio(s.text)) > max_compression_ratio:
                    keep = loop_cut(s.text)
                    cut = _trimmed(model, s, keep) if keep else None
                    if cut is None or compression_ratio(cut.text) > max_compression_ratio:
                        drop(s, s.start, s.end, f"repetition (compression ratio {cr:.1f} > {max_compression_ratio})")
                        continue
                    rest = s.text.split()[keep:]
                    dropped.append({"t0_ms": int(round(s.start * 1000)), "t1_ms": int(round(s.end * 1000)),
                                    "reason": f"repeated tail cut (compression ratio {cr:.1f} > "
                                              f"{max_compression_ratio})", "text": " ".join(rest), "lang": None,
                                    "words": len(rest)})
                    trimmed.add(len(candidates))
                    s = cut
                candidates.append(s)
                aligner.add(s)
            aligned = aligner.finish()
        bad = _impossible(candidates, aligned, drop)
        verdicts: dict[int, tuple[str, float, float, float]] = {}
        if check is not None:
            doubtful = [i for i, (s, a) in enumerate(zip(candidates, aligned)) if i not in bad
                        and not (recovering and _unsure(s, a["words"]))
                        and (i in trimmed or _doubtful(s.avg_logprob, a["words"]))]
            heard, heard_core, off = check_context or (samples, core, 0)
            for group in check_groups([(aligned[i]["start"], aligned[i]["end"]) for i in doubtful]):
                t0, t1 = aligned[doubtful[group[0]]]["start"], max(aligned[doubtful[j]]["end"] for j in group)
                a, b = _context(t0 + off / 16000, t1 + off / 16000, len(heard))
                speech_s = speech_in(heard_core, a, b)
                verdict = check(heard[a:b], padded=speech_s < LANGUAGE_MIN_SPEECH_S)
                verdicts.update((doubtful[j], (*verdict, speech_s)) for j in group)
    entries, doubts = [], []
    for i, (s, a) in enumerate(zip(candidates, aligned)):
        if i in bad:
            continue
        if i in verdicts:
            lang, p, p_en, speech_s = verdicts[i]
            probs = [w["probability"] for w in a["words"]]
            mean_p = sum(probs) / len(probs) if probs else 0.0
            short = speech_s < LANGUAGE_MIN_SPEECH_S
            loop_head = i in trimmed and lang != "en" and mean_p < LANGUAGE_KEEP_WORD_P  # a loop, not English
            if ((lang != "en" and p >= LANGUAGE_CHECK_MIN_TOP_P and p_en < LANGUAGE_CHECK_MIN_P) or loop_head) \
                    if not short else (lang != "en" and p_en < LANGUAGE_SHORT_MAX_P_EN):
                what = f"spoken language is {lang} (p={p:.2f}, P(en)={p_en:.3f}, {speech_s:.1f} s of speech"
                evidence = {"p": round(p, 3), "p_en": round(p_en, 4), "speech_s": round(speech_s, 2),
                            "word_p": round(mean_p, 3)}
                if not short or mean_p < LANGUAGE_KEEP_WORD_P:
                    drop(s, a["start"], a["end"], f"{what}, word probability {mean_p:.2f}); the English-only "
                         f"model {model_label} cannot transcribe it", lang)
                    dropped[-1]["evidence"] = evidence
                    continue
                doubts.append({"t0_ms": int(round(a["start"] * 1000)), "t1_ms": int(round(a["end"] * 1000)),
                               "text": s.text.strip(), "lang": lang, "evidence": evidence,
                               "reason": f"kept: {what}, but the English model's word probability is "
                               f"{mean_p:.2f})"})
        entries.append({"seg": {"t0_ms": int(round(a["start"] * 1000)), "t1_ms": int(round(a["end"] * 1000)),
                                "text": s.text.strip(), "avg_logprob": float(s.avg_logprob),
                                "no_speech_prob": float(s.no_speech_prob)},
                        "words": [{"idx": k, "t0_ms": int(round(w["start"] * 1000)),
                                   "t1_ms": int(round(w["end"] * 1000)), "word": w["word"],
                                   "prob": float(w["probability"])} for k, w in enumerate(a["words"])],
                        "tokens": [int(t) for t in s.tokens]})
    return {"entries": entries, "dropped": dropped, "doubtful": doubts, "info": info, "english_only": english_only}


def _unsure(s, words: list[dict]) -> bool:
    """The coverage pass drops this segment whatever its language (:func:`coverage.unsure`)."""
    probs = [w["probability"] for w in words]
    return unsure(len(words), float(s.no_speech_prob), sum(probs) / len(probs) if probs else 0.0)


def finish(out: dict) -> dict:
    """The stage's output from :func:`decode`'s (or the chunks' assembled): the reason of an empty transcript,
    the dropped segments as JSON in meta."""
    meta, segments, dropped = out["meta"], out["segments"], out["dropped"]
    if not segments and meta.get("reason") is None:
        langs = sorted({d["lang"] for d in dropped if d.get("lang")})
        if langs:
            meta["reason"] = (f"no English speech: {len(dropped)} segment(s) dropped (spoken language "
                              f"{', '.join(langs)}; use --model base or --language)")
        elif dropped:
            meta["reason"] = f"no speech detected ({len(dropped)} segment(s) dropped: {dropped[0]['reason']})"
        else:
            meta["reason"] = "no speech detected"
    meta["dropped_count"] = len(dropped)
    meta["dropped_words"] = sum(d.get("words", len(d["text"].split())) for d in dropped)
    meta["dropped"] = json.dumps([{k: v for k, v in d.items() if k != "lang"} for d in dropped], ensure_ascii=False)
    doubtful, gaps = out.get("doubtful") or [], out.get("uncovered") or []
    meta["doubtful_count"] = len(doubtful)
    meta["doubtful"] = json.dumps(doubtful, ensure_ascii=False)
    meta["speech_ms"] = int(out.get("speech_ms") or 0)
    meta["uncovered_ms"] = sum(g["t1_ms"] - g["t0_ms"] for g in gaps)
    meta["uncovered"] = json.dumps(gaps, ensure_ascii=False)
    return {"meta": meta, "segments": segments, "words": out["words"]}


def quality(meta: dict | None) -> dict:
    """What the drop rules removed, what they kept in doubt and the speech left without words, from a
    transcripts row: {"dropped_segments", "dropped_words", "dropped_why": {reason: words}, "doubtful_segments",
    "speech_s", "uncovered_speech_s", "uncovered": [[t0_ms, t1_ms, reason]]} (zeros for an older row)."""
    meta = meta or {}
    why: dict[str, int] = {}
    for d in json.loads(meta.get("dropped") or "[]"):
        key = re.sub(r" \(.*", "", d["reason"]).split(";")[0]
        why[key] = why.get(key, 0) + int(d.get("words", len(d.get("text", "").split())))
    gaps = json.loads(meta.get("uncovered") or "[]")
    return {"dropped_segments": int(meta.get("dropped_count") or 0), "dropped_words": sum(why.values()),
            "dropped_why": why, "doubtful_segments": int(meta.get("doubtful_count") or 0),
            "speech_s": round((meta.get("speech_ms") or 0) / 1000, 1),
            "uncovered_speech_s": round((meta.get("uncovered_ms") or 0) / 1000, 1),
            "uncovered": [[g["t0_ms"], g["t1_ms"], g["reason"]] for g in gaps]}


def unavailable(reason: str, model_label: str | None = None) -> dict:
    return {"meta": {"available": False, "reason": reason, "language": None, "language_probability": None,
                     "model": model_label, "segment_count": 0, "word_count": 0, "audio_ms": 0, "elapsed_s": 0.0,
                     "dropped_count": 0, "dropped": "[]", "dropped_words": 0, "doubtful_count": 0,
                     "doubtful": "[]", "speech_ms": 0, "uncovered_ms": 0, "uncovered": "[]"},
            "segments": [], "words": []}


def transcript_check(loud: bool, segment_count: int) -> CheckResult:
    """Audible audio (peak above ~-30 dBFS) should yield a transcript; a warning, not a failure."""
    return CheckResult("transcript_present_when_audible", (not loud) or segment_count > 0,
                       f"audible audio, {segment_count} transcript segments" if loud
                       else "no audible audio: nothing expected")


def verify(rid: str) -> CheckResult:
    """:func:`transcript_check` from what is stored now (the check run on its own)."""
    probe = store.read_one("probe", rid) or {}
    peak = 0
    if probe.get("has_audio") and store.exists(store.audio_key(rid)):
        peak = audio_stage.peak(audio_stage.load_wav(wav_path(rid)))
    return transcript_check(peak > 1000, len(store.read_rows("segments", rid)))

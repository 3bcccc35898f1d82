"""segments: faster-whisper on the 16 kHz WAV (CPU int8, beam 5, VAD on, word timestamps). Repetition loops lose
their tail, text over no voice activity and (for an English-only model) segments whose audio is another language
are dropped with a recorded reason, and speech no segment covers is decoded again on its own.

The loaded models live in a :class:`Whisper` object that the caller owns and passes in (the pipeline gets
the process's one from ``talkthrough_assets.pipeline.engines``, Dagster from its ``whisper`` resource); a call
without one uses :func:`default_whisper`, the same process-wide object. The stage's ``run()`` and its
``CODE_VERSION`` (in chunks of the recording, each result kept) are ``stages/segments/stage.py``;
``chunks.transcribe`` is the same decode with nothing stored."""

from __future__ import annotations

import json
import os
import re
import threading
import time
import zlib
from collections import OrderedDict

import numpy as np

from talkthrough_assets.core import config
from talkthrough_assets.core import stop
from talkthrough_assets import store
from talkthrough_assets.stages import audio as audio_stage
from talkthrough_assets.stages.segments import word_timing
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
LANGUAGE_CHECK_WORD_PROB = 0.7  # a segment whose mean word probability is under this is checked ...
LANGUAGE_CHECK_LOGPROB = -0.5  # ... and one whose window avg_logprob is under this. On the eval set the 95
# segments tiny.en wrote over non-English speech had avg_logprob <= -0.60, or (two, at -0.20 and -0.47) a mean
# word probability of 0.19; English speech is often under 0.85 (the TTS voices of the bench meeting: 0.56-0.85
# at avg_logprob >= -0.25). At 0.85 the check ran on 47 % of the meeting's segments, 0.14 s CPU each (the
# multilingual encoder over 8-10 s), 20 % of bare faster-whisper's time, and dropped none
# (bench/bench_asr.py --long; tests/unit/test_transcribe_rules.py holds the measured points)
LANGUAGE_CHECK_MIN_P = 0.05  # dropped when P(en) is under this and another language leads ...
LANGUAGE_CHECK_MIN_S = 8  # seconds of audio around a segment that its language check hears
LANGUAGE_CHECK_MAX_S = 10
VAD_GATE_THRESHOLD = 0.1  # Silero speech probability for the gate (faster-whisper's filter uses 0.5; at 0.35
# the gate still dropped 10 s of real far-field speech on an AMI excerpt)
LANGUAGE_CHECK_MIN_TOP_P = 0.8  # ... with at least this probability. Measured on the eval set (bench/eval):
# the 109 segments tiny.en wrote over non-English speech had P(en) <= 0.012 and p >= 0.96; English speech had
# P(en) >= 0.11 (a far-field "Okay." on an AMI excerpt, read as Portuguese at p=0.65; a 1-s "7 of clubs" as
# Ukrainian at p=0.30, P(en)=0.07)
VAD_GATE_PAD_MS = 400
PROMPT_TOKENS = 223  # faster-whisper's previous-text prompt: the last max_length // 2 - 1 tokens
# Language ID is evidence only on enough speech. The check's usual verdict (the multilingual encoder run on the
# checked audio alone, cheap) is trusted on at least LANGUAGE_MIN_SPEECH_S of speech: the shortest amount at which
# it called >= 99 % of English windows of the eval set English (bench/bench_language_id.py). On less, it misjudged
# short English (a 1.6-s Indian-English ARCTIC prompt as Welsh, a 1.8-s Common Voice clip as Japanese, "seven of
# clubs" as Ukrainian): there the language is detected the way Whisper was trained to, on the audio padded to a
# 30-s window (~0.5 s CPU, only for such short audio), which called all 36 short English clips of the set English
# (P(en) >= 0.45) and every short non-English clip not English (P(en) <= 0.06). Such a segment is dropped only
# when P(en) < LANGUAGE_SHORT_MAX_P_EN and the English model itself is unsure of its words (mean word
# probability under LANGUAGE_KEEP_WORD_P; its text over non-English speech was <= 0.66); otherwise it is kept and
# the doubt recorded (transcripts.doubtful).
LANGUAGE_MIN_SPEECH_S = 4.0
LANGUAGE_SHORT_MAX_P_EN = 0.1
LANGUAGE_KEEP_WORD_P = 0.8
# Coverage: voice activity that no kept segment covers for at least this long is decoded again on its own (its
# own window, the text before it as prompt): Whisper's long-form decoding jumps over speech now and then (27 s of
# a narrated scene), and a segment whose text was given a wrong time span or was cut as a loop leaves its speech
# uncovered.
COVERAGE_MIN_S = 1.0
COVERAGE_MARGIN_S = 0.5  # audio heard on either side of an uncovered span when it is decoded again
RECOVER_MAX_NO_SPEECH_P = 0.6  # a segment the coverage pass finds is not kept when Whisper's no-speech
RECOVER_MIN_WORD_P = 0.5  # probability is at least this and its words' mean probability under this, when it
RECOVER_UNSURE_MAX_WORDS = 2  # has at most this many words
COVER_SLACK_MS = 250
# A span decoded again holds at most MAX_WORDS_PER_S words a second (~1.5 tokens a word): its decode stops there.
# Whisper pads it to a 30-s window and, over a breath or a filler, loops until its 448-token limit (on the 10-min
# screencast the coverage pass took 48 % of the stage's CPU, mostly such loops, later cut as repetitions)
COVER_TOKENS_PER_S = 12
COVER_TOKENS_MIN = 16
COVER_TOKENS_MAX = 200  # + a prompt of <= 228 tokens (no vocabulary) stays under Whisper's 448  # a kept segment covers its aligned span widened by this much
MAX_WORDS_PER_S = 8.0  # faster than anyone speaks: the aligned timing of such a segment is not its audio's
LOOP_MIN_REPEATS = 3  # a phrase said this many times in a row ends a segment's text (2 for phrases of
LOOP_LONG_PHRASE = 4  # at least this many words)


def cpu_threads(shared: bool = False, override: int | None = None) -> int:
    """Whisper's CPU threads: every core, or half of them when another stage runs beside it (the
    visual branch of a video): two CTranslate2 threads competing with OCR/decoding for 2 cores
    spin and cost ~1.5x the CPU for no gain. ``override`` (TALKTHROUGH_WHISPER_THREADS) replaces both."""
    if override:
        return int(override)
    n = os.cpu_count() or 2
    return max(1, n // 2) if shared else n


class Whisper:
    """faster-whisper models, each loaded once per (model, device, compute type, CPU threads) and kept
    (the newest ``max_models``). ``lock`` serializes loading and decoding: one model instance is not
    safe to share across concurrent transcribe calls, and a warm-up thread loading a model makes the
    stage that needs it wait for that load instead of starting a second one."""

    def __init__(self, max_models: int = 2):
        self.max_models = max_models
        self.lock = threading.RLock()
        self._models: OrderedDict[tuple, object] = OrderedDict()

    def model(self, model_ref: str, threads: int | None = None):
        """The loaded model (device and compute type from :func:`device_setting`)."""
        key = (model_ref, *device_setting(), threads or cpu_threads(override=config.get("TALKTHROUGH_WHISPER_THREADS")))
        with self.lock:
            if key in self._models:
                self._models.move_to_end(key)
            else:
                from faster_whisper import WhisperModel

                while len(self._models) >= self.max_models:
                    self._models.popitem(last=False)
                # better alignment heads where measured (word_timing.ALIGNMENT_HEADS; decoding is unchanged)
                self._models[key] = WhisperModel(model_ref, device=key[1], compute_type=key[2], cpu_threads=key[3],
                                                 files=word_timing.model_files(model_ref))
            return self._models[key]

    def warm(self, model_ref: str, threads: int | None = None) -> None:
        """Load the model now (a background thread may call this while other work runs)."""
        self.model(model_ref, threads)


_default = Whisper()  # loads nothing until a model is asked for


def default_whisper() -> Whisper:
    """This process's one :class:`Whisper`."""
    return _default


def device_setting() -> tuple[str, str]:
    """(device, compute_type): CPU int8 by default; TALKTHROUGH_DEVICE=cuda for the optional GPU path.
    The engine's setting (config), read when a model is loaded, not a stage function's input."""
    device = config.get("TALKTHROUGH_DEVICE")
    compute = config.get("TALKTHROUGH_COMPUTE_TYPE") or ("float16" if device == "cuda" else "int8")
    return device, compute


def engine_fingerprint() -> dict:
    """What, besides its settings, changes the segments stage's output (its StageSpec.engine)."""
    device, compute = device_setting()
    return {"device": device, "compute_type": compute}


def language_checker(whisper: "Whisper", threads: int | None = None):
    """A function (samples) -> (language, probability, P(en)) using the multilingual base model, or None when
    that model is not installed."""
    from talkthrough_assets.store.models import base_model_dir

    path = base_model_dir()
    if path is None:
        return None

    def check(samples: np.ndarray, padded: bool = False) -> tuple[str, float, float]:
        # The encoder runs on the segment's own frames, not on Whisper's padded 30-s window: CTranslate2
        # accepts the shorter input and it costs ~1/10 (0.03-0.1 s for 3-5 s of audio instead of 0.5 s).
        # ``padded``: on Whisper's 30-s window, as it was trained (see LANGUAGE_MIN_SPEECH_S).
        import ctranslate2

        model = whisper.model(str(path), threads)
        feats = model.feature_extractor(samples)
        n = model.feature_extractor.nb_max_frames
        feats = (np.pad(feats[:, :n], ((0, 0), (0, max(0, n - feats.shape[1])))) if padded
                 else feats[:, : max(1, len(samples) // 160)])
        view = ctranslate2.StorageView.from_array(np.ascontiguousarray(feats[None].astype(np.float32)))
        ranked = [(tok.strip("<|>"), float(p)) for tok, p in model.model.detect_language(view)[0]]
        return ranked[0][0], ranked[0][1], dict(ranked).get("en", 0.0)

    return check


def _context(t0: float, t1: float, n: int) -> tuple[int, int]:
    """Sample range for a segment's language check: the segment, widened symmetrically to at least
    LANGUAGE_CHECK_MIN_S (1-2 s alone is too little to tell a language: a 1.6-s English phrase read as Welsh),
    at most LANGUAGE_CHECK_MAX_S (its middle), clamped to the recording."""
    mid = (t0 + t1) / 2
    half = min(max((t1 - t0) / 2, LANGUAGE_CHECK_MIN_S / 2), LANGUAGE_CHECK_MAX_S / 2)
    a, b = max(0.0, mid - half), min(n / 16000, mid + half)
    if b - a < 2 * half:  # at an end of the recording: extend the other way
        a, b = max(0.0, b - 2 * half), min(n / 16000, a + 2 * half)
    return int(a * 16000), int(b * 16000)


def check_groups(spans: list[tuple[float, float]]) -> list[list[int]]:
    """The doubtful segments' spans (seconds, in decoding order) grouped for one language check each: a group
    starts at a segment and takes the next ones while the group ends within LANGUAGE_CHECK_MAX_S of its start, so
    the check's audio (:func:`_context` of the group's span) holds every segment of the group. A lone segment is
    heard as before. Short segments one after another share one check instead of one each over nearly the same
    seconds (a decode caught writing "Okay." over and over: 231 checks, 34 s CPU, became 66)."""
    groups: list[list[int]] = []
    start = 0.0
    for i, (t0, t1) in enumerate(spans):
        if groups and t1 - start <= LANGUAGE_CHECK_MAX_S and t0 >= start:
            groups[-1].append(i)
        else:
            groups.append([i])
            start = t0
    return groups


def _doubtful(avg_logprob: float, words: list[dict]) -> bool:
    probs = [w["probability"] for w in words]
    mean_p = sum(probs) / len(probs) if probs else 0.0
    return mean_p < LANGUAGE_CHECK_WORD_PROB or avg_logprob < LANGUAGE_CHECK_LOGPROB


def speech_regions(samples: np.ndarray, threshold: float = VAD_GATE_THRESHOLD) -> list[tuple[int, int]]:
    """Speech as (start, end) sample indices (faster-whisper's Silero VAD)."""
    from faster_whisper.vad import VadOptions, get_speech_timestamps

    opts = VadOptions(threshold=threshold, speech_pad_ms=VAD_GATE_PAD_MS)
    return [(t["start"], t["end"]) for t in get_speech_timestamps(samples, opts)]


def compression_ratio(text: str) -> float:
    """zlib compression ratio of one segment's text (faster-whisper's is its whole 30-s window's, so one loop
    in a window dropped the real "Okay." beside it)."""
    data = text.strip().encode("utf-8")
    return len(data) / len(zlib.compress(data)) if data else 0.0


def _has_speech(regions: list[tuple[int, int]], t0: float, t1: float) -> bool:
    a, b = int(t0 * 16000), int(t1 * 16000)
    return any(s < b and e > a for s, e in regions)


def core_speech(regions: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """The gate's regions without the padding the VAD adds on either side: the speech itself (samples)."""
    pad = VAD_GATE_PAD_MS * 16
    return [(a + pad, b - pad) for a, b in regions if b - a > 2 * pad]


def speech_in(core: list[tuple[int, int]], a: int, b: int) -> float:
    """Seconds of ``core`` speech within samples [a, b)."""
    return sum(max(0, min(e, b) - max(s, a)) for s, e in core) / 16000


def uncovered(core: list[tuple[int, int]], covered: list[tuple[int, int]], min_len: int) -> list[tuple[int, int]]:
    """Parts of the ``core`` speech (samples) that no ``covered`` span overlaps, at least ``min_len`` long."""
    out = []
    spans = sorted(covered)
    for s, e in core:
        pos = s
        for a, b in spans:
            if b <= pos or a >= e:
                continue
            if a > pos:
                out.append((pos, a))
            pos = max(pos, b)
        if pos < e:
            out.append((pos, e))
    return [(a, b) for a, b in out if b - a >= min_len]


def _key(word: str) -> str:
    return re.sub(r"[^\w']+", "", word.lower())


def loop_cut(text: str) -> int | None:
    """How many words of ``text`` to keep when it runs into a loop: the words up to the end of the first time a
    phrase is said :data:`LOOP_MIN_REPEATS` times in a row (twice for a phrase of :data:`LOOP_LONG_PHRASE` words or
    more); None when no phrase repeats so. "Thanks for the update. The rest of the rest of the rest of" keeps
    "Thanks for the update. The rest of"."""
    keys = [_key(w) for w in text.split()]
    n = len(keys)
    for i in range(n):
        for k in range(1, min(12, (n - i) // 2) + 1):
            need = 2 if k >= LOOP_LONG_PHRASE else LOOP_MIN_REPEATS
            phrase = keys[i:i + k]
            if i + need * k > n or not any(phrase):
                continue
            reps, j = 1, i + k
            while j + k <= n and keys[j:j + k] == phrase:
                reps, j = reps + 1, j + k
            if reps >= need:
                return i + k
    return None


def _trimmed(model, s, n_words: int):
    """Segment ``s`` with only its first ``n_words`` words (text and tokens), or None when its tokens cannot be
    cut there."""
    import dataclasses

    want = s.text.split()[:n_words]
    toks = list(s.tokens)
    for k in range(1, len(toks) + 1):
        text = model.hf_tokenizer.decode(toks[:k])
        if text.split()[:n_words] == want and len(text.split()) >= n_words:
            return dataclasses.replace(s, text=text, tokens=toks[:k])
    return None


def _empty(meta: dict, reason: str, t_start: float) -> dict:
    meta.update(reason=reason, elapsed_s=round(time.perf_counter() - t_start, 3))
    return {"meta": meta, "segments": [], "words": [], "dropped": [], "tokens": [], "doubtful": [],
            "uncovered": [], "speech_ms": 0}


def decode(samples: np.ndarray, *, model_ref: str, model_label: str, language: str | None = None,
           vocabulary: str | None = None, beam_size: int = BEAM_SIZE, vad: bool = True,
           condition_on_previous_text: bool = CONDITION_ON_PREVIOUS_TEXT,
           max_compression_ratio: float | None = MAX_COMPRESSION_RATIO, temperature=TEMPERATURE,
           language_check: bool = True, threads: int | None = None, whisper: Whisper | None = None,
           refine_words: bool = True, prompt: list[int] | None = None, coverage: bool = True,
           all_doubtful: bool = False, max_new_tokens: int | None = None) -> dict:
    """Decode ``samples`` and apply the drop rules: {"meta", "segments", "words", "dropped", "tokens", "doubtful",
    "uncovered", "speech_ms"} (times in ms from the first sample; each dropped segment keeps its "lang"; "tokens":
    the tokens of the segments kept, the context for what follows: a dropped segment's are not, so a
    hallucination over the silence at a chunk's end ("Okay. Okay. ...", dropped by the VAD gate) cannot become
    the next chunk's prompt); :func:`finish` makes it the stage's output. ``prompt``: the tokens said before (a
    previous chunk's context) instead of the vocabulary as the initial prompt. ``whisper``: where the model is
    loaded (default: :func:`default_whisper`). ``language_check``: check the doubtful segments of an English-only
    model with the multilingual model's language detection (``all_doubtful``: every segment).
    ``refine_words``: move word starts onto the audio (:mod:`.word_timing`). ``coverage``: decode again, on its
    own, speech that no kept segment covers (:data:`COVERAGE_MIN_S`); what stays uncovered is listed with why.

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
    regions = speech_regions(samples) if vad else None
    if regions == []:  # the gate would drop every segment: Whisper is not run at all (a silent screencast)
        return _empty(meta, "no speech detected (no voice activity)", t_start)
    core = core_speech(regions) if regions is not None else [(0, len(samples))]
    opts = dict(model_ref=model_ref, model_label=model_label, language=language, vocabulary=vocabulary,
                beam_size=beam_size, condition_on_previous_text=condition_on_previous_text,
                max_compression_ratio=max_compression_ratio, temperature=temperature,
                language_check=language_check, threads=threads, whisper=whisper)
    res = _pass(samples, regions, core, prompt=prompt, all_doubtful=all_doubtful, max_new_tokens=max_new_tokens,
                **opts)
    entries, dropped, doubtful = res["entries"], res["dropped"], res["doubtful"]
    gaps: list[dict] = []
    if regions is not None:
        def covered() -> list[tuple[int, int]]:
            slack = COVER_SLACK_MS * 16
            spans = [(e["seg"]["t0_ms"] * 16 - slack, e["seg"]["t1_ms"] * 16 + slack) for e in entries]
            return spans + [(d["t0_ms"] * 16, d["t1_ms"] * 16) for d in dropped if d.get("lang")]

        for a, b in (uncovered(core, covered(), int(COVERAGE_MIN_S * 16000)) if coverage else []):
            m = int(COVERAGE_MARGIN_S * 16000)
            w0, w1 = max(0, a - m), min(len(samples), b + m)
            # the text kept before it is its context (not the prompt this audio came with: a prompt that sent
            # Whisper into a loop would do it again)
            before = [t for e in entries if e["seg"]["t1_ms"] * 16 <= a for t in e["tokens"]]
            sub = decode(samples[w0:w1], **opts, prompt=before[-PROMPT_TOKENS:] or None,
                         refine_words=False, coverage=False, all_doubtful=True,
                         max_new_tokens=_cover_tokens(w1 - w0, vocabulary))
            off = w0 * 1000 // 16000
            kept = 0
            for e in _entries_of(sub):
                t0, t1 = e["seg"]["t0_ms"] + off, e["seg"]["t1_ms"] + off
                inside = min(t1, b // 16) - max(t0, a // 16)
                if inside * 2 < max(1, t1 - t0) or any(_key(x["seg"]["text"]) == _key(e["seg"]["text"])
                                                       for x in entries if abs(x["seg"]["t0_ms"] - t0) < 5000):
                    continue
                if (unsure := _unsure_recovery(e)) is not None:  # Whisper itself thinks nothing was said
                    dropped.append({"t0_ms": t0, "t1_ms": t1, "reason": unsure, "text": e["seg"]["text"],
                                    "lang": None, "words": len(e["seg"]["text"].split())})
                    continue
                entries.append(_shift(e, off))
                kept += 1
            dropped += [dict(d, t0_ms=d["t0_ms"] + off, t1_ms=d["t1_ms"] + off,
                             reason=d["reason"] + " (speech decoded again)") for d in sub["dropped"]]
            doubtful += [dict(d, t0_ms=d["t0_ms"] + off, t1_ms=d["t1_ms"] + off) for d in sub["doubtful"]]
            gaps.append({"t0_ms": a // 16, "t1_ms": b // 16, "kept": kept})
        still = uncovered(core, covered(), int(COVERAGE_MIN_S * 16000))
        gaps = [{"t0_ms": a // 16, "t1_ms": b // 16, "reason": _gap_reason(a, b, dropped, coverage)}
                for a, b in still]
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
    info = res["info"]
    meta.update(language=info.language, language_probability=float(info.language_probability),
                segment_count=len(segments), word_count=len(words), dropped_count=len(dropped),
                elapsed_s=round(time.perf_counter() - t_start, 3))
    return {"meta": meta, "segments": segments, "words": words, "dropped": dropped, "tokens": tokens,
            "seg_tokens": seg_tokens, "doubtful": doubtful, "uncovered": gaps,
            "speech_ms": int(sum(b - a for a, b in core) / 16)}


def _cover_tokens(n_samples: int, vocabulary: str | None) -> int | None:
    """The token cap of a span decoded again (:data:`COVER_TOKENS_PER_S`), or None where the prompt could leave it
    no room: Whisper's 448 tokens hold the prompt (its previous text, <= 223 tokens, and the vocabulary as
    hotwords, <= 223) and what it writes."""
    if vocabulary:
        return None
    return min(COVER_TOKENS_MAX, int(COVER_TOKENS_PER_S * n_samples / 16000) + COVER_TOKENS_MIN)


def _unsure_recovery(e: dict) -> str | None:
    """Why a segment the coverage pass found is not kept, or None: at most :data:`RECOVER_UNSURE_MAX_WORDS` words,
    Whisper's own no-speech probability at least :data:`RECOVER_MAX_NO_SPEECH_P` and its words' mean probability
    under :data:`RECOVER_MIN_WORD_P` (a "Yeah." written over a filler or a breath). A sentence is kept however
    unsure: on generated narrations the recovered scene introductions had no-speech probabilities of 0.78-0.88."""
    probs = [w["prob"] for w in e["words"]]
    mean_p = sum(probs) / len(probs) if probs else 0.0
    nsp = e["seg"].get("no_speech_prob", 0.0)
    if len(e["words"]) <= RECOVER_UNSURE_MAX_WORDS and nsp >= RECOVER_MAX_NO_SPEECH_P and mean_p < RECOVER_MIN_WORD_P:
        return (f"decoded again, not kept: no-speech probability {nsp:.2f}, word probability {mean_p:.2f} "
                "(speech decoded again)")
    return None


def _gap_reason(a: int, b: int, dropped: list[dict], decoded_again: bool) -> str:
    """Why speech [a, b) (samples) has no transcript: what was dropped over it, else Whisper wrote nothing."""
    over = [d for d in dropped if d["t0_ms"] * 16 < b and d["t1_ms"] * 16 > a]
    if over:
        return "dropped: " + over[0]["reason"]
    return "decoded again: no words" if decoded_again else "no words"


def _entries_of(out: dict) -> list[dict]:
    """A decode's kept segments as entries (segment, its words, its tokens), for merging."""
    by_seq: dict[int, list] = {}
    for w in out["words"]:
        by_seq.setdefault(w["seq"], []).append(w)
    toks = out.get("seg_tokens") or [[] for _ in out["segments"]]
    return [{"seg": s, "words": by_seq.get(s["seq"], []), "tokens": t} for s, t in zip(out["segments"], toks)]


def _shift(e: dict, off: int) -> dict:
    return {"seg": dict(e["seg"], t0_ms=e["seg"]["t0_ms"] + off, t1_ms=e["seg"]["t1_ms"] + off),
            "words": [dict(w, t0_ms=w["t0_ms"] + off, t1_ms=w["t1_ms"] + off) for w in e["words"]],
            "tokens": e["tokens"]}


def _impossible(candidates: list, aligned: list[dict], drop) -> set[int]:
    """Segments whose aligned timing cannot be right, dropped as text (``drop``): more than
    :data:`MAX_WORDS_PER_S` words a second (Whisper wrote sentences past what a window holds, all at its end: the
    alignment squeezed them into nothing), or the same text as the segment before over the same audio. Real
    speech under either is left uncovered and decoded again on its own (see COVERAGE_MIN_S)."""
    bad: set[int] = set()
    prev = None
    for i, (s, a) in enumerate(zip(candidates, aligned)):
        n = len(a["words"]) or len(s.text.split())
        span = a["end"] - a["start"]
        if n >= 3 and n > MAX_WORDS_PER_S * max(span, 0.0):
            drop(s, a["start"], a["end"], f"impossible timing ({n} words in {span:.1f} s)")
            bad.add(i)
            continue
        if prev is not None:
            ps, pa = prev
            overlap = min(a["end"], pa["end"]) - max(a["start"], pa["start"])
            if (_norm_text(s.text) == _norm_text(ps.text) and _norm_text(s.text)
                    and overlap > 0.5 * min(span, pa["end"] - pa["start"])):
                drop(s, a["start"], a["end"], "the same text twice over the same audio")
                bad.add(i)
                continue
        prev = (s, a)
    return bad


def _norm_text(text: str) -> str:
    return " ".join(k for k in (_key(w) for w in text.split()) if k)


def _pass(samples: np.ndarray, regions, core, *, model_ref: str, model_label: str, language, vocabulary,
          beam_size: int, condition_on_previous_text: bool, max_compression_ratio, temperature, language_check: bool,
          threads, whisper: Whisper, prompt, all_doubtful: bool, max_new_tokens: int | None = None) -> dict:
    """One Whisper decode of ``samples`` through the drop rules: {"entries", "dropped", "doubtful", "info"}."""
    dropped: list[dict] = []
    with whisper.lock:  # one model instance is not safe to share across concurrent transcribe calls
        model = whisper.model(model_ref, threads)
        # words are aligned after decoding, window by window, on the decoder's own encoder output (see
        # word_timing.WindowAligner: decoding with word_timestamps=True lost the last words of a recording)
        aligner = word_timing.WindowAligner(model, len(samples))
        with aligner:
            seg_iter, info = model.transcribe(
                samples, language=language or None, beam_size=beam_size, vad_filter=False,
                word_timestamps=False, initial_prompt=prompt or vocabulary or None, hotwords=vocabulary or None,
                condition_on_previous_text=condition_on_previous_text, temperature=temperature,
                max_new_tokens=max_new_tokens,
            )
            aligner.language = info.language
            english_only = not model.model.is_multilingual
            check = language_checker(whisper, threads) if (language_check and english_only) else None

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
                        and (all_doubtful or i in trimmed or _doubtful(s.avg_logprob, a["words"]))]
            for group in check_groups([(aligned[i]["start"], aligned[i]["end"]) for i in doubtful]):
                t0, t1 = aligned[doubtful[group[0]]]["start"], max(aligned[doubtful[j]]["end"] for j in group)
                a, b = _context(t0, t1, len(samples))
                speech_s = speech_in(core, a, b)
                verdict = check(samples[a:b], padded=speech_s < LANGUAGE_MIN_SPEECH_S)
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
    return {"entries": entries, "dropped": dropped, "doubtful": doubts, "info": info}


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

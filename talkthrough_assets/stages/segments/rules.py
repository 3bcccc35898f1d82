"""segments' drop rules: what of Whisper's output is kept. Repetition loops lose their tail (:func:`loop_cut`),
text over no voice activity is dropped (the VAD gate: :func:`speech_regions`), segments whose aligned timing is
impossible are dropped (:func:`_impossible`), and an English-only model's doubtful segments get a language check
(:func:`_doubtful`, :func:`check_groups`, :func:`_context`). The decode that applies them is ``transcribe.py``."""

from __future__ import annotations

import re
import zlib
from difflib import SequenceMatcher
from typing import Sequence

import numpy as np

from talkthrough_assets.model.transcript import Evidence, Span
from talkthrough_assets.stages.turns.labels import union_ms
from talkthrough_assets.stages.segments.word_timing import Aligned, AlignedWord

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
VAD_WINDOW = 512  # samples Silero hears at a time: one speech probability each
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
MAX_WORDS_PER_S = 8.0  # faster than anyone speaks: the aligned timing of such a segment is not its audio's
LOOP_MIN_REPEATS = 3  # a phrase said this many times in a row ends a segment's text (2 for phrases of
LOOP_LONG_PHRASE = 4  # at least this many words)


def ms(t: float) -> int:
    """Seconds (Whisper's times) as whole ms."""
    return int(round(t * 1000))


def dropped_text(t0_ms: int, t1_ms: int, reason: str, text: str, *, lang: str | None = None,
                 words: int | None = None, evidence: Evidence | None = None) -> Span:
    """What a drop rule removed: the text (``words``: how many words it was, its own count unless given), why,
    and the language it was heard as."""
    return Span(t0_ms, t1_ms, reason, text.strip(), lang, len(text.split()) if words is None else words, evidence)


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


def _doubtful(avg_logprob: float, words: Sequence[AlignedWord]) -> bool:
    probs = [w.probability for w in words]
    mean_p = sum(probs) / len(probs) if probs else 0.0
    return mean_p < LANGUAGE_CHECK_WORD_PROB or avg_logprob < LANGUAGE_CHECK_LOGPROB


def speech_regions(samples: np.ndarray, threshold: float = VAD_GATE_THRESHOLD) -> list[tuple[int, int]]:
    """Speech as (start, end) sample indices (faster-whisper's Silero VAD)."""
    from faster_whisper.vad import VadOptions, get_speech_timestamps

    opts = VadOptions(threshold=threshold, speech_pad_ms=VAD_GATE_PAD_MS)
    return [(t["start"], t["end"]) for t in get_speech_timestamps(samples, opts)]


def speech_probs(samples: np.ndarray) -> np.ndarray:
    """Silero speech probability per :data:`VAD_WINDOW`-sample window (faster-whisper's VAD model)."""
    from faster_whisper.vad import get_vad_model

    x = np.pad(samples.astype(np.float32, copy=False), (0, (-len(samples)) % VAD_WINDOW))
    return np.asarray(get_vad_model()(x), dtype=np.float32).reshape(-1)


def heard(samples: np.ndarray, a: int, b: int, threshold: float = VAD_GATE_THRESHOLD) -> bool:
    """Whether Silero hears speech at ``threshold`` anywhere in samples [a, b), heard after the second before
    ``a`` (its state warms up over it). A region :func:`speech_regions` gives goes on after its speech while the
    probability stays above the VAD's lower exit threshold (0.01), so a region's tail may hold none."""
    lead = min(a, 16000)
    return bool(speech_probs(samples[a - lead:b])[lead // VAD_WINDOW:].max(initial=0.0) >= threshold)


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


def _impossible(candidates: list, aligned: list[Aligned], drop) -> set[int]:
    """Segments whose aligned timing cannot be right, dropped as text (``drop``): more than
    :data:`MAX_WORDS_PER_S` words a second (Whisper wrote sentences past what a window holds, all at its end: the
    alignment squeezed them into nothing), or the same text as the segment before over the same audio. Real
    speech under either is left uncovered and decoded again on its own (see COVERAGE_MIN_S)."""
    bad: set[int] = set()
    prev = None
    for i, (s, a) in enumerate(zip(candidates, aligned)):
        n = len(a.words) or len(s.text.split())
        span = a.end - a.start
        if n >= 3 and n > MAX_WORDS_PER_S * max(span, 0.0):
            drop(s, a.start, a.end, f"impossible timing ({n} words in {span:.1f} s)")
            bad.add(i)
            continue
        if prev is not None:
            ps, pa = prev
            overlap = min(a.end, pa.end) - max(a.start, pa.start)
            if (_norm_text(s.text) == _norm_text(ps.text) and _norm_text(s.text)
                    and overlap > 0.5 * min(span, pa.end - pa.start)):
                drop(s, a.start, a.end, "the same text twice over the same audio")
                bad.add(i)
                continue
        prev = (s, a)
    return bad


def _norm_text(text: str) -> str:
    return " ".join(k for k in (_key(w) for w in text.split()) if k)


class Prefetch:
    """The VAD gate's regions of the chunk after the one being decoded, computed in a thread of their own (Silero
    VAD in ONNX Runtime leaves the interpreter free): its ~0.1 s of CPU per minute of audio is off the decoder's
    critical path wherever a core is idle (an audio-only recording: Whisper decodes on one thread)."""

    def __init__(self, samples: np.ndarray, bounds: list[tuple[int, int]]):
        from concurrent.futures import ThreadPoolExecutor

        self.samples, self.bounds = samples, bounds
        self.pool = ThreadPoolExecutor(1, thread_name_prefix="vad-ahead")
        self.ahead: dict = {}

    def regions(self, i: int):
        """Chunk ``i``'s regions (computed here when not prefetched); prefetches chunk ``i + 1``'s."""
        if i + 1 < len(self.bounds) and i + 1 not in self.ahead:
            a, b = self.bounds[i + 1]
            self.ahead[i + 1] = self.pool.submit(speech_regions, self.samples[a:b])
        fut = self.ahead.pop(i, None)
        if fut is not None:
            return fut.result()
        a, b = self.bounds[i]
        return speech_regions(self.samples[a:b])

    def close(self) -> None:
        self.pool.shutdown(wait=False, cancel_futures=True)


# A window Whisper decodes can write again, with made-up timestamps, what the window before it wrote last (a copy
# of its prompt: on a generated screencast, two sentences twice over a scene introduction it never wrote); the
# alignment then puts those words where they are really said, over the segments the next window writes there.
# A kept segment of at least REPEAT_MIN_WORDS words is written twice when at least REPEAT_MIN_SHARE of its words,
# in order, are those of the other kept segments over its time span, which together overlap at least half of it.
REPEAT_MIN_WORDS = 3
REPEAT_MIN_SHARE = 0.8


def written_twice(spans: Sequence[tuple[int, int, str]]) -> set[int]:
    """The indices of the (t0_ms, t1_ms, text) segments whose words the others over the same time already hold
    (see REPEAT_MIN_SHARE); of two that hold each other's words, the shorter (then the later) goes."""
    words = [[k for k in (_key(w) for w in text.split()) if k] for _, _, text in spans]
    gone: set[int] = set()
    for i in sorted(range(len(spans)), key=lambda k: (len(words[k]), -k)):
        a, b, _ = spans[i]
        if len(words[i]) < REPEAT_MIN_WORDS or b <= a:
            continue
        over = sorted((j for j in range(len(spans)) if j != i and j not in gone
                       and min(b, spans[j][1]) > max(a, spans[j][0])), key=lambda j: spans[j][0])
        held = [w for j in over for w in words[j]]
        if held and union_ms((max(a, spans[j][0]), min(b, spans[j][1])) for j in over) * 2 >= b - a:
            same = sum(m.size for m in SequenceMatcher(None, words[i], held, autojunk=False).get_matching_blocks())
            if same >= REPEAT_MIN_SHARE * len(words[i]):
                gone.add(i)
    return gone

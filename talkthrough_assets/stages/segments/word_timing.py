"""Word timing: better alignment heads and a refinement that moves Whisper's word starts onto the audio.

faster-whisper times words from the decoder's cross-attention (DTW over 20-ms frames). Measured against
TIMIT's hand-labelled word boundaries (``bench/bench_word_timing.py``: NLTK's TIMIT sample, 16 speakers, and
two more clips), three errors dominate:

* with tiny.en, openai's eight default alignment heads give a blurred path: starts spread widely (p90 190
  ms) around a steady ~80-ms lag. Two of them alone, (2, 1) and (3, 2), follow the audio more closely: the
  model is loaded with ``ALIGNMENT_HEADS`` (:func:`model_files`; decoding is unchanged, only ``align`` reads
  the heads), and its word starts are then steadily ~70 ms early instead of late;
* the first word after a pause starts where Whisper's segment starts, often in the silence before it
  (up to 500 ms early), or late after a pause inside a segment (240 ms);
* the steady offset of the other words (``LAG_MS``, per model: positive = late).

Corrections on the 16-kHz samples, no extra model:

* a word that follows a pause (the first word, a new segment, or a gap after the previous word) starts at
  the first frame, from the end of the previous word on, whose energy is within ``ONSET_DB`` of the word's
  own loud part;
* other word starts (and the touching end of the word before) move by the model's measured offset
  (``LAG_MS``; 0 for a model not measured).

The heads and the offset were chosen on the ``tune`` half of bench/eval/word_times.json (TIMIT dialect
regions 1, 3, 5, 7); on the held-out half (regions 2, 4, 6, 8: other speakers) tiny.en's start error is
median 42 ms, p90 100 ms (bare faster-whisper: 106 / 187 ms; the default heads with the old 80-ms shift:
46 / 131 ms). Words never reorder and keep at least ``MIN_WORD_MS``; the input is not modified.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Sequence

import numpy as np

from talkthrough_assets.model.transcript import Word

CODE_VERSION = "5"
SR = 16000
HOP_MS = 10
WIN_MS = 25
MIN_WORD_MS = 40
ONSET_DB = 12.0  # an onset is the first frame within this many dB of the word's loud part (its 90th pct)
ONSET_REACH_MS = 1200  # how far into a word after a pause its onset is searched
ONSET_BACK_MS = 400  # ... and how far before Whisper's start (never before the previous word's end)
ONSET_LEAD_MS = 20  # an onset is placed this much before the first loud frame
# a pause: at least PAUSE_MIN_MS of frames PAUSE_DB under the loud part around them, searched within
# PAUSE_REACH_MS of Whisper's start (the spoken-digit clips of bench/eval/build_more_clips.py)
PAUSE_MIN_MS = 80
PAUSE_DB = 30.0
PAUSE_REACH_MS = 300
# a segment's last word ends where its energy ends: at the first run of END_GAP_MS frames under END_DB below the
# word's loudest frame (and END_FLOOR_DB over the recording's floor) after its sound, searched up to END_REACH_MS
# past its aligned end and never past the next word's start. The DTW alignment stretched a last word over the
# silence after it (a narrated screencast's sentence stored 5.7 s past its end) or ended it early (0.2-0.5 s
# before the end of flite's sentences)
END_GAP_MS = 150
END_DB = 35.0
END_FLOOR_DB = 8.0
END_REACH_MS = 600
# measured steady offset of word starts per model (+ = late), with the heads of ALIGNMENT_HEADS where it has
# an entry (bench_word_timing.py, tune half)
LAG_MS = {"tiny.en": -70, "tiny": 80}
# Better cross-attention heads for the DTW word alignment, keyed by a model's own default heads (openai's list
# for that model, in its CTranslate2 config.json): tiny.en's eight -> (2, 1) and (3, 2). Tune half, tiny.en,
# after refine(): p90 start error 135 ms with the default heads (best shift), 94 ms with these.
ALIGNMENT_HEADS = {
    "tiny.en": {"default": [[1, 0], [2, 0], [2, 5], [3, 0], [3, 1], [3, 2], [3, 3], [3, 4]],
                "heads": [[2, 1], [3, 2]]},
}


def model_files(model_ref: str) -> dict[str, bytes] | None:
    """The files of the CTranslate2 model folder ``model_ref`` with ``ALIGNMENT_HEADS`` in its config, for
    ``WhisperModel(model_ref, files=...)``; None when the folder has no config or its heads have no better
    choice here (load the folder as it is)."""
    p = Path(model_ref)
    try:
        cfg = json.loads((p / "config.json").read_text())
    except (OSError, ValueError):
        return None
    for entry in ALIGNMENT_HEADS.values():
        if cfg.get("alignment_heads") == entry["default"]:
            files = {f.name: f.read_bytes() for f in p.iterdir() if f.is_file()}
            files["config.json"] = json.dumps(dict(cfg, alignment_heads=entry["heads"])).encode()
            return files
    return None


def lag_ms(model_label: str | None) -> int:
    return LAG_MS.get((model_label or "").split("/")[-1], 0)


def frame_db(samples: np.ndarray) -> np.ndarray:
    """Energy in dB of ``WIN_MS`` frames every ``HOP_MS``; frame k is centred at k * HOP_MS."""
    hop, win = SR * HOP_MS // 1000, SR * WIN_MS // 1000
    x = np.asarray(samples, dtype=np.float32)
    n = max(1, int(np.ceil(len(x) / hop)))
    pad = np.pad(x, (win // 2, win + hop)).astype(np.float64)
    # window sums of squares from one running sum (a frame-by-window copy of a 30-min recording was 290 MB
    # and 0.7 s CPU per 5 min of audio)
    energy = np.concatenate(([0.0], np.cumsum(pad * pad)))
    start = np.arange(n) * hop
    db = 10 * np.log10(np.maximum(energy[start + win] - energy[start], 0.0) / win + 1e-10)
    return np.convolve(np.pad(db, 1, mode="edge"), np.ones(3) / 3, mode="valid")  # 3-frame smoothing


def _frame(ms: float) -> int:
    return int(round(ms / HOP_MS))


def true_runs(mask: np.ndarray) -> list[tuple[int, int]]:
    """The runs of True in a boolean array, in order, as (first index, index after it)."""
    edges = np.diff(np.concatenate(([0], np.asarray(mask, dtype=np.int8), [0])))
    return [(int(i), int(j)) for i, j in zip(np.flatnonzero(edges == 1), np.flatnonzero(edges == -1))]


def _pause(db: np.ndarray, a: int, b: int, near: int, floor: float) -> tuple[int, int] | None:
    """The pause in frames [a, b) nearest frame ``near``: a run of at least ``PAUSE_MIN_MS`` of frames quieter
    than ``PAUSE_DB`` under the loud part around it (and near the recording's floor), as (first frame, frame
    after it); None when there is none."""
    seg = db[a:b]
    if len(seg) < PAUSE_MIN_MS // HOP_MS:
        return None
    level = float(np.percentile(seg, 90))
    quiet = seg < max(level - PAUSE_DB, floor + 0.25 * (level - floor))
    best = None
    for i, j in true_runs(quiet):
        if (j - i) * HOP_MS >= PAUSE_MIN_MS:
            dist = min(abs(a + i - near), abs(a + j - near))
            if best is None or dist < best[0]:
                best = (dist, a + i, a + j)
    return None if best is None else (best[1], best[2])


def refine(samples: np.ndarray, words: Sequence[Word], model_label: str | None = None) -> list[Word]:
    """``words`` (in time order) with refined starts, and each segment's last word ending with its sound.
    ``model_label`` picks the measured offset (``LAG_MS``: + = late, moved earlier; - = early, moved later,
    never past the word's end less ``MIN_WORD_MS``)."""
    words = list(words)
    if not words or len(samples) < SR // 10:
        return words
    db = frame_db(samples)
    nf = len(db)
    floor = float(np.percentile(db, 10))
    lag = lag_ms(model_label)
    seqs = [w.seq for w in words]
    t0s, t1s = [w.t0_ms for w in words], [w.t1_ms for w in words]  # moved in place as the words are refined
    for i in range(len(words)):
        t0, t1 = t0s[i], t1s[i]
        if t1 - t0 < 2 * MIN_WORD_MS:
            continue
        p = i - 1  # the word before (none for the first)
        lo_ms = t1s[p] if i else 0
        after_pause = not i or seqs[p] != seqs[i] or t0 - t1s[p] >= 2 * HOP_MS
        if not after_pause:
            # touching words: a short pause between them that the alignment ran over (counting, a list, a
            # code read out: "one, two, three" with ~0.2 s between the words)
            a = _frame(max(t0s[p] + MIN_WORD_MS, t0 - PAUSE_REACH_MS))
            b = min(_frame(min(t1 - MIN_WORD_MS, t0 + PAUSE_REACH_MS)), nf)
            gap = _pause(db, a, b, _frame(t0), floor) if b > a else None
            if gap is not None:
                t1s[p] = min(t1s[p], gap[0] * HOP_MS)
                lo_ms, after_pause = t1s[p], True
        if after_pause:
            onset = _onset(db, floor, lo_ms, t0, t1)
            if onset is not None:
                t0s[i] = onset
        elif lag:
            new = min(max(t0 - lag, t0s[p] + MIN_WORD_MS), t1 - MIN_WORD_MS)
            if new != t0:
                if t1s[p] == t0 or t1s[p] > new:
                    t1s[p] = new
                t0s[i] = new
    _settle_ends(db, seqs, t0s, t1s, floor, len(samples) * 1000 // SR)
    return [replace(w, t0_ms=a, t1_ms=b) for w, a, b in zip(words, t0s, t1s)]


def _onset(db: np.ndarray, floor: float, lo_ms: int, t0: int, t1: int) -> int | None:
    """The start of a word aligned at [t0, t1] after a pause: its onset in ``db``, searched back to ``lo_ms``
    (the end of the word before), or None (no search window, or nothing loud in it)."""
    a = _frame(max(lo_ms, t0 - ONSET_BACK_MS))
    b = min(_frame(min(t1, t0 + ONSET_REACH_MS)), len(db))
    if b <= a:
        return None
    seg = db[a:b]
    level = max(float(np.percentile(seg, 90)), floor)
    # the word's own onset comes after the last pause before it: where the search reaches back over the
    # end of the word before (its aligned end is often early), that word's loud tail is not this onset
    gap = _pause(db, a, min(b, _frame(t0) + PAUSE_REACH_MS // HOP_MS), _frame(t0), floor)
    start = gap[1] - a if gap is not None else 0
    loud = np.nonzero(seg[start:] >= max(level - ONSET_DB, floor + 0.5 * (level - floor)))[0]
    if not len(loud):
        return None
    new = (a + start + int(loud[0])) * HOP_MS - ONSET_LEAD_MS
    return int(min(max(new, a * HOP_MS, lo_ms), t1 - MIN_WORD_MS))


def energy_end(db: np.ndarray, t0_ms: int, t1_ms: int, limit_ms: int, floor: float) -> int | None:
    """Where the sound of a word aligned at [t0_ms, t1_ms] ends (ms): the start of the first run of END_GAP_MS
    quiet frames after its first loud one, searched up to ``limit_ms`` (the end of the audio when its sound runs
    there); None when the word has no loud frame or no such pause comes before ``limit_ms`` (the word runs on
    into what follows)."""
    f0, f1, lim = _frame(t0_ms), max(_frame(t1_ms), _frame(t0_ms) + 1), min(_frame(limit_ms), len(db))
    if lim - f0 < 2 or f0 >= len(db):
        return None
    level = float(db[f0:min(f1, lim)].max()) if f1 > f0 else float(db[f0])
    if level < floor + END_FLOOR_DB:
        return None
    quiet = db[f0:lim] < max(floor + END_FLOOR_DB, level - END_DB)
    loud = np.flatnonzero(~quiet)
    gap = END_GAP_MS // HOP_MS
    for i, j in true_runs(quiet):
        if i > loud[0] and (j - i >= gap or f0 + j >= len(db)):
            # the first quiet frame's window (and the 3-frame smoothing) still reaches back over the last sound
            return (f0 + i) * HOP_MS - WIN_MS // 2
    if lim >= len(db) - 1 and not quiet[-1]:  # its sound runs to the end of the audio (counted digits cut tight)
        return len(db) * HOP_MS
    return None


def _settle_ends(db: np.ndarray, seqs: list[int], t0s: list[int], t1s: list[int], floor: float,
                 audio_ms: int) -> None:
    """Each segment's last word (its end in ``t1s``, in place) ends at :func:`energy_end`, between its start
    (plus MIN_WORD_MS) and the next word's start or the end of the audio (a chunk's: its words never cross the
    cut)."""
    for i in range(len(seqs)):
        nxt = i + 1 if i + 1 < len(seqs) else None
        if nxt is not None and seqs[nxt] == seqs[i]:
            continue
        limit = min(t1s[i] + END_REACH_MS, t0s[nxt] if nxt is not None else audio_ms)
        end = energy_end(db, t0s[i], t1s[i], max(limit, t1s[i]), floor)
        if end is not None:
            # at least MIN_WORD_MS, but never past both its aligned end and the limit (a word aligned in a chunk's
            # last 40 ms stays inside the chunk)
            t1s[i] = int(min(max(min(end, limit), t0s[i] + MIN_WORD_MS), max(limit, t1s[i])))


@dataclass(frozen=True, slots=True)
class AlignedWord:
    """One word as faster-whisper's alignment gives it (seconds from the decoded audio's start)."""

    start: float
    end: float
    word: str
    probability: float


@dataclass(frozen=True, slots=True)
class Aligned:
    """One decoded segment's aligned span and words (seconds from the decoded audio's start)."""

    start: float
    end: float
    words: tuple[AlignedWord, ...] = ()


# faster-whisper's TranscriptionOptions defaults
PREPEND_PUNCTUATIONS = "\"'“¿([{-"
APPEND_PUNCTUATIONS = "\"'.。,，!！?？:：”)]}、"


class WindowAligner:
    """Word timestamps for segments decoded *without* them, window by window, from the encoder output the
    decoder itself used.

    With ``word_timestamps=True`` faster-whisper moves its window to the end of the last aligned word, and at
    the end of a recording the alignment stretches the last word over the rest of the audio: the words after
    it ("... at the | train station") were never decoded (3 clips of the eval set lost their last words).
    Decoding without word timestamps keeps bare faster-whisper's windows; each window's segments are then
    aligned with faster-whisper's own DTW (``add_word_timestamps``), as it does, on the window's encoder
    output, which :meth:`capture` is handed while the decoder runs (encoding a window again cost ~50 % of the
    decoding time on a screencast).

    Use::

        al = WindowAligner(model, n_samples)
        with model.hooks(on_encode=al.capture):
            segments_iter, info = model.transcribe(samples, word_timestamps=False, ...)
            al.language = info.language
            for s in segments_iter:           # lazily: a window's segments come before the next encode
                al.seen(s)                     # every segment, kept or not, in order
                if keep(s): al.add(s)          # the ones to align
            results = al.finish()              # per added segment: its Aligned span and words
    """

    def __init__(self, model, n_samples: int):
        self.model = model
        self.language: str | None = None  # set once the decoder knows it (before the first segment)
        self._tokenizer = None
        # faster-whisper's content frames: features.shape[-1] - 1 (160 padding samples, hop 160)
        self.content_frames = (n_samples + 160) // 160 - 1
        self.n_frames = model.feature_extractor.nb_max_frames
        self._last = None
        self._encoded: dict[int, object] = {}
        self._pending: list[tuple[int, object]] = []  # (result index, segment) of the window not yet aligned
        self._window = None
        self._last_speech = 0.0
        self.results: list[Aligned] = []

    def capture(self, encoder_output) -> None:
        """The model's ``on_encode`` hook (``adapter.WhisperAdapter.hooks``): the window now decoding was encoded so."""
        self._last = encoder_output

    def seen(self, segment) -> None:
        seek = int(segment.seek)
        if seek != self._window:
            self._flush()
            self._window = seek
            self._encoded[seek] = self._last

    def add(self, segment) -> None:
        self.results.append(Aligned(segment.start, segment.end))
        self._pending.append((len(self.results) - 1, segment))

    def _flush(self) -> None:
        if not self._pending:
            self._encoded.pop(self._window, None)
            return
        seek = self._window
        size = max(1, min(self.n_frames, self.content_frames - seek))
        if self._tokenizer is None:
            from faster_whisper.tokenizer import Tokenizer

            multilingual = self.model.model.is_multilingual
            self._tokenizer = Tokenizer(self.model.hf_tokenizer, multilingual, task="transcribe",
                                        language=(self.language or "en") if multilingual else "en")
        subs = [{"seek": seek, "start": s.start, "end": s.end, "tokens": list(s.tokens)} for _, s in self._pending]
        last = self.model.add_word_timestamps([subs], self._tokenizer, self._encoded.pop(seek), size,
                                              PREPEND_PUNCTUATIONS, APPEND_PUNCTUATIONS,
                                              last_speech_timestamp=self._last_speech)
        self._last_speech = last if last is not None else self._last_speech
        for (i, _), sub in zip(self._pending, subs):
            self.results[i] = Aligned(sub["start"], sub["end"], tuple(
                AlignedWord(w["start"], w["end"], w["word"], w["probability"]) for w in sub.get("words", [])))
        self._pending = []

    def finish(self) -> list[Aligned]:
        self._flush()
        return self.results

"""Word timing refinement: move Whisper's word starts onto the audio.

faster-whisper times words from the decoder's cross-attention (DTW over 20-ms frames). On clips with
reference word boundaries (``bench/bench_word_timing.py``: TIMIT's hand labels and a LibriSpeech forced
alignment) two errors dominate:

* the first word after a pause starts where Whisper's segment starts, often in the silence before it
  (up to 500 ms early), or late after a pause inside a segment (240 ms);
* with tiny.en every other word starts late by a steady ~80-100 ms (base does not lag: its words are
  slightly early).

Two cheap corrections on the 16-kHz samples, no extra model:

* a word that follows a pause (the first word, a new segment, or a gap after the previous word) starts at
  the first frame, from the end of the previous word on, whose energy is within ``ONSET_DB`` of the word's
  own loud part;
* other word starts (and the touching end of the word before) move earlier by the model's measured lag
  (``LAG_MS``; 0 for a model not measured).

Measured (bench/bench_word_timing.py, 26 reference words): tiny.en median |error| 120 -> 44 ms, p90 185 ->
110 ms, max 500 -> 200 ms. Words never reorder and keep at least ``MIN_WORD_MS``; the input is not modified.
"""

from __future__ import annotations

import numpy as np

CODE_VERSION = "1"
SR = 16000
HOP_MS = 10
WIN_MS = 25
MIN_WORD_MS = 40
ONSET_DB = 12.0  # an onset is the first frame within this many dB of the word's loud part (its 90th pct)
ONSET_REACH_MS = 1200  # how far into a word after a pause its onset is searched
ONSET_BACK_MS = 400  # ... and how far before Whisper's start (never before the previous word's end)
ONSET_LEAD_MS = 20  # an onset is placed this much before the first loud frame
LAG_MS = {"tiny.en": 80, "tiny": 80}  # measured steady lag of word starts per model (bench_word_timing.py)


def lag_ms(model_label: str | None) -> int:
    return LAG_MS.get((model_label or "").split("/")[-1], 0)


def frame_db(samples: np.ndarray) -> np.ndarray:
    """Energy in dB of ``WIN_MS`` frames every ``HOP_MS``; frame k is centred at k * HOP_MS."""
    hop, win = SR * HOP_MS // 1000, SR * WIN_MS // 1000
    x = np.asarray(samples, dtype=np.float32)
    n = max(1, int(np.ceil(len(x) / hop)))
    pad = np.pad(x, (win // 2, win + hop))
    idx = np.arange(n)[:, None] * hop + np.arange(win)[None, :]
    db = 10 * np.log10(np.mean(pad[idx] ** 2, axis=1) + 1e-10)
    return np.convolve(np.pad(db, 1, mode="edge"), np.ones(3) / 3, mode="valid")  # 3-frame smoothing


def _frame(ms: float) -> int:
    return int(round(ms / HOP_MS))


def refine(samples: np.ndarray, words: list[dict], model_label: str | None = None) -> list[dict]:
    """Return a copy of ``words`` (dicts with ``seq``, ``t0_ms``, ``t1_ms``, in time order) with refined
    starts. ``model_label`` picks the measured lag (``LAG_MS``)."""
    out = [dict(w) for w in words]
    if not out or len(samples) < SR // 10:
        return out
    db = frame_db(samples)
    nf = len(db)
    floor = float(np.percentile(db, 10))
    lag = lag_ms(model_label)
    for i, w in enumerate(out):
        prev = out[i - 1] if i else None
        t0, t1 = w["t0_ms"], w["t1_ms"]
        if t1 - t0 < 2 * MIN_WORD_MS:
            continue
        lo_ms = (prev["t1_ms"] if prev is not None else 0)
        if prev is None or prev["seq"] != w["seq"] or t0 - prev["t1_ms"] >= 2 * HOP_MS:
            a = _frame(max(lo_ms, t0 - ONSET_BACK_MS))
            b = min(_frame(min(t1, t0 + ONSET_REACH_MS)), nf)
            if b <= a:
                continue
            seg = db[a:b]
            level = max(float(np.percentile(seg, 90)), floor)
            loud = np.nonzero(seg >= max(level - ONSET_DB, floor + 0.5 * (level - floor)))[0]
            if len(loud):
                new = (a + int(loud[0])) * HOP_MS - ONSET_LEAD_MS
                w["t0_ms"] = int(min(max(new, a * HOP_MS, lo_ms), t1 - MIN_WORD_MS))
        elif lag:
            new = max(t0 - lag, prev["t0_ms"] + MIN_WORD_MS)
            if new < t0:
                if prev["t1_ms"] == t0:
                    prev["t1_ms"] = new
                w["t0_ms"] = new
    return out


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
    output, which :meth:`watch` captures while the decoder runs (encoding a window again cost ~50 % of the
    decoding time on a screencast).

    Use::

        with WindowAligner(model, n_samples) as al:
            segments_iter, info = model.transcribe(samples, word_timestamps=False, ...)
            al.language = info.language
            for s in segments_iter:           # lazily: a window's segments come before the next encode
                al.seen(s)                     # every segment, kept or not, in order
                if keep(s): al.add(s)          # the ones to align
            results = al.finish()              # per added segment: {"start", "end", "words": [...]}
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
        self.results: list[dict] = []

    def __enter__(self):
        original = self.model.encode

        def encode(features):
            self._last = original(features)
            return self._last

        self.model.encode = encode  # an instance attribute shadows the method while decoding
        return self

    def __exit__(self, *exc):
        self.model.__dict__.pop("encode", None)
        return False

    def seen(self, segment) -> None:
        seek = int(segment.seek)
        if seek != self._window:
            self._flush()
            self._window = seek
            self._encoded[seek] = self._last

    def add(self, segment) -> None:
        self.results.append({"start": segment.start, "end": segment.end, "words": []})
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
            self.results[i] = {"start": sub["start"], "end": sub["end"], "words": sub.get("words", [])}
        self._pending = []

    def finish(self) -> list[dict]:
        self._flush()
        return self.results

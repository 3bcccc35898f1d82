"""segments: faster-whisper on the 16 kHz WAV (CPU int8, VAD on, word timestamps; segments that fail
the decoder's log-prob check are dropped, see MIN_AVG_LOGPROB).

The loaded models live in a :class:`Whisper` object that the caller owns and passes in (the pipeline gets
the process's one from ``talkthrough_assets.engines``, Dagster from its ``whisper`` resource); a call
without one uses :func:`default_whisper`, the same process-wide object."""

from __future__ import annotations

import os
import threading
import time
from collections import OrderedDict

import numpy as np

CODE_VERSION = "3"
# Measured with bench/bench_asr.py (tiny.en, all eval asr/ clips + the 10-min screencast and 30-min meeting;
# greedy / beam 5): conditioning on previous text (faster-whisper's default) drops repeated sentences on the
# 10-min screencast (WER 29 % vs 7 % / 20-24 % vs 7 %) and is not better on the 30-min meeting (17 % vs 18 % /
# 11 % vs 14 %); without it, tiny.en invents English over non-English speech (17 / 19 words on the German
# half of multilingual.mp3). Keep it off, and drop the segments that failed the decoder's quality checks:
# an avg_logprob under faster-whisper's log_prob_threshold (-1.0) or a compression ratio over its
# compression_ratio_threshold (2.4: "the rest of the rest of the rest ..."). That removes those words and
# changes the WER of no clip.
# No temperature fallback: faster-whisper's ladder (0.0 ... 1.0) re-decodes a failed segment by sampling,
# which is random per call (CTranslate2's sampler runs in its worker threads, which
# ctranslate2.set_random_seed does not reach): in 3 of 52 consecutive runs in one process it turned the German half into English that
# passed both checks. Greedy/beam only is deterministic (same audio, same transcript), has the same WER on
# every eval asr clip (3.01 %), the 10-min screencast (7.4 %) and the 30-min meeting (18.2 %), and skips the
# re-decodes (the asr clips at beam 1: 4.8 s vs 9.8 s).
CONDITION_ON_PREVIOUS_TEXT = False
MIN_AVG_LOGPROB: float | None = -1.0
MAX_COMPRESSION_RATIO: float | None = 2.4
TEMPERATURE = (0.0,)  # no sampling fallback, see above

def cpu_threads(shared: bool = False) -> int:
    """Whisper's CPU threads: every core, or half of them when another stage runs beside it (the
    visual branch of a video): two CTranslate2 threads competing with OCR/decoding for 2 cores
    spin and cost ~1.5x the CPU for no gain. TALKTHROUGH_WHISPER_THREADS overrides both."""
    if os.environ.get("TALKTHROUGH_WHISPER_THREADS"):
        return int(os.environ["TALKTHROUGH_WHISPER_THREADS"])
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
        key = (model_ref, *device_setting(), threads or cpu_threads())
        with self.lock:
            if key in self._models:
                self._models.move_to_end(key)
            else:
                from faster_whisper import WhisperModel

                while len(self._models) >= self.max_models:
                    self._models.popitem(last=False)
                self._models[key] = WhisperModel(model_ref, device=key[1], compute_type=key[2], cpu_threads=key[3])
            return self._models[key]

    def warm(self, model_ref: str, threads: int | None = None) -> None:
        """Load the model now (a background thread may call this while other work runs)."""
        self.model(model_ref, threads)


_default = Whisper()  # loads nothing until a model is asked for


def default_whisper() -> Whisper:
    """This process's one :class:`Whisper`."""
    return _default


def device_setting() -> tuple[str, str]:
    """(device, compute_type): CPU int8 by default; TALKTHROUGH_DEVICE=cuda for the optional GPU path."""
    device = os.environ.get("TALKTHROUGH_DEVICE", "cpu")
    compute = os.environ.get("TALKTHROUGH_COMPUTE_TYPE") or ("float16" if device == "cuda" else "int8")
    return device, compute


def transcribe(samples: np.ndarray, *, model_ref: str, model_label: str, language: str | None = None,
               vocabulary: str | None = None, beam_size: int = 5, vad: bool = True,
               condition_on_previous_text: bool = CONDITION_ON_PREVIOUS_TEXT,
               min_avg_logprob: float | None = MIN_AVG_LOGPROB,
               max_compression_ratio: float | None = MAX_COMPRESSION_RATIO, temperature=TEMPERATURE,
               threads: int | None = None, whisper: Whisper | None = None) -> dict:
    """Return {"meta": {...}, "segments": [...], "words": [...]} with integer millisecond times.
    ``whisper``: where the model is loaded (default: :func:`default_whisper`)."""
    t_start = time.perf_counter()
    audio_ms = int(len(samples) * 1000 / 16000)
    meta = {"available": True, "reason": None, "language": None, "language_probability": None,
            "model": model_label, "segment_count": 0, "word_count": 0, "audio_ms": audio_ms, "elapsed_s": 0.0}
    if len(samples) < 1600:  # < 0.1 s: nothing to transcribe
        meta.update(reason="no speech detected (audio shorter than 0.1 s)")
        return {"meta": meta, "segments": [], "words": []}
    whisper = whisper or default_whisper()
    with whisper.lock:  # one model instance is not safe to share across concurrent transcribe calls
        model = whisper.model(model_ref, threads)
        seg_iter, info = model.transcribe(
            samples, language=language or None, beam_size=beam_size, vad_filter=vad,
            word_timestamps=True, initial_prompt=vocabulary or None, hotwords=vocabulary or None,
            condition_on_previous_text=condition_on_previous_text, temperature=temperature,
        )
        segments, words = [], []
        seq = -1
        for s in seg_iter:
            if min_avg_logprob is not None and s.avg_logprob < min_avg_logprob:
                continue  # failed the decoder's log-prob check at every temperature
            if max_compression_ratio is not None and s.compression_ratio > max_compression_ratio:
                continue  # ... or its repetition check
            seq += 1
            text = s.text.strip()
            segments.append({"seq": seq, "t0_ms": int(round(s.start * 1000)), "t1_ms": int(round(s.end * 1000)),
                             "text": text, "avg_logprob": float(s.avg_logprob),
                             "no_speech_prob": float(s.no_speech_prob)})
            for i, w in enumerate(s.words or []):
                words.append({"seq": seq, "idx": i, "t0_ms": int(round(w.start * 1000)),
                              "t1_ms": int(round(w.end * 1000)), "word": w.word, "prob": float(w.probability)})
    meta.update(language=info.language, language_probability=float(info.language_probability),
                segment_count=len(segments), word_count=len(words),
                elapsed_s=round(time.perf_counter() - t_start, 3))
    if not segments:
        meta["reason"] = "no speech detected"
    return {"meta": meta, "segments": segments, "words": words}


def unavailable(reason: str, model_label: str | None = None) -> dict:
    return {"meta": {"available": False, "reason": reason, "language": None, "language_probability": None,
                     "model": model_label, "segment_count": 0, "word_count": 0, "audio_ms": 0, "elapsed_s": 0.0},
            "segments": [], "words": []}

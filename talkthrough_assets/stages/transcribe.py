"""segments: faster-whisper on the 16 kHz WAV (CPU int8, VAD on, word timestamps; segments that fail
the decoder's log-prob check are dropped, see MIN_AVG_LOGPROB)."""

from __future__ import annotations

import os
import threading
import time
from functools import lru_cache

import numpy as np

CODE_VERSION = "2"
# Measured with bench/bench_asr.py (tiny.en, all eval asr/ clips + the 10-min screencast and 30-min meeting;
# greedy / beam 5): conditioning on previous text (faster-whisper's default) drops repeated sentences on the
# 10-min screencast (WER 29 % vs 7 % / 20-24 % vs 7 %) and is not better on the 30-min meeting (17 % vs 18 % /
# 11 % vs 14 %); without it, tiny.en invents English over non-English speech (17 / 19 words on the German
# half of multilingual.mp3). Keep it off, and drop segments whose avg_logprob stays under -1.0:
# faster-whisper's own log_prob_threshold, i.e. segments that failed the decoder's quality check at every
# temperature. That removes those words and changes the WER of no clip.
CONDITION_ON_PREVIOUS_TEXT = False
MIN_AVG_LOGPROB: float | None = -1.0

_lock = threading.Lock()


def cpu_threads(shared: bool = False) -> int:
    """Whisper's CPU threads: every core, or half of them when another stage runs beside it (the
    visual branch of a video): two CTranslate2 threads competing with OCR/decoding for 2 cores
    spin and cost ~1.5x the CPU for no gain. TALKTHROUGH_WHISPER_THREADS overrides both."""
    if os.environ.get("TALKTHROUGH_WHISPER_THREADS"):
        return int(os.environ["TALKTHROUGH_WHISPER_THREADS"])
    n = os.cpu_count() or 2
    return max(1, n // 2) if shared else n


@lru_cache(maxsize=2)
def _model(model_ref: str, device: str, compute_type: str, threads: int):
    from faster_whisper import WhisperModel

    return WhisperModel(model_ref, device=device, compute_type=compute_type, cpu_threads=threads)


def warm(model_ref: str, threads: int | None = None) -> None:
    """Load the model now (a background thread may call this while other work runs)."""
    with _lock:
        _model(model_ref, *device_setting(), threads or cpu_threads())


def device_setting() -> tuple[str, str]:
    """(device, compute_type): CPU int8 by default; TALKTHROUGH_DEVICE=cuda for the optional GPU path."""
    device = os.environ.get("TALKTHROUGH_DEVICE", "cpu")
    compute = os.environ.get("TALKTHROUGH_COMPUTE_TYPE") or ("float16" if device == "cuda" else "int8")
    return device, compute


def transcribe(samples: np.ndarray, *, model_ref: str, model_label: str, language: str | None = None,
               vocabulary: str | None = None, beam_size: int = 5, vad: bool = True,
               condition_on_previous_text: bool = CONDITION_ON_PREVIOUS_TEXT,
               min_avg_logprob: float | None = MIN_AVG_LOGPROB, threads: int | None = None) -> dict:
    """Return {"meta": {...}, "segments": [...], "words": [...]} with integer millisecond times."""
    t_start = time.perf_counter()
    audio_ms = int(len(samples) * 1000 / 16000)
    meta = {"available": True, "reason": None, "language": None, "language_probability": None,
            "model": model_label, "segment_count": 0, "word_count": 0, "audio_ms": audio_ms, "elapsed_s": 0.0}
    if len(samples) < 1600:  # < 0.1 s: nothing to transcribe
        meta.update(reason="no speech detected (audio shorter than 0.1 s)")
        return {"meta": meta, "segments": [], "words": []}
    device, compute = device_setting()
    with _lock:  # one model instance is not safe to share across concurrent transcribe calls
        model = _model(model_ref, device, compute, threads or cpu_threads())
        seg_iter, info = model.transcribe(
            samples, language=language or None, beam_size=beam_size, vad_filter=vad,
            word_timestamps=True, initial_prompt=vocabulary or None, hotwords=vocabulary or None,
            condition_on_previous_text=condition_on_previous_text,
        )
        segments, words = [], []
        seq = -1
        for s in seg_iter:
            if min_avg_logprob is not None and s.avg_logprob < min_avg_logprob:
                continue
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

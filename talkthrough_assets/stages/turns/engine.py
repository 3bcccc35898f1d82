"""The sherpa-onnx diarization engine: built once per (models, clustering, threads) and cached per process.

:func:`run_engine` is the raw engine output for a 16 kHz signal; :func:`centroids` gives each label a
unit-norm speaker embedding (used to merge labels that are one voice). sherpa-onnx and numpy are
imported lazily, only when diarization really runs.
"""

from __future__ import annotations

import copy
import threading
from typing import Any, Sequence

from talkthrough_assets.model.turns import Turn
from talkthrough_assets.stages.turns.labels import exclusive_spans, labels_in_order
from talkthrough_assets.stages.turns.models import DiarizationModels, ModelUnavailable

SAMPLE_RATE = 16000
# pyannote 10 s window, 1 s hop: sherpa-onnx's default. 0.25 (2.5 s hop, ~2.3x cheaper) lost a speaker:
# on pyannote's sample.wav every threshold 0.45-0.7 gave one speaker (DER 46 % vs 2.4 %). Measured with
# bench/bench_der.py on six real clips: 0.1 at threshold 0.5 is never worse than sherpa's defaults.
WINDOW_SHIFT_RATIO = 0.1
MIN_DURATION_ON = 0.3        # sherpa defaults
MIN_DURATION_OFF = 0.5
CENTROID_MAX_S = 20.0        # audio per label (its longest clean spans) used for its centroid embedding

ENV_THREADS = "TALKTHROUGH_DIARIZATION_THREADS"  # the turns stage's ``threads`` option

MAX_ENGINES = 4


class EngineCache:
    """sherpa-onnx engines, each built once per (models, clustering, threads) and kept (the newest
    MAX_ENGINES), and the embedding extractors; ``lock`` serializes building and running them. The
    diarizer resource (``talkthrough_assets.pipeline.engines.Diarizer``) owns one; a call without one uses
    :func:`default_cache`, the same process-wide object the shared diarizer holds."""

    def __init__(self, threads: int = 1) -> None:
        self.threads = threads  # ONNX threads per model (see :meth:`with_threads`)
        self.lock = threading.Lock()
        self.engines: dict[tuple, Any] = {}  # (models, clustering, threads) -> OfflineSpeakerDiarization
        self.extractors: dict[tuple, Any] = {}


_default_cache = EngineCache()


def default_cache() -> EngineCache:
    return _default_cache


def with_threads(cache: EngineCache, n: int | None) -> EngineCache:
    """``cache`` (the same engines, lock and extractors) building its engines with ``n`` ONNX threads per model.
    Default 1: measured on the 2-core build machine (96 s of two-voice audio), 2 threads doubled the CPU time for
    the same work (20 vs 10 CPU-s per audio minute) and were ~2x slower in wall time whenever anything else ran
    (the Dagster pool runs 2 steps at once); these int8 models are too small for intra-op threads to pay. The
    turns stage's ``threads`` option (``TALKTHROUGH_DIARIZATION_THREADS``) sets it."""
    view = copy.copy(cache)
    view.threads = max(1, n or 1)
    return view


def engine_version() -> str | None:
    from importlib.metadata import PackageNotFoundError, version

    for dist in ("sherpa-onnx", "sherpa_onnx"):
        try:
            return version(dist)
        except PackageNotFoundError:
            continue
    return None


def _engine(cache: EngineCache, models: DiarizationModels, num_clusters: int, threshold: float, n_threads: int,
            window_shift: float = WINDOW_SHIFT_RATIO):
    import sherpa_onnx as so

    key = (str(models.segmentation), str(models.embedding), num_clusters, round(threshold, 6), n_threads,
           round(window_shift, 6))
    engines = cache.engines
    if key not in engines:
        cfg = so.OfflineSpeakerDiarizationConfig(
            segmentation=so.OfflineSpeakerSegmentationModelConfig(
                pyannote=so.OfflineSpeakerSegmentationPyannoteModelConfig(
                    model=str(models.segmentation), window_shift_ratio=float(window_shift)),
                num_threads=n_threads),
            embedding=so.SpeakerEmbeddingExtractorConfig(model=str(models.embedding), num_threads=n_threads),
            clustering=so.FastClusteringConfig(num_clusters=num_clusters, threshold=threshold),
            min_duration_on=MIN_DURATION_ON, min_duration_off=MIN_DURATION_OFF,
        )
        if not cfg.validate():
            raise ModelUnavailable(f"sherpa-onnx rejected the diarization config ({models.segmentation.name}, "
                                    f"{models.embedding.name})")
        while len(engines) >= MAX_ENGINES:  # a long-lived process trying many speaker counts
            engines.pop(next(iter(engines)))
        engines[key] = so.OfflineSpeakerDiarization(cfg)
    return engines[key]


def _extractor(cache: EngineCache, models: DiarizationModels, n_threads: int):
    import sherpa_onnx as so

    key = (str(models.embedding), n_threads)
    if key not in cache.extractors:
        cache.extractors[key] = so.SpeakerEmbeddingExtractor(
            so.SpeakerEmbeddingExtractorConfig(model=str(models.embedding), num_threads=n_threads))
    return cache.extractors[key]


def run_engine(samples, models: DiarizationModels, num_speakers: int | None, threshold: float,
               window_shift: float = WINDOW_SHIFT_RATIO, cache: EngineCache | None = None) -> list[tuple]:
    """Raw engine output: [(t0_ms, t1_ms, engine_speaker_index)] sorted by start."""
    import numpy as np

    cache = cache or default_cache()
    with cache.lock:
        eng = _engine(cache, models, int(num_speakers) if num_speakers else -1, float(threshold), cache.threads,
                      window_shift)
        result = eng.process(np.ascontiguousarray(samples, dtype=np.float32)).sort_by_start_time()
    return [(int(round(s.start * 1000)), int(round(s.end * 1000)), int(s.speaker)) for s in result]


def centroids(samples, turns: Sequence[Turn], models: DiarizationModels,
              cache: EngineCache | None = None) -> dict[str, Any]:
    """Unit-norm embedding per label from (up to CENTROID_MAX_S of) its non-overlapped turn audio."""
    import numpy as np

    cache = cache or default_cache()
    out = {}
    with cache.lock:
        ex = _extractor(cache, models, cache.threads)
        for label in labels_in_order(turns):
            spans = exclusive_spans(turns, label) or [(t.t0_ms, t.t1_ms) for t in turns if t.speaker == label]
            pieces, total = [], 0
            for a, b in sorted(spans, key=lambda ab: ab[0] - ab[1]):  # longest first
                x = samples[a * SAMPLE_RATE // 1000: b * SAMPLE_RATE // 1000]
                x = x[: max(0, int(CENTROID_MAX_S * SAMPLE_RATE) - total)]
                if len(x) >= SAMPLE_RATE // 2 or not pieces:
                    pieces.append(x)
                    total += len(x)
            if total < SAMPLE_RATE // 4:
                continue
            st = ex.create_stream()
            st.accept_waveform(SAMPLE_RATE, np.ascontiguousarray(np.concatenate(pieces), dtype=np.float32))
            st.input_finished()
            if not ex.is_ready(st):
                continue
            v = np.asarray(ex.compute(st), dtype=np.float64)
            n = float(np.linalg.norm(v))
            if n > 0:
                out[label] = v / n
    return out



__all__ = ["SAMPLE_RATE", "WINDOW_SHIFT_RATIO", "ENV_THREADS", "EngineCache", "default_cache", "with_threads",
           "engine_version", "run_engine", "centroids"]

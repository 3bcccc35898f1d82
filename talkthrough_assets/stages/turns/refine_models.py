"""Refining the engine's turns with the stage's models: the pyannote segmentation's speaker
count per frame, Silero VAD speech, CAM++ window embeddings, and :func:`refine_turns`, which runs the
pure steps of :mod:`~talkthrough_assets.stages.turns.refine` (split, fill, reassign, overlap) on them.
"""

from __future__ import annotations

from typing import Any, Sequence

from talkthrough_assets.model.turns import Turn
from talkthrough_assets.stages.turns.labels import labels_in_order
from talkthrough_assets.stages.turns.reassign_passes import reassign_until_stable
from talkthrough_assets.stages.turns.refine import (FILL_MAX_GAP_MS, OVERLAP_BY_VOICE, OVERLAP_COUNT, OVERLAP_VOICE_MS,
                                                    SAMPLE_RATE, SEG_HOP, STEP_MS, VAD_FRAME, WINDOW_MS, _unit,
                                                    add_overlap, expected_count, fill_gaps,
                                                    speech_spans, split_labels, windows_of)


def segmentation_probs(samples, models, cache=None):
    """The pyannote segmentation model's powerset probabilities (none, 3 single, 3 pairs) per STEP_MS frame,
    run with onnxruntime over 10-s windows, hop 1 s, as sherpa-onnx does, averaged over the windows that
    cover a frame: an (n_frames, 7) array."""
    import numpy as np
    import onnxruntime as ort

    from talkthrough_assets.stages.turns.engine import default_cache

    cache = cache or default_cache()
    key = ("onnxruntime-segmentation", str(models.segmentation), cache.threads)
    with cache.lock:
        sess = cache.extractors.get(key)
        if sess is None:
            opts = ort.SessionOptions()
            opts.intra_op_num_threads = opts.inter_op_num_threads = cache.threads
            sess = cache.extractors[key] = ort.InferenceSession(str(models.segmentation), opts,
                                                                providers=["CPUExecutionProvider"])
    meta = sess.get_modelmeta().custom_metadata_map
    win = int(meta.get("window_size", 160000))
    shift, field = int(meta.get("receptive_field_shift", 270)), int(meta.get("receptive_field_size", 991))
    hop = max(1, int(win * SEG_HOP))
    x = np.asarray(samples, dtype=np.float32)
    starts = list(range(0, max(1, len(x) - win + 1), hop))
    if starts[-1] + win < len(x):
        starts.append(len(x) - win)
    n = -(-len(x) * 1000 // SAMPLE_RATE // STEP_MS)
    total, cover = None, np.zeros(n)
    name = sess.get_inputs()[0].name
    for a in starts:
        chunk = x[a: a + win]
        if len(chunk) < win:
            chunk = np.pad(chunk, (0, win - len(chunk)))
        y = np.exp(sess.run(None, {name: chunk[None, None, :]})[0][0].astype(np.float64))  # (frames, 7)
        if total is None:
            total = np.zeros((n, y.shape[1]))
        t = (a + np.arange(len(y)) * shift + field / 2) * 1000 / SAMPLE_RATE
        keep = t < len(x) * 1000 / SAMPLE_RATE
        idx = np.clip((t[keep] // STEP_MS).astype(int), 0, n - 1)
        np.add.at(total, idx, y[keep])
        np.add.at(cover, idx, 1)
    ok = cover > 0
    out = np.zeros((n, 7 if total is None else total.shape[1]))
    out[:, 0] = 1.0
    if not ok.any():
        return out
    mean = total[ok] / cover[ok][:, None]
    for k in range(out.shape[1]):
        out[:, k] = np.interp(np.arange(n), np.flatnonzero(ok), mean[:, k])
    return out


def speaker_counts(samples, models, cache=None):
    """Expected number of speakers per STEP_MS frame (see :func:`segmentation_probs`)."""
    return expected_count(segmentation_probs(samples, models, cache=cache))


def vad_probs(samples) -> Any:
    """Silero speech probability per 32-ms frame (faster-whisper's bundled VAD model)."""
    import numpy as np
    from faster_whisper.vad import get_vad_model

    x = np.ascontiguousarray(samples, dtype=np.float32)
    x = np.pad(x, (0, VAD_FRAME - len(x) % VAD_FRAME))
    return np.asarray(get_vad_model()(x), dtype=np.float64).ravel()


def window_vectors(samples, windows: Sequence[tuple[int, str]], models, cache=None, win_ms: int = WINDOW_MS):
    """Unit CAM++ embeddings of ``windows`` (rows in order)."""
    import numpy as np

    from talkthrough_assets.stages.turns.engine import _extractor, default_cache

    cache = cache or default_cache()
    out = []
    with cache.lock:
        ex = _extractor(cache, models, cache.threads)
        for start, _ in windows:
            a = start * SAMPLE_RATE // 1000
            st = ex.create_stream()
            st.accept_waveform(SAMPLE_RATE, np.ascontiguousarray(samples[a: a + win_ms * SAMPLE_RATE // 1000],
                                                                 dtype=np.float32))
            st.input_finished()
            out.append(_unit(np.asarray(ex.compute(st), dtype=np.float64)))
    return np.asarray(out)


def refine_turns(samples, turns: list[Turn], models, *, cache=None, limit: int | None = None,
           split: bool = True, reassign: bool = True, fill: bool = True, overlap: bool = True,
           known: dict | None = None) -> tuple[list[Turn], list[str]]:
    """:func:`split_labels` (at most ``limit`` new labels), :func:`fill_gaps`, :func:`reassign_until_stable`, then
    :func:`add_overlap`. ``known``: window start -> embedding, filled here (the caller's voiceprints reuse it)."""
    dur = int(len(samples) * 1000 // SAMPLE_RATE)
    notes: list[str] = []
    known = {} if known is None else known  # window start -> its embedding (split and reassign: the same windows)

    def vectors(wins):
        import numpy as np

        todo = [w for w in wins if w[0] not in known]
        if todo:
            known.update(zip((w[0] for w in todo), window_vectors(samples, todo, models, cache=cache)))
        return np.asarray([known[w[0]] for w in wins])

    if split and (limit is None or limit > 0):
        wins = windows_of(turns, dur)
        if wins:
            turns, notes = split_labels(turns, wins, vectors(wins), dur, limit=limit)
    if fill:
        turns, _ = fill_gaps(turns, speech_spans(vad_probs(samples)), dur, max_gap_ms=FILL_MAX_GAP_MS)
    if reassign and len(labels_in_order(turns)) > 1:  # after the fill: measured best there
        wins = windows_of(turns, dur)
        if len(wins) > 1:
            turns, _ = reassign_until_stable(turns, wins, vectors(wins), dur)
    if overlap and len(labels_in_order(turns)) > 1:
        from talkthrough_assets.stages.turns.engine import centroids

        def voice_of(t0: int, t1: int):
            # the overlapped stretch with at least OVERLAP_VOICE_MS of audio around its middle
            mid = (t0 + t1) // 2
            a, b = max(0, min(t0, mid - OVERLAP_VOICE_MS // 2)), min(dur, max(t1, mid + OVERLAP_VOICE_MS // 2))
            return window_vectors(samples, [(a, "")], models, cache=cache, win_ms=b - a)[0]

        turns, _ = add_overlap(turns, speaker_counts(samples, models, cache=cache), threshold=OVERLAP_COUNT,
                               voices=centroids(samples, turns, models, cache=cache) if OVERLAP_BY_VOICE else None,
                               voice_of=voice_of)
    return turns, notes


__all__ = ["segmentation_probs", "speaker_counts", "vad_probs", "window_vectors", "refine_turns"]

"""audio: decode the source's first audio stream to 16 kHz mono 16-bit PCM WAV (PyAV, one pass)."""

from __future__ import annotations

import os
import wave

import numpy as np

from talkthrough_assets import store
from talkthrough_assets.core.errors import BadMediaError
from talkthrough_assets.core.mediaio import alone, open_input
from talkthrough_assets.model.media import WavInfo
from talkthrough_assets.stages.runner import StageResult, digest, probe_row

CODE_VERSION = "2"
SAMPLE_RATE = 16000


def extract_wav(src: str | os.PathLike, dst: str | os.PathLike, *, max_seconds: float | None = None) -> WavInfo:
    """Write ``dst`` (WAV) and say what it holds. Stops at ``max_seconds``."""
    import av

    limit = int(max_seconds * SAMPLE_RATE) if max_seconds else None
    written = 0
    peak = 0
    try:
        container = open_input(src)
    except av.error.FFmpegError as e:
        raise BadMediaError(f"cannot open audio: {e}") from None
    with container, wave.open(str(dst), "wb") as out:
        out.setnchannels(1)
        out.setsampwidth(2)
        out.setframerate(SAMPLE_RATE)
        if not container.streams.audio:
            raise BadMediaError("no audio stream")
        stream = container.streams.audio[0]
        stream.thread_type = "AUTO"
        alone(container, stream)  # its samples up to where its own bytes end, whatever the video beside it holds
        resampler = av.AudioResampler(format="s16", layout="mono", rate=SAMPLE_RATE)

        def emit(frames) -> bool:
            nonlocal written, peak
            for fr in frames:
                pcm = fr.to_ndarray().reshape(-1)
                if limit is not None and written + len(pcm) > limit:
                    pcm = pcm[: max(0, limit - written)]
                if len(pcm):
                    peak = max(peak, int(np.abs(pcm.astype(np.int32)).max()))
                    out.writeframes(pcm.astype("<i2").tobytes())
                    written += len(pcm)
                if limit is not None and written >= limit:
                    return False
            return True

        try:
            for frame in container.decode(stream):
                if not emit(resampler.resample(frame)):
                    break
            else:
                emit(resampler.resample(None))
        except av.error.FFmpegError as e:
            # A truncated file decodes up to the damage; keep what was decoded when there is any.
            if written == 0:
                raise BadMediaError(f"audio stream could not be decoded: {e}") from None
    return WavInfo(samples=written, duration_ms=written * 1000 // SAMPLE_RATE, peak=peak)


def load_wav(path: str | os.PathLike) -> np.ndarray:
    """float32 mono samples in [-1, 1] from a WAV written by :func:`extract_wav`."""
    with wave.open(str(path), "rb") as w:
        if w.getframerate() != SAMPLE_RATE or w.getnchannels() != 1 or w.getsampwidth() != 2:
            raise ValueError(f"{path}: expected 16 kHz mono s16 WAV")
        data = w.readframes(w.getnframes())
    return np.frombuffer(data, dtype="<i2").astype(np.float32) / 32768.0


AUDIBLE_PEAK = 1000  # a recording whose :func:`peak` is not over this has nothing to hear (no speech expected)


def peak(samples: np.ndarray) -> int:
    """Peak level of :func:`load_wav` samples on the 16-bit scale (loudness checks)."""
    return int(abs(samples).max() * 32768) if len(samples) else 0


def write_silent_wav(path: str | os.PathLike) -> None:
    with wave.open(str(path), "wb") as out:
        out.setnchannels(1)
        out.setsampwidth(2)
        out.setframerate(SAMPLE_RATE)


def run(rid: str, opts: None = None) -> StageResult:  # no options
    p = probe_row(rid)
    dst = store.audio_path(rid)
    dst.parent.mkdir(parents=True, exist_ok=True)
    reason = None
    with store.atomic_path(dst) as tmp:
        try:
            if not p.has_audio:
                raise BadMediaError("no audio stream (video-only file)")
            res = extract_wav(p.path, tmp, max_seconds=p.capped_seconds)
        except BadMediaError as e:  # unreadable audio: an empty WAV and a reason; frames still go on
            reason = e.reason if not p.has_audio else f"audio stream could not be read: {e.reason}"
            write_silent_wav(tmp)
            res = WavInfo(samples=0, duration_ms=0, peak=0)
    store.publish_file(dst, store.audio_key(rid))
    md = {"has_audio": p.has_audio, "audio_ms": res.duration_ms, "peak": res.peak, "reason": reason or ""}
    return StageResult(md, digest([p.path, p.size_bytes, res]), reason=reason)


__all__ = ["extract_wav", "load_wav", "peak", "write_silent_wav", "SAMPLE_RATE"]

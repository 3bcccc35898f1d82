"""probe: streams, duration, container tags, caps and a disk-space preflight (PyAV, no ffprobe)."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

from .. import config, store
from ..errors import BadMediaError, DiskSpaceError, StageError
from ..ids import recording_id
from ..mediaio import clean_text, open_input
from .runner import StageResult, digest, source_path

CODE_VERSION = "2"

AUDIO_EXTS = {".wav", ".mp3", ".m4a", ".aac", ".flac", ".ogg", ".opus", ".wma", ".webm"}
# .gif: terminal recorders (VHS, agg) write screen recordings as animated GIFs
VIDEO_EXTS = {".mp4", ".mov", ".mkv", ".webm", ".avi", ".m4v", ".mpg", ".mpeg", ".ts", ".wmv", ".flv", ".gif"}
# The one extension list: the CLI's folder scan, register_folder and the drop folder all use it
MEDIA_EXTS = AUDIO_EXTS | VIDEO_EXTS

# Bytes a keyframe JPEG (≤1568 px) takes on average, for the preflight estimate.
_FRAME_BYTES = 250_000


def probe_file(path: str | os.PathLike, *, max_seconds: int | None = None) -> dict:
    """Read container/stream facts. Raises BadMediaError with a one-line reason for unusable input."""
    import av

    p = Path(path)
    if not p.exists():
        raise BadMediaError(f"file not found: {p}")
    if not p.is_file():
        raise BadMediaError(f"not a regular file: {p}")
    st = p.stat()
    if st.st_size == 0:
        raise BadMediaError(f"empty file (0 bytes): {p.name}")
    try:
        container = open_input(p)
    except av.error.FFmpegError as e:  # InvalidDataError, etc.
        raise BadMediaError(f"not a readable media file ({type(e).__name__}: {e.strerror or e}): {p.name}") from None
    with container:
        fmt = container.format.name if container.format else ""
        if fmt == "image2" or fmt.endswith("_pipe"):
            raise BadMediaError(f"a still image ({fmt}), not an audio or video recording: {p.name}")
        # cover art in audio files shows up as a one-frame "video" stream: not a video
        v = next((s for s in container.streams.video
                  if not (s.disposition & av.stream.Disposition.attached_pic)), None)
        a = next(iter(container.streams.audio), None)
        if v is None and a is None:
            raise BadMediaError(f"no audio or video stream: {p.name}")
        duration_s = None
        if container.duration is not None and container.duration > 0:
            duration_s = container.duration / 1_000_000
        else:
            cands = [s.duration * s.time_base for s in (v, a) if s is not None and s.duration and s.time_base]
            duration_s = float(max(cands)) if cands else None
        if not duration_s or duration_s <= 0:
            raise BadMediaError(f"cannot determine duration (truncated or damaged file?): {p.name}")
        tags = {clean_text(k): clean_text(val) for k, val in (container.metadata or {}).items()}
        for s in (v, a):
            if s is not None:
                for k, val in (s.metadata or {}).items():
                    tags.setdefault(clean_text(f"stream:{s.type}:{k}"), clean_text(val))
        fps = None
        rotation = 0
        width = height = None
        if v is not None:
            rate = v.average_rate or v.guessed_rate
            fps = float(rate) if rate else None
            width, height = v.codec_context.width, v.codec_context.height
            rotation = _rotation(container, v)
            if rotation % 180:  # a portrait phone video stored sideways: report what a viewer sees
                width, height = height, width
        cap_hit = bool(max_seconds and duration_s > max_seconds)
        return {
            "path": str(p.resolve()),
            "filename": p.name,
            "kind": "video" if v is not None else "audio",
            "container": container.format.name if container.format else None,
            "duration_ms": int(round(duration_s * 1000)),
            "size_bytes": st.st_size,
            "width": width,
            "height": height,
            "rotation": rotation,
            "fps": fps,
            "video_codec": v.codec_context.name if v is not None else None,
            "audio_codec": a.codec_context.name if a is not None else None,
            "has_audio": a is not None,
            "has_video": v is not None,
            "tags_json": json.dumps(tags, sort_keys=True),
            "file_mtime": st.st_mtime,
            "cap_hit": cap_hit,
            "max_seconds": max_seconds,
        }


def _rotation(container, stream) -> int:
    """Display rotation in degrees (the display matrix), read off the first decoded frame."""
    try:
        for frame in container.decode(stream):
            return int(getattr(frame, "rotation", 0) or 0) % 360
    except Exception:  # undecodable first frame: the keyframes stage reports the damage
        return 0
    return 0


def effective_seconds(info: dict) -> float:
    """Seconds that will be processed: the duration, cut at the max_seconds cap."""
    d = info["duration_ms"] / 1000
    cap = info.get("max_seconds")
    return min(d, cap) if cap else d


def preflight_disk(info: dict, target_dir: str | os.PathLike, *, max_frames: int,
                   min_free_bytes: int = 0) -> dict:
    """Refuse before writing anything when the data root lacks room for audio cache + keyframes."""
    secs = effective_seconds(info)
    need = int(secs * 16000 * 2) if info["has_audio"] else 0
    need += max_frames * _FRAME_BYTES if info["has_video"] else 0
    need += 5_000_000  # tables, manifest
    target = Path(target_dir)
    target.mkdir(parents=True, exist_ok=True)
    free = shutil.disk_usage(target).free
    if free - need < min_free_bytes:
        raise DiskSpaceError(
            f"not enough disk space under {target}: need ~{need / 1e6:.0f} MB"
            f"{f' plus a {min_free_bytes / 1e6:.0f} MB reserve' if min_free_bytes else ''}, {free / 1e6:.0f} MB free"
        )
    return {"need_bytes": need, "free_bytes": free}


def frame_floor_s(duration_s: float, max_frames: int) -> float:
    """Minimum spacing between time-based keyframes so the budget spans the whole recording."""
    return max(1.0, float(duration_s) / max(1, int(max_frames)))


def run(rid: str, cfg: dict) -> StageResult:
    src = source_path(rid)
    if recording_id(src) != rid:  # hashed once per process: registration already did it
        raise StageError(f"{src.name} changed since it was registered (sha256 no longer matches {rid})")
    info = probe_file(src, max_seconds=cfg["max_seconds"])
    preflight_disk(info, store.home(), max_frames=int(cfg["max_frames"]),
                   min_free_bytes=config.get("TALKTHROUGH_MIN_FREE_BYTES"))
    store.write_table("probe", rid, [info])
    md = {"filename": src.name, "duration_s": round(info["duration_ms"] / 1000, 3),
          **{k: info[k] for k in ("kind", "duration_ms", "has_audio", "has_video", "width", "height", "cap_hit")}}
    return StageResult(md, digest(info))


__all__ = ["probe_file", "preflight_disk", "frame_floor_s", "effective_seconds", "MEDIA_EXTS"]

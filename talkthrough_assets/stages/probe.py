"""probe: streams, duration, container tags, caps and a disk-space preflight (PyAV, no ffprobe)."""

from __future__ import annotations

import math
import os
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from talkthrough_assets import store
from talkthrough_assets.core.errors import BadMediaError, DiskSpaceError, StageError
from talkthrough_assets.core.ids import recording_id
from talkthrough_assets.core.mediaio import alone, clean_text, open_input, stream_ends
from talkthrough_assets.model.frames import Tag
from talkthrough_assets.model.media import ProbeRow, Source
from talkthrough_assets.stages.runner import StageResult, digest, source_path

CODE_VERSION = "2"  # tags went from a JSON string to a list of {key, value} without a bump: both are read (model.frames.tags), and a bump here would re-run every stage of every recording

AUDIO_EXTS = {".wav", ".mp3", ".m4a", ".aac", ".flac", ".ogg", ".opus", ".wma", ".webm"}
# .gif: terminal recorders (VHS, agg) write screen recordings as animated GIFs
VIDEO_EXTS = {".mp4", ".mov", ".mkv", ".webm", ".avi", ".m4v", ".mpg", ".mpeg", ".ts", ".wmv", ".flv", ".gif"}
# The one extension list: the CLI's folder scan, register_folder and the drop folder all use it
MEDIA_EXTS = AUDIO_EXTS | VIDEO_EXTS



def probe_file(path: str | os.PathLike, *, max_seconds: int | None = None) -> ProbeRow:
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
        raise BadMediaError(_unopened_reason(p, e)) from None
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
        fps, width, height, rotation = _picture(container, v) if v is not None else (None, None, None, 0)
        duration_s, header_ms = readable_duration(p, container, [s for s in (v, a) if s is not None])
        tags = {clean_text(k): clean_text(val) for k, val in (container.metadata or {}).items()}
        for s in (v, a):
            if s is not None:
                for k, val in (s.metadata or {}).items():
                    tags.setdefault(clean_text(f"stream:{s.type}:{k}"), clean_text(val))
        cap_hit = bool(max_seconds and duration_s > max_seconds)
        return ProbeRow(
            path=str(p.resolve()), filename=p.name, kind="video" if v is not None else "audio",
            container=container.format.name if container.format else None,
            duration_ms=int(round(duration_s * 1000)), size_bytes=st.st_size,
            width=width, height=height, rotation=rotation, fps=fps,
            video_codec=v.codec_context.name if v is not None else None,
            audio_codec=a.codec_context.name if a is not None else None,
            has_audio=a is not None, has_video=v is not None,
            tags=tuple(Tag(k, val) for k, val in sorted(tags.items())),
            file_mtime=st.st_mtime, cap_hit=cap_hit, max_seconds=max_seconds,
            header_duration_ms=header_ms)


def readable_note(probe: ProbeRow | None) -> str | None:
    """The one-line warning of a file whose readable media ends well before or after its header says (None
    when they agree)."""
    if not probe or not probe.header_duration_ms:
        return None
    read_s, header_s = probe.duration_ms / 1000, probe.header_duration_ms / 1000
    if read_s > header_s:
        return (f"its header claims {header_s:.1f} s but {read_s:.1f} s of media could be read (a header that lies "
                f"about its length): processed all {read_s:.1f} s")
    return (f"only {read_s:.1f} s of the {header_s:.1f} s its header claims could be read (truncated or damaged "
            f"file): processed what was readable")


def header_seconds(container, streams: list) -> float | None:
    """The length the header claims: the container's, else its longest stream's (None: it claims none)."""
    if container.duration is not None and container.duration > 0:
        return container.duration / 1_000_000
    cands = [s.duration * s.time_base for s in streams if s.duration and s.time_base]
    return float(max(cands)) if cands else None


def readable_duration(path: Path, container, streams: list) -> tuple[float, int | None]:
    """(the seconds to process, the header's claim in ms when it is off, else None). Decoded time beats header
    time, both ways: a file cut short, or a header that claims less or more than its packets hold. Each stream
    counts on its own (read alone), so a file that stores all its video before its audio and is cut short keeps
    the video it holds; the longest stream is the recording's length."""
    header_s = header_seconds(container, streams)
    ends = list(stream_ends(path, [s.index for s in streams], header_s, container).values())
    timed = [e for e in ends if e is not None and not math.isnan(e)]
    start_s = container.start_time / 1_000_000 if container.start_time is not None else 0.0
    if timed:
        read_s = max(0.0, max(timed) - start_s)  # the file's clock starts at its first packet
    elif all(e is None for e in ends):
        read_s = 0.0
    elif header_s:
        return header_s, None  # packets without times: the header is all there is
    else:
        raise BadMediaError(f"cannot determine duration (truncated or damaged file?): {path.name}")
    if header_s and abs(read_s - header_s) <= max(1.0, 0.02 * header_s):
        return header_s, None  # they agree (a header-only stub of a fraction of a second included)
    if read_s <= 0:
        claim = f"the header says {header_s:.1f} s but " if header_s else ""
        raise BadMediaError(f"nothing readable: {claim}no audio or video packet can be read (truncated or damaged "
                            f"file?): {path.name}")
    return read_s, int(round(header_s * 1000)) if header_s else None


def _unopened_reason(p: Path, e: Exception) -> str:
    """Why FFmpeg could not open ``p``, in words a user reads: text, or bytes of no format FFmpeg knows, rather than
    its InvalidDataError; any other error keeps FFmpeg's own words."""
    import av

    if not isinstance(e, av.error.InvalidDataError):
        return f"not a readable media file ({type(e).__name__}: {e.strerror or e}): {p.name}"
    try:
        with open(p, "rb") as f:
            head = f.read(4096)
    except OSError:
        head = b""
    what = "it holds text, not audio or video" if _is_text(head) else \
        "no audio or video format FFmpeg knows, or its header is missing or damaged"
    return f"not a readable media file ({what}): {p.name}"


def _is_text(head: bytes) -> bool:
    """UTF-8 text without control characters but line breaks and tabs (the last character may be cut off)."""
    for cut in range(4):
        try:
            text = head[:len(head) - cut].decode("utf-8")
        except UnicodeDecodeError:
            continue
        return bool(text.strip()) and all(ch >= " " or ch in "\t\n\r\f" for ch in text)
    return False


def _picture(container, v) -> tuple[float | None, int, int, int]:
    """(fps, width, height, rotation) of the video stream ``v``, the size as a viewer sees it."""
    rate = v.average_rate or v.guessed_rate
    width, height = v.codec_context.width, v.codec_context.height
    rotation = _rotation(container, v)
    if rotation % 180:  # a portrait phone video stored sideways: report what a viewer sees
        width, height = height, width
    return (float(rate) if rate else None), width, height, rotation


def _rotation(container, stream) -> int:
    """Display rotation in degrees (the display matrix), read off the first decoded frame."""
    alone(container, stream)  # a stream cut short beside it does not hide the first frame
    try:
        for frame in container.decode(stream):
            return int(getattr(frame, "rotation", 0) or 0) % 360
    except Exception:  # undecodable first frame: the keyframes stage reports the damage
        return 0
    return 0


def effective_seconds(info: ProbeRow) -> float:
    """Seconds that will be processed: the duration, cut at the max_seconds cap."""
    d = info.duration_ms / 1000
    cap = info.max_seconds
    return min(d, cap) if cap else d


_TABLE_BYTES = 1_000_000  # tables, manifest, report and search index of a short recording
_TABLE_BYTES_PER_S = 2_000  # ... and per second of media (segments, words, terms)
_MAX_SIDE = 1568  # keyframes are stored at most this many pixels on their long side


def frame_bytes(width: int | None, height: int | None) -> int:
    """A keyframe JPEG's bytes, from its stored resolution (~0.15 byte per pixel; 1080p: ~250 KB)."""
    w, h = width or 1920, height or 1080
    scale = min(1.0, _MAX_SIDE / max(w, h, 1))
    return max(20_000, int(w * h * scale * scale * 0.15))


def estimate_need(info: ProbeRow, cfg: dict) -> dict[str, int]:
    """Bytes a run writes, by where: ``data`` (WAV cache, keyframes by duration and resolution, tables),
    ``models`` (a model joined into the cache on first use: the multilingual base model, ~145 MB, for
    audio when it is the Whisper model setting), ``dagster`` (the run's rows in Dagster's storage)."""
    from talkthrough_assets.store.models import base_model_join_bytes

    secs = effective_seconds(info)
    max_frames = int(cfg["max_frames"])
    data = int(secs * 16000 * 2) if info.has_audio else 0
    if info.has_video:  # interval frames at most one per frame_floor_s, plus scene cuts, within the budget
        frames = min(max_frames, int(secs / frame_floor_s(secs, max_frames)) + 2 + max_frames // 10)
        data += (frames + 1) * frame_bytes(info.width, info.height)  # + the contact sheet
    data += _TABLE_BYTES + int(secs * _TABLE_BYTES_PER_S)
    return {"data": data, "models": base_model_join_bytes() if info.has_audio else 0,
            "dagster": store.diskfault.DAGSTER_RUN_BYTES}


def preflight_disk(info: ProbeRow, target_dir: str | os.PathLike, *, max_frames: int,
                   min_free_bytes: int = 0, models_dir: str | os.PathLike | None = None,
                   dagster_dir: str | os.PathLike | None = None) -> dict:
    """Refuse before writing anything when a disk lacks room for what the run writes there: the data root
    (audio cache, keyframes, tables), the model cache and Dagster's storage, summed per filesystem."""
    need = estimate_need(info, {"max_frames": max_frames})
    target = Path(target_dir)
    target.mkdir(parents=True, exist_ok=True)
    places = [(target, need["data"], "data"), (Path(models_dir or target), need["models"], "models"),
              (Path(dagster_dir or target), need["dagster"], "dagster")]
    by_disk: dict[int, list] = {}
    for path, n, what in places:
        at = path
        while not at.exists() and at != at.parent:
            at = at.parent
        entry = by_disk.setdefault(at.stat().st_dev, [path, 0, at, []])
        entry[1] += n
        entry[3].append(what)
    total = sum(n for _, n, _ in places)
    for path, n, at, whats in by_disk.values():
        free = shutil.disk_usage(at).free
        if free - n < min_free_bytes:
            model = f" (the model cache's {need['models'] / 1e6:.0f} MB included)" if need["models"] and "models" in whats \
                else ""
            raise DiskSpaceError(
                f"not enough disk space under {path}: need ~{max(1, round(n / 1e6))} MB{model}"
                f"{f' plus a {min_free_bytes / 1e6:.0f} MB reserve' if min_free_bytes else ''}, {free / 1e6:.0f} MB free")
    return {"need_bytes": total, "free_bytes": shutil.disk_usage(target).free, "need": need}


def frame_floor_s(duration_s: float, max_frames: int) -> float:
    """Minimum spacing between time-based keyframes so the budget spans the whole recording."""
    return max(1.0, float(duration_s) / max(1, int(max_frames)))


@dataclass(frozen=True)
class Options:
    """What the probe stage runs with (built by ``pipeline.options`` from its settings and the environment)."""

    max_seconds: int  # the setting its config hash covers
    max_frames: int  # the keyframe budget its disk preflight counts (keyframes' setting)
    min_free_bytes: int = field(metadata={"env": "TALKTHROUGH_MIN_FREE_BYTES"})  # the preflight's reserve


def run(rid: str, opts: Options) -> StageResult:
    src = source_path(rid)
    if recording_id(src) != rid:  # hashed once per process: registration already did it
        raise StageError(f"{src.name} changed since it was registered (sha256 no longer matches {rid})")
    info = probe_file(src, max_seconds=opts.max_seconds)
    preflight_disk(info, store.home(), max_frames=int(opts.max_frames),
                   min_free_bytes=opts.min_free_bytes, models_dir=store.models_dir(),
                   dagster_dir=store.dagster_storage())
    store.write_table("probe", rid, [info])
    md = {"filename": src.name, "duration_s": round(info.duration_ms / 1000, 3), "kind": info.kind,
          "duration_ms": info.duration_ms, "has_audio": info.has_audio, "has_video": info.has_video,
          "width": info.width, "height": info.height, "cap_hit": info.cap_hit}
    return StageResult(md, digest(info))


def disk_need(rid: str, settings: Callable[[], dict]) -> int | None:
    """Its StageSpec's ``disk_need``: the bytes the recording's run writes (:func:`estimate_need` of its stored
    probe row, ``settings()``: its effective settings), or None before probe or when it cannot say."""
    probed = store.read_one("probe", rid, record=ProbeRow)
    if not probed:
        return None
    try:
        return sum(estimate_need(probed, settings()).values())
    except Exception:  # an estimate only
        return None


_AUDIO_ONLY = AUDIO_EXTS - {".webm"}  # webm is as often video


def has_video(rid: str) -> bool:
    """From the probe row when there is one, else (before probe) the registered source's extension; no media is
    opened. False without a source."""
    p = store.read_one("probe", rid, record=ProbeRow)
    if p is not None:
        return bool(p.has_video)
    try:
        return source_path(rid).suffix.lower() not in _AUDIO_ONLY
    except StageError:
        return False


def may_have_video(rid: str) -> bool:
    """From the probe row when there is one, else the last registered source's extension (no media is opened).
    True without a source."""
    row = store.read_one("probe", rid, record=ProbeRow)
    if row is not None:
        return bool(row.has_video)
    rows = store.read_rows("sources", rid, record=Source)
    return not rows or Path(rows[-1].path).suffix.lower() not in _AUDIO_ONLY


__all__ = ["probe_file", "readable_duration", "readable_note", "preflight_disk", "estimate_need", "frame_bytes", "frame_floor_s", "effective_seconds", "MEDIA_EXTS"]

"""Frames as images: the image result types, which screen a keyframe stands for (:func:`screen_spans`,
:func:`on_screen`), per-frame metadata with capped OCR text, and the stored keyframe JPEGs read from
the data root (a frame pruned or damaged since the manifest was published is reported missing)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Generic, TypeVar

from talkthrough_assets import store
from talkthrough_assets.model.manifest import FrameItem, WallClock
from talkthrough_assets.model.wallclock import t_wall

from talkthrough_assets.read import media
from talkthrough_assets.read import snapshot
from talkthrough_assets.read.answers import Answer, Partial
from talkthrough_assets.read.args import clip
from talkthrough_assets.read.errors import AudioOnly

OCR_MAX_CHARS = 1_500          # per frame, in meta and captions
# Stored keyframes are served re-encoded to this longest side / JPEG quality: the smallest at which the
# on-screen text stays legible (bench/bench_frame_legibility.py). extract_frame
# (crop, full_resolution) is the way to finer detail.
AGENT_MAX_SIDE = 1024
AGENT_JPEG_QUALITY = 70


@dataclass
class Image:
    caption: str
    data: bytes
    mime_type: str = "image/jpeg"


A = TypeVar("A", bound=Answer)


@dataclass
class ImageResult(Generic[A]):
    """A typed answer (``meta``, the JSON block) plus images; surfaces render captions next to image blocks."""

    meta: A
    images: list[Image] = field(default_factory=list)


class FrameInfo(Answer):
    """A stored keyframe in an answer: when it shows, until when that screen stays, its OCR text."""

    ms: int
    t_wall: str | None
    valid_from_ms: int
    valid_to_ms: int
    ocr_text: str | None
    ocr_truncated: bool | None = None
    duplicate_of: int | None = None


class WithImages(Partial):
    """An answer whose stored keyframes go out as images: the ones missing on disk are named."""

    missing_frame_ms: list[int] | None = None
    integrity_note: str | None = None


def screen_spans(frames: list[FrameItem], duration_ms: int) -> dict[int, tuple[int, int]]:
    """keyframe ms -> (valid_from_ms, valid_to_ms): from the frame until the screen next changes
    (the next keyframe that is not a duplicate of the same original), else the recording's end."""
    out: dict[int, tuple[int, int]] = {}
    uniq = [f.ms if f.duplicate_of is None else f.duplicate_of for f in frames]
    nxt = None  # ms of the next keyframe showing a different screen, scanning backwards
    for i in range(len(frames) - 1, -1, -1):
        if i + 1 < len(frames) and uniq[i + 1] != uniq[i]:
            nxt = frames[i + 1].ms
        end = nxt if nxt is not None else max(duration_ms, frames[i].ms)
        out[frames[i].ms] = (frames[i].ms, end)
    return out


def on_screen(frames: list[FrameItem], t: int) -> int | None:
    """ms of the unique frame on screen at ``t`` (the keyframe at/before t; a duplicate stands
    for its original)."""
    on = None
    for f in frames:
        if f.ms > t:
            break
        on = f.duplicate_of if f.duplicate_of is not None else f.ms
    return on


def require_video(snap: snapshot.Snapshot) -> None:
    if not snap.rec.has_video:
        raise AudioOnly(f"recording {snap.rid} ({snap.rec.filename}) is audio-only: it has no frames",
                        hint="use get_transcript or search for audio-only recordings")


def frame_meta(f: FrameItem, wc: WallClock | None, spans: dict[int, tuple[int, int]]) -> FrameInfo:
    text, cut = clip(f.ocr_text or None, OCR_MAX_CHARS)
    lo, hi = spans.get(f.ms, (f.ms, f.ms))
    m = FrameInfo(ms=f.ms, t_wall=t_wall(wc, f.ms), valid_from_ms=lo, valid_to_ms=hi, ocr_text=text)
    if cut:
        m.ocr_truncated = True
    if f.duplicate_of is not None:
        m.duplicate_of = f.duplicate_of
    return m


def frame_bytes(rid: str, rel: str) -> bytes | None:
    try:
        key = store.check_key(rel)
    except PermissionError:
        return None
    if not key.startswith(store.frames_key(rid) + "/") or not key.lower().endswith((".jpg", ".jpeg")):
        return None
    try:
        data = store.get_bytes(key)  # None when pruned between the index and the read
    except OSError:
        return None
    return data if data is not None and media.is_jpeg(data) else None


def agent_jpeg(data: bytes, max_side: int = AGENT_MAX_SIDE, quality: int = AGENT_JPEG_QUALITY
               ) -> tuple[bytes, tuple[int, int], tuple[int, int]]:
    """A stored keyframe as sent to an agent: (jpeg, (width, height) sent, (width, height) stored).
    Downscaled to ``max_side`` and re-encoded; the stored bytes when they are already smaller."""
    import io

    from PIL import Image as PILImage

    with PILImage.open(io.BytesIO(data)) as img:
        stored = img.size
        small = img.convert("RGB")
        small.thumbnail((max_side, max_side))
        buf = io.BytesIO()
        small.save(buf, format="JPEG", quality=quality)
        sent = small.size
    out = buf.getvalue()
    if len(out) >= len(data) and max(stored) <= max_side:
        return data, stored, stored
    return out, sent, stored


def image_result(rid: str, frames: list[FrameItem], wc: WallClock | None, meta: A) -> ImageResult[A]:
    """``meta`` plus the stored JPEGs of ``frames``, captioned (time, duplicate of)."""
    images, missing = [], []
    for f in frames:
        data = frame_bytes(rid, f.file)
        if data is None:
            missing.append(f.ms)
            continue
        # the OCR text is in the frame's entry of the JSON block: not repeated here
        data, sent, stored = agent_jpeg(data)
        cap = f"frame {f.ms} ms" + (f" ({t_wall(wc, f.ms)})" if wc else "")
        if sent != stored:
            cap += f", {sent[0]}x{sent[1]} of {stored[0]}x{stored[1]} (extract_frame for detail)"
        if f.duplicate_of is not None:
            cap += f", duplicate of {f.duplicate_of} ms"
        images.append(Image(cap, data))
    if missing:
        meta.missing_frame_ms = missing
        meta.integrity_note = (f"{len(missing)} frame file(s) of this recording are missing or "
                                  "unreadable on disk; reprocess the recording to restore them")
    return ImageResult(meta, images)

"""Media access for the read tools: stored keyframe bytes and exact-instant re-decodes.

Nothing here writes a file: keyframes are read as stored, and ``decode_frame`` encodes the
re-decoded frame to JPEG in memory.
"""

from __future__ import annotations

import io
import os
import stat
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path
from typing import BinaryIO

from talkthrough_assets.core.errors import UsageError
from talkthrough_assets.core import ids
from talkthrough_assets.core.errors import TalkthroughError
from talkthrough_assets.core.mediaio import alone, open_input

MAX_SIDE = 1568
FULL_MAX_SIDE = 4096  # extract_frame(full_resolution=true): native size up to this longest side
JPEG_QUALITY = 85
JPEG_MAGIC = b"\xff\xd8\xff"


def is_jpeg(data: bytes) -> bool:
    return data[:3] == JPEG_MAGIC


class CropOutside(TalkthroughError, ValueError):
    """A crop box that does not fit the frame."""


def open_verified(candidates: list[str], rid: str) -> tuple[BinaryIO | None, list[str]]:
    """The first candidate path whose bytes are recording ``rid``, opened once: the hash is of what is
    read through that descriptor (and remembered by its fstat identity), and the caller decodes from the
    same open file, so a file renamed over the path between the check and the decode is never served.
    Returns (file or None, names of candidates that exist with other bytes)."""
    changed = []
    for c in candidates:
        try:
            f = open(c, "rb")
        except OSError:  # gone, unreadable, a directory
            continue
        try:
            if not stat.S_ISREG(os.fstat(f.fileno()).st_mode):
                f.close()
                continue
            if ids.sha256_of_open(f, c)[:ids.ID_LEN] == rid:
                return f, changed
        except OSError:
            pass
        f.close()
        changed.append(Path(c).name)
    return None, changed


def still_recording(f: BinaryIO, path: str, rid: str) -> bool:
    """Whether the open file still holds the bytes of ``rid`` after a decode: free while its identity is
    unchanged (remembered hash); re-hashed when its ctime moved (a write into it, or only a link added or
    removed by a rename over its path)."""
    return ids.sha256_of_open(f, path)[:ids.ID_LEN] == rid


@dataclass(frozen=True)
class DecodedFrame:
    """One frame decoded from the source: its JPEG as sent, its time, its size and the source's."""

    jpeg: bytes
    frame_ms: int
    width: int
    height: int
    source_width: int
    source_height: int
    exact: bool   # False: t_ms was past the last decodable frame, which this is
    scaled: bool  # scaled down to the longest side asked for


def decode_frame(path: str | Path | BinaryIO, t_ms: int, *, max_side: int = MAX_SIDE, quality: int = JPEG_QUALITY,
                 crop: tuple[int, int, int, int] | None = None) -> DecodedFrame:
    """Seek to ``t_ms`` and decode forward to the first frame at/after it (the last frame if t is
    past it); optionally crop ``(x, y, width, height)`` in source pixels, then scale so the
    longest side is <= ``max_side``. Raises CropOutside for a box that does not fit the frame.

    ``path`` may be an open binary file (decoded from that descriptor). Times are raw presentation
    times (pts * time_base), the same clock the keyframes use.
    Raises ValueError for a file without a decodable video stream.
    """
    import av

    with open_input(path) as container:
        streams = [s for s in container.streams.video if not (s.disposition & av.stream.Disposition.attached_pic)]
        if not streams:
            raise UsageError("the source has no video stream")
        stream = streams[0]
        stream.thread_type = "AUTO"
        alone(container, stream)  # a frame the keyframes stage read, however short the audio beside it
        tb = stream.time_base or Fraction(1, 1000)
        target = Fraction(int(t_ms), 1000)
        # seek lands on the keyframe at/before the target; decoding forward reaches the exact frame
        container.seek(max(0, int(target / tb)), stream=stream, backward=True, any_frame=False)
        chosen = last = None
        epsilon = Fraction(1, 2000)  # half a millisecond: t_ms values are rounded to whole ms
        for frame in container.decode(stream):
            if frame.pts is None:
                continue
            last = frame
            if frame.pts * tb >= target - epsilon:
                chosen = frame
                break
        frame = chosen or last
        if frame is None:
            raise UsageError(f"no decodable video frame at or before {t_ms} ms")
        frame_ms = int(round(float(frame.pts * tb) * 1000))
        img = frame.to_image()
    src_w, src_h = img.size
    if crop is not None:
        x, y, w, h = crop
        if x + w > src_w or y + h > src_h:
            raise CropOutside(f"crop x={x} y={y} width={w} height={h} does not fit the {src_w}x{src_h} frame")
        img = img.crop((x, y, x + w, y + h))
    scaled = max(img.size) > max_side
    if scaled:
        img.thumbnail((max_side, max_side))
    buf = io.BytesIO()
    img.convert("RGB").save(buf, format="JPEG", quality=quality)
    return DecodedFrame(jpeg=buf.getvalue(), frame_ms=frame_ms, width=img.size[0], height=img.size[1],
                        source_width=src_w, source_height=src_h, exact=chosen is not None, scaled=scaled)

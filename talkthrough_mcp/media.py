"""Media access for the read tools: stored keyframe bytes and exact-instant re-decodes.

Nothing here writes a file: keyframes are read as stored, and ``decode_frame`` encodes the
re-decoded frame to JPEG in memory.
"""

from __future__ import annotations

import hashlib
import io
import threading
from fractions import Fraction
from pathlib import Path

from talkthrough_assets.mediaio import open_input

MAX_SIDE = 1568
JPEG_QUALITY = 85
JPEG_MAGIC = b"\xff\xd8\xff"


def is_jpeg(data: bytes) -> bool:
    return data[:3] == JPEG_MAGIC


class SourceHashes:
    """sha256 prefixes of source files, cached by (path, size, mtime) so a big file is hashed once."""

    def __init__(self) -> None:
        self._cache: dict[tuple[str, int, int], str] = {}
        self._lock = threading.Lock()

    def prefix(self, path: Path) -> str:
        st = path.stat()
        key = (str(path), st.st_size, st.st_mtime_ns)
        with self._lock:
            if key in self._cache:
                return self._cache[key]
        h = hashlib.sha256()
        with open(path, "rb") as f:
            while chunk := f.read(1 << 20):
                h.update(chunk)
        value = h.hexdigest()[:16]
        with self._lock:
            self._cache[key] = value
        return value


def decode_frame(path: str | Path, t_ms: int, *, max_side: int = MAX_SIDE, quality: int = JPEG_QUALITY) -> dict:
    """Seek to ``t_ms`` and decode forward to the first frame at/after it (the last frame if t is
    past it); return {"jpeg", "frame_ms", "width", "height", "source_width", "source_height"}.

    Times are raw presentation times (pts * time_base), the same clock the keyframes use.
    Raises ValueError for a file without a decodable video stream.
    """
    import av

    with open_input(path) as container:
        streams = [s for s in container.streams.video if not (s.disposition & av.stream.Disposition.attached_pic)]
        if not streams:
            raise ValueError("the source has no video stream")
        stream = streams[0]
        stream.thread_type = "AUTO"
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
            raise ValueError(f"no decodable video frame at or before {t_ms} ms")
        frame_ms = int(round(float(frame.pts * tb) * 1000))
        img = frame.to_image()
    src_w, src_h = img.size
    if max(src_w, src_h) > max_side:
        img.thumbnail((max_side, max_side))
    buf = io.BytesIO()
    img.convert("RGB").save(buf, format="JPEG", quality=quality)
    return {"jpeg": buf.getvalue(), "frame_ms": frame_ms, "width": img.size[0], "height": img.size[1],
            "source_width": src_w, "source_height": src_h, "exact": chosen is not None}

"""dedup: mark keyframes whose content did not change since the head of their run.

A frame is a duplicate only when nothing a reader could notice changed. It is compared with the
first frame of its run (so slow drift accumulates instead of hiding) at 1/4 scale in grey: more
than ``MAX_CHANGED_PX`` pixels moving by more than ``PX_DELTA`` grey levels (one changed digit of
28 px text moves ~10; decoding the same picture twice moves none) or any cell of a 16x9 colour
thumbnail shifting by more than ``COLOR_DELTA`` (a recoloured banner) makes it new. A blinking
cursor therefore makes a frame new too; the OCR stage then reads only the bands that changed
(``changed_json``), so being strict costs little.

The 1/4-scale grey image comes from the JPEG's DCT scaling (``draft``), ~3 ms a 1568 px frame.
The stored ``dhash`` (9x8 difference hash) stays as a compact fingerprint for consumers.
"""

from __future__ import annotations

import json

from talkthrough_assets import store
from talkthrough_assets.stages.runner import StageResult, digest

CODE_VERSION = "3"  # 3: a band is as wide as its change (+ margin), not the whole frame
SCALE = 4
PX_DELTA = 40
MAX_CHANGED_PX = 2
COLOR_W, COLOR_H = 16, 9
COLOR_DELTA = 12
# A changed area is widened to whole text bands: rows of this many px (frame scale) around the change.
BAND_MARGIN_PX = 24
# ... and this many px left and right of the changed columns.
BAND_MARGIN_X_PX = 48
# Above this share of the frame's area in bands, the OCR stage reads the whole frame anyway.
MAX_BAND_SHARE = 0.5


class Signature:
    __slots__ = ("gray", "color", "dhash", "size")

    def __init__(self, gray, color, dhash: int, size: tuple[int, int]):
        self.gray, self.color, self.dhash, self.size = gray, color, dhash, size


def _dhash_bits(gray_img, size: int = 8) -> int:
    from PIL import Image

    g = gray_img.resize((size + 1, size), Image.Resampling.BOX)
    w, h = g.size
    px = g.tobytes()
    bits = 0
    for row in range(h):
        for col in range(w - 1):
            bits = (bits << 1) | (px[row * w + col] > px[row * w + col + 1])
    return bits


def signature(image) -> Signature:
    """Quarter-scale grey + colour thumbnail + dHash of a PIL image or a path to a JPEG/PNG."""
    from PIL import Image

    if not isinstance(image, Image.Image):
        with Image.open(image) as im:
            size = im.size
            im.draft("RGB", (max(1, size[0] // SCALE), max(1, size[1] // SCALE)))  # JPEG: DCT-scaled decode
            return _signature(im.convert("RGB"), size)
    return _signature(image.convert("RGB"), image.size)


def _signature(rgb, size: tuple[int, int]) -> Signature:
    import numpy as np
    from PIL import Image

    w, h = max(1, size[0] // SCALE), max(1, size[1] // SCALE)
    if rgb.size != (w, h):
        rgb = rgb.resize((w, h), Image.Resampling.BOX)
    gray = rgb.convert("L")
    color = rgb.resize((COLOR_W, COLOR_H), Image.Resampling.BOX)
    return Signature(np.asarray(gray, dtype=np.int16), np.asarray(color, dtype=np.int16), _dhash_bits(gray), size)


def _mask(a: Signature, b: Signature):
    if a.gray.shape != b.gray.shape:
        return None
    return abs(a.gray - b.gray) > PX_DELTA


def changed_px(a: Signature, b: Signature) -> int:
    m = _mask(a, b)
    return int(m.sum()) if m is not None else a.gray.size


def color_shift(a: Signature, b: Signature) -> int:
    return int(abs(a.color - b.color).max())


def is_duplicate(head: Signature, cur: Signature) -> bool:
    return changed_px(head, cur) <= MAX_CHANGED_PX and color_shift(head, cur) <= COLOR_DELTA


def changed_bands(prev: Signature, cur: Signature) -> list[list[int]] | None:
    """Bands [x0, y0, x1, y1] (frame px) that hold every change from ``prev`` to ``cur``: rows of change
    widened by ``BAND_MARGIN_PX``, each as wide as the changed columns in it plus ``BAND_MARGIN_X_PX`` (a
    blinking cursor is a small box, not a strip across the frame: OCR grows a band to the whole lines it
    touches anyway). None when the change is too large (or the sizes differ) for a partial re-read to pay."""
    import numpy as np

    m = _mask(prev, cur)
    if m is None:
        return None
    w, h = cur.size
    gh, gw = cur.gray.shape
    # (y0, y1, x0, x1) in frame px of each changed grey row (its changed columns) ...
    spans = [(r * h / gh, (r + 1) * h / gh, c[0] * w / gw, (c[-1] + 1) * w / gw)
             for r in np.flatnonzero(m.any(axis=1)) for c in [np.flatnonzero(m[r])]]
    # ... and of colour-only changes (a recoloured banner keeps its grey level): the changed colour cells
    cmask = (abs(prev.color - cur.color) > COLOR_DELTA).any(axis=2)
    for r in np.flatnonzero(cmask.any(axis=1)):
        c = np.flatnonzero(cmask[r])
        spans.append((r * h / COLOR_H, (r + 1) * h / COLOR_H, c[0] * w / COLOR_W, (c[-1] + 1) * w / COLOR_W))
    if not spans:
        return []
    bands: list[list[float]] = []
    for y0, y1, x0, x1 in sorted((a - BAND_MARGIN_PX, b + BAND_MARGIN_PX, c, d) for a, b, c, d in spans):
        if bands and y0 <= bands[-1][1]:
            bands[-1][1] = max(bands[-1][1], y1)
            bands[-1][2], bands[-1][3] = min(bands[-1][2], x0), max(bands[-1][3], x1)
        else:
            bands.append([y0, y1, x0, x1])
    out = [[max(0, int(x0 - BAND_MARGIN_X_PX)), max(0, int(y0)), min(w, int(np.ceil(x1 + BAND_MARGIN_X_PX))),
            min(h, int(np.ceil(y1)))] for y0, y1, x0, x1 in bands]
    if sum((b[2] - b[0]) * (b[3] - b[1]) for b in out) > MAX_BAND_SHARE * w * h:
        return None
    return out


def mark(frames: list[dict], sigs: list[Signature]) -> list[dict]:
    """Each frame vs the head of the current run; a duplicate points at that head's ``ms``. A new
    head records the bands that changed since the previous head (``changed_json``; null = all)."""
    out = []
    head_ms, head = None, None
    for f, s in zip(frames, sigs):
        dup_of, bands = None, None
        if head is not None and is_duplicate(head, s):
            dup_of = head_ms
        else:
            if head is not None:
                bands = changed_bands(head, s)
            head_ms, head = f["ms"], s
        out.append({"ms": f["ms"], "dhash": f"{s.dhash:016x}", "duplicate_of": dup_of,
                    "changed_json": json.dumps(bands) if bands is not None and dup_of is None else None})
    return out


def run(rid: str, opts: None = None) -> StageResult:  # no options
    frames = store.read_rows("keyframes", rid)
    sigs = [signature(store.local_file(f["file"], immutable=True)) for f in frames]
    rows = mark(frames, sigs)
    store.write_table("dedup", rid, rows)
    unique = sum(1 for r in rows if r["duplicate_of"] is None)
    return StageResult({"frames": len(rows), "unique": unique}, digest(rows))

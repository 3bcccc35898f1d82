"""Line-level reuse for OCR: a text line detected in a keyframe at the place where the previous
keyframe had one, over the same pixels, keeps what was read there instead of being recognised again.

Pure logic on numpy images (H x W x 3, any channel order) and OCR boxes (:class:`OcrBox`, four [x, y] corners);
no model here. "Same pixels" is judged on the box's rectangle padded by ``PAD_PX``: no pixel moved by more
than ``PX_DELTA`` on any channel (beyond ``NOISE_SHARE`` of them, video/JPEG noise around sharp strokes) and
the mean moved by at most ``MEAN_DELTA``. One changed character moves hundreds of pixels by 100+ levels; a
line whose box grew or moved (a typed character, a cursor glued to it) is at another place and is read again.
"""

from __future__ import annotations

from typing import Sequence

from talkthrough_assets.model.frames import OcrBox

CORNER_TOL_PX = 3.0  # corners of "the same line" in two frames lie within this many px
PAD_PX = 3
PX_DELTA = 48
NOISE_SHARE = 0.002
MEAN_DELTA = 4.0


def same_place(a, b, tol: float = CORNER_TOL_PX) -> bool:
    """Boxes ``a`` and ``b`` (four corners each) have every corner within ``tol`` px."""
    return len(a) == len(b) and all(abs(pa[0] - pb[0]) <= tol and abs(pa[1] - pb[1]) <= tol for pa, pb in zip(a, b))


def rect(box, size: tuple[int, int], pad: int = PAD_PX) -> tuple[int, int, int, int]:
    """Integer [x0, y0, x1, y1) around ``box`` padded by ``pad``, clipped to ``size`` (w, h)."""
    xs, ys = [p[0] for p in box], [p[1] for p in box]
    w, h = size
    return (max(0, int(min(xs)) - pad), max(0, int(min(ys)) - pad),
            min(w, int(max(xs) + 0.999) + pad), min(h, int(max(ys) + 0.999) + pad))


def same_pixels(prev, cur, box) -> bool:
    """The rectangle around ``box`` is unchanged from image ``prev`` to ``cur`` (same shape required)."""
    import numpy as np

    if prev is None or prev.shape != cur.shape:
        return False
    x0, y0, x1, y1 = rect(box, (cur.shape[1], cur.shape[0]))
    if x1 <= x0 or y1 <= y0:
        return False
    d = np.abs(prev[y0:y1, x0:x1].astype(np.int16) - cur[y0:y1, x0:x1].astype(np.int16))
    d = d.max(axis=-1) if d.ndim == 3 else d
    return float(d.mean()) <= MEAN_DELTA and int((d > PX_DELTA).sum()) <= NOISE_SHARE * d.size


def reusable(box, prev_boxes: Sequence[OcrBox] | None, prev_img, cur_img) -> OcrBox | None:
    """The previous frame's box at ``box``'s place over the same pixels, or None."""
    if not prev_boxes or prev_img is None:
        return None
    for b in prev_boxes:
        if same_place(b.box, box) and same_pixels(prev_img, cur_img, box):
            return b
    return None

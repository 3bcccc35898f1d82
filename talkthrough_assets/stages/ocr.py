"""ocr: RapidOCR over unique keyframes -> newline-joined box text (+ boxes and scores).

``TALKTHROUGH_OCR=off`` or an import failure turns OCR off; that is recorded, not a crash.
"""

from __future__ import annotations

import json
import os
import threading
from functools import lru_cache

CODE_VERSION = "3"
_lock = threading.Lock()


def enabled_setting() -> bool:
    return os.environ.get("TALKTHROUGH_OCR", "on").strip().lower() not in {"off", "0", "false", "no"}


# Text detection runs on a copy scaled to at most this many px on its longest side; recognition still
# reads the full-resolution crops. RapidOCR's default never scales a 1568 px keyframe down, and detection
# was 2/3 of OCR time: 1024 px made OCR ~1.8x faster on the fixtures with the same words read.
# The cap only ever shrinks a frame that RapidOCR would not upscale: a small frame (shortest side under
# DET_MIN_SIDE, e.g. 640x480) keeps RapidOCR's own upscaling, because detecting on it at native size glues
# neighbouring words ("1024x76825fpsPhotoJPEG75%" on a 640x480 title; read right at the default size).
DET_MAX_SIDE = int(os.environ.get("TALKTHROUGH_OCR_DET_SIDE", "1024") or 0)
DET_MIN_SIDE = 736  # RapidOCR's Det.limit_side_len with limit_type "min" (its config.yaml default)


def det_scale(h: int, w: int, *, max_side: int = DET_MAX_SIDE, min_side: int = DET_MIN_SIDE) -> float:
    """Scale factor for the detection copy of an ``h`` x ``w`` image.

    RapidOCR's default scales the shortest side up to ``min_side`` (never down). When that already
    upscales, it is kept as is; otherwise the longest side is capped at ``max_side`` (0 = no cap)."""
    if min(h, w) < min_side:
        return float(min_side) / min(h, w)
    if max_side and max(h, w) > max_side:
        return float(max_side) / max(h, w)
    return 1.0


def _det_preprocess(det):
    """RapidOCR's DetPreProcess with :func:`det_scale` sizing (same multiple-of-32 rounding)."""
    import cv2
    from rapidocr_onnxruntime.ch_ppocr_det.utils import DetPreProcess

    class _Scaled(DetPreProcess):
        def resize(self, img):
            h, w = img.shape[:2]
            r = det_scale(h, w)
            rh, rw = int(round(int(h * r) / 32) * 32), int(round(int(w * r) / 32) * 32)
            if rh <= 0 or rw <= 0:
                return None
            return cv2.resize(img, (rw, rh))

    return _Scaled(DET_MIN_SIDE, "min", det.mean, det.std)


@lru_cache(maxsize=1)
def _engine():
    from rapidocr_onnxruntime import RapidOCR

    engine = RapidOCR()
    if DET_MAX_SIDE:
        try:
            det = engine.text_det
            pre = _det_preprocess(det)
            det.get_preprocess = lambda _max_wh: pre
        except (ImportError, AttributeError):  # another rapidocr layout: keep its own sizing
            pass
    return engine


def engine_status(enabled: bool) -> tuple[object | None, str]:
    """(engine or None, status string recorded in outputs)."""
    if not enabled:
        return None, "off (TALKTHROUGH_OCR=off)"
    try:
        return _engine(), "rapidocr"
    except Exception as e:  # missing wheel, broken onnxruntime: OCR off, recorded
        return None, f"off (rapidocr unavailable: {type(e).__name__}: {e})"


def _box_order(item) -> tuple:
    box = item[0]
    ys = [p[1] for p in box]
    xs = [p[0] for p in box]
    return (round(min(ys) / 12), min(xs))  # reading order: rows (12 px bands), then left to right


def read_image(engine, path: str | os.PathLike) -> dict:
    with _lock:  # screen text is upright: skip the angle classifier (~20 % faster)
        result, _ = engine(str(path), use_cls=False)
    items = sorted(result or [], key=_box_order)
    texts = [it[1] for it in items if it[1] and it[1].strip()]
    scores = [float(it[2]) for it in items]
    boxes = [{"box": [[round(float(x), 1), round(float(y), 1)] for x, y in it[0]], "text": it[1],
              "score": round(float(it[2]), 4)} for it in items]
    return {"text": "\n".join(texts), "boxes_json": json.dumps(boxes, ensure_ascii=False),
            "mean_score": (sum(scores) / len(scores)) if scores else None}

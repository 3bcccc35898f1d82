"""The ocr stage's reads before issue #33 (main at cdc1a4e, ``run`` left out): the baseline of
bench/bench_ocr_speed.py, RapidOCR's default sessions, a whole engine call per frame or band.

ocr: RapidOCR (the ``rapidocr`` 3.x package and the models in its wheel) over unique keyframes -> newline-joined box text (+ boxes and scores).

``TALKTHROUGH_OCR=off`` or an import failure turns OCR off; that is recorded, not a crash.

The engine is loaded once, by an :class:`OcrEngine` the caller owns and passes on (the pipeline gets the
process's one from ``talkthrough_assets.pipeline.engines``, Dagster from its ``ocr_engine`` resource);
:func:`engine_status` asks :func:`default_ocr`, the same process-wide object.
"""

from __future__ import annotations

import functools
import json
import os
import threading

from talkthrough_assets.core import config
from talkthrough_assets.core import stop
from talkthrough_assets import store
from talkthrough_assets.stages.ocr import cache as ocr_cache
from talkthrough_assets.stages.runner import StageResult, digest

CODE_VERSION = "6"
_lock = threading.Lock()


# Text detection runs on a copy scaled to at most this many px on its longest side; recognition still
# reads the full-resolution crops. RapidOCR's default never scales a 1568 px keyframe down, and detection
# was 2/3 of OCR time: 1024 px made OCR ~1.8x faster on the fixtures with the same words read.
# The cap only ever shrinks a frame that RapidOCR would not upscale: a small frame (shortest side under
# DET_MIN_SIDE, e.g. 640x480) keeps RapidOCR's own upscaling, because detecting on it at native size glues
# neighbouring words ("1024x76825fpsPhotoJPEG75%" on a 640x480 title; read right at the default size).
# The cap is TALKTHROUGH_OCR_DET_SIDE (config), read when the engine loads; DET_MAX_SIDE is its default.
DET_MAX_SIDE = 1024
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


def band_scale(h: int, w: int, *, max_side: int = DET_MAX_SIDE) -> float:
    """Scale for a band cut out of a keyframe: the frame's own detection scale, never an upscale
    (a 1568x80 band is not a small image; upscaling its short side to 736 px would cost 10x)."""
    return min(1.0, float(max_side) / max(h, w)) if max_side else 1.0


class _BandMode(threading.local):
    active = False


_band = _BandMode()


def _det_preprocess(det, max_side: int):
    """RapidOCR's DetPreProcess with :func:`det_scale` sizing (same multiple-of-32 rounding)."""
    import cv2
    from rapidocr.ch_ppocr_det.utils import DetPreProcess

    class _Scaled(DetPreProcess):
        def resize(self, img):
            h, w = img.shape[:2]
            r = band_scale(h, w, max_side=max_side) if _band.active else det_scale(h, w, max_side=max_side)
            rh, rw = int(round(int(h * r) / 32) * 32), int(round(int(w * r) / 32) * 32)
            if rh <= 0 or rw <= 0:
                return None
            return cv2.resize(img, (rw, rh))

    return _Scaled(det.limit_side_len, det.limit_type, det.mean, det.std)


# The models the rapidocr wheel ships (rapidocr/models/): detection and recognition PP-OCRv6 small, the
# mobile v2 angle classifier (never run: screen text is upright). Named explicitly, so rapidocr never
# resolves a model URL or downloads anything at run time.
MODELS = {"Det": "PP-OCRv6_det_small.onnx", "Cls": "ch_ppocr_mobile_v2.0_cls_mobile.onnx",
          "Rec": "PP-OCRv6_rec_small.onnx"}


def bundled_models() -> dict[str, str]:
    """{"Det"|"Cls"|"Rec": path} of the models inside the installed rapidocr wheel; FileNotFoundError
    (OCR off, with this reason) when one is missing instead of a download."""
    import importlib.util
    from pathlib import Path

    spec = importlib.util.find_spec("rapidocr")
    if spec is None or not spec.submodule_search_locations:
        raise ImportError("No module named 'rapidocr'")
    root = Path(next(iter(spec.submodule_search_locations))) / "models"
    out = {task: root / name for task, name in MODELS.items()}
    missing = [str(p) for p in out.values() if not p.is_file()]
    if missing:
        raise FileNotFoundError(f"rapidocr's bundled model missing: {', '.join(missing)}")
    return {task: str(p) for task, p in out.items()}


@functools.lru_cache(maxsize=1)
def engine_name() -> str:
    """What produces the OCR output (part of the ocr stage's config hash): package, version and models."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        v = version("rapidocr")
    except PackageNotFoundError:
        v = "missing"
    return f"rapidocr {v} ({MODELS['Det'][:-5]}, {MODELS['Rec'][:-5]})"


def det_max_side() -> int:
    """The detection cap in force (TALKTHROUGH_OCR_DET_SIDE; 0 = no cap)."""
    return config.get("TALKTHROUGH_OCR_DET_SIDE")


def engine_fingerprint() -> dict:
    """What, besides its settings, changes the ocr stage's output (its StageSpec.engine)."""
    return {"engine": engine_name(), "det_max_side": det_max_side()}


def _load_engine(max_side: int):
    from rapidocr import RapidOCR

    models = bundled_models()
    params = {"Global.log_level": "warning", "Global.use_cls": False}
    params.update({f"{task}.model_path": path for task, path in models.items()})
    engine = RapidOCR(params=params)
    if max_side:
        try:
            det = engine._load_det_model()
            pre = _det_preprocess(det, max_side)
            det.get_preprocess = lambda *_: pre
        except (ImportError, AttributeError):  # another rapidocr layout: keep its own sizing
            pass
    return engine


class OcrEngine:
    """The RapidOCR engine, loaded on first use and kept. A load that fails is tried again next time."""

    def __init__(self):
        self._lock = threading.Lock()
        self._engine = None

    def status(self, enabled: bool) -> tuple[object | None, str]:
        """(engine or None, status string recorded in outputs)."""
        if not enabled:
            return None, "off (TALKTHROUGH_OCR=off)"
        try:
            with self._lock:  # one engine, even when a warm-up thread asks at the same moment
                if self._engine is None:
                    self._engine = _load_engine(det_max_side())
                return self._engine, "rapidocr"
        except Exception as e:  # missing wheel, broken onnxruntime: OCR off, recorded
            return None, f"off (rapidocr unavailable: {type(e).__name__}: {e})"


_default = OcrEngine()  # loads nothing until first asked


def default_ocr() -> OcrEngine:
    """This process's one :class:`OcrEngine`."""
    return _default


def engine_status(enabled: bool) -> tuple[object | None, str]:
    """(engine or None, status string recorded in outputs), from :func:`default_ocr`."""
    return default_ocr().status(enabled)


def _box_order(item) -> tuple:
    box = item[0]
    ys = [p[1] for p in box]
    xs = [p[0] for p in box]
    return (round(min(ys) / 12), min(xs))  # reading order: rows (12 px bands), then left to right


def _items(result) -> list:
    """(box, text, score) triples from a rapidocr 3.x result object (or rapidocr-onnxruntime's list)."""
    if result is None:
        return []
    if hasattr(result, "txts"):
        if result.boxes is None or result.txts is None:
            return []
        return list(zip(result.boxes, result.txts, result.scores))
    return list(result[0] or [])  # rapidocr-onnxruntime: ([[box, text, score], ...], elapse)


def _run(engine, image, *, band: bool = False) -> list:
    with _lock:  # screen text is upright: skip the angle classifier (~20 % faster)
        _band.active = band
        try:
            result = engine(image, use_cls=False)
        finally:
            _band.active = False
    return [{"box": [[round(float(x), 1), round(float(y), 1)] for x, y in it[0]], "text": it[1],
             "score": round(float(it[2]), 4)} for it in _items(result)]


def _result(boxes: list[dict]) -> dict:
    boxes = sorted(boxes, key=lambda b: _box_order((b["box"],)))
    texts = [b["text"] for b in boxes if b["text"] and b["text"].strip()]
    scores = [b["score"] for b in boxes]
    return {"text": "\n".join(texts), "boxes_json": json.dumps(boxes, ensure_ascii=False),
            "mean_score": (sum(scores) / len(scores)) if scores else None}


def read_image(engine, path: str | os.PathLike) -> dict:
    return _result(_run(engine, str(path)))


def _touches(box, band) -> bool:
    xs, ys = [p[0] for p in box], [p[1] for p in box]
    return min(xs) < band[2] and max(xs) > band[0] and min(ys) < band[3] and max(ys) > band[1]


def whole_line_bands(bands: list[list[int]], boxes: list[dict], size: tuple[int, int] | None = None,
                     pad: int = 4) -> list[list[int]]:
    """``bands`` ([x0, y0, x1, y1] px) grown until no box of ``boxes`` crosses their edge: a band that
    touches a box takes in all of it (+ ``pad`` px), repeated because a grown band can touch more lines;
    bands that come to overlap are merged. ``size`` (w, h) clips them to the frame. A re-read of the
    result never cuts through a line that was on screen before."""
    out = [list(map(float, b)) for b in bands]
    changed = True
    while changed:
        changed = False
        for band in out:
            for b in boxes:
                if not _touches(b["box"], band):
                    continue
                xs, ys = [p[0] for p in b["box"]], [p[1] for p in b["box"]]
                grown = [min(band[0], min(xs) - pad), min(band[1], min(ys) - pad),
                         max(band[2], max(xs) + pad), max(band[3], max(ys) + pad)]
                if size:
                    grown = [max(0.0, grown[0]), max(0.0, grown[1]), min(float(size[0]), grown[2]),
                             min(float(size[1]), grown[3])]
                if grown != band:
                    band[:] = grown
                    changed = True
        merged: list[list[float]] = []
        for band in sorted(out, key=lambda b: (b[1], b[0])):
            m = next((m for m in merged if _touches([[band[0], band[1]], [band[2], band[3]]], m)), None)
            if m is None:
                merged.append(band)
            else:
                m[:] = [min(m[0], band[0]), min(m[1], band[1]), max(m[2], band[2]), max(m[3], band[3])]
                changed = True
        out = merged
    return [[int(b[0]), int(b[1]), int(-(-b[2] // 1)), int(-(-b[3] // 1))] for b in out]


def changed_boxes(engine, path: str | os.PathLike, bands: list[list[int]], previous: list[dict]) -> list[dict]:
    """Boxes of a frame whose pixels outside ``bands`` ([x0, y0, x1, y1] px) equal the frame
    ``previous`` (its boxes) was read from. Each band is first grown to the whole lines it touches
    (:func:`whole_line_bands`), so a line across a band's edge is re-read whole, never cut; boxes
    outside the grown bands are carried over, boxes touching them are replaced by what the bands read
    now (nothing is opened when no band changed)."""
    from PIL import Image

    if not bands:
        return list(previous)
    with Image.open(path) as im:
        im = im.convert("RGB")
        bands = whole_line_bands(bands, previous, im.size)
        boxes = [b for b in previous if not any(_touches(b["box"], band) for band in bands)]
        for x0, y0, x1, y1 in bands:
            for b in _run(engine, im.crop((x0, y0, x1, y1)), band=True):
                b["box"] = [[round(x + x0, 1), round(y + y0, 1)] for x, y in b["box"]]
                boxes.append(b)
    return boxes


def read_frames(engine, frames: list[dict]) -> list[dict]:
    """OCR the unique keyframes of one recording in time order. ``frames``: {"ms", "path",
    "bands"}, where ``bands`` (from dedup) lists what changed since the previous unique frame, or is
    None (read it all). Returns one result per frame, plus ``read``: "full" or "bands"."""
    out: list[dict] = []
    prev_boxes: list[dict] | None = None
    for f in frames:
        stop.checkpoint()
        if f.get("bands") is not None and prev_boxes is not None:
            boxes, read = changed_boxes(engine, f["path"], f["bands"], prev_boxes), "bands"
        else:
            boxes, read = _run(engine, str(f["path"])), "full"
        out.append(dict(_result(boxes), read=read, ms=f["ms"]))
        prev_boxes = boxes
    return out


# dedup's bands before #33 (whole-width strips)
def changed_bands(prev, cur) -> list[list[int]] | None:
    """Horizontal bands [x0, y0, x1, y1] (frame px) that hold every change from ``prev`` to ``cur``;
    None when the change is too large (or the sizes differ) for a partial re-read to pay."""
    import numpy as np

    from talkthrough_assets.stages.dedup import BAND_MARGIN_PX, COLOR_DELTA, COLOR_H, _mask
    MAX_BAND_SHARE = 0.5
    m = _mask(prev, cur)
    if m is None:
        return None
    w, h = cur.size
    gh = cur.gray.shape[0]
    spans = [(r * h / gh, (r + 1) * h / gh) for r in np.flatnonzero(m.any(axis=1))]
    # colour-only changes (a recoloured banner keeps its grey level): whole colour-cell rows
    crow = np.flatnonzero((abs(prev.color - cur.color) > COLOR_DELTA).any(axis=(1, 2)))
    spans += [(r * h / COLOR_H, (r + 1) * h / COLOR_H) for r in crow]
    if not spans:
        return []
    bands: list[list[float]] = []
    for y0, y1 in sorted((a - BAND_MARGIN_PX, b + BAND_MARGIN_PX) for a, b in spans):
        if bands and y0 <= bands[-1][1]:
            bands[-1][1] = max(bands[-1][1], y1)
        else:
            bands.append([y0, y1])
    out = [[0, max(0, int(y0)), w, min(h, int(np.ceil(y1)))] for y0, y1 in bands]
    if sum(b[3] - b[1] for b in out) > MAX_BAND_SHARE * h:
        return None
    return out



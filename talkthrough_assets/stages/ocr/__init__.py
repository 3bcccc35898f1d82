"""ocr: RapidOCR (the ``rapidocr`` 3.x package and the models in its wheel) over unique keyframes -> newline-joined box text (+ boxes and scores).

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
from talkthrough_assets.stages import cpu_plan
from talkthrough_assets.stages.ocr import cache as ocr_cache
from talkthrough_assets.stages.ocr import lines as ocr_lines
from talkthrough_assets.stages.runner import StageResult, digest

CODE_VERSION = "7"  # 7: lines over unchanged pixels keep their text; bands recognised in one batch
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


def _session(model_path: str, threads: int):
    """An ONNX Runtime session on ``threads`` intra-op threads that never spin (a spinning worker burns CPU
    the other branch could use: with RapidOCR's default sessions OCR took ~1.5x the CPU for the same reads)."""
    import onnxruntime as ort

    o = ort.SessionOptions()
    o.log_severity_level = 4
    o.enable_cpu_mem_arena = False
    o.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    o.intra_op_num_threads = threads
    o.inter_op_num_threads = 1
    o.add_session_config_entry("session.intra_op.allow_spinning", "0")
    return ort.InferenceSession(model_path, sess_options=o, providers=["CPUExecutionProvider"])


class _Threads:
    """The detection and recognition sessions of one engine per thread count (:func:`cpu_plan.ocr_threads`),
    each built on first use; :meth:`use` puts the ones for ``n`` threads in place (under ``_lock``)."""

    def __init__(self, engine, models: dict[str, str]):
        self.models = {"Det": engine._load_det_model(), "Rec": engine._load_rec_model()}
        self.paths = {task: models[task] for task in self.models}
        self.sessions: dict[int, dict] = {}
        self.current: int | None = None

    def use(self, n: int) -> None:
        if n == self.current:
            return
        if n not in self.sessions:
            self.sessions[n] = {task: _session(self.paths[task], n) for task in self.models}
        for task, model in self.models.items():
            model.session.session = self.sessions[n][task]
        self.current = n


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
    try:
        engine._tt_threads = _Threads(engine, models)
        engine._tt_threads.use(cpu_plan.ocr_threads())
    except (ImportError, AttributeError):  # another layout: its own sessions
        engine._tt_threads = None
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


def _set_threads(engine) -> None:
    t = getattr(engine, "_tt_threads", None)
    if t is not None:
        t.use(cpu_plan.ocr_threads())


def _box(points, dx: float = 0.0, dy: float = 0.0) -> list:
    return [[round(float(x) + dx, 1), round(float(y) + dy, 1)] for x, y in points]


def _run(engine, image, *, band: bool = False) -> list:
    """One whole RapidOCR call (detection and recognition) on a path or an image: an engine without the
    steps :func:`_read` calls one by one (another rapidocr layout, the old engine of bench/baseline)."""
    with _lock:  # screen text is upright: skip the angle classifier (~20 % faster)
        _set_threads(engine)
        _band.active = band
        try:
            result = engine(image, use_cls=False)
        finally:
            _band.active = False
    return [{"box": _box(it[0]), "text": it[1], "score": round(float(it[2]), 4)} for it in _items(result)]


def _stepwise(engine) -> bool:
    return all(hasattr(engine, a) for a in ("preprocess_img", "detect_and_crop", "_load_rec_model", "load_img"))


def _detect(engine, img, *, band: bool) -> tuple[list, list]:
    """RapidOCR's detection step on a BGR image: (boxes in ``img`` px, the crops recognition reads)."""
    from rapidocr.utils.process_img import map_boxes_to_original

    h, w = img.shape[:2]
    pre, record = engine.preprocess_img(img)
    _band.active = band
    try:
        crops, det = engine.detect_and_crop(pre, record)
    except Exception as e:  # RapidOCRError: nothing detected
        if type(e).__name__ != "RapidOCRError":
            raise
        return [], []
    finally:
        _band.active = False
    if det.boxes is None or not len(det.boxes):
        return [], []
    return list(map_boxes_to_original(det.boxes, record, h, w)), crops


def _recognise(engine, crops: list) -> list[tuple[str, float]]:
    """RapidOCR's recognition step on crops, all in one call (batched by width, as RapidOCR does)."""
    from rapidocr.ch_ppocr_rec import TextRecInput

    if not crops:
        return []
    res = engine._load_rec_model()(TextRecInput(img=crops, return_word_box=False))
    return list(zip(res.txts or (), res.scores or ()))


def _read(engine, img, regions: list[list[int]] | None, prev: tuple | None) -> list[dict]:
    """Boxes of BGR image ``img``: text detected in ``regions`` ([x0, y0, x1, y1] px; None: the whole frame,
    else each a band, detected at :func:`band_scale`), every detected line recognised unless the previous
    frame (``prev``: (its image, its boxes)) read a line at the same place over the same pixels
    (:mod:`ocr_lines`): that text is kept. The lines left are recognised in one batch. Same filters as
    RapidOCR (empty text, score under its ``text_score``)."""
    prev_img, prev_boxes = prev if prev is not None else (None, None)
    out: list[dict] = []
    todo: list[tuple[list, object]] = []
    with _lock:
        _set_threads(engine)
        for region in regions if regions is not None else [None]:
            x0, y0 = (region[0], region[1]) if region is not None else (0, 0)
            sub = img if region is None else img[region[1]:region[3], region[0]:region[2]]
            boxes, crops = _detect(engine, sub, band=region is not None)
            for pts, crop in zip(boxes, crops):
                box = _box(pts, x0, y0)
                same = ocr_lines.reusable(box, prev_boxes, prev_img, img)
                if same is not None:
                    out.append({"box": box, "text": same["text"], "score": same["score"]})
                else:
                    todo.append((box, crop))
        read = _recognise(engine, [c for _, c in todo])
    min_score = float(getattr(engine, "text_score", 0.5))
    for (box, _), (text, score) in zip(todo, read):
        if text and text.strip() and float(score) >= min_score:
            out.append({"box": box, "text": text, "score": round(float(score), 4)})
    return out


def _result(boxes: list[dict]) -> dict:
    boxes = sorted(boxes, key=lambda b: _box_order((b["box"],)))
    texts = [b["text"] for b in boxes if b["text"] and b["text"].strip()]
    scores = [b["score"] for b in boxes]
    return {"text": "\n".join(texts), "boxes_json": json.dumps(boxes, ensure_ascii=False),
            "mean_score": (sum(scores) / len(scores)) if scores else None}


def load(engine, path: str | os.PathLike):
    """The frame as RapidOCR reads it (BGR array), or None for an engine that reads paths itself."""
    return engine.load_img(str(path)) if _stepwise(engine) else None


def read_image(engine, path: str | os.PathLike) -> dict:
    """One frame read whole, nothing reused (the self-check, tests)."""
    if not _stepwise(engine):
        return _result(_run(engine, str(path)))
    return _result(_read(engine, load(engine, path), None, None))


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


def changed_boxes(engine, path: str | os.PathLike, bands: list[list[int]], previous: list[dict],
                  previous_img=None, img=None) -> list[dict]:
    """Boxes of a frame whose pixels outside ``bands`` ([x0, y0, x1, y1] px) equal the frame
    ``previous`` (its boxes) was read from. Each band is first grown to the whole lines it touches
    (:func:`whole_line_bands`), so a line across a band's edge is re-read whole, never cut; boxes
    outside the grown bands are carried over, boxes touching them are replaced by what the bands read
    now (nothing is opened when no band changed). ``previous_img``/``img``: the two frames as
    :func:`load` gives them, when the caller has them (a line in a band over unchanged pixels keeps its text)."""
    if not bands:
        return list(previous)
    if not _stepwise(engine):
        return _changed_boxes_whole_calls(engine, path, bands, previous)
    img = load(engine, path) if img is None else img
    bands = whole_line_bands(bands, previous, (img.shape[1], img.shape[0]))
    kept = [b for b in previous if not any(_touches(b["box"], band) for band in bands)]
    return kept + _read(engine, img, bands, (previous_img, previous))


def _changed_boxes_whole_calls(engine, path, bands: list[list[int]], previous: list[dict]) -> list[dict]:
    from PIL import Image

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
    """OCR the unique keyframes of one recording in time order: what the ocr stage runs. ``frames``: {"ms",
    "path", "bands"}, where ``bands`` (from dedup) lists what changed since the previous unique frame, or
    is None (read it all). Each read is stored under the frame's pixels (:mod:`ocr_cache`: a slide seen
    before, in any recording, is not read again); a line at the place where the previous frame had one,
    over the same pixels, keeps its text (:mod:`ocr_lines`). Returns one row per frame: the text, boxes and
    mean score, ``read`` ("full" or "bands"), ``ms``, ``key`` (its stored result) and ``reused`` (found
    stored)."""
    last: dict = {}  # the previous frame's path and image (decoded once)

    def image(path):
        if last.get("path") != str(path):
            last.update(path=str(path), img=load(engine, path))
        return last["img"]

    def read(path, bands, prev_path, prev_boxes):
        prev_img = image(prev_path) if prev_path is not None and _stepwise(engine) else None
        if bands is not None and prev_boxes is not None:
            return changed_boxes(engine, path, bands, prev_boxes, prev_img, image(path) if _stepwise(engine) else None)
        if not _stepwise(engine):
            return _run(engine, str(path))
        return _read(engine, image(path), None, (prev_img, prev_boxes) if prev_boxes is not None else None)

    return ocr_cache.read_frames(frames, fingerprint={"engine": engine_fingerprint(), "code": CODE_VERSION},
                                 read=read, result=_result)


def run(rid: str, cfg: dict, engines) -> StageResult:
    frames = store.read_rows("keyframes", rid)
    dedup_by_ms = {d["ms"]: d for d in store.read_rows("dedup", rid)}
    unique = [(f, d) for f in frames for d in [dedup_by_ms.get(f["ms"]) or {}] if d.get("duplicate_of") is None]
    if unique or not cfg.get("ocr"):
        engine, status = engines.ocr.status(bool(cfg.get("ocr")))
    else:  # nothing to read (an audio file, no frames): the engine is not even loaded
        engine, status = None, "not run: no keyframes"
    rows, partial, keys, reused = [], 0, [], 0
    if engine is not None:
        unique = [{"ms": f["ms"], "path": store.local_file(f["file"], immutable=True),
                   "bands": json.loads(d["changed_json"]) if d.get("changed_json") else None} for f, d in unique]
        for r in read_frames(engine, unique):
            partial += r.pop("read") == "bands"
            keys.append({"ms": r["ms"], "key": r.pop("key")})
            reused += r.pop("reused")
            rows.append({"engine": status, **r})
    store.write_table("ocr", rid, rows)
    store.write_table("ocr_keys", rid, keys)
    md = {"engine": status, "frames_read": len(rows), "frames_read_in_bands": partial,
          "frames_with_text": sum(1 for r in rows if r["text"]), "frames_reused": reused}
    return StageResult(md, digest(rows))

"""The ocr stage's engine: RapidOCR (the ``rapidocr`` 3.x package and the models in its wheel), loaded once per
detection cap by an :class:`OcrEngine` the caller owns and passes on (the pipeline gets the process's one from
``talkthrough_assets.pipeline.engines``, Dagster from its ``ocr_engine`` resource); :func:`engine_status` asks
:func:`default_ocr`, the same process-wide object. Detection and recognition are run step by step
(:func:`_detect`, :func:`_recognise`) on ONNX Runtime sessions sized by :func:`cpu_plan.ocr_threads`.
The detection cap comes from the stage's options (``TALKTHROUGH_OCR_DET_SIDE``): nothing here reads the
environment."""

from __future__ import annotations

import functools
import threading

from talkthrough_assets.model.frames import OcrBox
from talkthrough_assets.stages import cpu_plan

_lock = threading.Lock()


# Text detection runs on a copy scaled to at most this many px on its longest side; recognition still
# reads the full-resolution crops. RapidOCR's default never scales a 1568 px keyframe down, and detection
# was 2/3 of OCR time: 1024 px made OCR ~1.8x faster on the fixtures with the same words read.
# The cap only ever shrinks a frame that RapidOCR would not upscale: a small frame (shortest side under
# DET_MIN_SIDE, e.g. 640x480) keeps RapidOCR's own upscaling, because detecting on it at native size glues
# neighbouring words ("1024x76825fpsPhotoJPEG75%" on a 640x480 title; read right at the default size).
# The cap is the ocr stage's option (TALKTHROUGH_OCR_DET_SIDE); DET_MAX_SIDE is the default of a direct call.
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


def _load_engine(max_side: int, threads: int | None = None):
    """RapidOCR with detection capped at ``max_side`` and its sessions built for ``threads`` (default: the
    thread plan's count now, :func:`cpu_plan.ocr_threads`)."""
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
        engine._tt_threads.use(threads or cpu_plan.ocr_threads())
    except (ImportError, AttributeError):  # another layout: its own sessions
        engine._tt_threads = None
    return engine


class OcrEngine:
    """The RapidOCR engine, loaded on first use and kept. A load that fails is tried again next time."""

    def __init__(self):
        self._lock = threading.Lock()
        self._engines: dict[int, object] = {}  # detection cap -> the loaded engine

    def status(self, enabled: bool, max_side: int = DET_MAX_SIDE,
               threads: int | None = None) -> tuple[object | None, str]:
        """(engine or None, status string recorded in outputs); ``max_side``: its detection cap (0: none);
        ``threads``: the thread count its first sessions are built for, if it loads now (default: the plan's now)."""
        if not enabled:
            return None, "off (TALKTHROUGH_OCR=off)"
        try:
            with self._lock:  # one engine, even when a warm-up thread asks at the same moment
                if max_side not in self._engines:
                    self._engines[max_side] = _load_engine(max_side, threads)
                return self._engines[max_side], "rapidocr"
        except Exception as e:  # missing wheel, broken onnxruntime: OCR off, recorded
            return None, f"off (rapidocr unavailable: {type(e).__name__}: {e})"


_default = OcrEngine()  # loads nothing until first asked


def default_ocr() -> OcrEngine:
    """This process's one :class:`OcrEngine`."""
    return _default


def engine_status(enabled: bool, max_side: int = DET_MAX_SIDE) -> tuple[object | None, str]:
    """(engine or None, status string recorded in outputs), from :func:`default_ocr`."""
    return default_ocr().status(enabled, max_side)



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


def _box(points, dx: float = 0.0, dy: float = 0.0) -> tuple[tuple[float, float], ...]:
    return tuple((round(float(x) + dx, 1), round(float(y) + dy, 1)) for x, y in points)


def _run(engine, image, *, band: bool = False) -> list[OcrBox]:
    """One whole RapidOCR call (detection and recognition) on a path or an image: an engine without the
    steps :func:`_read` calls one by one (another rapidocr layout, the old engine of bench/baseline)."""
    with _lock:  # screen text is upright: skip the angle classifier (~20 % faster)
        _set_threads(engine)
        _band.active = band
        try:
            result = engine(image, use_cls=False)
        finally:
            _band.active = False
    return [OcrBox(box=_box(it[0]), text=it[1], score=round(float(it[2]), 4)) for it in _items(result)]


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


__all__ = ["DET_MAX_SIDE", "DET_MIN_SIDE", "MODELS", "OcrEngine", "bundled_models", "default_ocr", "det_scale",
           "band_scale", "engine_name", "engine_status"]

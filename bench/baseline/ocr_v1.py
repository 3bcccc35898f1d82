"""The OCR engine before the move to ``rapidocr`` 3.x (ocr CODE_VERSION 5 and earlier): rapidocr-onnxruntime
1.4 (PP-OCRv4 mobile det/rec in its wheel) with the same detection-size rule, for bench/bench_ocr_engines.py.

Needs ``pip install rapidocr-onnxruntime`` (Python <= 3.12); the project no longer depends on it.
Its engine is called the way talkthrough_assets.stages.ocr calls an engine, so ocr.read_frames runs on it.
"""

from __future__ import annotations

from talkthrough_assets.stages import ocr


def load():
    import cv2
    from rapidocr_onnxruntime import RapidOCR
    from rapidocr_onnxruntime.ch_ppocr_det.utils import DetPreProcess

    class _Scaled(DetPreProcess):
        def resize(self, img):
            h, w = img.shape[:2]
            r = ocr.band_scale(h, w) if ocr._band.active else ocr.det_scale(h, w)
            rh, rw = int(round(int(h * r) / 32) * 32), int(round(int(w * r) / 32) * 32)
            if rh <= 0 or rw <= 0:
                return None
            return cv2.resize(img, (rw, rh))

    engine = RapidOCR()
    if ocr.DET_MAX_SIDE:
        det = engine.text_det
        pre = _Scaled(ocr.DET_MIN_SIDE, "min", det.mean, det.std)
        det.get_preprocess = lambda _max_wh: pre
    return engine


def name() -> str:
    from importlib.metadata import version

    return f"rapidocr-onnxruntime {version('rapidocr-onnxruntime')} (PP-OCRv4 mobile)"

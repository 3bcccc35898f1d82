"""The pure sizing rule behind the OCR accuracy tests (tests/integration/test_accuracy_ocr.py): the detection
size. No models, no media. (The DER scoring shared with bench/bench_der.py is tested in
tests/integration/test_der_scoring.py, beside the accuracy tests that import the benchmark.)"""

from __future__ import annotations

import pytest

from talkthrough_assets.stages.ocr import engine as ocr_engine


def test_detection_scale_keeps_small_frame_upscaling_and_caps_big_frames():
    assert ocr_engine.det_scale(480, 640) == pytest.approx(736 / 480)  # RapidOCR's own upscaling, not 1.0
    assert ocr_engine.det_scale(882, 1568) == pytest.approx(1024 / 1568)  # big keyframe: capped (the speed-up)
    assert ocr_engine.det_scale(800, 1000) == 1.0  # neither small nor over the cap
    assert ocr_engine.det_scale(400, 1280) == pytest.approx(736 / 400)  # wide but short: still upscaled

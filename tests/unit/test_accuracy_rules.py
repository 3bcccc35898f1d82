"""The pure scoring and sizing rules behind the accuracy tests (tests/integration/test_accuracy_*.py):
DER scoring shared with bench/bench_der.py, and the OCR detection-size rule. No models, no media."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from talkthrough_assets.stages import ocr

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))

import bench_der  # noqa: E402  (der: pure scoring shared with the benchmark)


def test_der_scoring_is_label_free_and_counts_a_lost_speaker():
    ref = [(0.0, 5.0, "a"), (5.0, 10.0, "b")]
    assert bench_der.der(ref, [(0.0, 5.0, "S2"), (5.0, 10.0, "S1")], 10.0)["der"] == 0.0
    lost = bench_der.der(ref, [(0.0, 10.0, "S1")], 10.0, collar=0.25)  # one label for both voices
    assert lost["conf"] == pytest.approx(0.5, abs=0.03) and lost["miss"] == 0 and lost["fa"] == 0
    missed = bench_der.der(ref, [(0.0, 5.0, "S1")], 10.0, collar=0.0)
    assert missed["miss"] == pytest.approx(0.5, abs=0.01)


def test_detection_scale_keeps_small_frame_upscaling_and_caps_big_frames():
    assert ocr.det_scale(480, 640) == pytest.approx(736 / 480)  # RapidOCR's own upscaling, not 1.0
    assert ocr.det_scale(882, 1568) == pytest.approx(1024 / 1568)  # big keyframe: capped (the speed-up)
    assert ocr.det_scale(800, 1000) == 1.0  # neither small nor over the cap
    assert ocr.det_scale(400, 1280) == pytest.approx(736 / 400)  # wide but short: still upscaled

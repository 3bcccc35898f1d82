"""stages.ocr_lines (line-level reuse) and stages.cpu_plan (OCR's threads beside Whisper): pure, no model."""

from __future__ import annotations

import numpy as np

from talkthrough_assets.model.frames import OcrBox
from talkthrough_assets.stages import cpu_plan
from talkthrough_assets.stages.ocr import lines as ocr_lines


def _box(x0, y0, x1, y1):
    return ((x0, y0), (x1, y0), (x1, y1), (x0, y1))


def _img():
    rng = np.random.default_rng(0)
    return rng.integers(0, 255, size=(200, 400, 3), dtype=np.uint8)


def test_a_line_at_the_same_place_over_the_same_pixels_keeps_its_text():
    prev = _img()
    cur = prev.copy()
    cur[150:190, 10:390] = 0  # another line changed; this one did not
    noisy = cur.astype(np.int16)
    noisy[20:40, 50:60] += 3  # JPEG-level noise inside the line
    before = [OcrBox(box=_box(20, 10, 300, 50), text="DEPLOY", score=0.99)]
    got = ocr_lines.reusable(_box(21, 11, 301, 49), before, prev, noisy.clip(0, 255).astype(np.uint8))
    assert got is before[0]


def test_a_changed_character_a_moved_box_or_another_size_is_read_again():
    prev = _img()
    before = [OcrBox(box=_box(20, 10, 300, 50), text="DEPLOY", score=0.99)]
    cur = prev.copy()
    cur[20:45, 200:220] = 255 - cur[20:45, 200:220]  # one character's worth of pixels changed
    assert ocr_lines.reusable(_box(20, 10, 300, 50), before, prev, cur) is None
    assert ocr_lines.reusable(_box(20, 10, 330, 50), before, prev, prev.copy()) is None  # the box grew
    assert ocr_lines.reusable(_box(20, 10, 300, 50), before, prev, prev[:100]) is None
    assert ocr_lines.reusable(_box(20, 10, 300, 50), None, None, prev) is None


def test_ocr_takes_what_whisper_leaves_and_every_core_once_it_is_done(monkeypatch):
    monkeypatch.setattr(cpu_plan, "cores", lambda: 2)
    assert cpu_plan.ocr_threads() == 2
    with cpu_plan.running("segments"):
        assert cpu_plan.is_running("segments") and cpu_plan.ocr_threads() == 1
        with cpu_plan.running("ocr"):
            assert cpu_plan.ocr_threads() == 1
    assert not cpu_plan.is_running("segments") and cpu_plan.ocr_threads() == 2
    # the prewarm's question, before either stage runs: will Whisper decode beside it?
    assert cpu_plan.ocr_threads(beside_whisper=True) == 1 and cpu_plan.ocr_threads(beside_whisper=False) == 2

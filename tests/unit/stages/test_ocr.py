"""stages.ocr: which lines a changed band re-reads, and the detection scale of frames and bands (pure; the
engine's own reads are tested in tests/integration/test_ocr_bands.py)."""

from __future__ import annotations

from talkthrough_assets.model.frames import OcrBox
from talkthrough_assets.stages import ocr
from talkthrough_assets.stages.ocr import engine as ocr_engine


class TestOcrBands:
    @staticmethod
    def _line(y0, y1, x0=20, x1=600):
        return OcrBox(box=((x0, y0), (x1, y0), (x1, y1), (x0, y1)), text="t", score=1.0)

    def test_a_band_grows_to_the_whole_lines_it_touches(self):
        lines = [self._line(10, 40), self._line(50, 80), self._line(90, 120), self._line(200, 230)]
        # the band's top edge cuts the second line: it takes all of it (+4 px), not the first or the last
        assert ocr.whole_line_bands([[0, 60, 1280, 100]], lines, (1280, 720)) == [[0, 46, 1280, 124]]

    def test_growing_bands_chain_and_merge_and_stay_in_the_frame(self):
        lines = [self._line(0, 30), self._line(28, 60), self._line(100, 130), self._line(126, 150)]
        # band 1 touches line 2, which overlaps line 1; band 2 touches lines 3 and 4: two bands,
        # clipped at the frame's top; a third band inside the grown second one merges into it
        got = ocr.whole_line_bands([[0, 50, 1280, 55], [0, 110, 1280, 112], [0, 140, 1280, 145]], lines, (1280, 720))
        assert got == [[0, 0, 1280, 64], [0, 96, 1280, 154]]

    def test_a_band_touching_no_line_is_unchanged(self):
        assert ocr.whole_line_bands([[0, 300, 1280, 340]], [self._line(10, 40)], (1280, 720)) == [[0, 300, 1280, 340]]


def test_a_frame_is_detected_at_most_det_max_side_on_its_longest_side():
    assert ocr_engine.det_scale(1080, 1568, max_side=1024) == 1024 / 1568
    assert ocr_engine.det_scale(800, 1024, max_side=1024) == 1.0  # already within the cap
    assert ocr_engine.det_scale(1080, 1568, max_side=0) == 1.0  # 0: no cap


def test_a_small_frame_keeps_rapidocrs_own_upscaling():
    # shortest side under DET_MIN_SIDE (736): RapidOCR's "min" rule scales it up, the cap does not apply
    assert ocr_engine.det_scale(480, 640, max_side=1024) == 736 / 480


def test_a_band_is_scaled_like_its_frame_but_never_up():
    assert ocr_engine.band_scale(80, 1568, max_side=1024) == 1024 / 1568  # a full-width strip of a 1568 px frame
    assert ocr_engine.band_scale(80, 600, max_side=1024) == 1.0  # narrow: read at native size, not upscaled to 736
    assert ocr_engine.band_scale(80, 1568, max_side=0) == 1.0


def test_no_changed_band_carries_the_previous_boxes_over_without_opening_the_frame(tmp_path):
    previous = [OcrBox(box=((0, 0), (10, 0), (10, 10), (0, 10)), text="kept", score=0.9)]
    missing = tmp_path / "never-opened.jpg"  # not there: with no band nothing may be read
    assert ocr.changed_boxes(None, missing, [], previous) == previous

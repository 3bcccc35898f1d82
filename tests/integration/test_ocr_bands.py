"""OCR's banded re-reads with the real RapidOCR engine: after a small change only the changed band is read again,
the rest of the previous frame's text is carried over, and a line crossing a band's edge is re-read whole."""

from __future__ import annotations


import pytest
from PIL import Image, ImageDraw, ImageFont

from talkthrough_assets.model.frames import Band, OcrBox
from talkthrough_assets.stages import ocr
from talkthrough_assets.stages.ocr import engine as ocr_engine
from talkthrough_assets.stages.ocr.records import FrameToRead

W, H = 1280, 720


def _frame(path, lines: list[tuple[int, str]]):
    im = Image.new("RGB", (W, H), (250, 250, 250))
    d = ImageDraw.Draw(im)
    font = ImageFont.load_default(size=44)
    for y, text in lines:
        d.text((60, y), text, font=font, fill=(20, 20, 20))
    im.save(path, quality=92)
    return path


@pytest.fixture(scope="module")
def engine(tt_home):  # ocr.read_frames stores each read under the frame's pixels (ocr_cache): a store is needed
    eng, status = ocr_engine.OcrEngine().status(True)
    assert eng is not None, status
    return eng


def _words(boxes: list[OcrBox]) -> str:
    return " ".join(b.text for b in sorted(boxes, key=lambda b: b.box[0][1])).upper()


def test_only_the_changed_band_is_read_again_and_the_rest_is_carried_over(engine, tmp_path):
    a = _frame(tmp_path / "a.jpg", [(100, "DEPLOY PIPELINE"), (400, "STATUS GREEN")])
    b = _frame(tmp_path / "b.jpg", [(100, "DEPLOY PIPELINE"), (400, "STATUS FAILED")])
    first = ocr.read_frames(engine, [FrameToRead(ms=0, path=a)])[0]
    prev = first.boxes
    assert "DEPLOY" in first.text.upper() and "GREEN" in first.text.upper()

    boxes = ocr.changed_boxes(engine, b, [[0, 390, W, 460]], prev)
    text = _words(boxes)
    assert "FAILED" in text and "GREEN" not in text
    top = [x for x in boxes if x.box[0][1] < 300]
    assert top and all(x in prev for x in top)  # the unchanged line: the very boxes read before, not re-read


def test_read_frames_reads_a_frame_with_bands_in_bands_and_the_first_in_full(engine, tmp_path):
    a = _frame(tmp_path / "a.jpg", [(100, "RELEASE NOTES"), (400, "VERSION ONE")])
    b = _frame(tmp_path / "b.jpg", [(100, "RELEASE NOTES"), (400, "VERSION TWO")])
    out = ocr.read_frames(engine, [FrameToRead(ms=0, path=a), FrameToRead(ms=1000, path=b, bands=(Band(0, 395, W, 455),))])
    assert [r.read for r in out] == ["full", "bands"] and [r.ms for r in out] == [0, 1000]
    assert "TWO" in out[1].text.upper() and "RELEASE" in out[1].text.upper()
    assert "ONE" not in out[1].text.upper()


def test_a_band_cutting_through_a_line_re_reads_the_whole_line(engine, tmp_path):
    a = _frame(tmp_path / "a.jpg", [(300, "ALPHA BRAVO CHARLIE")])
    b = _frame(tmp_path / "b.jpg", [(300, "ALPHA BRAVO DELTA")])
    prev = ocr.read_frames(engine, [FrameToRead(ms=0, path=a)])[0].boxes
    # a band covering only the lower half of the changed word: grown to the whole line before reading
    boxes = ocr.changed_boxes(engine, b, [[500, 330, 900, 350]], prev)
    text = _words(boxes)
    assert "DELTA" in text and "CHARLIE" not in text and "ALPHA" in text


def test_a_line_over_unchanged_pixels_keeps_its_text_and_only_changed_lines_are_recognised(engine, tmp_path,
                                                                                          monkeypatch):
    """#33 item 1: the next frame's unchanged lines are not recognised again (line-level reuse); the changed
    one is, all of a frame's new lines in one recognition call. A spy around the real recogniser counts."""
    a = _frame(tmp_path / "a.jpg", [(100, "BUILD FORTY TWO"), (300, "TESTS PASSED"), (500, "DEPLOY STAGING")])
    b = _frame(tmp_path / "b.jpg", [(100, "BUILD FORTY TWO"), (300, "TESTS FAILED"), (500, "DEPLOY STAGING")])
    calls: list[int] = []
    real = ocr._recognise

    def spy(eng, crops):
        calls.append(len(crops))
        return real(eng, crops)

    monkeypatch.setattr(ocr, "_recognise", spy)
    out = ocr.read_frames(engine, [FrameToRead(ms=0, path=a), FrameToRead(ms=1000, path=b)])
    assert [r.read for r in out] == ["full", "full"]
    assert calls[0] >= 3 and calls[1] == 1, calls  # frame b: only the changed line was recognised
    text = out[1].text.upper()
    assert "FAILED" in text and "PASSED" not in text and "BUILD" in text and "STAGING" in text
    assert ocr.read_image(engine, b).text == out[1].text  # what a fresh whole read gives

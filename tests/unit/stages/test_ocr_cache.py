"""stages.ocr.cache: the OCR results stored under a frame's pixels stay readable and keep their keys while the
stage passes OcrBox records (the keys below are what the dict-passing cache computed for the same inputs)."""

from __future__ import annotations

import pytest
from PIL import Image

from talkthrough_assets import store
from talkthrough_assets.model.frames import Band, OcrBox
from talkthrough_assets.stages import ocr
from talkthrough_assets.stages.ocr import cache
from talkthrough_assets.stages.ocr.records import FrameToRead
from talkthrough_assets.stages.segments import chunks as C

BASE = {"engine": {"engine": "rapidocr 3.4.0 (x, y)", "det_max_side": 1024}, "code": "7"}
PREVIOUS_JSON = [{"box": [[1.0, 2.0], [3.5, 2.0], [3.5, 4.0], [1.0, 4.0]], "text": "a", "score": 0.9876}]
PREVIOUS = (OcrBox(box=((1.0, 2.0), (3.5, 2.0), (3.5, 4.0), (1.0, 4.0)), text="a", score=0.9876),)
FULL_KEY = "d28c5bf9b2382692d622155f32d84df9a0b34d85506edd7466208336afe1d737"
BAND_KEY = "16e085f335f8cd4fa1f7894345303a52f215a5034db2338e4c04aff0b2fcb5cd"


@pytest.fixture()
def frame(tmp_path, monkeypatch):
    monkeypatch.setenv("TALKTHROUGH_HOME", str(tmp_path / "home"))
    im = Image.new("RGB", (64, 32))
    im.putdata([((x * 4) % 256, (y * 8) % 256, (x * y) % 256) for y in range(32) for x in range(64)])
    im.save(tmp_path / "k.png")
    return tmp_path / "k.png"


def test_the_keys_of_a_full_and_a_band_read_are_the_ones_stored_results_have(frame):
    f = FrameToRead(ms=0, path=frame, bands=(Band(0, 10, 64, 20),))
    assert cache._key(f, BASE, None) == FULL_KEY
    assert cache._key(f, BASE, PREVIOUS) == BAND_KEY


def test_a_result_stored_as_json_is_reused_as_records_and_a_new_one_is_stored_in_that_form(frame):
    store.put_bytes(store.ocr_result_key(FULL_KEY), C.encode({"boxes": PREVIOUS_JSON}))
    new = (OcrBox(box=((0.0, 12.0), (60.0, 12.0), (60.0, 18.0), (0.0, 18.0)), text="b", score=0.75),)
    asked = []

    def read(path, bands, prev_path, prev_boxes):  # the band read the second frame needs (nothing stored)
        asked.append((bands, prev_boxes))
        return list(new)

    frames = [FrameToRead(ms=0, path=frame), FrameToRead(ms=500, path=frame, bands=(Band(0, 10, 64, 20),))]
    first, second = cache.read_frames(frames, fingerprint=BASE, read=read, result=ocr._result)
    assert (first.reused, first.read, first.key, first.boxes, first.text) == (True, "full", FULL_KEY, PREVIOUS, "a")
    assert (second.reused, second.read, second.key) == (False, "bands", BAND_KEY)
    assert asked == [([[0, 10, 64, 20]], PREVIOUS)] and second.boxes == new
    stored = C.decode_blob(store.get_bytes(store.ocr_result_key(BAND_KEY)))
    assert stored == {"boxes": [{"box": [[0.0, 12.0], [60.0, 12.0], [60.0, 18.0], [0.0, 18.0]], "text": "b",
                                 "score": 0.75}]}
    assert first.record("rapidocr").boxes == PREVIOUS


def test_a_damaged_stored_result_is_read_again(frame):
    store.put_bytes(store.ocr_result_key(FULL_KEY), b"not a result")
    assert cache._load(FULL_KEY) is None

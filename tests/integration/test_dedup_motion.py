"""Dedup ignores small moving things: a mouse pointer gliding over a slide, a blinking caret, a ticking
clock. Real keyframes + dedup stage functions on generated screencasts (tests/motion_clips.py), real
RapidOCR on the unique frames: unique keyframes within +1 of the screens shown, and none lost; the
pointer clip through `talkthrough process` (service.process): one frame and one search hit for its slide;
and a terminal line typed at the same spot on every slide, a clock ticking: every typed line reaches OCR."""

from __future__ import annotations

import motion_clips as mc
import pytest

from talkthrough_assets.stages import ocr
from talkthrough_assets.stages.ocr import engine as ocr_engine
from talkthrough_assets.stages.ocr.records import FrameToRead


@pytest.fixture(scope="module")
def engine():
    eng, status = ocr_engine.engine_status(True)
    assert eng is not None, status
    return eng


@pytest.mark.parametrize("kind", mc.KINDS)
def test_small_moving_things_are_not_new_scenes_and_no_screen_is_lost(kind, engine, tmp_path):
    frames, folder = mc.unique_frames(kind, tmp_path)
    screens = len(mc.SLIDES) + (kind == "clock")  # the clock clip also edits one word of a slide
    assert screens <= len(frames) <= screens + 1, [f["ms"] for f in frames]
    read = ocr.read_frames(engine, [FrameToRead(ms=f["ms"], path=folder / f["file"]) for f in frames])
    text = "\n".join(r.text for r in read).upper()
    for title, _, _ in mc.SLIDES:
        assert title in text, (title, text)
    # every slide has a unique frame shown while it is on screen
    for start, end in mc.slide_spans_ms():
        assert any(start <= f["ms"] < end for f in frames), (start, end, [f["ms"] for f in frames])
    if kind == "clock":  # the one changed word is a new frame although the clock ticks in the same interval
        edit_ms = int((sum(s[2] for s in mc.SLIDES[:mc.EDIT[0]]) + mc.EDIT[1]) * 1000)
        assert "RUNNING" in text and "PENDING" in text
        assert any(edit_ms <= f["ms"] < mc.slide_spans_ms()[mc.EDIT[0]][1] for f in frames)



def test_talkthrough_process_gives_the_slide_under_the_pointer_one_frame_and_one_search_hit(tt_home, tmp_path):
    import json
    from pathlib import Path

    from talkthrough_assets.app import service
    from talkthrough_assets.read.reader import Reader

    out = service.process(mc.write_clip("pointer", tmp_path / "pointer glide.mp4"))
    assert out["status"] == "processed", out
    items = json.loads(Path(out["manifest"]).read_text())["frames"]["items"]
    unique = [i["ms"] for i in items if "duplicate_of" not in i]
    assert len(mc.SLIDES) <= len(unique) <= len(mc.SLIDES) + 1, unique
    start, end = mc.slide_spans_ms()[mc.POINTER_SLIDE]
    assert len([ms for ms in unique if start <= ms < end]) == 1, unique
    hits = Reader().search(mc.SLIDES[mc.POINTER_SLIDE][0].lower(), recording_id=out["recording_id"]).dump()["hits"]
    assert [h["source"] for h in hits] == ["ocr"], hits


def test_a_line_typed_at_the_same_spot_on_every_slide_reaches_ocr_while_the_clock_still_ticks(tt_home, tmp_path):
    import json
    import re
    from pathlib import Path

    from talkthrough_assets import store
    from talkthrough_assets.app import service
    from talkthrough_assets.model.frames import OcrFrame

    out = service.process(mc.write_clip("typed", tmp_path / "typed lines.mp4"))
    assert out["status"] == "processed", out
    items = json.loads(Path(out["manifest"]).read_text())["frames"]["items"]
    unique = [i["ms"] for i in items if "duplicate_of" not in i]
    spans = mc.slide_spans_ms()
    # the slide, then its typed line: the clock ticking in the same corner adds no frame
    assert all(len([ms for ms in unique if a <= ms < b]) <= 2 for a, b in spans), unique
    rows = store.read_rows("ocr", out["recording_id"], record=OcrFrame)
    for (start, end), line in zip(spans, mc.TYPED):
        read = " ".join(r.text for r in rows if start <= r.ms < end).upper()
        for word in re.findall(r"[A-Z]{3,}", line.upper()):
            assert word in read, (line, word, read)

"""Dedup ignores small moving things: a mouse pointer gliding over a slide, a blinking caret, a ticking
clock. Real keyframes + dedup stage functions on generated screencasts (tests/motion_clips.py), real
RapidOCR on the unique frames: unique keyframes within +1 of the screens shown, and none lost."""

from __future__ import annotations

import motion_clips as mc
import pytest

from talkthrough_assets.stages import ocr


@pytest.fixture(scope="module")
def engine():
    eng, status = ocr.engine_status(True)
    assert eng is not None, status
    return eng


@pytest.mark.parametrize("kind", mc.KINDS)
def test_small_moving_things_are_not_new_scenes_and_no_screen_is_lost(kind, engine, tmp_path):
    frames, folder = mc.unique_frames(kind, tmp_path)
    screens = len(mc.SLIDES) + (kind == "clock")  # the clock clip also edits one word of a slide
    assert screens <= len(frames) <= screens + 1, [f["ms"] for f in frames]
    read = ocr.read_frames(engine, [{"ms": f["ms"], "path": folder / f["file"], "bands": None} for f in frames])
    text = "\n".join(r["text"] for r in read).upper()
    for title, _, _ in mc.SLIDES:
        assert title in text, (title, text)
    # every slide has a unique frame shown while it is on screen
    for start, end in mc.slide_spans_ms():
        assert any(start <= f["ms"] < end for f in frames), (start, end, [f["ms"] for f in frames])
    if kind == "clock":  # the one changed word is a new frame although the clock ticks in the same interval
        edit_ms = int((sum(s[2] for s in mc.SLIDES[:mc.EDIT[0]]) + mc.EDIT[1]) * 1000)
        assert "RUNNING" in text and "PENDING" in text
        assert any(edit_ms <= f["ms"] < mc.slide_spans_ms()[mc.EDIT[0]][1] for f in frames)

"""Smoke tier (no models, seconds): the installed media stack opens known-good media.

A dependency break (PyAV 19 dropped an argument the code passed) made every file "fail at probe"
with a reason that read like bad input. These tests fail loudly, with the real exception, instead. (The
doctor's self-check, which encodes a test clip, is tests/integration/test_selfcheck.py.)
"""

from __future__ import annotations

import pytest
from fixture_facts import FIXTURES_DIR

from talkthrough_assets.core import mediaio
from talkthrough_assets.stages import probe

EXPECTED = {"screencast.mp4": "video", "silent_video.mp4": "video", "meeting_audio.m4a": "audio",
            "two_voices.m4a": "audio"}


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_probe_opens_every_committed_fixture(name):
    info = probe.probe_file(FIXTURES_DIR / name)
    assert info.kind == EXPECTED[name]
    assert info.duration_ms > 1000
    assert info.has_audio == (name != "silent_video.mp4")


def test_tags_with_undecodable_bytes_become_valid_utf8():
    assert mediaio.clean_text("caf\udce9") == "caf\ufffd"
    assert mediaio.clean_text("plain ✓") == "plain ✓"
    "x".join(mediaio.clean_text(v) for v in ("a\udcff", "b")).encode("utf-8")  # never raises

"""The contact sheet's choice of frames and its captions: every unique keyframe once, in time order (never a
duplicate, however many keyframes a quiet slide gave), each captioned with its time from the start and, when the
wall clock is known, its time of day in the recording's zone, as the HTML report writes them; the grid grows
columns with the scene count. The picture itself is read back by OCR in tests/integration/test_contact_sheet.py."""

from __future__ import annotations

import io

from PIL import Image

from manifests import snap as snap_of
from talkthrough_assets.read import contact_sheet
from talkthrough_assets.read import snapshot

WC = {"start_utc": "2026-03-14T09:26:53+00:00", "tz_offset_min": 540, "source": "cli", "confidence": "high"}


def _snap(frames: list[dict], wc: dict | None) -> snapshot.Snapshot:
    return snap_of(frames=frames, wall_clock=wc, filename="demo.mp4", duration_ms=30_000)


# a slide shown for 18 s gives a keyframe each I-frame: seven keyframes, three scenes
FRAMES = ([{"ms": ms, "file": f"f/{ms}.jpg", "duplicate_of": None if ms in (0, 6000, 66_500) else dup}
           for ms, dup in ((0, None), (2000, 0), (4000, 0), (6000, None), (8000, 6000), (10_000, 6000),
                           (66_500, None))])


def test_every_scene_once_in_time_order_with_its_times():
    items = contact_sheet.scenes(_snap(list(reversed(FRAMES)), WC))
    assert items == [("f/0.jpg", "00:00:00  ·  18:26:53 UTC+09:00"),
                     ("f/6000.jpg", "00:00:06  ·  18:26:59 UTC+09:00"),
                     ("f/66500.jpg", "00:01:06  ·  18:27:59 UTC+09:00")]


def test_without_a_wall_clock_the_time_from_the_start_only():
    snap = _snap(FRAMES, None)
    assert [c for _k, c in contact_sheet.scenes(snap)] == ["00:00:00", "00:00:06", "00:01:06"]
    assert contact_sheet.title(snap, 3) == "demo.mp4  ·  3 scenes, each once: time from the start"
    assert contact_sheet.title(_snap(FRAMES, WC), 1).endswith("1 scene, each once: time from the start  ·  "
                                                             "time of day (UTC+09:00)")


def test_a_tile_per_scene_in_a_grid_that_widens_with_the_count():
    tile = Image.new("RGB", (240, 135), (0, 90, 200))
    for n, cols in ((1, 1), (3, 3), (16, 4), (17, 6), (40, 8)):
        data = contact_sheet.render([(f"f/{i}.jpg", f"00:00:{i:02d}") for i in range(n)], "demo.mp4",
                                    tile=lambda _key: tile)
        with Image.open(io.BytesIO(data)) as im:
            rows = -(-n // cols)
            cell = 135 + contact_sheet.CAPTION_H + contact_sheet.GAP
            assert im.size == (contact_sheet.GAP + cols * (contact_sheet.TILE_W + contact_sheet.GAP),
                               contact_sheet.TITLE_H + contact_sheet.GAP + rows * cell), (n, im.size)
    assert contact_sheet.render([], "demo.mp4") is None  # an audio-only recording: no sheet


def test_a_missing_frame_file_is_a_tile_that_says_so():
    data = contact_sheet.render([("f/gone.jpg", "00:00:00")], tile=lambda _key: None)
    with Image.open(io.BytesIO(data)) as im:
        assert im.size[0] == contact_sheet.GAP + contact_sheet.TILE_W + contact_sheet.GAP

"""Keyframes and dedup on real public clips (../shared/eval/media) and the fixtures: the I-frame
pass finds the same cuts as a full decode, phone videos are stored upright, a changed frame is
never a duplicate, and an unreadable video stream is a recorded reason, not a failed run."""

from __future__ import annotations

import json
from pathlib import Path

import av
import numpy as np
import pytest
from fixture_facts import FIXTURES_DIR, SCREENCAST_SCENES, SILENT_SCENES
from PIL import Image

from talkthrough_assets.stages import runner
from talkthrough_assets.pipeline import settings as S
from talkthrough_assets.app import service
from talkthrough_assets import store
from talkthrough_assets.stages import dedup
from talkthrough_assets.stages import keyframes
from talkthrough_assets.stages import probe

EVAL = Path(__file__).resolve().parents[3] / "shared" / "eval" / "media"
VIDEOS = sorted((EVAL / "video").glob("*.mp4")) + sorted((EVAL / "video").glob("*.webm"))


def _extract(path: Path, out: Path, mode: str = "auto") -> dict:
    info = probe.probe_file(path)
    return keyframes.extract(path, out / mode, duration_s=info.duration_ms / 1000, mode=mode,
                             max_frames=S.DEFAULTS["max_frames"])


@pytest.mark.parametrize("path", [FIXTURES_DIR / "screencast.mp4", FIXTURES_DIR / "silent_video.mp4", *VIDEOS],
                         ids=lambda p: p.name)
def test_iframe_pass_finds_every_cut_a_full_decode_finds(path, tmp_path):
    full, fast = _extract(path, tmp_path, "full"), _extract(path, tmp_path, "auto")
    assert fast.path == "iframes" and full.path == "full"
    cuts = [f.ms for f in full.frames if f.reason == "scene"]
    kept = [f.ms for f in fast.frames]
    assert all(any(abs(k - c) <= 1000 for k in kept) for c in cuts), (cuts, kept)
    fast_cuts = [f.ms for f in fast.frames if f.reason == "scene"]
    if not (full.cap_hit or fast.cap_hit):  # a capped run stops early
        # the same frames, exactly; in camera footage a GOP decoded on its own lacks the motion level
        # of the frame before it, so the I-frame pass may call a few more cuts, never fewer
        assert set(cuts) <= set(fast_cuts) and len(fast_cuts) <= len(cuts) * 1.1 + 1, (cuts, fast_cuts)
    assert fast.decoded <= full.decoded * 1.15  # never much more work than decoding everything


def test_screencast_cuts_are_found_on_their_frame_decoding_a_third_of_the_frames(tmp_path):
    for name, scenes in (("screencast.mp4", SCREENCAST_SCENES), ("silent_video.mp4", SILENT_SCENES)):
        res = _extract(FIXTURES_DIR / name, tmp_path / name)
        scene_ms = [f.ms for f in res.frames if f.reason == "scene"]
        assert scene_ms == [s["start_ms"] for s in scenes[1:] if s["start_ms"] < 7000 or name == "screencast.mp4"]
        with av.open(str(FIXTURES_DIR / name)) as c:
            total = c.streams.video[0].frames
        assert res.decoded < total * 0.5, (res.decoded, total)
        assert res.gops_decoded < res.gops


def _arr(im: Image.Image) -> np.ndarray:
    return np.asarray(im.convert("L").resize((64, 64)), dtype=np.float32)


def _first_raw_frame(path: Path) -> Image.Image:
    with av.open(str(path)) as c:
        return next(c.decode(video=0)).to_image()


@pytest.mark.parametrize("name,rotation", [("nomexif_meta.mp4", 270), ("moviepy_fire2.mp4", 180)])
def test_phone_videos_are_stored_upright_and_probe_reports_what_a_viewer_sees(name, rotation, tmp_path):
    path = EVAL / "wallclock" / name
    info = probe.probe_file(path)
    res = _extract(path, tmp_path)
    assert res.rotation % 360 == rotation and info.rotation == rotation
    stored = Image.open(tmp_path / "auto" / res.frames[0].file)
    raw = _first_raw_frame(path)  # as coded, before the display matrix
    if rotation == 270:  # portrait phone video stored sideways
        assert (info.width, info.height) == (1080, 1920) and stored.height > stored.width
        top, bottom = np.asarray(stored.convert("L"))[:300].mean(), np.asarray(stored.convert("L"))[-300:].mean()
        assert top > bottom + 30  # sunset: the bright sky is at the top once upright
    else:
        assert (info.width, info.height) == (1280, 720)
    upright = raw.transpose({270: Image.Transpose.ROTATE_270, 180: Image.Transpose.ROTATE_180}[rotation])
    err_upright = np.abs(_arr(stored) - _arr(upright)).mean()
    err_raw = np.abs(_arr(stored) - _arr(raw.resize(stored.size))).mean()
    assert err_upright < 8 < err_raw, (err_upright, err_raw)


@pytest.mark.parametrize("name", ["pyscenedetect_counter.mp4", "moviepy_smpte-2997.mp4"])
def test_frames_with_new_text_or_colour_are_never_duplicates(name, tmp_path):
    res = _extract(EVAL / "video" / name, tmp_path)
    folder = tmp_path / "auto"
    rows = dedup.mark([f.ms for f in res.frames], [dedup.signature(folder / f.file) for f in res.frames])
    # consecutive counter frames show a new number (and, in the counter clip, a new colour)
    assert all(r.duplicate_of is None for r in rows), rows
    assert len(rows) >= 3


def test_fixture_slides_dedup_to_one_frame_per_scene(processed):
    for name, scenes in (("screencast.mp4", SCREENCAST_SCENES), ("silent_video.mp4", SILENT_SCENES)):
        rid = processed[name]["recording_id"]
        unique = [d["ms"] for d in store.read_rows("dedup", rid) if d["duplicate_of"] is None]
        # the fixtures' slides are static apart from a cursor that blinks in some scenes
        assert len(scenes) <= len(unique) <= 2 * len(scenes), unique


def test_a_header_only_mov_is_processed_with_reasons_not_failed(tt_home):
    out = service.process(EVAL / "wallclock" / "exiftool_QuickTime.mov")
    assert out["status"] == "processed", out
    rid = out["recording_id"]
    m = json.loads(Path(out["manifest"]).read_text())
    assert m["frames"]["count"] == 0 and "no keyframes" in m["frames"]["reason"]
    assert out["frames"]["reason"] == m["frames"]["reason"]
    assert store.read_one("recordings", rid)["kind"] == "video"
    assert m["wall_clock"]["source"] == "creation_time"
    assert runner.stage_state(rid)["keyframes"].status == "ok"

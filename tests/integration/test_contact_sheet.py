"""The contact sheet a run writes beside the report, read back from the JPEG by OCR: the fixture screencast's
four scenes each once (its keyframes are 4 per slide: the sheet used to sample them evenly and showed every
slide 4 times, with no time), in time order, each captioned with its time from the start and its time of day as
the report writes them; an audio-only recording gets none, and `forget` removes it with the recording. Through
the real Dagster job (`service.process`)."""

from __future__ import annotations

import re

from fixture_facts import MEETING_NAME, SCREENCAST_NAME, SCREENCAST_SCENES, SILENT_PATH, unique_copy
from typer.testing import CliRunner

from talkthrough_assets import store
from talkthrough_assets.app import service
from talkthrough_assets.cli import main as cli
from talkthrough_assets.read import formats
from talkthrough_assets.read import snapshot
from talkthrough_assets.stages import ocr
from talkthrough_assets.stages.ocr import engine as ocr_engine
from talkthrough_assets.model.wallclock import t_wall


def test_the_contact_sheet_shows_every_scene_once_with_its_times(processed):
    s = processed[SCREENCAST_NAME]
    rid = s["recording_id"]
    path = s["frames"]["contact_sheet"]
    assert path == store.data_location(store.contact_sheet_key(rid)), s["frames"]
    snap = snapshot.read(rid)
    unique = [f for f in snap.frames if f.duplicate_of is None]
    assert len(snap.frames) > len(unique) == len(SCREENCAST_SCENES)  # a slide gives several keyframes
    engine, status = ocr_engine.engine_status(True)
    assert status == "rapidocr"
    text = ocr.read_image(engine, path).text
    flat = re.sub(r"\s+", "", text).upper()
    for scene in SCREENCAST_SCENES:  # each scene's title once
        assert flat.count(scene["title"].replace(" ", "")) == 1, (scene["title"], text)
    # each scene's times, in time order (left to right), as the report's thumbnails and transcript lines say them
    at = []
    for f in unique:
        clock, wall = formats.clock(f.ms), t_wall(snap.wall_clock, f.ms)
        assert wall, snap.wall_clock  # the fixture carries a creation time
        caption = re.sub(r"\s+", "", f"{clock} · {formats.time_of_day(wall)} {formats.zone(wall)}").upper()
        assert flat.count(caption) == 1, (caption, text)
        at.append(flat.index(caption))
    assert at == sorted(at), text
    assert f"{SCREENCAST_NAME}·4SCENES,EACHONCE".upper() in flat, text


def test_an_audio_only_recording_has_no_contact_sheet(processed):
    s = processed[MEETING_NAME]
    assert s["frames"]["contact_sheet"] is None
    assert not store.exists(store.contact_sheet_key(s["recording_id"]))


def test_forget_removes_the_contact_sheet(tt_home, tmp_path):
    clip = unique_copy(SILENT_PATH, tmp_path / "sheet then forget.mp4", "contact-sheet")
    out = service.process(clip)
    assert out["status"] == "processed" and out["frames"]["contact_sheet"], out
    key = store.contact_sheet_key(out["recording_id"])
    dry = CliRunner().invoke(cli.app, ["forget", out["recording_id"]])  # what would go names it
    assert dry.exit_code == 0 and key in dry.output, dry.output
    r = CliRunner().invoke(cli.app, ["forget", out["recording_id"], "--yes"])
    assert r.exit_code == 0 and not store.exists(key), r.output

"""Wall-clock ladder on real files (issue #14 item 7): a container ``date`` tag is a rung below
``creation_time``, above the file's mtime. The tags come from the real probe stage (PyAV)."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from talkthrough_assets.stages import probe
from talkthrough_assets.model.wallclock import t_wall
from talkthrough_assets.stages import wall_clock as wallclock

MEDIA = Path(__file__).resolve().parents[3] / "shared" / "eval" / "media"
MTIME = 1_760_000_000.0  # 2025-10-09: what the mtime rung would give instead


def _resolve(rel: str) -> dict:
    p = probe.probe_file(MEDIA / rel)
    return wallclock.resolve(tags=p.tag_map, duration_ms=p.duration_ms, file_mtime=MTIME)


def test_date_tag_anchors_mediaelement_other_with_its_offset():
    wc = _resolve("video/mediaelement_other.mp4")  # date=2014-05-07T12:43:25-0500, no creation_time
    assert (wc.source, wc.confidence) == ("date", "medium"), wc  # before: file_mtime_minus_duration, low
    assert wc.start_utc == "2014-05-07T17:43:25.000+00:00"
    assert wc.tz_offset_min == -300
    assert t_wall(dataclasses.asdict(wc), 1500) == "2014-05-07T12:43:26.500-05:00"


def test_creation_time_still_outranks_a_year_only_date_tag():
    wc = _resolve("wallclock/exiftool_QuickTime.mov")  # creation_time 2005-08-11T14:03:54Z, date=2010
    assert (wc.source, wc.start_utc) == ("creation_time", "2005-08-11T14:03:54.000+00:00")


def test_date_tags_without_a_time_of_day_fall_through_to_mtime():
    for value in ("2010", "2014-05-07", "1904-01-01T00:00:00Z", "garbage"):
        wc = wallclock.resolve(tags={"date": value}, duration_ms=0, file_mtime=MTIME)
        assert wc.source == "file_mtime_minus_duration", (value, wc)
    wc = wallclock.resolve(tags={"DATE_RECORDED": "2021:03:04 05:06:07"}, duration_ms=0, file_mtime=MTIME)
    assert (wc.source, wc.start_utc, wc.tz_offset_min) == (
        "date_recorded", "2021-03-04T05:06:07.000+00:00", None)

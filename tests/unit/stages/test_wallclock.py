"""stages.wallclock: the anchor ladder (recorded_at > QuickTime creationdate > creation_time > date tags > mtime) and t_wall."""

from __future__ import annotations

import dataclasses
import json
from datetime import datetime, timezone

import pytest

from talkthrough_assets.model.wallclock import t_wall
from talkthrough_assets.stages import wall_clock as wallclock


# Tags captured from real files (PyAV container.metadata).
IPHONE_MOV_TAGS = {  # QuickTime Player / pre-macOS-26 screen recording
    "major_brand": "qt  ", "creation_time": "2026-03-14T09:26:53.000000Z",
    "com.apple.quicktime.creationdate": "2026-03-14T10:26:53+0100",
}
REPLAYKIT_TAGS = {"major_brand": "mp42", "creation_time": "2026-05-01T17:00:00.000000Z"}
ENCODER_GARBAGE_TAGS = {"creation_time": "1904-01-01T00:00:00.000000Z",
                        "com.apple.quicktime.creationdate": "1970-01-01T00:00:00Z"}
MTIME = datetime(2026, 6, 1, 12, 0, 30, tzinfo=timezone.utc).timestamp()


class TestWallClockLadder:
    def test_recorded_at_wins_with_its_offset(self):
        wc = wallclock.resolve(tags=IPHONE_MOV_TAGS, duration_ms=1000, file_mtime=MTIME,
                               recorded_at="2026-01-02T08:00:00-05:00")
        assert wc.source == "recorded_at" and wc.confidence == "exact"
        assert wc.start_utc == "2026-01-02T13:00:00.000+00:00"
        assert wc.tz_offset_min == -300

    def test_naive_recorded_at_is_machine_local(self):
        wc = wallclock.resolve(tags={}, duration_ms=0, file_mtime=None, recorded_at="2026-01-02T08:00:00")
        local = datetime(2026, 1, 2, 8, 0).astimezone()
        assert wc.tz_offset_min == int(local.utcoffset().total_seconds() // 60)
        assert datetime.fromisoformat(wc.start_utc) == local

    def test_bad_recorded_at_is_a_clear_error(self):
        with pytest.raises(ValueError, match="ISO-8601"):
            wallclock.resolve(tags={}, duration_ms=0, file_mtime=None, recorded_at="last tuesday")

    def test_quicktime_creationdate_is_high_with_offset(self):
        wc = wallclock.resolve(tags=IPHONE_MOV_TAGS, duration_ms=5000, file_mtime=MTIME)
        assert (wc.source, wc.confidence, wc.tz_offset_min) == (wallclock.QT_TAG, "high", 60)
        assert wc.start_utc == "2026-03-14T09:26:53.000+00:00"

    def test_creation_time_is_medium_utc_only(self):
        wc = wallclock.resolve(tags=json.dumps(REPLAYKIT_TAGS), duration_ms=5000, file_mtime=MTIME)
        assert (wc.source, wc.confidence, wc.tz_offset_min) == ("creation_time", "medium", None)
        assert wc.start_utc == "2026-05-01T17:00:00.000+00:00"

    def test_pre_1972_tags_are_garbage_and_mtime_minus_duration_is_used(self):
        wc = wallclock.resolve(tags=ENCODER_GARBAGE_TAGS, duration_ms=30_000, file_mtime=MTIME)
        assert (wc.source, wc.confidence) == ("file_mtime_minus_duration", "low")
        assert wc.start_utc == "2026-06-01T12:00:00.000+00:00"

    def test_garbage_strings_are_skipped(self):
        wc = wallclock.resolve(tags={"creation_time": "not a date", wallclock.QT_TAG: "??"}, duration_ms=0,
                               file_mtime=None)
        assert wc.available is False and wc.start_utc is None

    def test_t_wall_renders_in_recording_local_offset_else_utc(self):
        # as the stored row reads back (readers hand t_wall the row as a mapping)
        local = dataclasses.asdict(wallclock.resolve(tags=IPHONE_MOV_TAGS, duration_ms=0, file_mtime=None))
        assert t_wall(local, 1500) == "2026-03-14T10:26:54.500+01:00"
        utc = dataclasses.asdict(wallclock.resolve(tags=REPLAYKIT_TAGS, duration_ms=0, file_mtime=None))
        assert t_wall(utc, 61_000) == "2026-05-01T17:01:01.000+00:00"
        assert t_wall(None, 5) is None

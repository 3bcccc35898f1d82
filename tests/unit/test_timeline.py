"""The anchored start/end index the wall-clock questions read (issue #36, items 2 and 5): which recordings cover
an instant (overlaps: all of them), which meet a window, the nearest ones around a gap, and each recording's slice
of a window in its own ms; recordings without a wall clock are counted, never placed."""

from __future__ import annotations

from datetime import datetime, timezone

from talkthrough_assets.read.timeline import Timeline, epoch_ms


def _rows(recs: list[tuple[str, str | None, int, str]]) -> dict[str, list]:
    cols = {c: [] for c in ("recording", "recorded_at", "duration_ms", "tz_offset_min", "wall_clock_source",
                            "wall_clock_confidence", "filename", "kind")}
    for rid, start, dur, conf in recs:
        for c, v in zip(cols, (rid, start, dur, 60, "x", conf, f"{rid}.mp4", "video")):
            cols[c].append(v)
    return cols


def ms(text: str) -> int:
    return epoch_ms(datetime.fromisoformat(text))


TL = Timeline(_rows([
    ("long", "2026-03-14T08:00:00.000+00:00", 3 * 3600_000, "exact"),   # 08:00-11:00, longer than the rest
    ("screen", "2026-03-14T09:00:00.000+00:00", 600_000, "high"),       # 09:00-09:10
    ("call", "2026-03-14T09:05:00.000+00:00", 600_000, "low"),          # 09:05-09:15: overlaps screen
    ("later", "2026-03-14T12:00:00.000+00:00", 60_000, "medium"),       # 12:00-12:01
    ("nowhere", None, 5_000, None),
]))


def _ids(pos: list[int]) -> list[str]:
    return [TL.recs[j].recording for j in pos]


def test_covering_an_instant_returns_every_overlapping_recording():
    assert _ids(TL.covering(ms("2026-03-14T09:07:00+00:00"))) == ["long", "screen", "call"]
    assert _ids(TL.covering(ms("2026-03-14T09:10:00+00:00"))) == ["long", "screen", "call"]  # an end is inside
    assert _ids(TL.covering(ms("2026-03-14T11:30:00+00:00"))) == []
    assert _ids(TL.covering(ms("2026-03-14T07:59:59+00:00"))) == []
    assert len(TL) == 4 and TL.unanchored == 1


def test_overlapping_a_window_nearest_and_slices():
    assert _ids(TL.overlapping(ms("2026-03-14T09:12:00+00:00"), ms("2026-03-14T12:00:00+00:00"))) == \
        ["long", "call", "later"]
    assert _ids(TL.overlapping(None, ms("2026-03-14T08:30:00+00:00"))) == ["long"]
    assert _ids(TL.overlapping(ms("2026-03-14T11:00:01+00:00"), None)) == ["later"]
    prev, nxt = TL.nearest(ms("2026-03-14T11:30:00+00:00"))
    assert (TL.recs[prev].recording, TL.recs[nxt].recording) == ("long", "later")
    w = TL.offset_window(ms("2026-03-14T09:08:00+00:00"), ms("2026-03-14T09:12:00+00:00"))
    assert w == {"long": (68 * 60_000, 72 * 60_000), "screen": (8 * 60_000, 10 * 60_000),
                 "call": (3 * 60_000, 7 * 60_000)}


def test_an_empty_library_answers_nothing():
    empty = Timeline()
    t = epoch_ms(datetime(2026, 1, 1, tzinfo=timezone.utc))
    assert empty.covering(t) == [] and empty.overlapping(None, None) == [] and empty.nearest(t) == (None, None)

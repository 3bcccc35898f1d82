"""stages.probe: the keyframe floor derived from the duration and the budget."""

from __future__ import annotations

from talkthrough_assets.stages.probe import frame_floor_s


def test_frame_floor_spreads_budget_over_whole_recording():
    assert frame_floor_s(20, 120) == 1.0  # short: one per second at most
    assert frame_floor_s(3600, 120) == 30.0  # an hour: 120 frames cover all of it
    assert frame_floor_s(3600, 0) == 3600.0  # degenerate budget never divides by zero

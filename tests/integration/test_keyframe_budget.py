"""The keyframe budget covers the whole recording (issue #25, seeds/000 stage 5): on a 192-s
screencast (the 24-s fixture looped 8 times: 32 screens) the last screen has a keyframe, the budget
goes to distinct screens rather than duplicates, and a budget too small for every screen is spread
over the whole recording and reported (cap_hit with a reason, in the manifest and the CLI summary)."""

from __future__ import annotations

import json
from pathlib import Path

import av
import pytest
from fixture_facts import SCREENCAST_PATH, SCREENCAST_SCENE_STARTS_MS
from typer.testing import CliRunner

from talkthrough_assets.cli import main as cli
from talkthrough_assets import store
from talkthrough_assets.stages import dedup
from talkthrough_assets.stages import keyframes
from talkthrough_assets.stages import probe

LOOPS = 8
LOOP_MS = 24_000


@pytest.fixture(scope="module")
def looped(tmp_path_factory) -> Path:
    """The screencast's video packets copied 8 times back to back (no re-encode): 192 s, 32 screens."""
    dst = tmp_path_factory.mktemp("looped") / "looped screencast [192s].mp4"
    with av.open(str(SCREENCAST_PATH)) as src, av.open(str(dst), "w") as out:
        vin = src.streams.video[0]
        vout = out.add_stream_from_template(vin)
        packets = [p for p in src.demux(vin) if p.dts is not None]
        step = int(round(LOOP_MS / 1000 / vin.time_base))
        for k in range(LOOPS):
            for p in packets:
                q = av.Packet(bytes(p))
                q.pts, q.dts, q.duration = p.pts + k * step, p.dts + k * step, p.duration
                q.is_keyframe, q.time_base, q.stream = p.is_keyframe, p.time_base, vout
                out.mux(q)
    return dst


SCREENS_MS = [k * LOOP_MS + s for k in range(LOOPS) for s in SCREENCAST_SCENE_STARTS_MS]


def _extract(path: Path, out: Path, max_frames: int) -> dict:
    info = probe.probe_file(path)
    assert abs(info.duration_ms - LOOPS * LOOP_MS) < 200, info.duration_ms
    return keyframes.extract(path, out, duration_s=info.duration_ms / 1000, max_frames=max_frames)


def test_every_screen_of_a_long_recording_has_a_keyframe_and_duplicates_stay_a_minority(looped, tmp_path):
    res = _extract(looped, tmp_path / "f", 120)
    ms = [f.ms for f in res.frames]
    assert len(ms) <= 120
    ends = SCREENS_MS[1:] + [LOOPS * LOOP_MS]
    for start, end in zip(SCREENS_MS, ends):
        assert any(start <= m < end for m in ms), (start, ms[-10:])
    assert any(m >= SCREENS_MS[-1] for m in ms)  # the last screen (186 s) in particular
    # duplicates as the budget sees them: no pixel changed since the head of the run (dedup's strict rule).
    # dedup.mark also merges the fixture's blinking-cursor frames, which the keyframe scan keeps as changes.
    head, dups = None, 0
    for s in [dedup.signature(tmp_path / "f" / f.file) for f in res.frames]:
        if head is not None and dedup.is_duplicate(head, s):
            dups += 1
        else:
            head = s
    assert dups <= len(ms) // 2, (dups, len(ms))
    assert not res.cap_hit and res.reason is None


def test_a_budget_too_small_for_every_screen_is_spread_over_the_whole_recording(looped, tmp_path):
    res = _extract(looped, tmp_path / "f", 16)
    ms = [f.ms for f in res.frames]
    assert len(ms) == 16 and res.cap_hit
    gaps = [b - a for a, b in zip([0] + ms, ms + [LOOPS * LOOP_MS])]
    assert max(gaps) <= 2 * LOOPS * LOOP_MS / 16, gaps  # no stretch left without frames: the head did not win
    assert ms[-1] >= LOOPS * LOOP_MS - LOOP_MS, ms
    assert res.budget_skipped == len(SCREENS_MS) - len({max(s for s in SCREENS_MS if s <= m) for m in ms})
    assert res.reason.startswith(f"{keyframes.CAP_REASON_PREFIX} of 16 frames") and "not kept" in res.reason


def test_the_cap_is_reported_in_the_manifest_and_the_summary(tt_home, looped):
    r = CliRunner().invoke(cli.app, ["process", str(looped), "--max-frames", "16"])
    assert r.exit_code == 0, r.output
    assert "looped screencast [192s].mp4  processed" in r.output
    assert f"({keyframes.CAP_REASON_PREFIX} of 16 frames" in r.output and "not kept" in r.output
    rid = r.output.split("id=", 1)[1].split()[0]
    m = store.get_json(store.manifest_key(rid))
    assert m["frames"]["cap_hit"] is True and m["frames"]["reason"].startswith(keyframes.CAP_REASON_PREFIX)
    assert m["frames"]["count"] == 16 and m["frames"]["items"][-1]["ms"] >= LOOPS * LOOP_MS - LOOP_MS
    j = json.loads(CliRunner().invoke(cli.app, ["process", str(looped), "--json"]).output)[0]
    assert j["frames"]["reason"] == m["frames"]["reason"]

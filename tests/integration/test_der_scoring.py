"""The DER scoring the diarization accuracy tests and bench/bench_der.py share (bench_der.der): label-free,
and a speaker lost to another label counts as confusion. Pure scoring, but the benchmark's code, so it is
tested here rather than in the unit tier (which never imports bench/)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))

import bench_der  # noqa: E402  (der: pure scoring shared with the benchmark)


def test_der_scoring_is_label_free_and_counts_a_lost_speaker():
    ref = [(0.0, 5.0, "a"), (5.0, 10.0, "b")]
    assert bench_der.der(ref, [(0.0, 5.0, "S2"), (5.0, 10.0, "S1")], 10.0)["der"] == 0.0
    lost = bench_der.der(ref, [(0.0, 10.0, "S1")], 10.0, collar=0.25)  # one label for both voices
    assert lost["conf"] == pytest.approx(0.5, abs=0.03) and lost["miss"] == 0 and lost["fa"] == 0
    missed = bench_der.der(ref, [(0.0, 5.0, "S1")], 10.0, collar=0.0)
    assert missed["miss"] == pytest.approx(0.5, abs=0.01)


def test_meeting_excerpts_form_their_own_group_with_a_held_out_half():
    """The further meeting excerpts (``meeting_*``) are pooled apart from pyannote-audio's ``ami_*`` excerpts,
    so the AMI figure stays comparable, and part of them is held out of tuning."""
    import evalset

    assert bench_der.clip_group(("ami", "meeting")) == "ami"
    assert bench_der.clip_group(("meeting", "far_field")) == "meeting"
    assert bench_der.clip_group(("composite",)) == "composite" and bench_der.clip_group(()) == "other"
    meetings = [c for c in evalset.load_manifest() if bench_der.clip_group(c.tags) == "meeting"]
    assert meetings and all(c.kind == "diarization" and c.speakers >= 3 for c in meetings)
    held = [c.id for c in meetings if c.id in bench_der.HELD_OUT]
    assert 0 < len(held) < len(meetings)
    pools = dict(bench_der.POOLS)
    rows = [{"name": c.id, "group": "meeting"} for c in meetings] + [{"name": "ami_dev00_30s", "group": "ami"}]
    assert sum(pools["pooled, other meeting excerpts"](r) for r in rows) == len(meetings)
    assert sum(pools["pooled, AMI meeting excerpts"](r) for r in rows) == 1
    assert sum(pools["meetings, held-out half"](r) for r in rows) == len(held)
    assert not any(pools["others, tuning half"](r) or pools["others, held-out half"](r) for r in rows)

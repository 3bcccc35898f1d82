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

"""The speaker count on real voices (issue #23): a --num-speakers the user gives is honoured (it was
overridden by the same-voice merge: 3 of 6 found), and the automatic count is within one. Real
sherpa-onnx with the shared models on clips of distinct real speakers built from ../shared/eval/media
by bench/der_composites.py (the clips bench/bench_der.py scores)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from talkthrough_assets.core import config
from talkthrough_assets.pipeline import settings as S
from talkthrough_assets.stages import turns as D

ROOT = Path(__file__).resolve().parents[2]
MEDIA = ROOT.parent / "shared" / "eval" / "media"
sys.path.insert(0, str(ROOT / "bench"))

import der_composites  # noqa: E402


@pytest.fixture(scope="module")
def clips(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("composites")
    cache: dict = {}
    out = {}
    for name in ("seq6_b", "conv4_a"):
        x, ref = der_composites.build(name, MEDIA, cache)
        out[name] = (der_composites.write_wav(tmp / f"{name}.wav", x), len({r[2] for r in ref}))
    return out


def _run(wav, n):
    return D.run_turns(wav, segments=[], words=[], num_speakers=n, threshold=S.DEFAULTS["diarize_threshold"],
                       models_dir=config.get(D.models.ENV_MODELS_DIR))


@pytest.mark.parametrize("name", ["seq6_b", "conv4_a"])
def test_a_given_count_is_honoured(name, clips, tt_home):
    wav, speakers = clips[name]
    row = _run(wav, speakers).diarization
    assert row.available and row.requested_num_speakers == speakers, row
    assert row.detected_num_speakers == speakers, row
    assert row.speaker_count == f"as given (--num-speakers {speakers})"


def test_auto_count_is_within_one_and_says_so(clips, tt_home):
    wav, speakers = clips["seq6_b"]
    for value in ("auto", None, 0):
        row = _run(wav, value).diarization
        assert row.available and row.requested_num_speakers is None, row
        assert abs(row.detected_num_speakers - speakers) <= 1, row
        assert row.speaker_count == "found from the audio (--num-speakers auto)"

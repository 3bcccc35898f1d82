"""Auto diarization on real multi-speaker clips (issue #14 item 1): with num_speakers unset and the
default threshold (settings' diarize_threshold, 0.45) every speaker is found and DER (0.25 s collar)
stays near sherpa-onnx's own defaults. Real sherpa-onnx with the shared models; the references are
the clips' own RTTM / segment files. bench/bench_der.py prints the full comparison."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from talkthrough_assets.core import config
from talkthrough_assets.pipeline import settings as S
from talkthrough_assets.stages import audio
from talkthrough_assets.stages import turns as D

ROOT = Path(__file__).resolve().parents[2]
MEDIA = ROOT.parent / "shared" / "eval" / "media"
sys.path.insert(0, str(ROOT / "bench"))

import bench_der  # noqa: E402  (read_rttm, der: pure scoring shared with the benchmark)


def _falcon_ref():
    seg = json.loads((MEDIA / "refs/falcon_test_data.json").read_text())["tests"]["diarization_tests"][0]["segments"]
    return [(s["start_sec"], s["end_sec"], str(s["speaker_tag"])) for s in seg]


CASES = {  # clip: (reference turns, speakers, max DER) -- sherpa's defaults: 2.4 % and 0.0 %
    "pyannote_sample": (lambda: bench_der.read_rttm(MEDIA / "diarization/pyannote_sample.rttm"), 2, 0.05),
    "falcon_test": (_falcon_ref, 3, 0.02),
}


@pytest.mark.parametrize("clip", sorted(CASES))
def test_auto_diarization_finds_every_speaker(clip, tt_home, tmp_path):
    ref_fn, speakers, max_der = CASES[clip]
    wav = tmp_path / f"{clip}.wav"
    audio.extract_wav(MEDIA / "diarization" / f"{clip}.wav", wav)
    out = D.run_turns(wav, segments=[], words=[], num_speakers=None, threshold=S.DEFAULTS["diarize_threshold"],
                      models_dir=config.get(D.models.ENV_MODELS_DIR))
    row = out.diarization
    assert row.available, row
    hyp = [(t.t0_ms / 1000, t.t1_ms / 1000, t.speaker) for t in out.turns]
    score = bench_der.der(ref_fn(), hyp, len(audio.load_wav(wav)) / 16000, collar=0.25)
    # before (window shift 0.25): pyannote_sample -> 1 speaker, DER 46 %
    assert row.detected_num_speakers == speakers and score["der"] <= max_der, (row, score)

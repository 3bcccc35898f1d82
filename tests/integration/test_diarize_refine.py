"""Diarization on a real meeting excerpt (issue #23): on AMI dev00 (pyannote-audio's tests/data, two
speakers who take turns, far from the microphone) the pyannote segmentation gives both voices one local
speaker, so sherpa-onnx finds one speaker even when asked for two (DER 33 %). The refine step splits the
label by its window embeddings and gives VAD speech the segmentation missed to the nearest speaker.
Real sherpa-onnx, CAM++ and Silero VAD with the shared models; the reference is pyannote's own RTTM.
A single real voice must stay one speaker. bench/bench_der.py prints the whole evaluation set."""

from __future__ import annotations

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

import bench_der  # noqa: E402  (read_rttm, der: the benchmark's scoring)


@pytest.fixture(scope="module")
def dev00(tmp_path_factory):
    wav = tmp_path_factory.mktemp("ami") / "dev00.wav"
    audio.extract_wav(MEDIA / "diarization" / "pyannote_dev00.wav", wav)
    return wav, bench_der.read_rttm(MEDIA / "refs" / "pyannote_debug.development.rttm", "dev00")


def _run(wav, n):
    return D.run_turns(wav, segments=[], words=[], num_speakers=n, threshold=S.DEFAULTS["diarize_threshold"],
                       models_dir=config.get(D.models.ENV_MODELS_DIR))


def _der(turns, ref, wav):
    hyp = [(t.t0_ms / 1000, t.t1_ms / 1000, t.speaker) for t in turns]
    return bench_der.der(ref, hyp, len(audio.load_wav(wav)) / 16000, collar=0.25)


@pytest.mark.parametrize("n", ["auto", 2])
def test_two_voices_in_one_segmentation_label_are_two_speakers(n, dev00, tt_home):
    wav, ref = dev00
    assert len({r[2] for r in ref}) == 2
    out = _run(wav, n)
    row = out.diarization
    assert row.available and row.detected_num_speakers == 2, row
    assert "S2 split from S1 (two voices in one label" in (row.reason or ""), row
    score = _der(out.turns, ref, wav)
    # sherpa-onnx's defaults (and num_clusters=2): one speaker, DER 33 %; measured here 10 %, and the confusion
    # 0.5 % (2.4 % with one pass of the window reassignment: the split label's mean voice still held the other's)
    assert score["der"] <= 0.12, score
    assert score["conf"] <= 0.015, score


def test_one_real_voice_is_not_split(tt_home, tmp_path):
    wav = tmp_path / "narrator.wav"  # 42 s of one speaker (Microsoft's Custom Speech sample)
    audio.extract_wav(MEDIA / "asr" / "ms_customspeech_en-US_general_testing_audio.wav", wav)
    row = _run(wav, "auto").diarization
    assert row.available and row.detected_num_speakers == 1, row
    assert "split" not in (row.reason or ""), row


def test_window_reassignment_gives_short_turns_back_to_their_voice(tt_home, tmp_path):
    """tt_conv4_a (bench_der's composites: four real speakers taking turns more than once): sherpa-onnx's
    10-s window clustering puts short turns in the label of the voice around them; giving each 1.5-s window
    to the label whose voice is nearest lowers the confusion (measured here: 16.5 % -> 12.7 %, DER 20.7 % -> 16.9 %)."""
    import der_composites

    from talkthrough_assets.stages.turns import refine_models as R
    from talkthrough_assets.stages.turns.engine import run_engine
    from talkthrough_assets.stages.turns.labels import relabel

    x, ref = der_composites.build("conv4_a", MEDIA, {})
    wav = der_composites.write_wav(tmp_path / "conv4_a.wav", x)
    samples = audio.load_wav(wav)
    models = D.resolve_models(models_dir=config.get(D.models.ENV_MODELS_DIR))
    turns = relabel(run_engine(samples, models, None, S.DEFAULTS["diarize_threshold"]))
    scores = {}
    for reassign in (False, True):
        out, _ = R.refine_turns(samples, turns, models, reassign=reassign)
        scores[reassign] = _der(out, ref, wav)
    assert scores[True]["conf"] < scores[False]["conf"] - 0.02, scores
    assert scores[True]["der"] < scores[False]["der"], scores

"""Words Whisper wrote where the diarizer marked no one (stages/turns/word_voices.py), with the real models:
on pyannote's two-speaker phone call, a stretch of one speaker's speech taken out of the turns comes back to
that speaker by its voice; a voice from another recording appended to the call stays without a speaker and
is counted (its similarity to both speakers is under the floor: measured 0.38-0.47). Real sherpa-onnx and
CAM++ with the shared models."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from talkthrough_assets.core import config
from talkthrough_assets.model.transcript import Word
from talkthrough_assets.pipeline import settings as S
from talkthrough_assets.stages import audio
from talkthrough_assets.stages import turns as D
from talkthrough_assets.stages.turns import word_voices as WV

ROOT = Path(__file__).resolve().parents[2]
MEDIA = ROOT.parent / "shared" / "eval" / "media" / "diarization"


def _words(t0: int, t1: int, seq: int = 0) -> list[Word]:
    return [Word(idx=i, t0_ms=a, t1_ms=min(t1, a + 250), word=" w", prob=0.9, seq=seq)
            for i, a in enumerate(range(t0, t1, 250))]


@pytest.fixture(scope="module")
def call(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("wv")
    wav, other = tmp / "call.wav", tmp / "other.wav"
    audio.extract_wav(MEDIA / "pyannote_sample.wav", wav)
    audio.extract_wav(MEDIA / "falcon_test.wav", other)
    models = D.resolve_models(models_dir=config.get(D.models.ENV_MODELS_DIR))
    out = D.run_turns(wav, segments=[], words=[], num_speakers="auto", threshold=S.DEFAULTS["diarize_threshold"],
                      models_dir=config.get(D.models.ENV_MODELS_DIR))
    return audio.load_wav(wav), audio.load_wav(other), out, models


def test_no_words_nothing_counted(call, tt_home):
    _, _, out, _ = call
    row = out.diarization
    assert row.available and row.detected_num_speakers == 2, row
    assert (row.words_by_voice, row.words_unassigned) == (0, 0)


def test_speech_taken_out_of_the_turns_comes_back_to_its_speaker(call, tt_home):
    x, _, out, models = call
    longest = max(out.turns, key=lambda t: t.t1_ms - t.t0_ms)
    assert longest.t1_ms - longest.t0_ms >= 3000, longest
    a, b = longest.t0_ms + 500, longest.t1_ms - 500
    rest = [t for t in out.turns if t is not longest]
    words = _words(a, b)
    runs = WV.uncovered_runs(words, rest)  # the other speaker's overlapping turns still cover a few words
    uncovered = sum(n for _, _, n in runs)
    assert uncovered >= len(words) * 3 // 4, runs
    turns, given, left = WV.fill_from_words(x, rest, words, models)
    assert (given, left) == (uncovered, 0)
    for r0, r1, _ in runs:
        back = [t for t in turns if t.t0_ms <= r0 and t.t1_ms >= r1]
        assert back and {t.speaker for t in back} == {longest.speaker}, (longest, runs, back)


def test_a_voice_not_in_the_recording_stays_unassigned(call, tt_home):
    x, other, out, models = call
    joined = np.concatenate([x, other[: 6 * 16000]]).astype(np.float32)
    start = len(x) * 1000 // 16000
    words = _words(start + 500, start + 5500, seq=99)
    turns, given, left = WV.fill_from_words(joined, out.turns, words, models)
    assert (given, left) == (0, len(words))
    assert turns == out.turns

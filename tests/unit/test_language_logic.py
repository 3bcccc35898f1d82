"""The whole-recording language decision (stages/segments/language.py) on the points measured with the
multilingual base model (padded windows) and tiny.en's output."""

import numpy as np
import pytest

from talkthrough_assets.model.transcript import Decoded, Segment, Span, Word
from talkthrough_assets.stages.segments import language as L

pytestmark = pytest.mark.unit


def _h(lang, p, p_en, other=None, p_other=None):
    return {"lang": lang, "p": p, "p_en": p_en, "other": other or lang, "p_other": p or p_other}


def test_every_window_confidently_another_language_is_not_english():
    v = L.decide([_h("de", 0.98, 0.005), _h("de", 0.95, 0.01)], rejected=0.0)
    assert v["language"] == "de" and v["how"] == "confident" and v["p"] == pytest.approx(0.965)


def test_a_window_with_english_keeps_the_per_segment_rules():
    # English, then German (faster-whisper's multilingual.mp3: the first window P(en)=0.998)
    assert L.decide([_h("de", 0.98, 0.005), _h("en", 0.99, 0.99, "cy", 0.001)], rejected=1.0, word_p=0.1) is None
    # the English clips of the eval media: P(en) >= 0.82 on their windows
    assert L.decide([_h("en", 0.83, 0.827, "ja", 0.05)], rejected=0.0, word_p=0.9) is None


def test_an_unsure_language_needs_the_english_model_to_be_unsure_too():
    pt = [{"lang": "en", "p": 0.21, "p_en": 0.21, "other": "la", "p_other": 0.2}]
    assert L.decide(pt, rejected=0.3, word_p=0.8) is None  # kept, well-formed English: not decided here
    v = L.decide(pt, rejected=0.92, word_p=0.8)  # most of what it wrote was a loop, dropped
    assert v["language"] == "la" and v["how"] == "unsure"
    zh = [{"lang": "en", "p": 0.62, "p_en": 0.617, "other": "th", "p_other": 0.19}]
    assert L.decide(zh, rejected=0.04, word_p=0.52)["language"] == "th"
    assert L.decide(zh, rejected=0.04, word_p=0.91) is None


def test_rejected_share_counts_drops_over_speech_and_repeated_segments():
    out = Decoded(model="tiny.en", audio_ms=10000, words=(Word(0, 0, 10, "w", 0.9),) * 10,
                  segments=(Segment(0, 10, "One day I told you", -0.2, 0.1), Segment(20, 30, "one day, I told you.", -0.2, 0.1)),
                  dropped=(Span(0, 1, "no speech in its time span (voice activity detection)", "a b c", words=3),
                           Span(2, 3, "impossible timing (5 words in 0.1 s)", "a b c d e", words=5)))
    assert L.rejected_share(out) == pytest.approx((5 + 5) / (5 + 10))


def test_speech_windows_leave_silence_out_and_spread_over_the_recording():
    x = np.arange(400 * L.SR, dtype=np.float32)
    core = [(k * 10 * L.SR, (k * 10 + 5) * L.SR) for k in range(40)]  # 200 s of speech in 5-s pieces
    w = L.speech_windows(x, core)
    assert len(w) == L.MAX_WINDOWS and all(len(p) == 30 * L.SR for p in w[:-1]) and len(w[-1]) == 20 * L.SR
    assert w[0][0] == 0 and w[0][5 * L.SR] == 10 * L.SR  # the silence between is left out
    assert L.speech_windows(x, []) == []
    short = L.speech_windows(x, [(0, 31 * L.SR)])  # a last piece under a quarter window is left out
    assert len(short) == 1

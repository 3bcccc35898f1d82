"""Pure helpers of the segments stage's drop rules (stages.transcribe)."""

from talkthrough_assets.stages import transcribe as T



def test_language_check_hears_at_least_8_s_around_a_short_segment():
    a, b = T._context(10.0, 11.0, 60 * 16000)
    assert (b - a) == T.LANGUAGE_CHECK_MIN_S * 16000 and a < 10 * 16000 and b > 11 * 16000


def test_language_check_window_is_shifted_inside_the_recording_at_its_ends():
    assert T._context(0.2, 1.0, 60 * 16000) == (0, T.LANGUAGE_CHECK_MIN_S * 16000)
    a, b = T._context(59.0, 59.8, 60 * 16000)
    assert b == 60 * 16000 and b - a == T.LANGUAGE_CHECK_MIN_S * 16000


def test_language_check_of_a_long_segment_hears_its_middle_10_s():
    a, b = T._context(0.0, 28.0, 60 * 16000)
    assert (a, b) == (9 * 16000, 19 * 16000)


def test_a_recording_shorter_than_the_window_is_heard_whole():
    assert T._context(0.5, 1.5, 3 * 16000) == (0, 3 * 16000)


def test_segment_has_speech_when_any_vad_region_overlaps_it():
    regions = [(16000, 32000), (80000, 96000)]
    assert T._has_speech(regions, 1.5, 2.5)
    assert not T._has_speech(regions, 2.5, 4.9)
    assert T._has_speech(regions, 4.9, 5.1)


def test_compression_ratio_is_the_segments_own_text():
    assert T.compression_ratio("Okay.") < 1.0
    assert T.compression_ratio("the rest of " * 20) > T.MAX_COMPRESSION_RATIO
    assert T.compression_ratio("") == 0.0


def _words(*probs):
    return [{"probability": p} for p in probs]


def test_doubtful_rule_catches_the_measured_non_english_segments_with_margin():
    """(window avg_logprob, mean word probability) of segments tiny.en wrote over non-English speech in the
    eval set (bench/bench_asr.py): the highest avg_logprob ones, and the highest word probability one.
    Each is still checked when moved 0.1 towards confidence on avg_logprob or to 3x its word probability."""
    for lp, mp in [(-0.203, 0.19), (-0.466, 0.191), (-0.617, 0.899), (-0.683, 0.826)]:
        assert T._doubtful(lp, _words(mp))
        assert T._doubtful(lp, _words(min(0.99, 3 * mp))) or T._doubtful(lp + 0.1, _words(mp))
    assert T._doubtful(-0.2, _words(0.57)) and T._doubtful(-0.51, _words(0.99))


def test_confident_english_is_not_sent_to_the_language_check():
    """The bench meeting's TTS English (avg_logprob >= -0.25, mean word probability 0.56-0.85) was checked at
    the earlier cut of 0.85 and never dropped; most of it is no longer checked."""
    assert not T._doubtful(-0.05, _words(0.78, 0.74))
    assert not T._doubtful(-0.25, _words(0.83))
    assert T._doubtful(-0.05, _words(0.5, 0.6))  # low word confidence is still checked
    assert T._doubtful(-0.3, [])  # no aligned words: checked

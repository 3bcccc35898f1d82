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

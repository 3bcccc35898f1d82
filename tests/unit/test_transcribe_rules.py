"""Pure helpers of the segments stage's drop rules (stages/segments/rules.py, transcribe.py)."""

from talkthrough_assets.model.transcript import Segment, Word
from talkthrough_assets.stages.segments.options import Decoding
from talkthrough_assets.stages.segments import coverage as segments_coverage
from talkthrough_assets.stages.segments import rules as segments_rules
from talkthrough_assets.stages.segments.word_timing import Aligned, AlignedWord



def test_language_check_hears_at_least_8_s_around_a_short_segment():
    a, b = segments_rules._context(10.0, 11.0, 60 * 16000)
    assert (b - a) == segments_rules.LANGUAGE_CHECK_MIN_S * 16000 and a < 10 * 16000 and b > 11 * 16000


def test_language_check_window_is_shifted_inside_the_recording_at_its_ends():
    assert segments_rules._context(0.2, 1.0, 60 * 16000) == (0, segments_rules.LANGUAGE_CHECK_MIN_S * 16000)
    a, b = segments_rules._context(59.0, 59.8, 60 * 16000)
    assert b == 60 * 16000 and b - a == segments_rules.LANGUAGE_CHECK_MIN_S * 16000


def test_language_check_of_a_long_segment_hears_its_middle_10_s():
    a, b = segments_rules._context(0.0, 28.0, 60 * 16000)
    assert (a, b) == (9 * 16000, 19 * 16000)


def test_a_recording_shorter_than_the_window_is_heard_whole():
    assert segments_rules._context(0.5, 1.5, 3 * 16000) == (0, 3 * 16000)


def test_segment_has_speech_when_any_vad_region_overlaps_it():
    regions = [(16000, 32000), (80000, 96000)]
    assert segments_rules._has_speech(regions, 1.5, 2.5)
    assert not segments_rules._has_speech(regions, 2.5, 4.9)
    assert segments_rules._has_speech(regions, 4.9, 5.1)


def test_compression_ratio_is_the_segments_own_text():
    assert segments_rules.compression_ratio("Okay.") < 1.0
    assert segments_rules.compression_ratio("the rest of " * 20) > Decoding().max_compression_ratio
    assert segments_rules.compression_ratio("") == 0.0


def _words(*probs):
    return [AlignedWord(0.0, 0.1, " w", p) for p in probs]


def test_doubtful_rule_catches_the_measured_non_english_segments_with_margin():
    """(window avg_logprob, mean word probability) of segments tiny.en wrote over non-English speech in the
    eval set (bench/bench_asr.py): the highest avg_logprob ones, and the highest word probability one.
    Each is still checked when moved 0.1 towards confidence on avg_logprob or to 3x its word probability."""
    for lp, mp in [(-0.203, 0.19), (-0.466, 0.191), (-0.617, 0.899), (-0.683, 0.826)]:
        assert segments_rules._doubtful(lp, _words(mp))
        assert segments_rules._doubtful(lp, _words(min(0.99, 3 * mp))) or segments_rules._doubtful(lp + 0.1, _words(mp))
    assert segments_rules._doubtful(-0.2, _words(0.57)) and segments_rules._doubtful(-0.51, _words(0.99))


def test_confident_english_is_not_sent_to_the_language_check():
    """The bench meeting's TTS English (avg_logprob >= -0.25, mean word probability 0.56-0.85) was checked at
    the earlier cut of 0.85 and never dropped; most of it is no longer checked."""
    assert not segments_rules._doubtful(-0.05, _words(0.78, 0.74))
    assert not segments_rules._doubtful(-0.25, _words(0.83))
    assert segments_rules._doubtful(-0.05, _words(0.5, 0.6))  # low word confidence is still checked
    assert segments_rules._doubtful(-0.3, [])  # no aligned words: checked


def test_short_doubtful_segments_within_10_s_share_one_language_check():
    spans = [(1.0, 2.5), (2.6, 4.0), (5.0, 10.9), (11.5, 12.0), (30.0, 31.0)]
    assert segments_rules.check_groups(spans) == [[0, 1, 2], [3], [4]]


def test_every_segment_of_a_group_is_inside_the_audio_its_check_hears():
    spans = [(float(t), t + 1.2) for t in range(0, 60, 2)]
    groups = segments_rules.check_groups(spans)
    assert sum(len(g) for g in groups) == len(spans) and len(groups) < len(spans)
    for g in groups:
        t0, t1 = spans[g[0]][0], max(spans[j][1] for j in g)
        a, b = segments_rules._context(t0, t1, 120 * 16000)
        assert all(a <= spans[j][0] * 16000 and spans[j][1] * 16000 <= b for j in g), g


def test_a_long_doubtful_segment_is_checked_alone():
    assert segments_rules.check_groups([(0.0, 12.0), (12.5, 13.0)]) == [[0], [1]]
    assert segments_rules.check_groups([]) == []


# --------------------------------------------------------------------------- loops lose their tail, not the segment

def test_a_loop_at_the_end_of_a_segment_keeps_the_words_before_it_and_one_round():
    text = "Thanks for the update. The rest of the rest of the rest of the rest of"
    keep = segments_rules.loop_cut(text)
    assert " ".join(text.split()[:keep]) == "Thanks for the update. The rest of"


def test_a_long_sentence_said_twice_in_a_row_is_cut_after_its_first_time():
    text = "Scene four. Now we look at the metrics. Now we look at the metrics."
    assert " ".join(text.split()[:segments_rules.loop_cut(text)]) == "Scene four. Now we look at the metrics."


def test_a_short_word_said_twice_is_not_a_loop():
    assert segments_rules.loop_cut("it was very very good and then we left") is None
    assert segments_rules.loop_cut("Okay. Okay. Okay. Okay.") == 1


# --------------------------------------------------------------------------- coverage of voice activity

def test_uncovered_speech_is_the_voice_activity_no_segment_overlaps():
    core = [(0, 32000), (48000, 96000)]  # 0-2 s, 3-6 s
    covered = [(0, 30000), (50000, 60000)]
    assert segments_coverage.uncovered(core, covered, 16000) == [(60000, 96000)]  # 0.125 s and 0.125 s left out: too short
    assert segments_coverage.uncovered(core, covered, 1000) == [(30000, 32000), (48000, 50000), (60000, 96000)]
    assert segments_coverage.uncovered(core, [], 16000) == core


def test_core_speech_is_the_gate_region_without_its_padding():
    pad = segments_rules.VAD_GATE_PAD_MS * 16
    assert segments_rules.core_speech([(0, 2 * pad + 1600), (10 * pad, 11 * pad)]) == [(pad, pad + 1600)]
    assert segments_rules.speech_in([(0, 16000), (32000, 48000)], 8000, 40000) == 1.0


# --------------------------------------------------------------------------- text whose timing cannot be right

class _Seg:
    def __init__(self, text):
        self.text = text


def _al(t0, t1, n):
    return Aligned(t0, t1, (AlignedWord(t0, t1, " w", 0.9),) * n)


def test_sentences_squeezed_into_no_time_and_a_sentence_said_twice_over_the_same_audio_are_dropped_as_text():
    segs = [_Seg("Keep an eye on the chart at the bottom of the window."),
            _Seg("Keep an eye on the chart at the bottom of the window."),  # again, over the same audio
            _Seg("Let me scroll down a little so you can see the details."),  # squeezed to 0 s at a window end
            _Seg("Okay."),
            _Seg("Keep an eye on the chart at the bottom of the window.")]  # said again later: kept
    aligned = [_al(82.8, 85.3, 11), _al(83.2, 85.3, 11), _al(85.8, 85.8, 11), _al(86.0, 86.1, 1),
               _al(120.0, 122.5, 11)]
    dropped = []
    bad = segments_rules._impossible(segs, aligned, lambda s, a, b, reason: dropped.append(reason))
    assert bad == {1, 2}
    assert dropped[0] == "the same text twice over the same audio"
    assert dropped[1].startswith("impossible timing (11 words in 0.0 s)")


def _entry(text: str, no_speech_p: float, probs: list[float]) -> segments_coverage.Entry:
    return segments_coverage.Entry(Segment(0, 1000, text, -0.3, no_speech_p),
                                   tuple(Word(i, 0, 10, "w", p) for i, p in enumerate(probs)), ())


def test_a_recovered_word_whisper_itself_thinks_was_no_speech_is_not_kept():
    # measured: "Yeah." written over a filler in mfa_cold_corpus (no-speech 0.90, word 0.04): an inserted word
    reason = segments_coverage._unsure_recovery(_entry("Yeah.", 0.90, [0.04]))
    assert reason is not None and "no-speech probability 0.90" in reason and "word probability 0.04" in reason


def test_recovered_speech_read_clearly_is_kept_even_where_whisper_doubted_speech():
    assert segments_coverage._unsure_recovery(_entry("the quiet second speaker said this", 0.7, [0.9, 0.8, 0.7, 0.9, 0.95, 0.6])) is None
    assert segments_coverage._unsure_recovery(_entry("mumbled words", 0.2, [0.1, 0.2])) is None  # Whisper heard speech: kept
    # a whole sentence is kept however unsure (a recovered scene introduction of a narration: no-speech 0.88)
    assert segments_coverage._unsure_recovery(_entry("Scene 13, now we look at the bottom of the window.", 0.88, [0.3] * 10)) is None


def test_a_span_decoded_again_stops_at_what_its_length_can_hold_and_fits_whispers_448_tokens():
    assert segments_coverage._cover_tokens(16000 * 2, None) == 2 * segments_coverage.COVER_TOKENS_PER_S + segments_coverage.COVER_TOKENS_MIN  # 2 s: 40 tokens
    assert segments_coverage._cover_tokens(16000 * 31, None) == segments_coverage.COVER_TOKENS_MAX  # a 31-s span: capped
    assert segments_coverage.COVER_TOKENS_MAX + 1 + (448 // 2 - 1) + 4 <= 448  # sot_prev + previous text + sot sequence + cap
    assert segments_coverage._cover_tokens(16000 * 2, "Kubernetes, Grafana") is None  # hotwords share the prompt: no cap


def test_a_segment_written_twice_over_the_same_time_goes_and_real_repeats_stay():
    """As on a generated screencast: a window wrote the window before's last two sentences again, and the
    alignment put them where the next window wrote them (across its two long segments)."""
    from talkthrough_assets.stages.segments.rules import written_twice

    segs = [(555200, 560800, "plan in meeting, notice how the miles settle after a few seconds. Let me scroll down "
                             "a little"),
            (557400, 562100, "Let me scroll down a little so you can see the details."),
            (560800, 565000, "so you can see the details. The number on the right are from this morning."),
            (563300, 565200, "The number on the right are from this morning.")]
    assert written_twice(segs) == {1, 3}
    # the same sentence said again later, or the same words over another time, or a short one: all kept
    assert written_twice([(0, 3000, "Let me scroll down a little."), (30000, 33000, "Let me scroll down a little.")]) \
        == set()
    assert written_twice([(0, 3000, "Can you hear me?"), (2900, 6000, "Can you hear me? Good.")]) == set()
    assert written_twice([(0, 3000, "Yes, yes."), (1000, 4000, "Yes, yes, we did.")]) == set()

"""Words Whisper wrote where no turn is (stages/turns/word_voices.py), the pure part: which words have no turn
under them, how they join into stretches, and the voice floor under which they stay without a speaker
(voices given here as vectors). tests/integration/test_word_voices.py runs it with the real CAM++ model."""

from __future__ import annotations

import numpy as np

from talkthrough_assets.model.transcript import Word
from talkthrough_assets.model.turns import Turn
from talkthrough_assets.stages.turns import word_voices as WV


def T(t0, t1, s):
    return Turn(t0, t1, s)


def W(t0, t1, seq=0, word=" w"):
    return Word(idx=0, t0_ms=t0, t1_ms=t1, word=word, prob=0.9, seq=seq)


def _unit(v):
    v = np.asarray(v, dtype=np.float64)
    return v / np.linalg.norm(v)


class TestUncoveredRuns:
    def test_words_under_a_turn_are_not_runs(self):
        assert WV.uncovered_runs([W(1000, 1400), W(1400, 1900)], [T(900, 2000, "S1")]) == []

    def test_a_word_half_covered_or_more_has_a_turn(self):
        assert WV.uncovered_runs([W(1000, 2000)], [T(1500, 3000, "S1")]) == []
        assert WV.uncovered_runs([W(1000, 2000)], [T(1600, 3000, "S1")]) == [(1000, 2000, 1)]

    def test_close_words_of_one_segment_are_one_stretch(self):
        words = [W(5000, 5300), W(5400, 5800), W(5900, 6200), W(7000, 7300)]
        assert WV.uncovered_runs(words, [T(0, 1000, "S1")]) == [(5000, 6200, 3), (7000, 7300, 1)]

    def test_a_new_segment_starts_a_new_stretch(self):
        words = [W(5000, 5300, seq=1), W(5350, 5800, seq=2)]
        assert WV.uncovered_runs(words, []) == [(5000, 5300, 1), (5350, 5800, 1)]

    def test_a_covered_word_between_breaks_the_stretch(self):
        words = [W(5000, 5300), W(5300, 5600), W(5600, 5900)]
        assert WV.uncovered_runs(words, [T(5250, 5650, "S1")]) == [(5000, 5300, 1), (5600, 5900, 1)]

    def test_a_long_word_counts_as_its_last_part(self):
        # Whisper stretches a word over silence before it: only its end is taken as its sound
        assert WV.uncovered_runs([W(0, 6000)], []) == [(6000 - WV.MAX_WORD_MS, 6000, 1)]


class TestGiveRuns:
    voices = {"S1": _unit([1, 0, 0]), "S2": _unit([0, 1, 0])}

    def test_a_stretch_goes_to_the_most_alike_voice_above_the_floor(self):
        turns = [T(0, 2000, "S1"), T(3000, 5000, "S2")]
        out, given, left = WV.give_runs(turns, [(8000, 9000, 3)], self.voices, lambda a, b: _unit([0.3, 1, 0.1]))
        assert (given, left) == (3, 0)
        assert T(8000, 9000, "S2") in out and len(out) == 3

    def test_under_the_floor_the_words_stay_unassigned_and_are_counted(self):
        turns = [T(0, 2000, "S1")]
        out, given, left = WV.give_runs(turns, [(8000, 9000, 4)], self.voices, lambda a, b: _unit([1, 1, 3]),
                                        floor=0.6)
        assert (given, left) == (0, 4)
        assert out == turns

    def test_no_voice_no_guess(self):
        out, given, left = WV.give_runs([T(0, 2000, "S1")], [(8000, 9000, 2)], self.voices, lambda a, b: None)
        assert (given, left) == (0, 2)

    def test_a_stretch_next_to_its_speakers_turn_joins_it(self):
        out, given, _ = WV.give_runs([T(0, 2000, "S1")], [(2200, 3000, 2)], self.voices, lambda a, b: _unit([1, 0, 0]))
        assert given == 2 and out == [T(0, 3000, "S1")]

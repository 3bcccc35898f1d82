"""Diarization refinement, the pure part (stages/turns/refine.py): splitting a label that holds two voices
(window embeddings given here as vectors) and giving VAD speech the segmentation missed to the nearest
speaker. tests/integration/test_diarize_refine.py runs it with the real models on AMI excerpts."""

from __future__ import annotations

import numpy as np

from talkthrough_assets.model.turns import Turn
from talkthrough_assets.stages.turns import refine as R


def T(t0, t1, s):
    return Turn(t0, t1, s)


def _voice(seed: int, n: int, spread: float = 0.3) -> np.ndarray:
    """n unit vectors around one random direction (one 'voice')."""
    rng = np.random.default_rng(seed)
    base = rng.normal(size=192)
    x = base[None, :] + spread * np.linalg.norm(base) / np.sqrt(192) * rng.normal(size=(n, 192))
    return x / np.linalg.norm(x, axis=1, keepdims=True)


class TestSplit:
    def test_one_label_with_two_voices_is_split_where_the_second_voice_talks(self):
        turns = [T(0, 10000, "S1"), T(10500, 20000, "S1")]
        wins = R.windows_of(turns, 20000)
        assert wins and {lab for _, lab in wins} == {"S1"}
        starts = np.array([s for s, _ in wins])
        second = starts >= 10000
        vec = np.where(second[:, None], _voice(2, len(wins)), _voice(1, len(wins)))
        out, notes = R.split_labels(turns, wins, vec, 20000)
        assert {t.speaker for t in out} == {"S1", "S2"}
        s2 = [t for t in out if t.speaker == "S2"]
        assert min(t.t0_ms for t in s2) >= 9000 and max(t.t1_ms for t in s2) == 20000
        assert sum(t.t1_ms - t.t0_ms for t in s2) >= 9000
        assert notes and notes[0].startswith("S2 split from S1 (two voices in one label, similarity ")

    def test_one_voice_is_not_split(self):
        turns = [T(0, 20000, "S1")]
        wins = R.windows_of(turns, 20000)
        out, notes = R.split_labels(turns, wins, _voice(3, len(wins)), 20000)
        assert out == turns and notes == []

    def test_a_given_count_limits_the_splits(self):
        turns = [T(0, 20000, "S1")]
        wins = R.windows_of(turns, 20000)
        vec = np.concatenate([_voice(1, len(wins) // 2), _voice(2, len(wins) - len(wins) // 2)])
        assert R.split_labels(turns, wins, vec, 20000, limit=0) == (turns, [])
        out, _ = R.split_labels(turns, wins, vec, 20000, limit=1)
        assert {t.speaker for t in out} == {"S1", "S2"}

    def test_too_few_windows_of_the_other_voice_is_no_split(self):
        turns = [T(0, 20000, "S1")]
        wins = R.windows_of(turns, 20000)
        vec = _voice(1, len(wins))
        vec[-(R.SPLIT_MIN_WINDOWS - 1):] = _voice(2, R.SPLIT_MIN_WINDOWS - 1)
        assert R.split_labels(turns, wins, vec, 20000) == (turns, [])

    def test_windows_where_two_labels_overlap_belong_to_neither(self):
        turns = [T(0, 3000, "S1"), T(0, 3000, "S2"), T(3000, 6000, "S2")]
        wins = R.windows_of(turns, 6000)
        assert all(lab == "S2" and start >= 2250 for start, lab in wins)

    def test_two_means_of_one_point_repeated_collapses(self):
        assert R.two_means(np.tile(_voice(1, 1), (5, 1))) is None


class TestFill:
    def test_gap_speech_goes_to_the_nearest_turn_and_far_speech_to_nobody(self):
        turns = [T(0, 1000, "S1"), T(3000, 4000, "S2")]
        out, added = R.fill_gaps(turns, [(1000, 3000), (8000, 9000)], 10000)
        assert out == [T(0, 2000, "S1"), T(2000, 4000, "S2")]
        assert added == 2000

    def test_nothing_to_fill(self):
        turns = [T(0, 1000, "S1")]
        assert R.fill_gaps(turns, [(200, 800)], 2000) == (turns, 0)
        assert R.fill_gaps([], [(0, 1000)], 2000) == ([], 0)

    def test_speech_spans_from_vad_frames(self):
        probs = [0.0, 0.05, 0.2, 0.9, 0.05, 0.5]
        assert R.speech_spans(probs, threshold=0.1) == [(64, 128), (160, 192)]


class TestOverlap:
    def test_a_second_voice_the_count_hears_is_the_nearest_other_speaker(self):
        turns = [T(0, 2000, "S1"), T(2000, 4000, "S2"), T(9000, 9500, "S3")]
        counts = np.ones(400)
        counts[150:200] = 1.6  # the last half second of S1: someone else talks too
        counts[300:350] = 1.2  # under the threshold: nothing
        out, added = R.add_overlap(turns, counts)
        assert out == [T(0, 2000, "S1"), T(1500, 4000, "S2"), T(9000, 9500, "S3")]
        assert added == 500

    def test_no_other_speaker_near_enough_or_only_one_label(self):
        turns = [T(0, 1000, "S1"), T(5000, 6000, "S2")]
        counts = np.full(600, 2.0)
        out, added = R.add_overlap(turns, counts, max_gap_ms=2000)
        assert (out, added) == (turns, 0)
        assert R.add_overlap([T(0, 1000, "S1")], counts) == ([T(0, 1000, "S1")], 0)


class TestReassign:
    def test_a_window_whose_voice_is_another_labels_moves_to_that_label(self):
        # S1 talks 0-12 s, S2 12-24 s; the clustering gave S1 the stretch 4.5-7.5 s, where S2's voice is heard
        turns = [T(0, 12000, "S1"), T(12000, 24000, "S2")]
        wins = R.windows_of(turns, 24000)
        starts = np.array([s for s, _ in wins])
        s2_voice = (starts >= 12000) | ((starts >= 4500) & (starts + R.WINDOW_MS <= 7500))
        vec = np.where(s2_voice[:, None], _voice(2, len(wins)), _voice(1, len(wins)))
        out, moved = R.reassign_windows(turns, wins, vec, 24000)
        assert moved == int(((starts >= 4500) & (starts + R.WINDOW_MS <= 7500)).sum()) == 3
        # the middle half of each moved window goes to S2; S1 keeps its own voice before and after
        assert out == [T(0, 4870, "S1"), T(4870, 7120, "S2"), T(7120, 12000, "S1"), T(12000, 24000, "S2")]

    def test_labels_of_consistent_voices_are_left_alone(self):
        turns = [T(0, 12000, "S1"), T(12000, 24000, "S2")]
        wins = R.windows_of(turns, 24000)
        starts = np.array([s for s, _ in wins])
        vec = np.where((starts >= 12000)[:, None], _voice(2, len(wins)), _voice(1, len(wins)))
        assert R.reassign_windows(turns, wins, vec, 24000) == (turns, 0)

    def test_one_label_or_a_labels_only_window_is_not_moved(self):
        assert R.reassign_windows([T(0, 6000, "S1")], R.windows_of([T(0, 6000, "S1")], 6000),
                                  _voice(1, 7), 6000) == ([T(0, 6000, "S1")], 0)
        turns = [T(0, 1500, "S1"), T(1500, 9000, "S2")]
        wins = R.windows_of(turns, 9000)
        assert [lab for _, lab in wins].count("S1") == 1
        vec = _voice(2, len(wins))  # S1's single window sounds like S2: no other S1 window to compare with
        assert R.reassign_windows(turns, wins, vec, 9000) == (turns, 0)


class TestSegmentationCounts:
    def test_expected_count_of_powerset_probabilities(self):
        probs = np.array([[1, 0, 0, 0, 0, 0, 0], [0, 0.5, 0.5, 0, 0, 0, 0], [0, 0, 0, 0, 0.5, 0.5, 0],
                          [0.2, 0.4, 0, 0, 0.4, 0, 0]], dtype=float)
        assert np.allclose(R.expected_count(probs), [0.0, 1.0, 2.0, 1.2])


class TestOverlapByVoice:
    def test_the_second_speaker_is_the_nearby_label_whose_voice_is_heard(self):
        # S1 talks 0-3 s, S2 3-5 s, S3 5-8 s; the count hears two voices at 3.5-4.5 s. By time, S1 and S3
        # are both near; the stretch's voice is S3's, so S3 is added, not the nearest-in-time S1
        turns = [T(0, 3000, "S1"), T(3000, 5000, "S2"), T(5000, 8000, "S3")]
        counts = np.ones(800)
        counts[350:450] = 1.8
        v = _voice(7, 3)
        voices = {"S1": v[0], "S2": v[1], "S3": v[2]}
        asked = []

        def voice_of(t0, t1):
            asked.append((t0, t1))
            return v[2]

        out, added = R.add_overlap(turns, counts, voices=voices, voice_of=voice_of)
        assert asked == [(3500, 4500)] and added == 1000
        assert out == [T(0, 3000, "S1"), T(3000, 5000, "S2"), T(3500, 8000, "S3")]
        by_time, _ = R.add_overlap(turns, counts)  # by time: each frame's nearest, S1 for the first half
        assert by_time == [T(0, 3000, "S1"), T(3000, 5000, "S2"), T(3500, 4000, "S1"), T(4000, 8000, "S3")]

    def test_where_the_chosen_voice_already_talks_nothing_is_added(self):
        # two voices heard at 2.5-3.5 s, across the change from S1 to S2; the stretch sounds like S2: S2 is
        # added where S1 talks (2.5-3 s), and nothing where S2 already talks
        turns = [T(0, 3000, "S1"), T(3000, 5000, "S2"), T(5000, 6000, "S3")]
        counts = np.ones(600)
        counts[250:350] = 1.8
        v = _voice(8, 3)
        out, added = R.add_overlap(turns, counts, voices={"S1": v[0], "S2": v[1], "S3": v[2]},
                                   voice_of=lambda a, b: v[1])
        assert added == 500
        assert out == [T(0, 3000, "S1"), T(2500, 5000, "S2"), T(5000, 6000, "S3")]


class TestReassignUntilStable:
    def test_a_window_that_one_pass_leaves_moves_once_its_labels_mean_voice_is_clean(self):
        # S1 0-12 s and S2 12-24 s; inside "S1", 3-6 s is clearly S2's voice and 7.5-9.75 s halfway between the
        # two, a little nearer S2. The first pass compares that stretch with S1's mean, still pulled towards S2
        # by the clear windows, and leaves it; once those have moved, S1's mean is its own voice and it moves.
        from talkthrough_assets.stages.turns.reassign_passes import reassign_until_stable

        turns = [T(0, 12000, "S1"), T(12000, 24000, "S2")]
        wins = R.windows_of(turns, 24000)
        x, y = np.eye(192)[0], np.eye(192)[1]
        between = (0.45 * x + 0.55 * y) / np.linalg.norm(0.45 * x + 0.55 * y)
        vec = np.array([y if s >= 12000 or s in (3000, 3750, 4500) else between if s in (7500, 8250) else x
                        for s, _ in wins])
        once = R.reassign_windows(turns, wins, vec, 24000)
        assert once == ([T(0, 3370, "S1"), T(3370, 5620, "S2"), T(5620, 12000, "S1"), T(12000, 24000, "S2")], 3)
        assert reassign_until_stable(turns, wins, vec, 24000, passes=1) == once
        out, moved = reassign_until_stable(turns, wins, vec, 24000)
        assert moved == 5
        assert out == [T(0, 3370, "S1"), T(3370, 5620, "S2"), T(5620, 7870, "S1"), T(7870, 9370, "S2"),
                       T(9370, 12000, "S1"), T(12000, 24000, "S2")]
        assert reassign_until_stable(turns, wins, vec, 24000, passes=8) == (out, moved)  # stops when nothing moves

    def test_consistent_labels_are_left_alone(self):
        from talkthrough_assets.stages.turns.reassign_passes import reassign_until_stable

        turns = [T(0, 12000, "S1"), T(12000, 24000, "S2")]
        wins = R.windows_of(turns, 24000)
        starts = np.array([s for s, _ in wins])
        vec = np.where((starts >= 12000)[:, None], _voice(2, len(wins)), _voice(1, len(wins)))
        assert reassign_until_stable(turns, wins, vec, 24000) == (turns, 0)
        assert reassign_until_stable([T(0, 6000, "S1")], R.windows_of([T(0, 6000, "S1")], 6000),
                                     _voice(1, 7), 6000) == ([T(0, 6000, "S1")], 0)

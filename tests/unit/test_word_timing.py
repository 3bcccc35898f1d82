"""Word timing refinement (stages.word_timing) on synthetic audio whose onsets are known exactly."""

import json

import numpy as np
import pytest

from talkthrough_assets.model.transcript import Word
from talkthrough_assets.stages.segments import word_timing as WT

pytestmark = pytest.mark.unit
SR = 16000


def _audio(bursts: list[tuple[float, float]], total_s: float = 4.0) -> np.ndarray:
    """Quiet noise with 220-Hz tone bursts at the given (start_s, end_s)."""
    rng = np.random.default_rng(0)
    x = rng.normal(0, 1e-4, int(total_s * SR)).astype(np.float32)
    for a, b in bursts:
        t = np.arange(int(a * SR), int(b * SR))
        x[t] += 0.3 * np.sin(2 * np.pi * 220 * t / SR)
    return x


def test_a_first_word_that_starts_in_the_silence_before_it_moves_to_the_onset():
    x = _audio([(0.5, 0.9)])
    out = WT.refine(x, [Word(idx=0, t0_ms=0, t1_ms=900, word=" Hello", prob=0.9, seq=0)], "base")
    assert abs(out[0].t0_ms - 500) <= 30, out
    assert abs(out[0].t1_ms - 900) <= 20, out  # a last word ends where its sound ends


def test_a_word_after_a_pause_that_starts_late_moves_back_but_not_into_the_previous_word():
    x = _audio([(0.2, 0.6), (1.0, 1.5)])
    words = [Word(idx=0, t0_ms=200, t1_ms=700, word=" one", prob=0.9, seq=0),
             Word(idx=1, t0_ms=1240, t1_ms=1500, word=" two", prob=0.9, seq=0)]
    out = WT.refine(x, words, "base")
    assert abs(out[1].t0_ms - 1000) <= 30, out
    assert out[1].t0_ms >= out[0].t1_ms


def test_touching_words_move_by_the_models_measured_offset_and_stay_ordered():
    x = _audio([(0.2, 1.6)])
    words = [Word(idx=i, t0_ms=200 + 300 * i, t1_ms=500 + 300 * i, word=f" w{i}", prob=0.9, seq=0)
             for i in range(4)]
    for label, lag in (("late-model", 80), ("early-model", -70)):  # + = late: moved earlier; - = moved later
        WT.LAG_MS[label] = lag
        try:
            out = WT.refine(x, words, label)
        finally:
            del WT.LAG_MS[label]
        assert [w.t0_ms for w in out[1:]] == [500 - lag, 800 - lag, 1100 - lag]
        assert [w.t1_ms for w in out[:3]] == [500 - lag, 800 - lag, 1100 - lag]
        assert all(b.t0_ms - a.t0_ms >= WT.MIN_WORD_MS for a, b in zip(out, out[1:]))
        assert all(w.t1_ms - w.t0_ms >= WT.MIN_WORD_MS for w in out)
    same = WT.refine(x, words, "some-unmeasured-model")  # offset 0: only the first word (after silence) moves
    assert same[1:3] == words[1:3] and abs(same[0].t0_ms - 200) <= 30
    assert same[3].t0_ms == 1100 and abs(same[3].t1_ms - 1600) <= 20  # the last one ends with the sound


def test_a_word_moved_later_keeps_its_minimum_length():
    x = _audio([(0.2, 1.0)])
    words = [Word(idx=0, t0_ms=200, t1_ms=500, word=" one", prob=0.9, seq=0),
             Word(idx=1, t0_ms=500, t1_ms=600, word=" two", prob=0.9, seq=0)]
    WT.LAG_MS["early-model"] = -300
    try:
        out = WT.refine(x, words, "early-model")
    finally:
        del WT.LAG_MS["early-model"]
    assert out[1].t0_ms == 600 - WT.MIN_WORD_MS and abs(out[1].t1_ms - 1000) <= 20  # ends with the sound
    assert out[0].t1_ms == out[1].t0_ms


def _model_folder(tmp_path, heads):
    (tmp_path / "config.json").write_text(json.dumps({"alignment_heads": heads, "suppress_ids": [1, 2]}))
    (tmp_path / "model.bin").write_bytes(b"weights")
    (tmp_path / "vocabulary.txt").write_text("a\nb\n")
    return tmp_path


def test_a_model_with_measured_heads_is_loaded_with_the_better_ones(tmp_path):
    entry = WT.ALIGNMENT_HEADS["tiny.en"]
    files = WT.model_files(str(_model_folder(tmp_path, entry["default"])))
    assert sorted(files) == ["config.json", "model.bin", "vocabulary.txt"]
    cfg = json.loads(files["config.json"])
    assert cfg["alignment_heads"] == entry["heads"] and cfg["suppress_ids"] == [1, 2]
    assert files["model.bin"] == b"weights"
    assert json.loads((tmp_path / "config.json").read_text())["alignment_heads"] == entry["default"]  # untouched


def test_other_models_load_as_they_are(tmp_path):
    assert WT.model_files(str(_model_folder(tmp_path, [[0, 1], [1, 1]]))) is None
    assert WT.model_files(str(tmp_path / "missing")) is None
    assert WT.model_files("tiny.en") is None  # a name, not a folder


def test_the_input_is_not_modified_and_empty_input_is_fine():
    x = _audio([(0.5, 0.9)])
    words = [Word(idx=0, t0_ms=0, t1_ms=900, word=" Hello", prob=0.9, seq=0)]
    WT.refine(x, words, "tiny.en")
    assert words[0].t0_ms == 0
    assert WT.refine(x, [], "tiny.en") == []


def test_counted_words_with_short_pauses_start_at_their_own_onsets():
    """'one, two, three' with 0.2 s between the words: the alignment makes each word start where the one before
    it ends (in the pause); the start moves onto the word's own onset and the word before ends at the pause."""
    bursts = [(0.3, 0.6), (0.8, 1.1), (1.3, 1.6), (1.8, 2.1)]
    x = _audio(bursts)
    words = [Word(idx=0, t0_ms=300, t1_ms=560, word=" one", prob=0.9, seq=0),
             Word(idx=1, t0_ms=560, t1_ms=1020, word=" two", prob=0.9, seq=0),
             Word(idx=2, t0_ms=1020, t1_ms=1560, word=" three", prob=0.9, seq=0),
             Word(idx=3, t0_ms=1560, t1_ms=2100, word=" four", prob=0.9, seq=0)]
    out = WT.refine(x, words, "tiny.en")
    for w, (a, _) in zip(out[1:], bursts[1:]):
        assert abs(w.t0_ms - a * 1000) <= 30, out
    for prev, w in zip(out, out[1:]):
        assert prev.t1_ms <= w.t0_ms, out


def test_a_word_after_a_pause_does_not_start_in_the_loud_tail_of_the_word_before():
    """The aligned end of the word before is early: the onset search reaches back over its tail, and the onset
    is the one after the pause."""
    x = _audio([(0.3, 0.7), (0.9, 1.3)])
    words = [Word(idx=0, t0_ms=300, t1_ms=500, word=" seven", prob=0.9, seq=0),
             Word(idx=1, t0_ms=560, t1_ms=1300, word=" three", prob=0.9, seq=0)]
    out = WT.refine(x, words, "tiny.en")
    assert abs(out[1].t0_ms - 900) <= 30, out


def test_true_runs_are_the_runs_of_true_in_order_with_their_ends():
    import numpy as np

    from talkthrough_assets.stages.segments.word_timing import true_runs

    assert true_runs(np.array([True, True, False, True, False, False, True])) == [(0, 2), (3, 4), (6, 7)]
    assert true_runs(np.array([False, False])) == [] and true_runs(np.array([], dtype=bool)) == []


def test_a_last_word_stretched_over_the_silence_after_it_ends_where_its_sound_ends():
    """The alignment put a sentence's last word 0.3-3.5 s (2.6 s past its end, into silence); the segment's
    next word starts at 3.6 s."""
    x = _audio([(0.2, 0.6), (3.6, 4.0)], total_s=5.0)
    words = [Word(idx=0, t0_ms=300, t1_ms=3500, word=" end.", prob=0.9, seq=0),
             Word(idx=0, t0_ms=3600, t1_ms=4000, word=" next", prob=0.9, seq=1)]
    out = WT.refine(x, words, "some-unmeasured-model")
    assert abs(out[0].t1_ms - 600) <= 20, out
    assert abs(out[1].t1_ms - 4000) <= 20, out


def test_a_last_word_that_ends_early_is_extended_to_its_sound_but_never_past_the_next_word():
    x = _audio([(0.2, 1.2)], total_s=3.0)
    words = [Word(idx=0, t0_ms=200, t1_ms=800, word=" long", prob=0.9, seq=0),
             Word(idx=0, t0_ms=1000, t1_ms=1200, word=" next", prob=0.9, seq=1)]
    out = WT.refine(x, words, "some-unmeasured-model")
    assert out[0].t1_ms <= out[1].t0_ms, out
    alone = WT.refine(x, words[:1], "some-unmeasured-model")
    assert abs(alone[0].t1_ms - 1200) <= 20, alone


def test_a_last_word_never_ends_before_its_start_and_a_word_without_sound_keeps_its_end():
    x = _audio([(0.2, 0.21)], total_s=2.0)
    out = WT.refine(x, [Word(idx=0, t0_ms=195, t1_ms=900, word=" a", prob=0.9, seq=0)], "some-unmeasured-model")
    assert out[0].t1_ms >= out[0].t0_ms + WT.MIN_WORD_MS
    silent = _audio([], total_s=2.0)
    w = [Word(idx=0, t0_ms=500, t1_ms=900, word=" a", prob=0.9, seq=0)]
    assert WT.refine(silent, w, "some-unmeasured-model")[0].t1_ms == 900

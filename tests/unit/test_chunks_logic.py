"""stages/segments/chunks.py without a model: where a cut goes, the stored format's checksum, the key chain, assembly
and the coverage text."""

from __future__ import annotations

import numpy as np
import pytest

from talkthrough_assets.stages.segments import chunks as C


def test_the_cut_goes_in_the_middle_of_the_longest_silence():
    p = np.full(100, 0.9, dtype=np.float32)
    p[10:14] = 0.02  # short pause
    p[60:80] = 0.05  # long pause
    assert C.quietest(p) == 70
    no_silence = np.full(100, 0.9, dtype=np.float32)
    no_silence[30:40] = 0.4  # no silent window at all: the quietest smoothed stretch
    assert 30 <= C.quietest(no_silence) < 40


def test_a_stored_result_round_trips_and_any_damage_is_detected():
    res = {"meta": {"model": "tiny.en"}, "segments": [{"seq": 0, "t0_ms": 0, "t1_ms": 900, "text": "héllo"}],
           "words": [], "dropped": [], "tail": [1, 2, 3]}
    blob = C.encode(res)
    assert C.decode_blob(blob) == res
    for bad in (blob[:-1], blob[:30], b"", blob.replace(b"TTCHUNK1", b"TTCHUNK2"),
                blob[:-3] + bytes([blob[-3] ^ 1]) + blob[-2:]):
        with pytest.raises(C.CorruptChunk):
            C.decode_blob(bad)
    # a payload that decompresses but is not what the checksum names
    import zlib

    head = blob[:len(C.MAGIC) + 65]
    with pytest.raises(C.CorruptChunk, match="checksum"):
        C.decode_blob(head + zlib.compress(b'{"segments": []}'))


def test_keys_chain_so_a_chunk_names_the_audio_before_it():
    rng = np.random.default_rng(0)
    a = rng.standard_normal(16000 * 3).astype(np.float32)
    bounds = [(0, 16000), (16000, 32000), (32000, 48000)]
    keys = C.chain_keys(a, bounds, "fp")
    assert len(set(keys)) == 3 and all(len(k) == 64 for k in keys)
    assert C.chain_keys(a, bounds, "fp") == keys  # deterministic
    assert C.chain_keys(a, bounds, "other settings") != keys
    b = a.copy()
    b[20000] += 0.5  # a change in the second chunk changes its key and every later one, not the first
    kb = C.chain_keys(b, bounds, "fp")
    assert kb[0] == keys[0] and kb[1] != keys[1] and kb[2] != keys[2]
    longer = np.concatenate([a, rng.standard_normal(16000).astype(np.float32)])  # same start, longer
    assert C.chain_keys(longer, bounds[:2] + [(32000, 64000)], "fp")[:2] == keys[:2]


def test_assembly_shifts_times_renumbers_and_skips_a_failed_chunk():
    def res(text, t0, t1, words):
        return {"meta": {"language": "en", "language_probability": 1.0, "reason": None},
                "segments": [{"seq": 0, "t0_ms": t0, "t1_ms": t1, "text": text, "avg_logprob": -0.1,
                              "no_speech_prob": 0.0}],
                "words": [{"seq": 0, "idx": i, "t0_ms": t0 + 100 * i, "t1_ms": t0 + 100 * i + 90, "word": w,
                           "prob": 0.9} for i, w in enumerate(words)],
                "dropped": [{"t0_ms": 10, "t1_ms": 20, "reason": "repetition", "text": "x x x", "lang": None}]}

    rows = [{"idx": 0, "t0_ms": 0, "t1_ms": 5000}, {"idx": 1, "t0_ms": 5000, "t1_ms": 9000},
            {"idx": 2, "t0_ms": 9000, "t1_ms": 12000}]
    out = C.assemble([res("one two", 100, 900, ["one", "two"]), None, res("three", 50, 500, ["three"])], rows,
                     model_label="tiny.en", audio_ms=12000)
    assert [(s["seq"], s["t0_ms"], s["text"]) for s in out["segments"]] == [(0, 100, "one two"), (1, 9050, "three")]
    assert [(w["seq"], w["t0_ms"], w["word"]) for w in out["words"]] == [(0, 100, "one"), (0, 200, "two"),
                                                                         (1, 9050, "three")]
    m = out["meta"]
    assert (m["segment_count"], m["word_count"], m["dropped_count"], m["language"]) == (2, 3, 2, "en")
    assert '"t0_ms": 9010' in m["dropped"] and "lang" not in m["dropped"]


def test_coverage_text_merges_adjacent_covered_chunks():
    rows = [{"t0_ms": a * 60000, "t1_ms": (a + 1) * 60000} for a in range(5)]
    assert C.covered_text(rows, [True, True, False, True, True]) == "4 of 5 chunks, 0:00-2:00, 3:00-5:00"
    assert C.covered_text(rows, [False] * 5) == "0 of 5 chunks"
    long = [{"t0_ms": 0, "t1_ms": 4_000_000}]
    assert C.covered_text(long, [True]) == "1 of 1 chunks, 0:00-1:06:40"


def _seg(t0, text):
    return {"t0_ms": t0, "t1_ms": t0 + 500, "text": text}


def test_loop_run_is_the_longest_run_of_one_kept_text():
    out = {"segments": [_seg(0, "Okay."), _seg(1, "okay"), _seg(2, "OKAY!"), _seg(3, "Right."), _seg(4, "Okay.")],
           "dropped": [_seg(5, "Okay.")] * 10}
    assert C.loop_run(out) == 3  # case and punctuation aside; dropped segments do not count
    assert C.loop_run({"segments": [], "dropped": []}) == 0
    assert C.loop_run({"segments": [_seg(0, "No."), _seg(1, "No, no."), _seg(2, "No.")], "dropped": []}) == 1

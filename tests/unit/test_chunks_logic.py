"""stages/segments/chunks.py without a model: where a cut goes, the stored format's checksum, the key chain, assembly
and the coverage text."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from talkthrough_assets.model.transcript import Chunk, Decoded, Evidence, Segment, Span, Word
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


def _res(text, t0, t1, words):
    return Decoded(model="tiny.en", audio_ms=5000, language="en", language_probability=1.0,
                   segments=(Segment(t0, t1, text, -0.1, 0.0, seq=0),),
                   words=tuple(Word(i, t0 + 100 * i, t0 + 100 * i + 90, w, 0.9, seq=0) for i, w in enumerate(words)),
                   dropped=(Span(10, 20, "repetition", "x x x", words=3),))


def test_assembly_shifts_times_renumbers_and_skips_a_failed_chunk():
    rows = [Chunk(0, 0, 5000), Chunk(1, 5000, 9000), Chunk(2, 9000, 12000)]
    out = C.assemble([_res("one two", 100, 900, ["one", "two"]), None, _res("three", 50, 500, ["three"])], rows,
                     model_label="tiny.en", audio_ms=12000)
    assert [(s.seq, s.t0_ms, s.text) for s in out.segments] == [(0, 100, "one two"), (1, 9050, "three")]
    assert [(w.seq, w.t0_ms, w.word) for w in out.words] == [(0, 100, "one"), (0, 200, "two"), (1, 9050, "three")]
    m = out.meta
    assert (m.segment_count, m.word_count, m.dropped_count, m.language, m.audio_ms) == (2, 3, 2, "en", 12000)
    assert [d.t0_ms for d in m.dropped] == [10, 9010] and m.dropped_words == 6


def test_a_chunk_result_round_trips_through_its_stored_form_and_an_older_one_reads():
    res = replace(_res("héllo there", 0, 900, ["héllo", "there"]), tail=(1, 2, 3), recontext=True,
                  doubtful=(Span(0, 900, "kept: spoken language is de", "héllo there", "de",
                                 evidence=Evidence(p=0.9, p_en=0.01, speech_s=1.2, word_p=0.85)),),
                  uncovered=(Span(1000, 2500, "decoded again: no words"),), core_ms=((0, 2500),), speech_ms=2500,
                  english_only=True)
    assert C.unpack(C.pack(res)) == res
    # the layout stored before the records (CHUNK_FORMAT 4): the same keys, "lang": None on a dropped one
    older = {"meta": {"available": True, "reason": None, "language": "en", "language_probability": 1.0,
                      "model": "tiny.en", "segment_count": 1, "word_count": 1, "audio_ms": 5000, "elapsed_s": 0.5,
                      "dropped_count": 1, "dropped": "[]"},
             "segments": [{"seq": 0, "t0_ms": 0, "t1_ms": 900, "text": "hi", "avg_logprob": -0.1,
                           "no_speech_prob": 0.0}],
             "words": [{"seq": 0, "idx": 0, "t0_ms": 0, "t1_ms": 900, "word": " hi", "prob": 0.9}],
             "dropped": [{"t0_ms": 10, "t1_ms": 20, "reason": "repetition", "text": "x x x", "lang": None, "words": 3}],
             "doubtful": [], "uncovered": [], "speech_ms": 900, "core_ms": [[0, 900]], "english_only": True,
             "tail": [7, 8]}
    got = C.unpack(C.encode(older))
    assert got.segments == (Segment(0, 900, "hi", -0.1, 0.0),) and got.words[0].word == " hi"
    assert got.dropped == (Span(10, 20, "repetition", "x x x", words=3),) and got.tail == (7, 8)
    assert got.core_ms == ((0, 900),) and got.elapsed_s == 0.5 and not got.recontext
    with pytest.raises(C.CorruptChunk):
        C.unpack(C.encode({"meta": {}, "segments": [{"text": "no times"}], "words": []}))


def test_coverage_text_merges_adjacent_covered_chunks():
    rows = [Chunk(a, a * 60000, (a + 1) * 60000) for a in range(5)]
    assert C.covered_text(rows, [True, True, False, True, True]) == "4 of 5 chunks, 0:00-2:00, 3:00-5:00"
    assert C.covered_text(rows, [False] * 5) == "0 of 5 chunks"
    long = [Chunk(0, 0, 4_000_000)]
    assert C.covered_text(long, [True]) == "1 of 1 chunks, 0:00-1:06:40"


def _seg(t0, text):
    return Segment(t0, t0 + 500, text, -0.1, 0.0)


def _out(segments):
    return Decoded(model=None, audio_ms=0, segments=tuple(segments), dropped=(Span(5, 6, "x", "Okay."),) * 10)


def test_loop_run_is_the_longest_run_of_one_kept_text():
    out = _out([_seg(0, "Okay."), _seg(1, "okay"), _seg(2, "OKAY!"), _seg(3, "Right."), _seg(4, "Okay.")])
    assert C.loop_run(out) == 3  # case and punctuation aside; dropped segments do not count
    assert C.loop_run(_out([])) == 0
    assert C.loop_run(_out([_seg(0, "No."), _seg(1, "No, no."), _seg(2, "No.")])) == 1

"""Segment ends on narrated media (flite sentences placed with known silences, bench/synthetic.py): a segment
ends where its last word's sound ends, not seconds into the silence after it (a screencast's sentence was stored
5.7 s past its end) nor before it. Real faster-whisper (bundled tiny.en) through the segments stage's decode
(chunks.transcribe); scored as bench/bench_word_timing.py --segment-ends scores it."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from talkthrough_assets.stages import audio
from talkthrough_assets.stages.segments import chunks

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "bench"))

import bench_word_timing  # noqa: E402  (end_errors_ms, errors_ms, sentence_refs: the benchmark's scoring)
import synthetic  # noqa: E402


@pytest.mark.parametrize("clip_id", ["narration_kal_gap6", "narration_slt"])
def test_segments_end_where_the_speech_ends(tmp_path, clip_id):
    if subprocess.run(["which", "flite"], capture_output=True).returncode:
        pytest.skip("flite is not installed (apt-get install flite)")
    (clip,) = [c for c in synthetic.clips(tmp_path, kind="narration") if c.id == clip_id]
    ref = bench_word_timing.sentence_refs(synthetic.spans(clip))
    out = chunks.transcribe(audio.load_wav(clip.audio)).transcript
    for s in out.segments:  # a segment ends with its last word
        ws = [w for w in out.words if w.seq == s.seq]
        assert not ws or s.t1_ms == ws[-1].t1_ms, (s, ws[-1])
    ends = [(s.t1_ms / 1000, [w.word for w in out.words if w.seq == s.seq]) for s in out.segments]
    errs = np.array(bench_word_timing.end_errors_ms(ref, ends))
    assert len(errs) >= 5, ends
    assert np.median(np.abs(errs)) <= 100 and errs.max() <= 500 and errs.min() >= -500, errs.round()
    starts = np.abs(bench_word_timing.errors_ms(ref, [(w.t0_ms / 1000, w.word) for w in out.words]))
    assert np.median(starts) <= 100, starts.round()  # the sentences' first words: starts unharmed

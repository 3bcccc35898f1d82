"""Whisper's encoder on every core, its beam search on the decoder's threads (``adapter._SplitModel``): real tiny.en
on a fixture, the model the segments stage gets (``Engine.of``), the words the same to the letter and the
millisecond as with the encoder on the decoder's own thread."""

from __future__ import annotations

import os

import numpy as np
import pytest

from talkthrough_assets.stages.segments import chunks
from talkthrough_assets.stages.segments import engine as E
from talkthrough_assets.stages.segments.adapter import _SplitModel
from talkthrough_assets.stages.segments.options import Options


@pytest.fixture(scope="module")
def samples(fixture_samples):
    return fixture_samples("meeting_audio.m4a")


def test_the_stage_engine_encodes_on_every_core(monkeypatch):
    monkeypatch.delenv("TALKTHROUGH_WHISPER_THREADS", raising=False)
    eng = E.Engine.of(Options(), E.Whisper())
    assert eng.encoder == E.encoder_threads() == min(os.cpu_count() or 1, E.ENCODER_MAX_THREADS)
    model = eng.model()
    if eng.encoder > eng.threads:  # one core: nothing to split
        assert isinstance(model.model, _SplitModel)
    # the user's thread count is honoured for the encoder too
    assert E.Engine.of(Options(threads=1), E.Whisper()).encoder is None


def test_words_are_the_same_with_the_encoder_on_two_threads(samples):
    ref, label = E.Engine.of(Options()).model_ref, E.Engine.of(Options()).model_label
    one = E.Engine(E.Whisper(), ref, label, threads=1)
    split = E.Engine(E.Whisper(), ref, label, threads=1, encoder=2)
    assert not isinstance(one.model().model, _SplitModel) and isinstance(split.model().model, _SplitModel)
    assert split.model().model.wait(60)  # its twin loaded

    feats = one.model().feature_extractor(samples[: 30 * 16000])[:, :3000][None].astype(np.float32)
    a, b = (np.array(e.model().encode(feats)) for e in (one, split))
    assert a.shape == b.shape and np.array_equal(a, b)  # the same to the bit

    got = [chunks.transcribe(samples, None, e).transcript for e in (one, split)]
    words = [[(w.t0_ms, w.t1_ms, w.word, w.prob) for w in t.words] for t in got]
    assert len(words[0]) > 20 and words[0] == words[1]
    assert [(s.t0_ms, s.t1_ms, s.text) for s in got[0].segments] == [(s.t0_ms, s.t1_ms, s.text)
                                                                      for s in got[1].segments]


def test_a_large_model_or_one_given_in_memory_gets_no_second_copy(tmp_path, monkeypatch):
    loads = []

    def load(ref, **kw):
        loads.append((ref, kw["encoder_threads"]))
        return object()

    monkeypatch.setattr(E.word_timing, "model_files", lambda ref: None)
    small, large = tmp_path / "small", tmp_path / "large"
    for folder, size in ((small, 1000), (large, E.ENCODER_TWIN_MAX_BYTES + 1)):
        folder.mkdir()
        with open(folder / "model.bin", "wb") as f:
            f.truncate(size)
    w = E.Whisper(max_models=4, load=load)
    w.model(str(small), 1, encoder=2)
    w.model(str(large), 1, encoder=2)
    w.model(str(small), 2, encoder=2)  # no more threads than the decoder's: no copy
    w.model("in-memory", 1, files=lambda: {"model.bin": b"x"}, encoder=2)
    assert loads == [(str(small), 2), (str(large), None), (str(small), None), ("in-memory", None)]
    assert E.encoder_threads("cuda") is None and E.encoder_threads("cpu", override=3) is None


def test_a_short_clip_never_loads_the_second_copy(samples):
    from talkthrough_assets.stages.segments.adapter import TWIN_AFTER

    ref, label = E.Engine.of(Options()).model_ref, E.Engine.of(Options()).model_label
    model = E.Engine(E.Whisper(), ref, label, threads=1, encoder=2).model()
    feats = model.feature_extractor(samples[: 30 * 16000])[:, :3000][None].astype(np.float32)
    first = np.array(model.encode(feats))
    for _ in range(TWIN_AFTER - 1):
        model.encode(feats)
    assert model.model._loader is None  # 2 min of audio encoded on the decoder's thread, nothing more loaded
    model.encode(feats)
    assert model.model.wait(60)  # the next window started the twin's load
    assert np.array_equal(np.array(model.encode(feats)), first)

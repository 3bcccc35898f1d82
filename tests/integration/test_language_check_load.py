"""The language check's multilingual model loads while the chunks decode (``engine.load_checker_soon``), with real
tiny.en and the real base model: in a thread of its own for an English-only model's non-silent audio, never for
a silent recording."""

from __future__ import annotations

import threading
import time

import numpy as np
import pytest

from talkthrough_assets.stages.segments import chunks
from talkthrough_assets.stages.segments import engine as E
from talkthrough_assets.stages.segments.options import Options
from talkthrough_assets.store.models import BASE_IN_MEMORY, base_model_installed


def _base_loaded(w: E.Whisper) -> bool:
    return any(k[0] == BASE_IN_MEMORY and f.done() and f.exception() is None for k, f in w._models.items())


@pytest.fixture(scope="module")
def samples(fixture_samples):
    return fixture_samples("two_voices.m4a")


def test_the_check_model_loads_beside_the_decode_and_the_check_uses_it(samples):
    assert base_model_installed()  # a dependency of the package
    opts = Options()
    eng = E.Engine.of(opts, E.Whisper())
    E.load_checker_soon(samples, opts.decoding.language_check, eng)
    loader = next(t for t in threading.enumerate() if t.name == "language-check-load")
    loader.join(120)
    assert _base_loaded(eng.whisper)
    # English-only, known from the model's folder (its vocabulary): the check's model loaded without waiting for it
    assert E.english_only(eng.model_ref) is True and [k[0] for k in eng.whisper._models] == [BASE_IN_MEMORY]
    checker = eng.whisper._models[next(iter(eng.whisper._models))]
    out = chunks.transcribe(samples, opts, eng).transcript  # the recording's language judged on that model
    assert out.meta.language == "en" and len(out.words) > 20
    # the decode added its own model; the check's was not loaded twice
    assert sorted(k[0] for k in eng.whisper._models) == sorted([BASE_IN_MEMORY, eng.model_ref])
    assert next(f for k, f in eng.whisper._models.items() if k[0] == BASE_IN_MEMORY) is checker


def test_a_silent_recording_loads_no_check_model():
    opts = Options()
    eng = E.Engine.of(opts, E.Whisper())
    before = {t.ident for t in threading.enumerate() if t.name == "language-check-load"}
    E.load_checker_soon(np.zeros(16000 * 20, np.float32), opts.decoding.language_check, eng)
    time.sleep(0.2)
    assert {t.ident for t in threading.enumerate() if t.name == "language-check-load"} == before
    assert not _base_loaded(eng.whisper)

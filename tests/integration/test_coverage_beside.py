"""The coverage pass beside the main pass, with real faster-whisper (bundled tiny.en): a chunk's coverage pass
decoded on the model's second copy in the worker thread gives what it gives in the caller's thread on the first
copy, a context it changes has the next chunk's main pass decoded again, and a recording in chunks comes out the
same with its coverage passes beside the main passes or after them. The speech Whisper skips is made here by taking
one segment out of the main pass (the fixtures have none it skips); the decodes after that are the stage's own."""

from __future__ import annotations

import tempfile
from dataclasses import replace
from pathlib import Path

import pytest
from fixture_facts import MEETING_PATH, TWO_VOICES_PATH

from talkthrough_assets.stages import audio
from talkthrough_assets.stages.segments import chunk_decode, chunks
from talkthrough_assets.stages.segments.engine import Engine, Whisper
from talkthrough_assets.stages.segments.options import Options


def _samples(path: Path):
    with tempfile.TemporaryDirectory() as d:
        audio.extract_wav(path, Path(d) / "a.wav")
        return audio.load_wav(Path(d) / "a.wav")


def _skipping(samples, opts: Options, engine: Engine, which: int):
    """The main pass of ``samples`` with its kept segment ``which`` taken out, as if Whisper had jumped over it."""
    d = chunk_decode.draft(samples, opts, engine)
    gone = sorted(d.res.entries, key=lambda e: e.seg.t0_ms)[which]
    d.res.entries[:] = [e for e in d.res.entries if e is not gone]
    return d, gone


@pytest.mark.parametrize("which", [0, -1])
def test_the_coverage_pass_on_the_second_copy_beside_finds_what_it_finds_inline(which):
    samples, opts = _samples(MEETING_PATH), Options()
    whisper = Whisper()
    engine = Engine.of(opts, whisper)
    d, gone = _skipping(samples, opts, engine, which)
    guessed, sure = chunk_decode.guess(d, None, opts)
    assert not sure  # the speech decoded again is within the context the chunk hands on
    inline = chunk_decode.settled(d, None, samples, None, opts, engine=engine)
    d2, _ = _skipping(samples, opts, engine, which)
    with chunk_decode.Beside(engine, concurrent=True) as beside:
        beside_out = beside.start(chunk_decode.settled, d2, None, samples, None, opts).result()
    assert any(k[4] == 1 for k in whisper._models)  # decoded on the second copy
    assert replace(beside_out, elapsed_s=0) == replace(inline, elapsed_s=0)
    said = " ".join(s.text for s in inline.segments).lower()
    assert gone.seg.text.lower().split()[0].strip(",.") in said  # the skipped speech was decoded again
    assert inline.tail != guessed  # what it found is in the context the chunk hands on (under PROMPT_TOKENS here)


def test_a_main_pass_that_leaves_no_speech_uncovered_hands_on_a_sure_context():
    samples, opts = _samples(MEETING_PATH), Options()
    d = chunk_decode.draft(samples, opts, Engine.of(opts, Whisper()))
    guessed, sure = chunk_decode.guess(d, [50257, 400], opts)
    assert sure and guessed[:2] == (50257, 400) and len(guessed) > 2


@pytest.mark.parametrize("skip", [False, True])
def test_a_recording_in_chunks_is_the_same_with_its_coverage_passes_beside_or_after(skip, monkeypatch):
    """``skip``: the first chunk's main pass loses its first segment (its coverage pass then changes the context
    it hands on: the second chunk waits for it)."""
    samples, opts = _samples(TWO_VOICES_PATH), Options(chunk_s=10.0)
    engine = Engine.of(opts, Whisper())
    real = chunk_decode.draft

    def draft(part, *a, **kw):
        d = real(part, *a, **kw)
        if skip and part is not None and len(part) and part[:1600].tobytes() == samples[:1600].tobytes():
            first = min(d.res.entries, key=lambda e: e.seg.t0_ms)
            d.res.entries.remove(first)
        return d

    monkeypatch.setattr(chunk_decode, "draft", draft)
    after = chunks.transcribe(samples, opts, engine, concurrent=False)
    beside = chunks.transcribe(samples, opts, engine, concurrent=True)
    assert len(after.rows) > 1 and after.report.decoded == beside.report.decoded == len(after.rows)
    assert after.report.redrafted == beside.report.redrafted == 0
    assert beside.transcript.segments == after.transcript.segments and beside.transcript.words == after.transcript.words
    assert replace(beside.transcript.meta, elapsed_s=0) == replace(after.transcript.meta, elapsed_s=0)

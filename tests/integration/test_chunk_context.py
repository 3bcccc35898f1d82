"""A chunk's context (the previous chunk's last tokens, its prompt) must not carry a loop into the chunks after it.

The case (tests/data/make_loop_case.py): 30 s of the 30-min bench meeting and the context its chunk was given
when the loop was found, ending in 27 "Okay." that tiny.en wrote over the silence at the previous chunk's end.
With that context, Whisper writes "Okay." over every sentence, and each chunk handed the loop on: the last five
chunks of the meeting were nothing but "Okay." (chunked WER 46.5 % vs 8.1 % whole). Real faster-whisper.

Since the loop guard (engine's WhisperAdapter: a window that loops after a prompt is decoded again without it), this case no longer loops
at all; the chunk-level safety net below is tested with the guard off (``Decoding(loop_retry=False)``)."""

import json
import re
from dataclasses import replace
from pathlib import Path

import pytest

from talkthrough_assets.stages import audio
from talkthrough_assets.stages.segments import chunks
from talkthrough_assets.stages.segments import transcribe
from talkthrough_assets.stages.segments.engine import Engine, Whisper
from talkthrough_assets.stages.segments.options import Decoding, Options

DATA = Path(__file__).resolve().parent.parent / "data"


@pytest.fixture(scope="module")
def case(tmp_path_factory):
    wav = tmp_path_factory.mktemp("loop") / "loop.wav"
    audio.extract_wav(DATA / "loop_context.m4a", wav)
    opts = Options(decoding=Decoding(loop_retry=False))
    engine = replace(Engine.of(opts, Whisper()), threads=2)
    return audio.load_wav(wav), json.loads((DATA / "loop_context.json").read_text())["prompt"], opts, engine


def _words(texts) -> str:
    return re.sub(r"[^a-z0-9 ]+", "", " ".join(texts).lower())


def test_the_case_is_a_loop_with_that_context(case):
    samples, prompt, opts, engine = case
    out = transcribe.decode(samples, opts, engine, prompt=prompt)
    assert chunks.loop_run(out) >= chunks.LOOP_RUN, [s.text for s in out.segments]


def test_a_chunk_in_a_loop_is_decoded_again_without_its_context(case):
    samples, prompt, opts, engine = case
    out = chunks._decode_chunk(samples, opts, engine, prompt=prompt)
    assert out.recontext is True
    assert chunks.loop_run(out) < chunks.LOOP_RUN
    said = _words(s.text for s in out.segments)
    for phrase in ("incident on monday", "checkout service", "version 41", "release plan for version 42"):
        assert phrase in said, said
    tokenizer = engine.model().hf_tokenizer
    tail = tokenizer.decode([t for t in out.tail if t < 50257])
    assert "okay" not in tail.lower() and "version 42" in tail, tail  # the next chunk's context is the new text


def test_the_context_handed_on_holds_only_the_segments_kept(case):
    samples, prompt, opts, engine = case
    out = transcribe.decode(samples, opts, engine, prompt=prompt)
    assert out.dropped, "the case has segments the VAD gate drops"
    handed = engine.model().hf_tokenizer.decode([t for t in out.tokens if t < 50257])
    assert _words([handed]).split() == _words(s.text for s in out.segments).split()


def test_the_window_guard_alone_keeps_the_case_out_of_its_loop(case):
    samples, prompt, opts, engine = case
    guarded = replace(opts, decoding=Decoding(loop_retry=True))
    out = chunks._decode_chunk(samples, guarded, engine, prompt=prompt)
    assert not out.recontext and chunks.loop_run(out) < chunks.LOOP_RUN

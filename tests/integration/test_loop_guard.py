"""A 30-s window whose text loops after a prompt of earlier text is decoded again without it (adapter.WhisperAdapter).

On the 10-min bench screencast one window wrote "bye, bye, bye, ..." and, as the next window's prompt, the loop ran
to the end of its 3-min chunk: the coverage pass then decoded that speech again span by span (WER 16.5 % vs 8.8 %
with the guard, 50.4 vs 35.3 s of CPU; bench/bench_asr.py --long --only screencast --configs pipeline,noretry).
Here the fixture narration is decoded after a prompt that is such a loop. Real faster-whisper, tiny.en."""

from dataclasses import replace

from talkthrough_assets.stages import audio
from talkthrough_assets.stages.segments import transcribe
from talkthrough_assets.stages.segments.engine import Engine
from talkthrough_assets.stages.segments.options import Decoding, Options
from fixture_facts import FIXTURES_DIR


def test_a_looping_prompt_does_not_cost_the_window_its_words(tmp_path):
    wav = tmp_path / "a.wav"
    audio.extract_wav(FIXTURES_DIR / "screencast.mp4", wav)
    samples = audio.load_wav(wav)
    opts = Options(decoding=Decoding(coverage=False))
    engine = replace(Engine.of(opts), threads=1)
    loop = engine.model().hf_tokenizer.encode(" bye," * 80).ids[:200]

    guarded = transcribe.decode(samples, opts, engine, prompt=loop)
    text = " ".join(s.text for s in guarded.segments).lower()
    for said in ("deploy pipeline", "gateway returns an error", "previous version is restored",
                 "latency is back to normal"):
        assert said in text, text
    assert "bye" not in text

    # without the guard the loop is all Whisper writes: what the guard is for
    unguarded = transcribe.decode(samples, replace(opts, decoding=Decoding(coverage=False, loop_retry=False)), engine,
                                  prompt=loop)
    assert len(unguarded.words) < len(guarded.words) // 4
    # the guard is the model's own override, set for one decode: no method of the shared model is replaced
    model = engine.model()
    assert "generate_with_fallback" not in vars(model) and "encode" not in vars(model)

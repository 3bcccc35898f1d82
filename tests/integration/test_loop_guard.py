"""A 30-s window whose text loops after a prompt of earlier text is decoded again without it (rules.LoopGuard).

On the 10-min bench screencast one window wrote "bye, bye, bye, ..." and, as the next window's prompt, the loop ran
to the end of its 3-min chunk: the coverage pass then decoded that speech again span by span (WER 16.5 % vs 8.8 %
with the guard, 50.4 vs 35.3 s of CPU; bench/bench_asr.py --long --only screencast --configs pipeline,noretry).
Here the fixture narration is decoded after a prompt that is such a loop. Real faster-whisper, tiny.en."""

from talkthrough_assets.stages import audio
from talkthrough_assets.stages.segments import transcribe
from talkthrough_assets.stages.segments import engine as segments_engine
from talkthrough_assets.store.models import resolve_whisper
from fixture_facts import FIXTURES_DIR


def test_a_looping_prompt_does_not_cost_the_window_its_words(tmp_path):
    wav = tmp_path / "a.wav"
    audio.extract_wav(FIXTURES_DIR / "screencast.mp4", wav)
    samples = audio.load_wav(wav)
    ref, label = resolve_whisper(None)
    whisper = segments_engine.default_whisper()
    loop = whisper.model(ref, 1).hf_tokenizer.encode(" bye," * 80).ids[:200]
    kw = dict(model_ref=ref, model_label=label, threads=1, whisper=whisper, prompt=loop, coverage=False)

    guarded = transcribe.decode(samples, **kw)
    text = " ".join(s["text"] for s in guarded["segments"]).lower()
    for said in ("deploy pipeline", "gateway returns an error", "previous version is restored",
                 "latency is back to normal"):
        assert said in text, text
    assert "bye" not in text

    # without the guard the loop is all Whisper writes: what the guard is for
    unguarded = transcribe.decode(samples, loop_retry=False, **kw)
    assert len(unguarded["words"]) < len(guarded["words"]) // 4

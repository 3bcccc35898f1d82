#!/usr/bin/env python3
"""Where the segments stage's CPU goes, against bare faster-whisper's decoder on the same audio (issue #33 item 2).

    python bench/bench_segments_profile.py [FILE] [--threads 1] [--seconds S] [--no-bare] [--json]

FILE: default the 10-min screencast of bench/make_long_media.py. Its audio (PyAV, 16 kHz mono) is decoded the way
the segments stage decodes it (``chunks.transcribe``: the same chunks, prompts, drop rules, coverage pass and word
timing, nothing stored), on one warm tiny.en with ``--threads`` CPU threads (1: what the stage gets while the visual
branch runs beside it). Each part's CPU seconds are measured by wrapping the functions that do it (process CPU time,
exclusive: a part inside another is counted once, in the inner part):

  encoder / decoder        faster-whisper's WhisperModel.encode / generate_with_fallback (the decode itself), split
                           into the main pass and the coverage pass's re-decodes of uncovered speech
  word alignment           WhisperModel.find_alignment (cross-attention DTW) and word_timing.refine
  VAD gate, chunk plan     Silero VAD over each chunk (rules.speech_regions) and around each cut (chunks.speech_probs)
  language check           the multilingual model's language detection on doubtful segments
  features                 the log-mel spectrogram (FeatureExtractor)
  the rest                 what none of the above covers (Python around the decoder, chunk keys, assembly)

Then bare faster-whisper with its defaults (beam 5, no VAD, temperature fallback, no word timestamps) on the same
audio with the same model and threads, with the same wrappers: its encoder + decoder CPU is the decoder cost the
stage is compared with. Printed: each part's CPU seconds and its share of the stage's decoder CPU (target: all
but the decoder <= 10 % of it), and the stage's total CPU against bare's.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections import defaultdict
from contextlib import contextmanager
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))


class Clock:
    """Exclusive process-CPU seconds per part (the decode runs in one Python thread; CTranslate2 computes in its
    own threads): a wrapped call's time minus that of the wrapped calls inside it."""

    def __init__(self):
        self.cpu = defaultdict(float)
        self.calls = defaultdict(int)
        self.stack: list[list] = []  # [part, start, child seconds]
        self.coverage = 0  # > 0 inside the coverage pass

    @contextmanager
    def part(self, name: str):
        if self.coverage and name in ("encoder", "decoder", "language check", "features", "word alignment"):
            name = f"{name} (coverage)"
        self.stack.append([name, time.process_time(), 0.0])
        try:
            yield
        finally:
            name, t0, child = self.stack.pop()
            spent = time.process_time() - t0
            self.cpu[name] += spent - child
            self.calls[name] += 1
            if self.stack:
                self.stack[-1][2] += spent

    def wrap(self, owner, attr: str, name: str, *, coverage: bool = False):
        fn = getattr(owner, attr)

        def wrapped(*a, **kw):
            if coverage:
                self.coverage += 1
            try:
                with self.part(name):
                    return fn(*a, **kw)
            finally:
                if coverage:
                    self.coverage -= 1

        setattr(owner, attr, wrapped)
        return fn


def instrument(clock: Clock) -> None:
    from faster_whisper import transcribe as fwt
    from faster_whisper.feature_extractor import FeatureExtractor

    from talkthrough_assets.stages.segments import chunks, coverage, engine, rules, transcribe, word_timing

    clock.wrap(fwt.WhisperModel, "encode", "encoder")
    clock.wrap(fwt.WhisperModel, "generate_with_fallback", "decoder")
    clock.wrap(fwt.WhisperModel, "find_alignment", "word alignment")
    clock.wrap(FeatureExtractor, "__call__", "features")
    clock.wrap(word_timing, "refine", "word alignment")
    for mod in (rules, transcribe):
        if hasattr(mod, "speech_regions"):
            clock.wrap(mod, "speech_regions", "VAD gate")
    clock.wrap(chunks, "speech_probs", "chunk plan")
    clock.wrap(coverage, "recover", "coverage pass (the rest)", coverage=True)
    transcribe.recover = coverage.recover
    make = engine.language_checker

    def language_checker(*a, **kw):
        check = make(*a, **kw)
        if check is None:
            return None

        def timed(*ca, **ckw):
            with clock.part("language check"):
                return check(*ca, **ckw)

        return timed

    engine.language_checker = language_checker


def load_audio(path: str, seconds: float | None):
    """The 16 kHz mono samples the segments stage hears: the audio stage's own extraction (s16 WAV), read back."""
    import tempfile

    import numpy as np

    from talkthrough_assets.stages import audio as audio_stage

    with tempfile.TemporaryDirectory() as d:
        wav = Path(d) / "a.wav"
        audio_stage.extract_wav(path, wav)
        x = audio_stage.load_wav(wav)
    return x[: int(seconds * 16000)] if seconds else x


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("file", nargs="?")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--seconds", type=float, help="only the first S seconds")
    ap.add_argument("--no-bare", action="store_true")
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args(argv)
    import os

    from talkthrough_assets.stages.segments import chunks, engine
    from talkthrough_assets.store.models import resolve_whisper

    if a.file is None:
        import make_long_media

        a.file = str(make_long_media.ensure_media(quiet=True)["screencast"])
    samples = load_audio(a.file, a.seconds)
    ref, label = resolve_whisper(None)
    whisper = engine.Whisper()
    whisper.warm(ref, a.threads)
    engine.warm_language_checker(whisper, a.threads)
    print(f"{Path(a.file).name}: {len(samples) / 16000:.0f} s of audio; tiny.en, {a.threads} thread(s); "
          f"load average {os.getloadavg()[0]:.1f}", flush=True)

    clock = Clock()
    instrument(clock)
    t, c = time.perf_counter(), time.process_time()
    out = chunks.transcribe(samples, None, engine.Engine(whisper, ref, label, a.threads)).transcript
    stage = {"wall_s": time.perf_counter() - t, "cpu_s": time.process_time() - c, "parts": dict(clock.cpu),
             "calls": dict(clock.calls), "words": len(out.words), "segments": len(out.segments)}

    bare = None
    if not a.no_bare:
        model = whisper.model(ref, a.threads)
        clock.cpu.clear()
        clock.calls.clear()
        t, c = time.perf_counter(), time.process_time()
        segs = list(model.transcribe(samples)[0])
        bare = {"wall_s": time.perf_counter() - t, "cpu_s": time.process_time() - c, "parts": dict(clock.cpu),
                "words": sum(len(s.text.split()) for s in segs), "segments": len(segs)}

    decoder = sum(v for k, v in stage["parts"].items() if k in ("encoder", "decoder"))
    rest = stage["cpu_s"] - sum(stage["parts"].values())
    print(f"\n{'part of the segments stage':<34}{'cpu s':>8}{'calls':>7}{'% of decoder':>14}")
    for k, v in sorted(stage["parts"].items(), key=lambda kv: -kv[1]):
        print(f"{k:<34}{v:>8.2f}{stage['calls'].get(k, 0):>7}{100 * v / decoder:>13.1f}%")
    print(f"{'the rest':<34}{rest:>8.2f}{'':>7}{100 * rest / decoder:>13.1f}%")
    around = stage["cpu_s"] - decoder
    print(f"\nstage: {stage['wall_s']:.1f} s wall, {stage['cpu_s']:.1f} s CPU, {stage['segments']} segments, "
          f"{stage['words']} words; main-pass decoder (encoder + decoder) {decoder:.1f} s; "
          f"all else {around:.1f} s = {100 * around / decoder:.1f} % of it (target <= 10 %)")
    if bare:
        bd = sum(v for k, v in bare["parts"].items() if k in ("encoder", "decoder"))
        print(f"bare faster-whisper (defaults, same model and threads): {bare['wall_s']:.1f} s wall, "
              f"{bare['cpu_s']:.1f} s CPU (encoder + decoder {bd:.1f} s), {bare['segments']} segments, "
              f"{bare['words']} words\nstage / bare: CPU {stage['cpu_s'] / bare['cpu_s']:.2f}, "
              f"wall {stage['wall_s'] / bare['wall_s']:.2f}")
    if a.json:
        print(json.dumps({"stage": stage, "bare": bare}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())

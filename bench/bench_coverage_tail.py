#!/usr/bin/env python3
"""The coverage pass with and without its rule for the silent tails of voice-activity regions, one run: the
segments stage's decode (``chunks.transcribe``, nothing stored) of the same audio both ways, in alternating order.

    python bench/bench_coverage_tail.py [--seeds 0,1,2,3,4] [--eval]

"before" decodes every uncovered span again, as before the rule (``coverage.heard`` answering yes to every span);
"after" is the stage as it is: a span where Silero never reaches the gate's threshold is left undecoded.
``--seeds``: screencast generations of bench/make_long_media.py (seed 0: the 10-min screencast's own audio),
scored as bench_long_variants.py scores them (WER, words, scene introductions) beside bare faster-whisper.
``--eval``: instead, every clip of bench_asr.py (the eval set, the synthetic non-English clips and the 30-min
meeting), with each clip's text compared both ways. CPU: this process's seconds of each decode.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "bench")]


def generations(seeds: list[int], whisper, ref: str, label: str, toggle) -> None:
    import make_long_media as ml
    from bench_long_variants import _screencast, _score
    from faster_whisper import WhisperModel

    from talkthrough_assets.stages.segments import chunks as C
    from talkthrough_assets.stages.segments import rules as R
    from talkthrough_assets.stages.segments.engine import Engine

    bare = WhisperModel(ref, device="cpu", compute_type="int8", cpu_threads=1)
    rows = []
    for seed in seeds:
        audio, said, voice = _screencast(ml) if seed == 0 else (
            *ml.narration_variant(seed, minutes=10), ml.VARIANT_VOICES[seed % len(ml.VARIANT_VOICES)])
        core = R.core_speech(R.speech_regions(audio))
        t = time.process_time()
        segs = list(bare.transcribe(audio, word_timestamps=True)[0])
        res = {"bare": {"s": time.process_time() - t, "dropped": 0,
                        "words": [(w.start, w.end, w.word) for s in segs for w in (s.words or [])],
                        "spans": [(int(s.start * 1000), int(s.end * 1000)) for s in segs]}}
        for k in (("before", "after") if seed % 2 == 0 else ("after", "before")):
            toggle(k)
            t = time.process_time()
            out = C.transcribe(audio, None, Engine(whisper, ref, label, 1)).transcript
            res[k] = {"s": time.process_time() - t, "dropped": out.meta.dropped_words,
                      "words": [(w.t0_ms / 1000, w.t1_ms / 1000, w.word) for w in out.words],
                      "spans": [(s.t0_ms, s.t1_ms) for s in out.segments]}
        rows += _score(seed, voice, said, core, {k: res[k] for k in ("bare", "before", "after")})
        print(f"       words the same both ways: {res['before']['words'] == res['after']['words']}", flush=True)
    print("\n== pooled (s: CPU seconds of the decodes)")
    for cfg in ("bare", "before", "after"):
        r = [x for x in rows if x["config"] == cfg]
        print(f"{cfg:7} WER {100 * sum(x['errors'] for x in r) / sum(x['ref_words'] for x in r):5.2f}%  words "
              f"{sum(x['words'] for x in r)}  intros {sum(x['intros'] for x in r)} (named {sum(x['named'] for x in r)})"
              f"  CPU {sum(x['s'] for x in r):.1f} s")


def eval_clips(whisper, ref: str, label: str, toggle) -> None:
    import bench_asr as B

    tot = {"before": [0, 0, 0, 0.0], "after": [0, 0, 0, 0.0]}
    differ = 0
    cl = [c for c in B.clips(None, True) if "screencast" not in c["name"]]
    for i, c in enumerate(cl):
        samples = B._decode(c["path"])
        out = {}
        for k in (("before", "after") if i % 2 == 0 else ("after", "before")):
            toggle(k)
            segs, _ = B.run_pipeline(samples, ref, label, k, whisper=whisper)
            s = B.score(c, segs)
            out[k] = " ".join(t for _, t in segs)
            tot[k][0] += s.get("errors", 0)
            tot[k][1] += s.get("ref_words", 0)
            tot[k][2] += s["invented"]
            tot[k][3] += B.CPU[k]
        differ += out["before"] != out["after"]
        print(f"{c['name'][:40]:40} {c['kind']:11} CPU before {tot['before'][3]:7.1f} after {tot['after'][3]:7.1f}"
              f"{'' if out['before'] == out['after'] else '  TEXT DIFFERS'}", flush=True)
    print(f"\n{len(cl)} clips, text different on {differ}")
    for k, v in tot.items():
        print(f"{k:7} WER {100 * v[0] / max(v[1], 1):.2f}% ({v[0]}/{v[1]} words)  invented {v[2]}  CPU {v[3]:.1f} s")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", default="0,1,2,3,4")
    ap.add_argument("--eval", action="store_true")
    a = ap.parse_args()
    from talkthrough_assets.stages.segments import coverage as CV
    from talkthrough_assets.stages.segments import engine as E
    from talkthrough_assets.store import models

    real = CV.heard

    def toggle(k: str) -> None:
        CV.heard = real if k == "after" else (lambda *_, **__: True)

    ref, label = models.resolve_whisper()
    whisper = E.Whisper()
    whisper.model(ref)
    E.warm_language_checker(whisper)
    print(f"{time.strftime('%Y-%m-%d %H:%M')}, {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f}; {label}")
    if a.eval:
        eval_clips(whisper, ref, label, toggle)
    else:
        generations([int(s) for s in a.seeds.split(",")], whisper, ref, label, toggle)
    print(f"load average at the end {os.getloadavg()[0]:.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

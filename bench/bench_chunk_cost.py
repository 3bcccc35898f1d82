#!/usr/bin/env python3
"""Chunked vs whole-file Whisper on one long recording, one warm model, same run (#19 "total time within 5 %").

    python bench/bench_chunk_cost.py [--media PATH] [--seconds N] [--threads 2]

Decodes the audio (default: the 30-min bench meeting from bench/make_long_media.py) once in the segments
stage's chunks (``chunks.transcribe_chunked``, nothing stored) and once whole (``transcribe.decode`` on the whole recording), the
pipeline's own settings, and prints wall and CPU seconds and their ratios (chunked / whole). Unlike
``bench_chunks.py --parts ab`` (alternating pairs on a cut) this covers the whole recording in one pass each.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from bench_asr import _decode as decode_16k  # noqa: E402  (the eval benches' 16-kHz mono decode)
from talkthrough_assets.store.models import resolve_whisper  # noqa: E402
from talkthrough_assets.stages.segments import chunks as C  # noqa: E402
from talkthrough_assets.stages.segments import engine as segments_engine  # noqa: E402
from talkthrough_assets.stages.segments import transcribe as T  # noqa: E402
from talkthrough_assets.stages.segments.engine import Engine  # noqa: E402
from talkthrough_assets.stages.segments.options import Options  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--media", default="/tmp/talkthrough-bench-media/meeting_30min.m4a")
    ap.add_argument("--seconds", type=float, default=0, help="only the first N seconds (0: all)")
    ap.add_argument("--threads", type=int, default=2)
    args = ap.parse_args()
    x = decode_16k(args.media)
    if args.seconds:
        x = x[:int(args.seconds * 16000)]
    ref, label = resolve_whisper(None)
    w = segments_engine.Whisper()
    w.model(ref, args.threads)  # loaded before either timing
    print(f"{len(x) / 16000:.0f} s of audio, tiny.en on {args.threads} threads, load average {os.getloadavg()[0]:.1f}")
    checks = {"n": 0, "cpu": 0.0}  # the language checks (multilingual base) each decode makes, and their CPU
    real_checker = segments_engine.language_checker

    def counting_checker(whisper, threads=None):
        check = real_checker(whisper, threads)
        if check is None:
            return None

        def counted(samples):
            c0 = time.process_time()
            try:
                return check(samples)
            finally:
                checks["n"] += 1
                checks["cpu"] += time.process_time() - c0
        return counted

    segments_engine.language_checker = counting_checker
    res = {}
    for name in ("chunked", "whole"):
        checks.update(n=0, cpu=0.0)
        t, c = time.perf_counter(), time.process_time()
        opts, engine = Options(), Engine(w, ref, label, args.threads)
        if name == "chunked":
            out = C.transcribe_chunked(x, opts, engine, fp="bench", load=lambda k: None,
                                       save=lambda k, b: None).transcript
        else:
            out = T.finish(T.decode(x, opts, engine))
        res[name] = (time.perf_counter() - t, time.process_time() - c, len(out.segments))
        print(f"{name:8s} wall {res[name][0]:7.1f} s  cpu {res[name][1]:7.1f} s  segments {res[name][2]}  "
              f"language checks {checks['n']} ({checks['cpu']:.1f} s CPU)")
    print(f"chunked / whole: wall {res['chunked'][0] / res['whole'][0]:.2f}x, cpu {res['chunked'][1] / res['whole'][1]:.2f}x "
          f"(load average {os.getloadavg()[0]:.1f})")


if __name__ == "__main__":
    main()

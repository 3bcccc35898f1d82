#!/usr/bin/env python3
"""Long narrated media, several seeds and voices: does the pipeline keep every spoken word bare faster-whisper
keeps, and does it cover the speech bare faster-whisper skips?

    python bench/bench_long_variants.py [--seeds 1,2,3,4,5] [--minutes 10] [--json FILE]
    python bench/bench_long_variants.py --screencast [--compute int8,float32]

Each seed is a screencast narration of bench/make_long_media.py (``narration_variant``: scene order and
lengths, pauses, speaking rate and espeak-ng voice vary with the seed), decoded in the same run by bare
faster-whisper with its defaults (same model, same threads) and by the segments stage's decoder as the
pipeline runs it (``chunks.transcribe_chunked``, nothing stored). Printed per seed and pooled: WER against the
script, words kept, words the drop rules removed, scene introductions transcribed (>= 80 % of an
introduction's words found in the words timed within its span +-1 s; "named": its "Scene N" heard there), and the speech (voice activity, the gate's
regions without their padding) that no segment covers, for both. ``--screencast``: the 10-min screencast of
bench/make_long_media.py instead (its AAC track as decoded from the mp4; generated when missing), seed 0 in the
table. ``--compute``: the pipeline once per compute type (TALKTHROUGH_COMPUTE_TYPE), named ``pipeline@TYPE``.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from bench_asr import edits, norm  # noqa: E402


def covered_share(words: list[tuple[float, float, str]], span: tuple[float, float], text: str) -> float:
    said = norm(text)
    heard = [t for a, b, w in words if b >= span[0] - 1 and a <= span[1] + 1 for t in norm(w)]
    pool = list(heard)
    hit = 0
    for w in said:
        if w in pool:
            pool.remove(w)
            hit += 1
    return hit / max(1, len(said))


def named(words: list[tuple[float, float, str]], intro: dict) -> bool:
    """An introduction's "Scene N" heard within its span +-1 s (however the rest of it was misheard)."""
    heard = [t for a, b, w in words if b >= intro["t0_s"] - 1 and a <= intro["t1_s"] + 1 for t in norm(w)]
    return any(x == "scene" and y == norm(str(intro["scene"]))[0] for x, y in zip(heard, heard[1:]))


def uncovered_s(core, spans_ms) -> float:
    from talkthrough_assets.stages.segments import coverage as segments_coverage

    slack = segments_coverage.COVER_SLACK_MS  # as the pipeline counts it: a segment covers its span +- this
    gaps = segments_coverage.uncovered(core, [((a - slack) * 16, (b + slack) * 16) for a, b in spans_ms],
                       int(segments_coverage.COVERAGE_MIN_S * 16000))
    return sum(b - a for a, b in gaps) / 16000


def _screencast(ml) -> tuple:
    """(16-kHz samples as decoded from the screencast's mp4, what is said where, its voice)."""
    from bench_asr import _decode

    said: list[dict] = []
    ml.screencast_narration(ml._scenes(), said)
    return _decode(ml.ensure_media(quiet=True)["screencast"]), said, "en-us"


def _decode_all(audio, bare, pipes: dict, whispers: dict, ref: str, label: str) -> dict:
    """{config: {"s", "words", "spans", "dropped"[, "dropped_list"]}}: bare faster-whisper, then the pipeline's
    decode once per compute type."""
    from dataclasses import asdict

    from talkthrough_assets.stages.segments import chunks as C
    from talkthrough_assets.stages.segments.engine import Engine
    from talkthrough_assets.stages.segments.options import Options

    res = {}
    t = time.perf_counter()
    segs, _ = bare.transcribe(audio, word_timestamps=True)
    segs = list(segs)
    res["bare"] = {"s": time.perf_counter() - t,
                   "words": [(w.start, w.end, w.word) for s in segs for w in (s.words or [])],
                   "spans": [(int(s.start * 1000), int(s.end * 1000)) for s in segs], "dropped": 0}
    for name, compute in pipes.items():
        t = time.perf_counter()
        out = C.transcribe(audio, Options(compute_type=compute), Engine(whispers[name], ref, label,
                                                                        compute=compute)).transcript
        res[name] = {"s": time.perf_counter() - t,
                     "words": [(w.t0_ms / 1000, w.t1_ms / 1000, w.word) for w in out.words],
                     "spans": [(s.t0_ms, s.t1_ms) for s in out.segments],
                     "dropped": out.meta.dropped_words, "dropped_list": [asdict(d) for d in out.meta.dropped]}
    return res


def _score(seed: int, voice: str, said: list[dict], core, res: dict) -> list[dict]:
    """One row per config of ``res`` (printed): WER, words kept and dropped, introductions, uncovered speech."""
    ref_words = [w for x in said for w in norm(x["text"])]
    intros = [x for x in said if x["intro"]]
    rows = []
    for cfg, r in res.items():
        hyp = [t for _, _, w in r["words"] for t in norm(w)]
        row = {"seed": seed, "voice": voice, "config": cfg, "ref_words": len(ref_words),
               "errors": edits(ref_words, hyp), "words": len(hyp), "dropped_words": r["dropped"],
               "intros": sum(covered_share(r["words"], (x["t0_s"], x["t1_s"]), x["text"]) >= 0.8 for x in intros),
               "named": sum(named(r["words"], x) for x in intros), "intros_total": len(intros), "uncovered_s": round(uncovered_s(core, r["spans"]), 1),
               "speech_s": round(sum(b - a for a, b in core) / 16000, 1), "s": round(r["s"], 1)}
        rows.append(row)
        print(f"{seed:4d} {voice:15} {cfg:16} {100 * row['errors'] / row['ref_words']:5.1f}% {row['words']:6d} "
              f"{row['dropped_words']:8d} {row['intros']:3d}/{row['intros_total']:<3d} "
              f"{row['uncovered_s']:11.1f} {row['s']:6.1f}  named {row['named']}/{row['intros_total']}", flush=True)
        if cfg != "bare":
            missed = [x["scene"] for x in intros
                      if covered_share(r["words"], (x["t0_s"], x["t1_s"]), x["text"]) < 0.8]
            print(f"       intros not transcribed: scenes {missed or 'none'}")
    return rows


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seeds", default="1,2,3,4,5")
    ap.add_argument("--minutes", type=float, default=10.0)
    ap.add_argument("--json")
    ap.add_argument("--screencast", action="store_true", help="the 10-min screencast instead of the seeds")
    ap.add_argument("--compute", default="", help="compute types of the pipeline (default: its own)")
    ap.add_argument("--dump", help="append each seed's words (bare, pipeline) and script here (JSON lines)")
    args = ap.parse_args()
    import make_long_media as ml
    from faster_whisper import WhisperModel

    from talkthrough_assets.store import models
    from talkthrough_assets.stages.segments import engine as E
    from talkthrough_assets.stages.segments import engine as segments_engine
    from talkthrough_assets.stages.segments import rules as segments_rules

    ref, label = models.resolve_whisper()
    bare = WhisperModel(ref, device="cpu", compute_type="int8", cpu_threads=segments_engine.cpu_threads())
    pipes = {f"pipeline@{c}" if c else "pipeline": c or None for c in args.compute.split(",")}
    whispers = {name: segments_engine.Whisper() for name in pipes}
    for name, compute in pipes.items():  # loaded before timing, as bare's is
        whispers[name].model(ref, compute=compute)
        E.warm_language_checker(whispers[name], compute=compute)
    rows = []
    print(f"model {label}; {args.minutes:g}-min narrations; load average {os.getloadavg()[0]:.1f}")
    print(f"{'seed':>4} {'voice':15} {'config':16} {'WER':>6} {'words':>6} {'dropped':>8} {'intros':>7} "
          f"{'uncovered s':>11} {'s':>6}")
    for seed in [0] if args.screencast else [int(x) for x in args.seeds.split(",")]:
        audio, said, voice = _screencast(ml) if args.screencast else (
            *ml.narration_variant(seed, minutes=args.minutes), ml.VARIANT_VOICES[seed % len(ml.VARIANT_VOICES)])
        core = segments_rules.core_speech(segments_rules.speech_regions(audio))
        res = _decode_all(audio, bare, pipes, whispers, ref, label)
        rows += _score(seed, voice, said, core, res)
        if args.dump:
            with open(args.dump, "a") as f:
                f.write(json.dumps({"seed": seed, "said": said, "bare": res["bare"]["words"],
                                    "pipeline": res[next(iter(pipes))]["words"]}) + "\n")
        for name, d in ((name, d) for name in pipes for d in res[name]["dropped_list"]):
            print(f"       {name} dropped {d['t0_ms'] / 1000:.1f}-{d['t1_ms'] / 1000:.1f} s: {d['reason'][:110]} "
                  f"| {d['text'][:60]!r}")
    print("\n== pooled")
    for cfg in ("bare", *pipes):
        r = [x for x in rows if x["config"] == cfg]
        print(f"{cfg:8} WER {100 * sum(x['errors'] for x in r) / sum(x['ref_words'] for x in r):5.2f}%  words "
              f"{sum(x['words'] for x in r)}  dropped {sum(x['dropped_words'] for x in r)}  intros "
              f"{sum(x['intros'] for x in r)}/{sum(x['intros_total'] for x in r)} (named {sum(x['named'] for x in r)})  "
              f"uncovered "
              f"{sum(x['uncovered_s'] for x in r):.1f} s of {sum(x['speech_s'] for x in r):.1f} s  "
              f"{sum(x['s'] for x in r):.0f} s")
    fewer = [x["seed"] for x in rows if x["config"] != "bare"
             and x["words"] < next(y["words"] for y in rows if y["config"] == "bare" and y["seed"] == x["seed"])]
    print(f"seeds where the pipeline kept fewer words than bare: {fewer or 'none'}")
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

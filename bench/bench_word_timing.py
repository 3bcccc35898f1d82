#!/usr/bin/env python3
"""Word timing: how far the transcript's word starts are from reference word starts, for bare faster-whisper
(``transcribe(word_timestamps=True)`` with its defaults) and the pipeline's segments stage, same model, same
run.

    python bench/bench_word_timing.py [--model tiny.en|base] [--json FILE]

Configs: ``bare``; ``unrefined`` (the segments stage without its word-timing step); ``pipeline`` (the
segments stage as it runs: :mod:`talkthrough_assets.stages.word_timing` applied).

References (bench/eval/word_times.json, with their sources):
  * ``deepspeech_LDC93S1.wav``: LDC's free TIMIT sample, i.e. TIMIT TRAIN/DR1/FCJF0/SA1 (same 46 797
    samples); word boundaries from TIMIT's hand-labelled ``SA1.WRD``.
  * ``leopard_test_librispeech-1272-128104-0000.wav``: LibriSpeech dev-clean 1272-128104-0000; word
    boundaries from the Montreal Forced Aligner alignments of LibriSpeech (CorentinJ/librispeech-alignments).

A hypothesis word is matched to a reference word by a word-level alignment of the normalised texts; only
exact matches are scored. Prints per-clip and pooled median / p90 / max absolute start error (ms) and the
mean signed error (positive = late). Target (#23): p90 < 100 ms.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))
SHARED = ROOT.parent / "shared" / "eval" / "media"

from bench_asr import _decode, norm  # noqa: E402


def align(ref: list[str], hyp: list[str]) -> list[tuple[int, int]]:
    """Index pairs (i, j) with ref[i] == hyp[j] on a minimum-edit alignment."""
    n, m = len(ref), len(hyp)
    d = [[0] * (m + 1) for _ in range(n + 1)]
    for i in range(n + 1):
        d[i][0] = i
    for j in range(m + 1):
        d[0][j] = j
    for i in range(1, n + 1):
        for j in range(1, m + 1):
            d[i][j] = min(d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + (ref[i - 1] != hyp[j - 1]))
    pairs, i, j = [], n, m
    while i > 0 and j > 0:
        if ref[i - 1] == hyp[j - 1] and d[i][j] == d[i - 1][j - 1]:
            pairs.append((i - 1, j - 1))
            i, j = i - 1, j - 1
        elif d[i][j] == d[i - 1][j - 1] + 1:
            i, j = i - 1, j - 1
        elif d[i][j] == d[i - 1][j] + 1:
            i -= 1
        else:
            j -= 1
    return pairs[::-1]


def hyp_words(words: list[tuple[float, str]]) -> tuple[list[str], list[float]]:
    """Normalise each hypothesis word (a word may normalise to 0..n tokens; all share its start)."""
    toks, starts = [], []
    for t0, w in words:
        for tok in norm(w):
            toks.append(tok)
            starts.append(t0)
    return toks, starts


def errors_ms(ref: list[dict], words: list[tuple[float, str]]) -> list[float]:
    rtoks = [norm(r["word"])[0] for r in ref]
    htoks, hstarts = hyp_words(words)
    return [1000 * (hstarts[j] - ref[i]["start_s"]) for i, j in align(rtoks, htoks)]


def stats(errs: list[float]) -> dict:
    import numpy as np

    if not errs:
        return {"n": 0}
    a = np.abs(np.array(errs))
    return {"n": len(errs), "median_ms": round(float(np.median(a))), "p90_ms": round(float(np.percentile(a, 90))),
            "max_ms": round(float(a.max())), "mean_signed_ms": round(float(np.mean(errs)))}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--json")
    ap.add_argument("--model", help="whisper model (default: the pipeline's)")
    args = ap.parse_args()
    from faster_whisper import WhisperModel

    from talkthrough_assets import models
    from talkthrough_assets.stages import transcribe as T

    refs = json.loads((ROOT / "bench" / "eval" / "word_times.json").read_text())["clips"]
    ref_model, label = models.resolve_whisper(args.model)
    bare = WhisperModel(ref_model, device="cpu", compute_type="int8", cpu_threads=T.cpu_threads())
    from talkthrough_assets.stages import word_timing

    pooled: dict[str, list[float]] = {"bare": [], "unrefined": [], "pipeline": []}
    out = {"model": label, "clips": []}
    print(f"model {label}")
    print(f"{'clip':46} {'config':9} {'n':>3} {'median':>7} {'p90':>6} {'max':>6} {'signed':>7}")
    for clip in refs:
        samples = _decode(SHARED / clip["file"])
        segs, _ = bare.transcribe(samples, word_timestamps=True)
        got = {"bare": [(w.start, w.word) for s in segs for w in (s.words or [])]}
        res = T.transcribe(samples, model_ref=ref_model, model_label=label, refine_words=False)
        got["unrefined"] = [(w["t0_ms"] / 1000, w["word"]) for w in res["words"]]
        got["pipeline"] = [(w["t0_ms"] / 1000, w["word"]) for w in word_timing.refine(samples, res["words"], label)]
        row = {"clip": clip["file"], "reference": clip["reference"]}
        for c, words in got.items():
            e = errors_ms(clip["words"], words)
            pooled[c] += e
            row[c] = stats(e)
            s = row[c]
            print(f"{clip['file'][:46]:46} {c:9} {s['n']:>3} {s.get('median_ms', '-'):>7} {s.get('p90_ms', '-'):>6} "
                  f"{s.get('max_ms', '-'):>6} {s.get('mean_signed_ms', '-'):>7}")
        out["clips"].append(row)
    print("\n== pooled (absolute start error, ms)")
    for c, e in pooled.items():
        s = stats(e)
        out[c] = s
        print(f"  {c:9} n={s['n']} median {s['median_ms']} p90 {s['p90_ms']} max {s['max_ms']} "
              f"signed mean {s['mean_signed_ms']}")
    b, p = out["bare"]["p90_ms"], out["pipeline"]["p90_ms"]
    print(f"  ratio pipeline/bare p90: {p / b:.2f}" if b else "")
    if args.json:
        Path(args.json).write_text(json.dumps(out, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

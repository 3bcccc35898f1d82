#!/usr/bin/env python3
"""Word timing: how far the transcript's word starts are from reference word starts, for bare faster-whisper
(``transcribe(word_timestamps=True)`` with its defaults) and the pipeline's segments stage, same model, same
run.

    python bench/bench_word_timing.py [--model tiny.en|base] [--json FILE]

Configs: ``bare``; ``unrefined`` (the segments stage without its word-timing step); ``pipeline`` (the
segments stage as it runs: :mod:`talkthrough_assets.stages.segments.word_timing` applied).

References (bench/eval/word_times.json, with their sources):
  * the TIMIT corpus sample of NLTK (160 sentences, 16 speakers, hand-labelled ``.wrd`` word boundaries;
    CC BY-NC-SA), read from kenderdukristel/Projekt-DAlgo at a pinned commit (``TIMIT MIT/``) into the eval
    cache (``$TALKTHROUGH_EVAL_CACHE`` or ``~/.cache/talkthrough-eval``, folder ``word_times/``), from
    local bare git mirrors with ``--git-root`` or from raw.githubusercontent.com, each file checked against
    its sha256 and git blob id; written by bench/eval/build_word_times.py;
  * ``deepspeech_LDC93S1.wav``: LDC's free TIMIT sample, i.e. TIMIT TRAIN/DR1/FCJF0/SA1 (same 46 797
    samples); word boundaries from TIMIT's hand-labelled ``SA1.WRD``;
  * ``leopard_test_librispeech-1272-128104-0000.wav``: LibriSpeech dev-clean 1272-128104-0000; word
    boundaries from the Montreal Forced Aligner alignments of LibriSpeech (CorentinJ/librispeech-alignments);
  * ``fsdd_*``: spoken digits with 0.15-0.2 s pauses between them (counting, a code read out), built from the
    Free Spoken Digit Dataset by bench/eval/build_more_clips.py; word times are the parts' exact spans.

``--segment-ends``: how far each segment's end is from the end of its last word's sound (+ = after it), bare
faster-whisper vs the segments stage, beside the word starts, on the narration clips of bench/synthetic.py
(flite sentences placed with known silences: each sentence's last word ends where its sound ends) and the
pause clips (``fsdd_*``: spoken digits, each digit's end known). Target: median <= 100 ms, max <= 500 ms late.

Each clip has a ``split``: the constants of stages/segments/word_timing.py are chosen on ``tune`` (TIMIT dialect
regions 1, 3, 5, 7 and the two clips above); ``heldout`` (regions 2, 4, 6, 8: other speakers) is the
figure to report.

A hypothesis word is matched to a reference word by a word-level alignment of the normalised texts; only
exact matches are scored. Prints per-split median / p90 / max absolute start error (ms) and the mean
signed error (positive = late). Target (#23): p90 < 100 ms on the held-out half. ``--dump FILE`` keeps the
decoded words (bare and unrefined) per clip, to try refinements without decoding again.
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
    """Signed start errors (ms) of the hypothesis words that match a reference word; a reference word that
    normalises to several tokens ("rag-bag") is scored on its first."""
    rtoks, rstart = [], []
    for r in ref:
        for k, tok in enumerate(norm(r["word"])):
            rtoks.append(tok)
            rstart.append(r.get("start_s") if k == 0 else None)
    htoks, hstarts = hyp_words(words)
    return [1000 * (hstarts[j] - rstart[i]) for i, j in align(rtoks, htoks) if rstart[i] is not None]


def stats(errs: list[float]) -> dict:
    import numpy as np

    if not errs:
        return {"n": 0}
    a = np.abs(np.array(errs))
    return {"n": len(errs), "median_ms": round(float(np.median(a))), "p90_ms": round(float(np.percentile(a, 90))),
            "max_ms": round(float(a.max())), "mean_signed_ms": round(float(np.mean(errs)))}


def clip_audio(clip: dict, cache: Path, git_root: Path | None) -> Path:
    """The clip's audio file: under ../shared/eval/media (``file``), or fetched into ``cache`` (``sources``)."""
    if "file" in clip:
        return SHARED / clip["file"]
    import fetch_eval

    if "eval_clip" in clip:  # a clip of the evaluation set (bench/eval/manifest.json), built by fetch_eval
        fetch_eval.fetch(cache=cache, git_root=git_root, only=clip["eval_clip"], log=lambda *a: None)
        return cache / f"{clip['eval_clip']}.wav"

    (src,) = clip["sources"]
    path = cache / "word_times" / f"{clip['id']}.wav"
    if not (path.is_file() and fetch_eval.sha256(path.read_bytes()) == src["sha256"]):
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(fetch_eval.read_source(src, git_root))
    return path


def load_refs(split: str = "all", only: str | None = None) -> list[dict]:
    clips = json.loads((ROOT / "bench" / "eval" / "word_times.json").read_text())["clips"]
    return [c for c in clips if (split == "all" or c["split"] == split) and (not only or only in c["id"])]


def decode_all(refs: list[dict], model: str | None, cache: Path, git_root: Path | None) -> dict:
    """Per clip: the bare faster-whisper words and the segments stage's words before refinement."""
    from faster_whisper import WhisperModel

    from talkthrough_assets.store import models
    from talkthrough_assets.stages.segments import chunks as C
    from talkthrough_assets.stages.segments import engine as segments_engine
    from talkthrough_assets.stages.segments.engine import Engine
    from talkthrough_assets.stages.segments.options import Decoding, Options

    ref_model, label = models.resolve_whisper(model)
    bare = WhisperModel(ref_model, device="cpu", compute_type="int8", cpu_threads=segments_engine.cpu_threads())
    out = {"model": label, "clips": {}}
    for n, clip in enumerate(refs, 1):
        samples = _decode(clip_audio(clip, cache, git_root))
        segs, _ = bare.transcribe(samples, word_timestamps=True)
        opts = Options(whisper_model=model, decoding=Decoding(refine_words=False))
        res = C.transcribe(samples, opts, Engine.of(opts)).transcript
        out["clips"][clip["id"]] = {
            "bare": [(w.start, w.word) for s in segs for w in (s.words or [])],
            "unrefined": [{"seq": w.seq, "t0_ms": w.t0_ms, "t1_ms": w.t1_ms, "word": w.word} for w in res.words]}
        print(f"  decoded {n}/{len(refs)} {clip['id']}", file=sys.stderr)
    return out


def score(refs: list[dict], dec: dict, cache: Path, git_root: Path | None, refine=None) -> dict:
    """{split: {config: [signed errors]}} for bare, unrefined and pipeline (``refine``, default
    word_timing.refine)."""
    from talkthrough_assets.stages.segments import word_timing

    refine = refine or word_timing.refine
    errs: dict = {}
    for clip in refs:
        d = dec["clips"][clip["id"]]
        samples = _decode(clip_audio(clip, cache, git_root))
        got = {"bare": [tuple(x) for x in d["bare"]],
               "unrefined": [(w["t0_ms"] / 1000, w["word"]) for w in d["unrefined"]],
               "pipeline": [(w["t0_ms"] / 1000, w["word"]) for w in refine(samples, d["unrefined"], dec["model"])]}
        group = f"pauses-{clip['split']}" if clip.get("eval_clip") else clip["split"]  # the pause clips apart
        for split in (group, "all"):
            for c, words in got.items():
                errs.setdefault(split, {}).setdefault(c, []).extend(errors_ms(clip["words"], words))
    return errs


def end_errors_ms(ref: list[dict], segments: list[tuple[float, list[str]]]) -> list[float]:
    """Signed segment-end errors (ms; + = the segment ends after the speech): a segment whose last word matches
    a reference word with an ``end_s`` (a sentence's or a spoken digit's last word) is scored on that end.
    ``segments``: (end_s, its words) in order."""
    rtoks, rend = [], []
    for r in ref:
        toks = norm(r["word"])
        for k, tok in enumerate(toks):
            rtoks.append(tok)
            rend.append(r.get("end_s") if k == len(toks) - 1 else None)
    htoks, last_of = [], {}
    for n, (end, words) in enumerate(segments):
        for w in words:
            htoks += norm(w)
        if htoks:
            last_of[len(htoks) - 1] = end
    return [1000 * (last_of[j] - rend[i]) for i, j in align(rtoks, htoks) if j in last_of and rend[i] is not None]


def sentence_refs(spans: list) -> list[dict]:
    """Reference words of a synthetic clip (bench/synthetic.py): each sentence's first word starts at its
    sound's start, its last word ends at its sound's end (the words between have no times)."""
    out = []
    for a, b, text in spans:
        ws = text.split()
        out += [{"word": w, **({"start_s": a} if k == 0 else {}), **({"end_s": b} if k == len(ws) - 1 else {})}
                for k, w in enumerate(ws)]
    return out


def segment_ends(only: str | None, cache: Path, git_root: Path | None) -> dict:
    """Segment-end and word-start errors of bare faster-whisper (word_timestamps=True) and the segments stage on
    the narration clips (bench/synthetic.py) and the pause clips (spoken digits, bench/eval/word_times.json)."""
    from faster_whisper import WhisperModel

    import synthetic
    from talkthrough_assets.store import models
    from talkthrough_assets.stages.segments import chunks as C
    from talkthrough_assets.stages.segments import engine as segments_engine
    from talkthrough_assets.stages.segments.engine import Engine, default_whisper

    ref_model, label = models.resolve_whisper()
    bare = WhisperModel(ref_model, device="cpu", compute_type="int8", cpu_threads=segments_engine.cpu_threads())
    clips = [(c.id, "narration", c.audio, sentence_refs(synthetic.spans(c))) for c in synthetic.clips(kind="narration")]
    clips += [(c["id"], "pauses", clip_audio(c, cache, git_root), c["words"]) for c in load_refs() if c.get("eval_clip")]
    res: dict = {}
    for cid, group, path, ref in clips:
        if only and only not in cid:
            continue
        x = _decode(path)
        segs = list(bare.transcribe(x, word_timestamps=True)[0])
        out = C.transcribe(x, None, Engine(default_whisper(), ref_model, label)).transcript
        got = {"bare": ([(s.end, [w.word for w in s.words or []]) for s in segs],
                        [(w.start, w.word) for s in segs for w in (s.words or [])]),
               "pipeline": ([(s.t1_ms / 1000, [w.word for w in out.words if w.seq == s.seq])
                             for s in out.segments], [(w.t0_ms / 1000, w.word) for w in out.words])}
        for c, (ends, starts) in got.items():
            r = res.setdefault(group, {}).setdefault(c, {"end": [], "start": []})
            r["end"] += end_errors_ms(ref, ends)
            r["start"] += errors_ms(ref, starts)
        print(f"  {cid}: end errors bare {[round(e) for e in end_errors_ms(ref, got['bare'][0])]} "
              f"pipeline {[round(e) for e in end_errors_ms(ref, got['pipeline'][0])]}", file=sys.stderr)
    return res


def print_segment_ends(res: dict) -> dict:
    out: dict = {}
    print(f"{'clips':10} {'config':9} {'what':6} {'n':>4} {'median':>7} {'p90':>6} {'max':>6} {'signed':>7} "
          f"{'max late':>8}")
    for group, by in res.items():
        for c, r in by.items():
            for what in ("end", "start"):
                s = stats(r[what])
                late = round(max(r[what])) if r[what] else None
                out.setdefault(group, {}).setdefault(c, {})[what] = dict(s, max_late_ms=late)
                if s["n"]:
                    print(f"{group:10} {c:9} {what:6} {s['n']:>4} {s['median_ms']:>7} {s['p90_ms']:>6} "
                          f"{s['max_ms']:>6} {s['mean_signed_ms']:>7} {late:>8}")
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--json", help="write the figures here")
    ap.add_argument("--model", help="whisper model (default: the pipeline's)")
    ap.add_argument("--split", default="all", choices=("all", "tune", "heldout"))
    ap.add_argument("--only", help="clips whose id contains this")
    ap.add_argument("--cache", type=Path, default=None, help="eval cache (default $TALKTHROUGH_EVAL_CACHE or "
                                                              "~/.cache/talkthrough-eval)")
    ap.add_argument("--git-root", type=Path, default=None, help="folder of bare git mirrors (owner+name/repo)")
    ap.add_argument("--dump", type=Path, help="keep the decoded words here (JSON)")
    ap.add_argument("--from-dump", type=Path, help="score words decoded before (--dump) instead of decoding")
    ap.add_argument("--segment-ends", action="store_true", help="segment-end (and word-start) errors on the "
                    "narration and pause clips, bare faster-whisper vs the segments stage")
    args = ap.parse_args()
    import fetch_eval

    cache = args.cache or fetch_eval.default_cache()
    if args.segment_ends:
        out = print_segment_ends(segment_ends(args.only, cache, args.git_root))
        if args.json:
            Path(args.json).write_text(json.dumps(out, indent=2))
        return 0
    refs = load_refs(args.split, args.only)
    if args.from_dump:
        dec = json.loads(args.from_dump.read_text())
    else:
        dec = decode_all(refs, args.model, cache, args.git_root)
        if args.dump:
            args.dump.write_text(json.dumps(dec))
    errs = score(refs, dec, cache, args.git_root)
    out = {"model": dec["model"], "clips": len(refs), "speakers": len({c.get("speaker", c["id"]) for c in refs})}
    print(f"model {dec['model']}: {len(refs)} clips (absolute start error, ms; signed mean: + = late)")
    print(f"{'split':8} {'config':9} {'n':>5} {'median':>7} {'p90':>6} {'max':>6} {'signed':>7}")
    for split, by in errs.items():
        for c, e in by.items():
            s = stats(e)
            out.setdefault(split, {})[c] = s
            print(f"{split:8} {c:9} {s['n']:>5} {s['median_ms']:>7} {s['p90_ms']:>6} {s['max_ms']:>6} "
                  f"{s['mean_signed_ms']:>7}")
        b, p = out[split]["bare"]["p90_ms"], out[split]["pipeline"]["p90_ms"]
        print(f"{split:8} ratio pipeline/bare p90: {p / b:.2f}" if b else "")
    if args.json:
        Path(args.json).write_text(json.dumps(out, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

#!/usr/bin/env python3
"""Whisper decoding settings on real speech: WER and hallucinated words for
``condition_on_previous_text`` True vs False, each with and without dropping segments whose
``avg_logprob`` is below a floor, all measured in the same run with the bundled tiny.en
(``stages.transcribe.transcribe``, CPU int8, VAD on, the pipeline's beam size unless --beam).

    python bench/bench_asr.py [--media DIR] [--beam N] [--floor -1.0] [--no-long] [--only NAME] [--show-oov]

Clips: every file in ../shared/eval/media/asr (references from its manifest.json / SOURCES.md) and,
unless --no-long, the 10-min narrated screencast and the 30-min meeting from
bench/make_long_media.py (generated when missing, cached in /tmp/talkthrough-bench-media).

Hallucinated words:
  * faster_whisper_multilingual.mp3: every word after 30.0 s (the German half; tiny.en is
    English-only and the reference English ends at 29.9 s);
  * other clips with a reference: insertions in the WER alignment;
  * long synthetic media: words outside the vocabulary of the text that was synthesized
    (make_long_media's narration / meeting lines), a proxy with no timing reference.
WER: lower-cased, punctuation removed, hyphens split; for the multilingual clip against the English
half only (the MIT-licence paragraph) and only over words before 30 s.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))
DEFAULT_MEDIA = ROOT.parent / "shared" / "eval" / "media"
MULTI = "faster_whisper_multilingual.mp3"
MULTI_EN_END_S = 30.0
MIT_EN = ("Permission is hereby granted, free of charge, to any person obtaining a copy of this software and "
          "associated documentation files (the \"Software\"), to deal in the Software without restriction, "
          "including without limitation the rights to use, copy, modify, merge, publish, distribute, "
          "sublicense, and/or sell copies of the Software, and to permit persons to whom the Software is "
          "furnished to do so, subject to the following conditions: The above copyright notice and this "
          "permission notice shall be included in all copies or substantial portions of the Software.")


def norm(text: str) -> list[str]:
    text = text.lower().replace("-", " ").replace("/", " ")
    text = re.sub(r"[^\w\s%']", " ", text)
    return [w.strip("'") for w in text.split() if w.strip("'")]


def align(ref: list[str], hyp: list[str]) -> dict:
    """Levenshtein alignment counts: substitutions, deletions, insertions."""
    n, m = len(ref), len(hyp)
    d = [[(0, 0, 0, 0)] * (m + 1) for _ in range(n + 1)]  # (cost, sub, del, ins)
    for i in range(1, n + 1):
        d[i][0] = (i, 0, i, 0)
    for j in range(1, m + 1):
        d[0][j] = (j, 0, 0, j)
    for i in range(1, n + 1):
        for j in range(1, m + 1):
            c, s, de, ins = d[i - 1][j - 1]
            best = (c, s, de, ins) if ref[i - 1] == hyp[j - 1] else (c + 1, s + 1, de, ins)
            c, s, de, ins = d[i - 1][j]
            best = min(best, (c + 1, s, de + 1, ins))
            c, s, de, ins = d[i][j - 1]
            best = min(best, (c + 1, s, de, ins + 1))
            d[i][j] = best
    c, s, de, ins = d[n][m]
    return {"wer": c / max(n, 1), "sub": s, "del": de, "ins": ins}


def wer_fast(ref: list[str], hyp: list[str]) -> float:
    """Word edit distance / len(ref), numpy rows (long texts; no breakdown)."""
    import numpy as np

    ids: dict[str, int] = {}
    r = np.array([ids.setdefault(w, len(ids)) for w in ref])
    h = np.array([ids.setdefault(w, len(ids)) for w in hyp])
    ar = np.arange(len(h) + 1)
    row = ar.astype(np.int64)
    for i in range(1, len(r) + 1):
        nxt = np.empty_like(row)
        nxt[0] = i
        nxt[1:] = np.minimum(row[1:] + 1, row[:-1] + (h != r[i - 1]))  # deletion / match-substitution
        nxt = np.minimum.accumulate(nxt - ar) + ar  # insertions along the row
        row = nxt
    return float(row[-1]) / max(len(r), 1)


def spoken_script(kind: str) -> str:
    """The exact text make_long_media placed on the track, in order (same TTS clip lengths, same loop)."""
    import make_long_media as ml

    sr = ml.SR
    if kind == "screencast":
        scenes = ml._scenes()
        intros = [f"Scene {i + 1}. Now we look at the {s['title'].lower()}. {s['subtitle']}."
                  for i, s in enumerate(scenes)]
        clips = ml._tts_cache([("espeak-ng", "en-us", t, 165) for t in intros + ml.FILLER])
        out, k = [], 0
        for i, s in enumerate(scenes):
            t, end = s["start_s"] + 0.5, s["start_s"] + s["duration_s"] - 1.0
            out.append(intros[i])
            t += len(clips[("espeak-ng", "en-us", intros[i])]) / sr + 0.6
            while True:
                c = clips[("espeak-ng", "en-us", ml.FILLER[k % len(ml.FILLER)])]
                if t + len(c) / sr > end:
                    break
                out.append(ml.FILLER[k % len(ml.FILLER)])
                t += len(c) / sr + 0.6
                k += 1
        return " ".join(out)
    lines, total_s, gap_s = ml.MEETING_LINES, 1800.0, 0.7
    clips = ml._tts_cache([("espeak-ng", v, t, 150) for v, t in lines])
    out, t, k = [], 0.5, 0
    while True:
        v, text = lines[k % len(lines)]
        c = clips[("espeak-ng", v, text)]
        if t + len(c) / sr > total_s - 0.3:
            break
        out.append(text)
        t += len(c) / sr + gap_s + (0.4 if k % 3 == 2 else 0.0)
        k += 1
    return " ".join(out)


def asr_clips(media: Path) -> list[dict]:
    man = json.loads((media / "manifest.json").read_text())
    entries = man if isinstance(man, list) else man.get("files", man)
    out = []
    for e in entries:
        if e.get("cat") != "asr":
            continue
        ref = e["ref"].get("transcript") or e["ref"].get("transcript_en_segment")
        if e["file"].endswith(MULTI):
            ref = MIT_EN
        out.append({"name": Path(e["file"]).name, "file": media / e["file"], "ref": ref, "vocab": None})
    return sorted(out, key=lambda c: c["name"])


def long_clips() -> list[dict]:
    import make_long_media as ml

    paths = ml.ensure_media(quiet=True)
    scenes = ml._scenes()
    narration = " ".join([f"Scene {i + 1}. Now we look at the {s['title'].lower()}. {s['subtitle']}."
                          for i, s in enumerate(scenes)] + ml.FILLER)
    meeting = " ".join(t for _, t in ml.MEETING_LINES)
    return [{"name": Path(paths["screencast"]).name, "file": paths["screencast"], "ref": None,
             "script": spoken_script("screencast"), "vocab": set(norm(narration)) | set(NUMBER_WORDS)},
            {"name": Path(paths["meeting"]).name, "file": paths["meeting"], "ref": None,
             "script": spoken_script("meeting"), "vocab": set(norm(meeting)) | set(NUMBER_WORDS)}]


NUMBER_WORDS = [str(i) for i in range(0, 1000)] + ["one", "two", "three", "four", "five", "six", "seven", "eight",
                                                   "nine", "ten", "twelve", "thirty", "forty", "hundred", "ok", "okay"]


def run(samples, cond: bool, beam: int = 5) -> tuple[list[dict], list[dict], float]:
    from talkthrough_assets import models
    from talkthrough_assets.stages import transcribe as T

    ref, label = models.resolve_whisper()
    t = time.perf_counter()
    out = T.transcribe(samples, model_ref=ref, model_label=label, condition_on_previous_text=cond,
                       min_avg_logprob=None, beam_size=beam)
    return out["segments"], out["words"], time.perf_counter() - t


def score(clip: dict, segments: list[dict], words: list[dict], floor: float | None) -> dict:
    keep = {s["seq"] for s in segments if floor is None or s["avg_logprob"] >= floor}
    ws = [w for w in words if w["seq"] in keep]
    res = {"words": len(ws), "segments": len(keep)}
    if clip["name"] == MULTI:
        en = [w for w in ws if w["t0_ms"] < MULTI_EN_END_S * 1000]
        res["halluc"] = len(ws) - len(en)
        res.update(align(norm(clip["ref"]), norm(" ".join(w["word"] for w in en))))
    elif clip["ref"] is not None:
        a = align(norm(clip["ref"]), norm(" ".join(w["word"] for w in ws)))
        res.update(a, halluc=a["ins"])
    else:
        hyp = norm(" ".join(w["word"] for w in ws))
        oov = [w for w in hyp if w not in clip["vocab"]]
        res["halluc"] = len(oov)
        res["oov"] = oov
        res["wer"] = wer_fast(norm(clip["script"]), hyp)
    return res


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--media", type=Path, default=DEFAULT_MEDIA)
    ap.add_argument("--floor", type=float, default=-1.0, help="avg_logprob floor for the filtered variants")
    ap.add_argument("--no-long", action="store_true")
    ap.add_argument("--beam", type=int, default=None,
                    help="beam size (default: the pipeline's, settings.DEFAULTS['beam_size'])")
    ap.add_argument("--only", default="", help="run only clips whose name contains this")
    ap.add_argument("--show-oov", action="store_true", help="print the out-of-vocabulary words of long clips")
    args = ap.parse_args()
    from talkthrough_assets.stages import audio
    from talkthrough_assets.stages import transcribe as T

    from talkthrough_assets import settings

    beam = args.beam or int(settings.DEFAULTS.get("beam_size") or 5)
    clips = asr_clips(args.media) + ([] if args.no_long else long_clips())
    clips = [c for c in clips if args.only in c["name"]]
    tmp = Path(tempfile.mkdtemp(prefix="tt-asr-"))
    variants = [("True", True, None), ("False", False, None),
                (f"True,lp>={args.floor:g}", True, args.floor), (f"False,lp>={args.floor:g}", False, args.floor)]
    print(f"tiny.en, beam {beam}, VAD; stage defaults now: condition_on_previous_text={T.CONDITION_ON_PREVIOUS_TEXT}, "
          f"min_avg_logprob={T.MIN_AVG_LOGPROB}")
    print("per clip: WER % / hallucinated words; unfiltered runs: decode seconds. Long clips: WER against the "
          "exact script make_long_media synthesized")
    print(f"{'clip':48s} " + " ".join(f"{v[0]:>16s}" for v in variants))
    tot = {v[0]: {"halluc": 0, "err": 0.0, "n": 0, "s": 0.0} for v in variants}
    for c in clips:
        wav = tmp / (Path(c["file"]).stem + ".wav")
        audio.extract_wav(c["file"], wav)
        x = audio.load_wav(wav)
        runs = {cond: run(x, cond, beam) for cond in (True, False)}
        cells, extra = [], []
        for name, cond, floor in variants:
            segs, words, el = runs[cond]
            r = score(c, segs, words, floor)
            t = tot[name]
            t["halluc"] += r["halluc"]
            if floor is None:
                t["s"] += el
            if r["wer"] is not None:
                t["err"] += r["wer"]
                t["n"] += 1
            w = f"{r['wer'] * 100:5.1f}"
            cells.append(f"{w}/{r['halluc']:<3d}" + (f"{el:5.0f}s" if floor is None else "      "))
            if args.show_oov and "oov" in r:
                from collections import Counter
                extra.append(f"  {name}: " + ", ".join(f"{k}x{v}" for k, v in Counter(r["oov"]).most_common(25)))
        print(f"{c['name'][:48]:48s} " + " ".join(f"{x:>16s}" for x in cells), flush=True)
        for line in extra:
            print(line)
    print(f"{'mean WER (clips with a reference) / total hallucinated':48s} " + " ".join(
        f"{t['err'] / max(t['n'], 1) * 100:5.1f}/{t['halluc']:<3d}" + (f"{t['s']:5.0f}s" if t['s'] else "      ")
        for t in tot.values()))
    return 0


if __name__ == "__main__":
    sys.exit(main())

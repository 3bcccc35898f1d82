#!/usr/bin/env python3
"""Transcription accuracy on real speech: the pipeline's segments stage vs **bare faster-whisper with its
defaults** (``WhisperModel(model).transcribe(audio)``: beam 5, no VAD, conditioning on previous text, the
temperature fallback ladder), same model, same audio, same run.

    python bench/bench_asr.py [--configs bare,pipeline,greedy] [--only SUBSTR[,SUBSTR...]] [--tags read] [--long]
                              [--load N --repeat R]

Clips:
  * the eval set in bench/eval (``bench/fetch_eval.py`` materialises it; see bench/eval/SOURCES.md) when
    it is present, else ../shared/eval/media (asr/ and the diarization clips with a transcript);
  * the synthetic whole-recording non-English clips of bench/synthetic.py (espeak-ng: de, fr, es, pt, zh);
  * ``--long``: the 10-min narrated screencast and the 30-min meeting of bench/make_long_media.py.

Figures per clip and pooled: WER (lower-cased, punctuation removed; the reference words only), words
invented over non-English speech (every word of an English-only model's output on a non-English clip, and
on faster_whisper_multilingual.mp3 every word after 30.0 s, where its German half starts), clips left empty
where bare faster-whisper gives text, and seconds. A config may name a compute type after ``@``
(``bare@float32``: bare faster-whisper at float32, its own default on CPU for a float32 model;
``pipeline@int16``: the segments stage with ``TALKTHROUGH_COMPUTE_TYPE=int16``); each one's models are loaded
before any timing. ``--load N --repeat R`` runs the pipeline's decoding R
times on the non-English clips while N CPU-burning processes occupy the machine (determinism target).
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import os
import re
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))
SHARED = ROOT.parent / "shared" / "eval" / "media"
MULTI = ("faster_whisper_multilingual.mp3", "fw_multilingual_en_de")  # its name in the shared media / the eval set
MULTI_EN_END_S = 30.0
MIT_EN = ("Permission is hereby granted, free of charge, to any person obtaining a copy of this software and "
          "associated documentation files (the \"Software\"), to deal in the Software without restriction, "
          "including without limitation the rights to use, copy, modify, merge, publish, distribute, "
          "sublicense, and/or sell copies of the Software, and to permit persons to whom the Software is "
          "furnished to do so, subject to the following conditions: The above copyright notice and this "
          "permission notice shall be included in all copies or substantial portions of the Software.")
_NUM = {"0": "zero", "1": "one", "2": "two", "3": "three", "4": "four", "5": "five", "6": "six", "7": "seven",
        "8": "eight", "9": "nine", "10": "ten", "mr": "mister", "mrs": "missus", "dr": "doctor", "ok": "okay"}


def norm(text: str) -> list[str]:
    text = text.lower().replace("-", " ").replace("/", " ")
    text = re.sub(r"[^\w\s']", " ", text)
    out = []
    for w in text.split():
        w = w.strip("'")
        if w:
            out.append(_NUM.get(w, w))
    return out


def edits(ref: list[str], hyp: list[str]) -> int:
    """Word-level Levenshtein distance (numpy rows)."""
    import numpy as np

    ids: dict[str, int] = {}
    r = np.array([ids.setdefault(w, len(ids)) for w in ref], dtype=np.int64)
    h = np.array([ids.setdefault(w, len(ids)) for w in hyp], dtype=np.int64)
    prev = np.arange(len(h) + 1)
    for i in range(1, len(r) + 1):
        cur = np.empty_like(prev)
        cur[0] = i
        sub = prev[:-1] + (h != r[i - 1])
        dele = prev[1:] + 1
        best = np.minimum(sub, dele)
        for j in range(1, len(h) + 1):  # insertions depend on cur[j-1]
            cur[j] = min(best[j - 1], cur[j - 1] + 1)
        prev = cur
    return int(prev[-1])


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


def _decode(path: Path):
    import av
    import numpy as np

    out = []
    with av.open(str(path)) as c:
        r = av.AudioResampler(format="s16", layout="mono", rate=16000)
        for f in c.decode(audio=0):
            out += [g.to_ndarray().reshape(-1) for g in r.resample(f)]
        out += [g.to_ndarray().reshape(-1) for g in r.resample(None)]
    return np.concatenate(out).astype(np.float32) / 32768.0


def clips(only: str | None, long: bool, tags: str | None = None, kind: str | None = None) -> list[dict]:
    """[{name, path, kind: asr|non_english|speech, ref (text or None), cut_s (score words before)}]; ``tags``:
    only eval-set clips with one of these tags (comma-separated); ``kind``: only clips of these kinds."""
    out: list[dict] = []
    try:
        import evalset  # bench/evalset.py (the eval set); clips missing from the cache are skipped

        for c in evalset.load_manifest():
            if not c.exists() or (tags and not set(tags.split(",")) & set(c.tags)):
                continue
            ck = c.kind if c.kind in ("asr", "non_english") else "speech"
            out.append({"name": c.id, "path": c.audio, "kind": ck, "ref": c.text,
                        "cut_s": c.text_until_s, "norm": lambda t, lang=c.language: evalset.words(t, lang)})
    except Exception as e:  # noqa: BLE001 - no eval set here: the shared media
        print(f"(eval set not available: {e}; using {SHARED})", file=sys.stderr)
    if not out:
        man = json.loads((SHARED / "manifest.json").read_text())
        for f in man["files"]:
            if f["cat"] not in ("asr", "diarization") or not f["file"].endswith((".wav", ".flac", ".mp3")):
                continue
            ref = f.get("ref", {})
            text = ref.get("transcript")
            name = Path(f["file"]).name
            cut = None
            if name in MULTI:
                text, cut = MIT_EN, MULTI_EN_END_S
            out.append({"name": name, "path": SHARED / f["file"], "kind": "asr" if text else "speech", "ref": text,
                        "cut_s": cut})
    try:  # whole recordings in another language, generated here (bench/synthetic.py)
        import synthetic

        out += [{"name": c.id, "path": c.audio, "kind": "non_english", "ref": c.text, "cut_s": None}
                for c in synthetic.clips(kind="non_english")]
    except (OSError, subprocess.CalledProcessError) as e:
        print(f"(synthetic clips not available: {e})", file=sys.stderr)
    if long:
        import make_long_media as ml

        paths = ml.ensure_media(quiet=True)  # generated when missing (espeak-ng, flite, sox)
        for what, name in (("screencast", ml.SCREENCAST), ("meeting", ml.MEETING)):
            out.append({"name": name, "path": paths[what],
                        "kind": "asr", "ref": spoken_script(what), "cut_s": None})
    if only:
        out = [c for c in out if any(o in c["name"] for o in only.split(","))]
    if kind:
        out = [c for c in out if c["kind"] in kind.split(",")]
    return out


CPU: dict[str, float] = {}  # config -> CPU seconds (this process, every thread) of its last run


def run_bare(model, samples, config: str = "bare") -> tuple[list[tuple[float, str]], float]:
    t, c = time.perf_counter(), time.process_time()
    segs, _ = model.transcribe(samples)
    segs = list(segs)
    res = [(s.start, s.text) for s in segs]
    CPU[config] = time.process_time() - c
    SPANS[config] = [(int(s.start * 1000), int(s.end * 1000)) for s in segs]
    return res, time.perf_counter() - t


DROPPED: dict[str, list] = {}  # config -> segments its drop rules removed on the current clip
SPANS: dict[str, list] = {}  # config -> its segments' (t0_ms, t1_ms) on the current clip


def uncovered_s(samples, spans_ms) -> tuple[float, float]:
    """(voice activity no segment covers, voice activity), seconds: the pipeline's own measure
    (segments_coverage.uncovered over the VAD gate's speech, a segment covering its span +- COVER_SLACK_MS)."""
    from talkthrough_assets.stages.segments import coverage as segments_coverage
    from talkthrough_assets.stages.segments import rules as segments_rules

    core = segments_rules.core_speech(segments_rules.speech_regions(samples))
    slack = segments_coverage.COVER_SLACK_MS
    gaps = segments_coverage.uncovered(core, [((a - slack) * 16, (b + slack) * 16) for a, b in spans_ms],
                       int(segments_coverage.COVERAGE_MIN_S * 16000))
    return sum(b - a for a, b in gaps) / 16000, sum(b - a for a, b in core) / 16000


def run_pipeline(samples, ref_model: str, label: str, config: str = "pipeline",
                 **kw) -> tuple[list[tuple[float, str]], float]:
    from talkthrough_assets.stages.segments import chunks as C

    # the segments stage's own decode (stages/segments/stage.transcribe): chunked, each chunk through the drop
    # rules; nothing stored, so every run decodes
    t, c = time.perf_counter(), time.process_time()
    from dataclasses import asdict

    from talkthrough_assets.stages.segments.engine import Engine, default_whisper
    from talkthrough_assets.stages.segments.options import BEAM_SIZE, Decoding, Options

    decoding = Decoding(**{k: kw[k] for k in ("coverage", "loop_retry") if k in kw})
    opts = Options(beam_size=kw.get("beam_size", BEAM_SIZE), compute_type=kw.get("compute"), decoding=decoding)
    engine = Engine(kw.get("whisper") or default_whisper(), ref_model, label, compute=kw.get("compute"))
    out = C.transcribe(samples, opts, engine).transcript
    CPU[config] = time.process_time() - c
    DROPPED[config] = [asdict(d) for d in out.meta.dropped]
    SPANS[config] = [(s.t0_ms, s.t1_ms) for s in out.segments]
    return [(s.t0_ms / 1000, s.text) for s in out.segments], time.perf_counter() - t


def score(clip: dict, segs: list[tuple[float, str]]) -> dict:
    norm = clip.get("norm") or globals()["norm"]
    hyp_all = [w for _, text in segs for w in norm(text)]
    if clip["kind"] == "non_english" and clip["cut_s"] is None:
        return {"words": len(hyp_all), "invented": len(hyp_all)}
    invented = 0
    if clip["cut_s"] is not None:
        keep = [w for t, text in segs if t < clip["cut_s"] for w in norm(text)]
        invented = len(hyp_all) - len(keep)
        hyp_all = keep
    res = {"words": len(hyp_all), "invented": invented}
    if clip["ref"] and clip["kind"] == "asr":
        ref = norm(clip["ref"])
        res.update(ref_words=len(ref), errors=edits(ref, hyp_all))
    return res


def _burn(stop):
    x = 0
    while not stop.is_set():
        x = (x * 31 + 7) % 1000003


def _load(configs: list[str], ref_model: str) -> tuple[dict, dict]:
    """({bare config: its WhisperModel}, {pipeline config: its decode keywords}), every model loaded before any
    timing (the language check's too: it loads on first use)."""
    from faster_whisper import WhisperModel

    from talkthrough_assets.stages.segments import engine as E
    from talkthrough_assets.stages.segments import engine as segments_engine

    kw = {"pipeline": {}, "greedy": {"beam_size": 1}, "nocover": {"coverage": False},
          "noretry": {"loop_retry": False}}
    bares = {}
    for c in configs:
        base, _, compute = c.partition("@")
        if base == "bare":
            bares[c] = WhisperModel(ref_model, device="cpu", compute_type=compute or "int8",
                                    cpu_threads=segments_engine.cpu_threads())
            continue
        whisper = segments_engine.Whisper()
        kw[c] = dict(kw[base], whisper=whisper, compute=compute or None)
        whisper.model(ref_model, compute=compute or None)
        E.warm_language_checker(whisper, compute=compute or None)
    return bares, kw


def _pooled(rows: list[dict], configs: list[str], bares: dict) -> None:
    print("\n== pooled")
    for c in configs:
        scored = [r[c] for r in rows if "errors" in r[c]]
        err = sum(r["errors"] for r in scored)
        n = sum(r["ref_words"] for r in scored)
        inv = sum(r[c]["invented"] for r in rows)
        secs = sum(r[c]["s"] for r in rows)
        cpu = sum(r[c]["cpu"] for r in rows)
        unc = sum(r[c].get("uncovered_s", 0) for r in rows)
        speech = sum(r[c].get("speech_s", 0) for r in rows)
        print(f"{c:10} WER {100 * err / max(n, 1):5.2f}% ({err}/{n} words, {len(scored)} clips)  "
              f"invented over non-English {inv:4d}  uncovered speech {unc:.1f} of {speech:.1f} s  "
              f"{secs:7.1f} s  {cpu:7.1f} s CPU")
    for b in bares:
        for c in configs:
            if c in bares:
                continue
            worse = [r["clip"] for r in rows if "errors" in r[c] and r[c]["errors"] > r[b]["errors"]]
            empty = [r["clip"] for r in rows if r["kind"] != "non_english" and r["clip"] not in MULTI
                     and r[c]["words"] == 0 and r[b]["words"] > 0]
            ratio = sum(r[c]["s"] for r in rows) / max(sum(r[b]["s"] for r in rows), 1e-9)
            cpu_ratio = sum(r[c]["cpu"] for r in rows) / max(sum(r[b]["cpu"] for r in rows), 1e-9)
            lost = sum(len(r[c].get("dropped", [])) for r in rows if r["kind"] != "non_english" and r["clip"] not in MULTI)
            print(f"{c} vs {b}: worse on {len(worse)} clip(s) {worse}; empty where {b} has text: {empty}; "
                  f"segments dropped on English clips: {lost}; time ratio {ratio:.2f}x, CPU {cpu_ratio:.2f}x "
                  f"(load average {os.getloadavg()[0]:.1f})")


def _repeat(cl: list[dict], repeat: int, load: int, ref_model: str, label: str) -> None:
    targets = [c for c in cl if c["kind"] == "non_english" or c["name"] in MULTI]
    if not targets:
        sys.exit("--repeat: no non-English or English-then-German clip selected (see --only)")
    stop = mp.Event()
    burners = [mp.Process(target=_burn, args=(stop,), daemon=True) for _ in range(load)]
    for b in burners:
        b.start()
    try:
        print(f"\n== {repeat} runs under {load} CPU burners, {len(targets)} non-English clips")
        total, variants = 0, 0
        for clip in targets:
            samples = _decode(clip["path"])
            seen = set()
            for _ in range(repeat):
                segs, _ = run_pipeline(samples, ref_model, label)
                total += score(clip, segs)["invented"]
                seen.add(json.dumps(segs))
            variants += len(seen) - 1
            print(f"{clip['name'][:44]:44} distinct outputs {len(seen)}", flush=True)
        print(f"invented words in {repeat} runs: {total}; clips with run-to-run differences: {variants}")
    finally:
        stop.set()
        for b in burners:
            b.join()


def _row(clip: dict, configs: list[str], bares: dict, kw: dict, ref_model: str, label: str, show: bool) -> dict:
    """One clip through every config, one after the other: its scores, seconds and drops per config."""
    samples = _decode(clip["path"])
    row = {"clip": clip["name"], "kind": clip["kind"]}
    for c in configs:
        segs, secs = (run_bare(bares[c], samples, c) if c in bares
                      else run_pipeline(samples, ref_model, label, config=c, **kw[c]))
        row[c] = {**score(clip, segs), "s": round(secs, 2), "cpu": round(CPU[c], 2)}
        if clip["kind"] != "non_english" and not clip["cut_s"]:  # English speech: what no segment covers
            row[c]["uncovered_s"], row[c]["speech_s"] = uncovered_s(samples, SPANS[c])
        if c not in bares:
            row[c]["dropped"] = DROPPED[c]
        if show:
            print(f"  [{c}] " + " | ".join(f"{t:.1f} {text.strip()}" for t, text in segs))
    if show and clip.get("ref"):
        print(f"  [ref] {clip['ref']}")
    return row


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--configs", default="bare,pipeline", help="bare, pipeline, greedy (pipeline with beam 1), nocover (pipeline without its coverage pass), noretry (no window decoded again without its prompt when it loops)")
    ap.add_argument("--only")
    ap.add_argument("--tags", help="only eval-set clips with one of these tags (e.g. read)")
    ap.add_argument("--kind", help="only clips of these kinds (asr, non_english, speech)")
    ap.add_argument("--long", action="store_true")
    ap.add_argument("--load", type=int, default=0, help="CPU burners during the --repeat runs")
    ap.add_argument("--repeat", type=int, default=0, help="runs of the pipeline on the non-English clips")
    ap.add_argument("--json", help="write per-clip results here")
    ap.add_argument("--show", action="store_true", help="print the reference and each config's text per clip")
    args = ap.parse_args()

    from talkthrough_assets.store import models

    ref_model, label = models.resolve_whisper()
    configs = args.configs.split(",")
    bares, kw = _load(configs, ref_model)
    rows = []
    cl = clips(args.only, args.long, args.tags, args.kind)
    print(f"model {label}; {len(cl)} clips; configs {configs}")
    print(f"{'clip':44} {'kind':11} " + " ".join(f"{c + ' WER/inv':>18} {'s':>5}" for c in configs))
    for clip in cl:
        row = _row(clip, configs, bares, kw, ref_model, label, args.show)
        rows.append(row)
        cells = []
        for c in configs:
            r = row[c]
            wer = f"{100 * r['errors'] / r['ref_words']:.1f}%" if "errors" in r else f"{r['words']}w"
            cells.append(f"{wer + '/' + str(r['invented']):>18} {r['s']:>5.1f}")
        print(f"{clip['name'][:44]:44} {clip['kind']:11} " + " ".join(cells), flush=True)
        for c in configs:
            for d in row[c].get("dropped", []):
                print(f"    {c} dropped {d['t0_ms'] / 1000:.1f}-{d['t1_ms'] / 1000:.1f} s: {d['reason'][:60]} "
                      f"| {d['text'][:50]!r}")

    _pooled(rows, configs, bares)
    if args.repeat:
        _repeat(cl, args.repeat, args.load, ref_model, label)
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

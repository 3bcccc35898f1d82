#!/usr/bin/env python3
"""Diarization accuracy on real multi-speaker audio: DER and speakers found, per file and pooled, for
Talkthrough's turns stage (``stages.turns.run_turns``) against sherpa-onnx's own offline diarization
with every option at its default, both measured in the same run, each with the speaker count unknown
(Talkthrough ``--num-speakers auto``; sherpa ``num_clusters=-1``, threshold 0.5) and given (the true count).

    python bench/bench_der.py [--only SUBSTR] [--no-given] [--collar 0.25] [--json OUT] [--words [--words-cache F]]

Clips (each skipped, and said so, when its audio is not there):

* the evaluation set's diarization clips (bench/eval/manifest.json, fetched by bench/fetch_eval.py into
  ``~/.cache/talkthrough-eval``): 11 AMI 30-s meeting excerpts from pyannote-audio's tests (2-4 speakers,
  overlap; group ``ami``), further AMI meeting excerpts from other sources, headset mix and far-field
  (``meeting_*``, group ``meeting``), a two-speaker phone call, three speakers one after another,
  composites of 4/5/6 distinct speakers; and its 3-speaker leopard clip (no times: speaker count only);
* bench/der_composites.py's clips, built from ``../shared/eval/media``: 4-6 distinct real speakers one
  after another, and 3-4 speakers taking turns more than once.

``--words`` gives the turns stage what it has in the pipeline, the clip's Whisper words (the segments stage's
own decode, ``stages.segments.chunks.transcribe``, default model; ``--words-cache`` keeps them between runs):
without it the stage diarizes from the audio alone. sherpa-onnx never reads words.

DER = (missed + false alarm + confusion) / reference speech, scored on a 10 ms grid outside a
+-collar around every reference boundary, overlapping speech scored per speaker (NIST md-eval style),
with the hypothesis->reference speaker mapping that maximises matched time (exhaustive; few
speakers). Pooled DER sums each clip's error and reference time. "count" is speakers found/expected.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from talkthrough_assets.model.turns import DiarizationRow

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))
DEFAULT_MEDIA = ROOT.parent / "shared" / "eval" / "media"
SHARED_MODELS = ROOT.parent / "shared" / "models" / "diarization"
STEP = 0.01  # scoring grid, seconds
# The refine thresholds (stages/turns/refine.py) were chosen on the other clips only; these (every other clip
# of each kind, in the manifest's order) were held out, and the pooled figures are printed for both halves.
# Of the further meeting excerpts, ES2004a's (a meeting whose speakers are in no other clip) are held out;
# EN2002a's far-field excerpt has the speakers of ami_tst00_30s, a tuning clip, so it stays on the tuning side.
HELD_OUT = {"ami_dev01_30s", "ami_trn03_30s", "ami_trn05_30s", "ami_trn07_30s", "ami_trn09_30s",
            "pyannote_sample_2spk_phone", "composite_5spk_sequential", "composite_2spk_dialogue",
            "composite_4spk_quick_turns", "tt_seq5_a", "tt_seq6_b", "tt_conv4_a",
            "meeting_es2004a_750s", "meeting_es2004a_780s"}


# --------------------------------------------------------------------------- references

def read_rttm(path: Path, uri: str | None = None) -> list[tuple[float, float, str]]:
    out = []
    for line in path.read_text().splitlines():
        f = line.split()
        if len(f) >= 8 and f[0] == "SPEAKER" and (uri is None or f[1] == uri):
            t0, d = float(f[3]), float(f[4])
            out.append((t0, t0 + d, f[7]))
    return out


def clip_group(tags) -> str:
    """``ami`` (pyannote-audio's AMI excerpts), ``meeting`` (the other meeting excerpts), ``composite``, ``other``."""
    for group in ("ami", "meeting", "composite"):
        if group in tags:
            return group
    return "other"


def clips(media: Path, tmp: Path) -> tuple[list[dict], list[str]]:
    """(clip dicts {name, file, speakers, ref (None: count only), group}, names skipped with why)."""
    import evalset

    out, skipped = [], []
    for c in evalset.load_manifest():
        if c.kind == "diarization" or (c.speakers == 0 and any(t.endswith("_speakers") for t in c.tags)):
            if not c.exists():
                skipped.append(f"{c.id} (not fetched: python bench/fetch_eval.py)")
                continue
            n = c.speakers or int(next(t for t in c.tags if t.endswith("_speakers")).split("_")[0])
            group = clip_group(c.tags)
            out.append({"name": c.id, "file": c.audio, "speakers": n, "ref": c.turns() or None, "group": group})
    if media.is_dir():
        import der_composites

        for c in der_composites.clips(media, tmp):
            out.append({**c, "name": "tt_" + c["name"], "group": "composite"})
    else:
        skipped.append(f"bench/der_composites.py clips ({media} not found)")
    return out, skipped


# --------------------------------------------------------------------------- scoring

def der(ref: list[tuple], hyp: list[tuple], duration_s: float, collar: float = 0.25) -> dict:
    """DER on a 10 ms grid; ``ref``/``hyp`` are [(t0_s, t1_s, label)]. Fractions of the reference speech
    (der, miss, fa, conf) and the absolute scored frames (``ref_frames``, ``err_frames``) for pooling."""
    n = int(np.ceil(duration_s / STEP)) + 1

    def matrix(turns):
        labels = sorted({t[2] for t in turns}, key=str)
        m = np.zeros((len(labels), n), dtype=bool)
        for a, b, lab in turns:
            m[labels.index(lab), int(round(a / STEP)): int(round(b / STEP))] = True
        return labels, m

    rl, R = matrix(ref)
    hl, H = matrix(hyp)
    scored = np.ones(n, dtype=bool)
    c = int(round(collar / STEP))
    for a, b, _ in ref:
        for edge in (int(round(a / STEP)), int(round(b / STEP))):
            scored[max(0, edge - c): edge + c] = False
    R, H = R[:, scored], H[:, scored]
    n_ref, n_hyp = R.sum(axis=0), H.sum(axis=0)
    overlap = (R[:, None, :] & H[None, :, :]).sum(axis=2) if len(rl) and len(hl) else np.zeros((len(rl), len(hl)))
    best, best_map = -1, ()
    k = min(len(rl), len(hl))
    for rs in itertools.permutations(range(len(rl)), k):
        for hs in itertools.combinations(range(len(hl)), k):
            v = sum(overlap[r, h] for r, h in zip(rs, hs))
            if v > best:
                best, best_map = v, tuple(zip(rs, hs))
    correct = np.zeros(R.shape[1], dtype=np.int64)
    for r, h in best_map:
        correct += R[r] & H[h]
    total = int(n_ref.sum())
    miss = int(np.maximum(n_ref - n_hyp, 0).sum())
    fa = int(np.maximum(n_hyp - n_ref, 0).sum())
    conf = int((np.minimum(n_ref, n_hyp) - correct).sum())
    return {"der": (miss + fa + conf) / max(total, 1), "miss": miss / max(total, 1),
            "fa": fa / max(total, 1), "conf": conf / max(total, 1),
            "ref_frames": total, "err_frames": miss + fa + conf}


# --------------------------------------------------------------------------- systems

def to_wav(src: Path, tmp: Path) -> Path:
    """16 kHz mono s16 WAV through the stage's own extraction (the eval set has float WAVs)."""
    from talkthrough_assets.stages import audio

    dst = tmp / (Path(src).stem + ".16k.wav")
    if not dst.exists():
        audio.extract_wav(src, dst)
    return dst


def sherpa_defaults(wav: Path, num_clusters: int = -1) -> tuple[list[tuple], float]:
    """sherpa-onnx with every diarization option at its default (``num_clusters`` aside), no post-processing."""
    import sherpa_onnx as so

    from talkthrough_assets.core import config
    from talkthrough_assets.stages import audio
    from talkthrough_assets.stages.turns import engine as diarize_engine
    from talkthrough_assets.stages.turns import models as diarize_models

    m = diarize_models.resolve_models(models_dir=config.get(diarize_models.ENV_MODELS_DIR))
    threads = diarize_engine.with_threads(diarize_engine.default_cache(), config.get(diarize_engine.ENV_THREADS)).threads
    cfg = so.OfflineSpeakerDiarizationConfig(
        segmentation=so.OfflineSpeakerSegmentationModelConfig(
            pyannote=so.OfflineSpeakerSegmentationPyannoteModelConfig(model=str(m.segmentation)),
            num_threads=threads),
        embedding=so.SpeakerEmbeddingExtractorConfig(model=str(m.embedding), num_threads=threads),
        clustering=so.FastClusteringConfig(num_clusters=num_clusters) if num_clusters > 0 else so.FastClusteringConfig(),
    )
    eng = so.OfflineSpeakerDiarization(cfg)
    x = audio.load_wav(wav)
    t = time.perf_counter()
    res = eng.process(np.ascontiguousarray(x, dtype=np.float32)).sort_by_start_time()
    return [(s.start, s.end, s.speaker) for s in res], time.perf_counter() - t


def transcript(wav: Path, cache: dict) -> dict:
    """{"segments", "words"} of the segments stage for ``wav`` (kept in ``cache`` by the file's name)."""
    if wav.name not in cache:
        from talkthrough_assets.stages import audio
        from dataclasses import asdict

        from talkthrough_assets.stages.segments import chunks

        out = chunks.transcribe(audio.load_wav(wav)).transcript
        cache[wav.name] = {"segments": [asdict(s) for s in out.segments], "words": [asdict(w) for w in out.words]}
    return cache[wav.name]


def talkthrough(wav: Path, num_speakers, threshold: float | None = None,
                text: dict | None = None) -> tuple[list[tuple], float, DiarizationRow]:
    from talkthrough_assets.core import config
    from talkthrough_assets.model.transcript import Segment, Word
    from talkthrough_assets.pipeline import settings as S
    from talkthrough_assets.stages import turns as D

    thr = S.DEFAULTS["diarize_threshold"] if threshold is None else threshold
    t = time.perf_counter()
    text = text or {}
    out = D.run_turns(wav, segments=[Segment(**s) for s in text.get("segments", [])],
                      words=[Word(**w) for w in text.get("words", [])],
                      num_speakers=num_speakers, threshold=thr,
                      models_dir=config.get(D.models.ENV_MODELS_DIR))
    el = time.perf_counter() - t
    return [(x.t0_ms / 1000, x.t1_ms / 1000, x.speaker) for x in out.turns], el, out.diarization


# --------------------------------------------------------------------------- report

def cell(clip: dict, hyp: list[tuple], dur: float, collar: float) -> dict:
    found = len({h[2] for h in hyp})
    r = {"found": found}
    if clip["ref"] is not None:
        r.update(der(clip["ref"], hyp, dur, collar))
    return r


def fmt(r: dict | None, n: int) -> str:
    if r is None:
        return f"{'':>13s}"
    d = f"{r['der'] * 100:5.1f}%" if "der" in r else "   -  "
    return f"{d} {r['found']:>2d}/{n:<2d}  "


def breakdown(r: dict) -> str:
    return f"{r['miss'] * 100:4.1f}/{r['fa'] * 100:4.1f}/{r['conf'] * 100:4.1f}"


def pooled(rows: list[dict], key: str, pick=lambda row: True) -> str:
    cells = [row[key] for row in rows if pick(row) and row.get(key) and "der" in row[key]]
    if not cells:
        return "   -  "
    return f"{sum(c['err_frames'] for c in cells) / max(1, sum(c['ref_frames'] for c in cells)) * 100:5.1f}%"


POOLS = [("pooled, all clips with turns", lambda r: True),
         ("pooled, AMI meeting excerpts", lambda r: r["group"] == "ami"),
         ("pooled, other meeting excerpts", lambda r: r["group"] == "meeting"),
         ("pooled, composites", lambda r: r["group"] == "composite"),
         ("AMI, tuning half", lambda r: r["group"] == "ami" and r["name"] not in HELD_OUT),
         ("AMI, held-out half", lambda r: r["group"] == "ami" and r["name"] in HELD_OUT),
         ("meetings, tuning half", lambda r: r["group"] == "meeting" and r["name"] not in HELD_OUT),
         ("meetings, held-out half", lambda r: r["group"] == "meeting" and r["name"] in HELD_OUT),
         ("others, tuning half", lambda r: r["group"] in ("composite", "other") and r["name"] not in HELD_OUT),
         ("others, held-out half", lambda r: r["group"] in ("composite", "other") and r["name"] in HELD_OUT)]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--media", type=Path, default=DEFAULT_MEDIA)
    ap.add_argument("--collar", type=float, default=0.25)
    ap.add_argument("--only", default="", help="only clips whose name contains this")
    ap.add_argument("--no-given", action="store_true", help="skip the runs with the true count given")
    ap.add_argument("--threshold", type=float, default=None, help="Talkthrough's clustering threshold "
                    "(default: the diarize_threshold setting's default)")
    ap.add_argument("--json", type=Path, default=None, help="write every hypothesis and score here")
    ap.add_argument("--words", action="store_true", help="give the turns stage the clip's Whisper words")
    ap.add_argument("--words-cache", type=Path, default=None, help="JSON file keeping those words between runs")
    args = ap.parse_args()
    if not os.environ.get("TALKTHROUGH_DIARIZATION_MODELS") and SHARED_MODELS.is_dir():
        os.environ["TALKTHROUGH_DIARIZATION_MODELS"] = str(SHARED_MODELS)
    os.environ.setdefault("TALKTHROUGH_HOME", tempfile.mkdtemp(prefix="tt-bench-der-"))
    from talkthrough_assets.pipeline import settings as S
    from talkthrough_assets.stages import audio
    from talkthrough_assets.stages.turns.engine import WINDOW_SHIFT_RATIO

    tmp = Path(tempfile.mkdtemp(prefix="tt-der-"))
    cs, skipped = clips(args.media, tmp)
    cs = [c for c in cs if args.only in c["name"]]
    thr = S.DEFAULTS["diarize_threshold"] if args.threshold is None else args.threshold
    print(f"DER ({args.collar:g} s collar, overlap scored) and speakers found/expected")
    print(f"sherpa = sherpa-onnx defaults (window shift 0.1, FastClustering threshold 0.5, no post-processing); "
          f"talkthrough = run_turns (window shift {WINDOW_SHIFT_RATIO}, threshold {thr}, + its merge rules); "
          f"N = the true count given")
    for s in skipped:
        print(f"skipped: {s}")
    systems = ["sherpa", "talkthrough"] + ([] if args.no_given else ["sherpa N", "talkthrough N"])
    print(f"{'clip':30s} " + " ".join(f"{s:>13s}" for s in systems))
    rows = []
    words_cache = json.loads(args.words_cache.read_text()) if args.words_cache and args.words_cache.exists() else {}
    for c in cs:
        wav = to_wav(c["file"], tmp)
        dur = len(audio.load_wav(wav)) / 16000
        text = transcript(wav, words_cache) if args.words else None
        if args.words_cache and args.words:
            args.words_cache.write_text(json.dumps(words_cache))
        row = {"name": c["name"], "group": c["group"], "speakers": c["speakers"], "hyp": {}, "secs": {}, "notes": {}}
        n = c["speakers"]
        runs = {"sherpa": lambda: sherpa_defaults(wav), "talkthrough": lambda: talkthrough(wav, "auto", thr, text),
                "sherpa N": lambda: sherpa_defaults(wav, n), "talkthrough N": lambda: talkthrough(wav, n, thr, text)}
        for s in systems:
            res = runs[s]()
            row["hyp"][s], row["secs"][s] = res[0], round(res[1], 2)
            if len(res) > 2:
                row["notes"][s] = res[2].speaker_count
            row[s] = cell(c, res[0], dur, args.collar)
        rows.append(row)
        print(f"{c['name']:30s} " + " ".join(fmt(row[s], n) for s in systems), flush=True)
    print()
    for label, pick in POOLS:
        print(f"{label:30s} " + " ".join(f"{pooled(rows, s, pick):>13s}" for s in systems))
    print()
    print("missed / false alarm / confusion, % of reference speech, per clip with turns:")
    print(f"{'clip':30s} " + " ".join(f"{s:>20s}" for s in systems))
    for r in rows:
        if all("der" in r[s] for s in systems):
            print(f"{r['name']:30s} " + " ".join(f"{breakdown(r[s]):>20s}" for s in systems))
    for s in systems:
        exact = sum(r[s]["found"] == r["speakers"] for r in rows)
        near = sum(abs(r[s]["found"] - r["speakers"]) <= 1 for r in rows)
        secs = sum(r["secs"][s] for r in rows)
        print(f"count {s:14s}: exact {exact}/{len(rows)}, within 1 {near}/{len(rows)}; {secs:.0f} s of diarization")
    worse = [r["name"] for r in rows if "der" in r["talkthrough"] and r["talkthrough"]["der"] > r["sherpa"]["der"] + 1e-9]
    print("talkthrough (auto) DER worse than sherpa defaults on:", ", ".join(worse) or "none")
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1, default=str))
    return 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""Diarization accuracy on the real evaluation clips: DER (0.25 s collar) and speakers found, for
Talkthrough's auto diarization (``stages.diarize.run_turns`` with num_speakers unset: the engine at
Talkthrough's window shift / threshold, then the same-voice merge) against sherpa-onnx's own defaults
(window_shift_ratio 0.1, FastClustering threshold 0.5, min_duration_on 0.3 / off 0.5, no
post-processing), both measured in the same run.

    python bench/bench_der.py [--media DIR] [--sweep] [--collar 0.25]

``--sweep`` also prints the grid behind the chosen constants: window shift {0.1, 0.25} x
threshold {0.5 .. 0.8}, each through run_turns (so with the merge step).

References (../shared/eval/media, see its SOURCES.md):
  pyannote_sample   diarization/pyannote_sample.rttm                       2 speakers, timed
  pyannote_dev00    refs/pyannote_debug.development.rttm (uri dev00)        2 speakers, timed
  falcon_test       refs/falcon_test_data.json segments                     3 speakers, timed
  stereo            derived here from per-channel activity (left / right talker, 50 ms RMS
                    above -35 dB of the channel peak): 2 speakers, timed (a measurement, not a label)
  leopard           refs/leopard_test_data.json: 3 speakers, no times -> speaker count only
  google_commercial 2 speakers (customer + agent), no times -> speaker count only

DER = (missed + false alarm + confusion) / reference speech, scored on a 10 ms grid outside a
+-collar around every reference boundary, overlap counted per speaker (NIST md-eval style), with the
hypothesis->reference speaker mapping that maximises matched time (exhaustive; few speakers).
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import sys
import tempfile
import time
import wave
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_MEDIA = ROOT.parent / "shared" / "eval" / "media"
SHARED_MODELS = ROOT.parent / "shared" / "models" / "diarization"
STEP = 0.01  # scoring grid, seconds


# --------------------------------------------------------------------------- references

def read_rttm(path: Path, uri: str | None = None) -> list[tuple[float, float, str]]:
    out = []
    for line in path.read_text().splitlines():
        f = line.split()
        if len(f) >= 8 and f[0] == "SPEAKER" and (uri is None or f[1] == uri):
            t0, d = float(f[3]), float(f[4])
            out.append((t0, t0 + d, f[7]))
    return out


def stereo_reference(path: Path, *, win_s: float = 0.05, rel_db: float = -35.0,
                     fill_s: float = 0.3) -> list[tuple[float, float, str]]:
    """Speaker turns of a two-channel file whose talkers are on separate channels: per channel,
    windows with RMS above ``rel_db`` of that channel's loudest window, gaps < ``fill_s`` closed."""
    with wave.open(str(path), "rb") as w:
        sr, ch = w.getframerate(), w.getnchannels()
        x = np.frombuffer(w.readframes(w.getnframes()), dtype="<i2").astype(np.float32).reshape(-1, ch)
    n = int(sr * win_s)
    turns = []
    for c, name in ((0, "left"), (1, "right")):
        y = x[: len(x) // n * n, c].reshape(-1, n)
        rms = np.sqrt((y ** 2).mean(axis=1)) + 1e-9
        db = 20 * np.log10(rms / rms.max())
        active = db > rel_db
        spans, start = [], None
        for i, a in enumerate(list(active) + [False]):
            if a and start is None:
                start = i
            elif not a and start is not None:
                spans.append([start * win_s, i * win_s])
                start = None
        merged = []
        for s in spans:
            if merged and s[0] - merged[-1][1] < fill_s:
                merged[-1][1] = s[1]
            else:
                merged.append(s)
        turns += [(a, b, name) for a, b in merged if b - a >= 0.2]
    return sorted(turns)


def clips(media: Path) -> list[dict]:
    falcon = json.loads((media / "refs/falcon_test_data.json").read_text())["tests"]["diarization_tests"][0]
    return [
        {"name": "pyannote_sample", "file": media / "diarization/pyannote_sample.wav", "speakers": 2,
         "ref": read_rttm(media / "diarization/pyannote_sample.rttm")},
        {"name": "pyannote_dev00", "file": media / "diarization/pyannote_dev00.wav", "speakers": 2,
         "ref": read_rttm(media / "refs/pyannote_debug.development.rttm", "dev00")},
        {"name": "falcon_test", "file": media / "diarization/falcon_test.wav", "speakers": 3,
         "ref": [(s["start_sec"], s["end_sec"], str(s["speaker_tag"])) for s in falcon["segments"]]},
        {"name": "stereo", "file": media / "diarization/faster_whisper_stereo_diarization.wav", "speakers": 2,
         "ref": stereo_reference(media / "diarization/faster_whisper_stereo_diarization.wav")},
        {"name": "leopard", "file": media / "diarization/leopard_diarization_test.wav", "speakers": 3,
         "ref": None},
        {"name": "google_commercial", "file": media / "diarization/google_commercial_mono.wav", "speakers": 2,
         "ref": None},
    ]


# --------------------------------------------------------------------------- scoring

def der(ref: list[tuple], hyp: list[tuple], duration_s: float, collar: float = 0.25) -> dict:
    """DER on a 10 ms grid; ``ref``/``hyp`` are [(t0_s, t1_s, label)]."""
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
            "fa": fa / max(total, 1), "conf": conf / max(total, 1)}


# --------------------------------------------------------------------------- systems

def to_wav(src: Path, tmp: Path) -> Path:
    from talkthrough_assets.stages import audio

    dst = tmp / (src.stem + ".16k.wav")
    if not dst.exists():
        audio.extract_wav(src, dst)
    return dst


def sherpa_defaults(wav: Path) -> tuple[list[tuple], float]:
    """sherpa-onnx with every diarization option at its default, no post-processing."""
    import sherpa_onnx as so

    from talkthrough_assets.stages import audio
    from talkthrough_assets.stages import diarize_engine, diarize_models

    m = diarize_models.resolve_models()
    cfg = so.OfflineSpeakerDiarizationConfig(
        segmentation=so.OfflineSpeakerSegmentationModelConfig(
            pyannote=so.OfflineSpeakerSegmentationPyannoteModelConfig(model=str(m.segmentation)),
            num_threads=diarize_engine.threads()),
        embedding=so.SpeakerEmbeddingExtractorConfig(model=str(m.embedding), num_threads=diarize_engine.threads()),
        clustering=so.FastClusteringConfig(),
    )
    eng = so.OfflineSpeakerDiarization(cfg)
    x = audio.load_wav(wav)
    t = time.perf_counter()
    res = eng.process(np.ascontiguousarray(x, dtype=np.float32)).sort_by_start_time()
    return [(s.start, s.end, s.speaker) for s in res], time.perf_counter() - t


def talkthrough(wav: Path, **kw) -> tuple[list[tuple], float, dict]:
    from talkthrough_assets.stages import diarize as D

    kw.setdefault("threshold", 0.5)
    D.run_turns(wav, segments=[], words=[], num_speakers=None, **kw)  # warm the engine for this config
    t = time.perf_counter()
    out = D.run_turns(wav, segments=[], words=[], num_speakers=None, **kw)
    el = time.perf_counter() - t
    return [(x["t0_ms"] / 1000, x["t1_ms"] / 1000, x["speaker"]) for x in out["turns"]], el, out["diarization"]


def score(clip: dict, hyp: list[tuple], dur: float, collar: float) -> str:
    found = len({h[2] for h in hyp})
    if clip["ref"] is None:
        return f"   -    {found}/{clip['speakers']}"
    d = der(clip["ref"], hyp, dur, collar)
    return f"{d['der'] * 100:5.1f}%  {found}/{clip['speakers']}"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--media", type=Path, default=DEFAULT_MEDIA)
    ap.add_argument("--collar", type=float, default=0.25)
    ap.add_argument("--sweep", action="store_true")
    args = ap.parse_args()
    if not os.environ.get("TALKTHROUGH_DIARIZATION_MODELS") and SHARED_MODELS.is_dir():
        os.environ["TALKTHROUGH_DIARIZATION_MODELS"] = str(SHARED_MODELS)
    os.environ.setdefault("TALKTHROUGH_HOME", tempfile.mkdtemp(prefix="tt-bench-der-"))
    from talkthrough_assets.stages import audio
    from talkthrough_assets.stages import diarize as D
    from talkthrough_assets.stages.diarize_engine import WINDOW_SHIFT_RATIO

    cs = clips(args.media)
    tmp = Path(tempfile.mkdtemp(prefix="tt-der-"))
    print(f"DER with a {args.collar:g} s collar, speakers found/expected; wall s of the diarization call (engine warm)")
    print(f"talkthrough = run_turns(num_speakers=None, threshold=0.5 (settings' diarize_threshold)): window_shift "
          f"{WINDOW_SHIFT_RATIO}, + same-voice merge")
    print(f"{'clip':18s} {'sherpa defaults':>22s} {'talkthrough':>22s}")
    worse = []
    for c in cs:
        wav = to_wav(c["file"], tmp)
        dur = len(audio.load_wav(wav)) / 16000
        hs, ts = sherpa_defaults(wav)
        ht, tt, _ = talkthrough(wav)
        a, b = score(c, hs, dur, args.collar), score(c, ht, dur, args.collar)
        print(f"{c['name']:18s} {a:>15s} {ts:5.1f}s {b:>15s} {tt:5.1f}s")
        if c["ref"] is not None and der(c["ref"], ht, dur, args.collar)["der"] > der(c["ref"], hs, dur, args.collar)["der"] + 1e-9:
            worse.append(c["name"])
        elif c["ref"] is None and abs(len({h[2] for h in ht}) - c["speakers"]) > abs(len({h[2] for h in hs}) - c["speakers"]):
            worse.append(c["name"])
    print("worse than sherpa defaults on:", ", ".join(worse) or "none")
    if args.sweep:
        print("\nsweep: run_turns(num_speakers=None, threshold=T, window_shift=W)  DER / found")
        grid = [(w, t) for w in (0.1, 0.15, 0.25) for t in (0.4, 0.45, 0.5, 0.55)]
        print(f"{'clip':18s} " + " ".join(f"{f'w{w}/t{t}':>13s}" for w, t in grid))
        for c in cs:
            wav = to_wav(c["file"], tmp)
            dur = len(audio.load_wav(wav)) / 16000
            cells = []
            for w, t in grid:
                out = D.run_turns(wav, segments=[], words=[], num_speakers=None, threshold=t, window_shift=w)
                hyp = [(x["t0_ms"] / 1000, x["t1_ms"] / 1000, x["speaker"]) for x in out["turns"]]
                cells.append(score(c, hyp, dur, args.collar))
            print(f"{c['name']:18s} " + " ".join(f"{x:>13s}" for x in cells))
    return 0


if __name__ == "__main__":
    sys.exit(main())

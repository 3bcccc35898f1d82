#!/usr/bin/env python3
"""Accuracy guard for the speed work: the new keyframe/dedup/Whisper defaults against the previous
ones, both measured in this run, on the same files.

    python bench/bench_accuracy.py [--skip-long] [--skip-ocr]

1. Scene cuts. Baseline = keyframes v1 (bench/baseline/keyframes_v1.py: every frame decoded through
   FFmpeg's select filter). For every cut v1 found (a frame kept for its scene score) and every
   known cut (fixture facts, the bench screencast's media.json), the new pass must keep a frame
   within 1.0 s. Files: the fixtures, the 10-min bench screencast, ../shared/eval/media/video/*.
2. OCR words. The set of OCR words (3+ letters, upper-cased) read on the frames each version's dedup
   calls unique (v1: dHash; new: pixel diff + changed bands), per file. Reported: words v1 read that
   the new path did not, and the reverse.
Transcription accuracy is bench/bench_asr.py (against bare faster-whisper).
"""

from __future__ import annotations

import argparse
import dataclasses
import importlib.util
import json
import re
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))
sys.path.insert(0, str(ROOT / "tests"))
from talkthrough_assets.model.frames import Band  # noqa: E402
from talkthrough_assets.stages.ocr.records import FrameToRead  # noqa: E402

EVAL = ROOT.parent / "shared" / "eval" / "media"


def _load(name: str, path: Path):
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


KF_V1 = _load("keyframes_v1", ROOT / "bench" / "baseline" / "keyframes_v1.py")
DD_V1 = _load("dedup_v1", ROOT / "bench" / "baseline" / "dedup_v1.py")


def known_cuts() -> dict[str, list[int]]:
    from fixture_facts import FIXTURES_DIR, SCREENCAST_SCENES, SILENT_SCENES

    out = {str(FIXTURES_DIR / "screencast.mp4"): [s["start_ms"] for s in SCREENCAST_SCENES[1:]],
           str(FIXTURES_DIR / "silent_video.mp4"): [s["start_ms"] for s in SILENT_SCENES[1:]]}
    try:
        import make_long_media

        media = make_long_media.ensure_media(quiet=True)
        facts = json.loads((media["screencast"].parent / "media.json").read_text())
        out[str(media["screencast"])] = [int(s * 1000) for s in facts["screencast"]["scene_cuts_s"][1:]]
    except Exception as e:  # no TTS tools here: the long file is skipped, the rest still runs
        print(f"(10-min screencast unavailable: {e})")
    return out


def run_keyframes(path: str, workdir: Path) -> dict:
    from talkthrough_assets.stages import dedup
    from talkthrough_assets.model import frames as frames_model
    from talkthrough_assets.store.schemas import as_row
    from talkthrough_assets.stages import keyframes
    from talkthrough_assets.pipeline import settings as S
    from talkthrough_assets.stages import probe

    info = probe.probe_file(path)
    dur = info.duration_ms / 1000
    res = {}
    for label, fn in (("v1", KF_V1.extract), ("new", keyframes.extract)):
        d = workdir / label / Path(path).stem
        t = time.perf_counter()
        r = fn(path, d, duration_s=dur, max_frames=S.DEFAULTS["max_frames"])
        r = r if isinstance(r, dict) else dataclasses.asdict(r)  # v1 returned a mapping
        el = time.perf_counter() - t
        if label == "v1":
            hashes = [DD_V1.hashes(d / f["file"]) for f in r["frames"]]
            marks = DD_V1.mark(r["frames"], hashes)
        else:
            marks = [as_row(m) for m in dedup.mark([f["ms"] for f in r["frames"]], [dedup.signature(d / f["file"]) for f in r["frames"]])]
        unique = [FrameToRead(ms=f["ms"], path=d / f["file"], bands=_bands(frames_model.bands(m)))
                  for f, m in zip(r["frames"], marks) if m["duplicate_of"] is None]
        res[label] = {"s": el, "frames": r["frames"], "unique": unique, "decoded": r["decoded"],
                      "path": r.get("path", "select")}
    return res


def cut_report(path: str, res: dict, truth: list[int]) -> tuple[int, int, list]:
    v1_cuts = [f["ms"] for f in res["v1"]["frames"] if f["reason"] == "scene"]
    new_ms = [f["ms"] for f in res["new"]["frames"]]
    want = sorted(set(v1_cuts) | set(truth))
    missed = [c for c in want if not any(abs(m - c) <= 1000 for m in new_ms)]
    return len(want), len(want) - len(missed), missed


def _bands(got: list[list[int]] | None) -> tuple[Band, ...] | None:
    return None if got is None else tuple(Band(*b) for b in got)


def ocr_words(frames: list[FrameToRead], incremental: bool) -> tuple[set[str], float, int]:
    """(words, seconds, frames read in bands): v1 reads every unique frame whole; the new path
    reads the way the pipeline does (ocr.read_frames: only the changed bands when little changed)."""
    from talkthrough_assets.stages import ocr
    from talkthrough_assets.stages.ocr import engine as ocr_engine

    engine, status = ocr_engine.engine_status(True)
    t = time.perf_counter()
    if incremental:
        results = ocr.read_frames(engine, frames)
    else:
        results = [ocr.read_image(engine, f.path) for f in frames]
    el = time.perf_counter() - t
    words: set[str] = set()
    for r in results:
        words |= {w.upper() for w in re.findall(r"[A-Za-z]{3,}", r.text)}
    return words, el, sum(getattr(r, "read", None) == "bands" for r in results)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--skip-long", action="store_true", help="leave out the 10-min bench screencast")
    ap.add_argument("--skip-ocr", action="store_true")
    a = ap.parse_args()
    truth = known_cuts()
    files = list(truth) + sorted(str(p) for p in (EVAL / "video").glob("*") if p.suffix in (".mp4", ".webm"))
    if a.skip_long:
        files = [f for f in files if "10min" not in f]
    workdir = Path(tempfile.mkdtemp(prefix="tt-bench-acc-"))
    print("== scene cuts: new keyframe pass vs v1 (every frame through FFmpeg select), within 1.0 s ==")
    print(f"{'file':<40}{'v1 s':>7}{'new s':>7}{'speed':>7}{'v1 dec':>8}{'new dec':>8}"
          f"{'cuts kept':>11}{'v1 uniq':>9}{'new uniq':>9}  missed")
    all_ok = True
    ocr_rows = []
    for f in files:
        res = run_keyframes(f, workdir)
        n, kept, missed = cut_report(f, res, truth.get(f, []))
        all_ok &= not missed
        v1, new = res["v1"], res["new"]
        print(f"{Path(f).name[:39]:<40}{v1['s']:>7.1f}{new['s']:>7.1f}{v1['s'] / max(new['s'], 1e-3):>6.1f}x"
              f"{v1['decoded']:>8}{new['decoded']:>8}{f'{kept}/{n}':>11}{len(v1['unique']):>9}"
              f"{len(new['unique']):>9}  {missed or ''}")
        ocr_rows.append((f, res))
    print(f"every cut kept within 1.0 s: {'yes' if all_ok else 'NO'}")
    if not a.skip_ocr:
        print("\n== OCR words on unique frames: v1 vs new ==")
        print(f"{'file':<40}{'v1 words':>9}{'new words':>10}{'v1 s':>7}{'new s':>7}{'banded':>8}"
              f"  only in v1 / only in new")
        for f, res in ocr_rows:
            (w1, s1, _), (w2, s2, nb) = ocr_words(res["v1"]["unique"], False), ocr_words(res["new"]["unique"], True)
            print(f"{Path(f).name[:39]:<40}{len(w1):>9}{len(w2):>10}{s1:>7.1f}{s2:>7.1f}{nb:>8}"
                  f"  {sorted(w1 - w2)[:12]} / {sorted(w2 - w1)[:12]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

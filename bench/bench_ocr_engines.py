#!/usr/bin/env python3
"""OCR engine comparison, one run: rapidocr-onnxruntime 1.4 (PP-OCRv4 mobile, the engine before issue #20)
vs rapidocr 3.x (PP-OCRv6 small, the models its wheel ships), read the way the pipeline reads.

    python bench/bench_ocr_engines.py [--skip-long] [--only NAME_PART ...]

Needs both packages in one venv (``pip install rapidocr-onnxruntime`` beside the project's rapidocr;
the old one has wheels for Python <= 3.12 only). Files: the fixtures (screencast, silent_video), the
videos in ../shared/eval/media/video and the 10-min bench screencast (bench/make_long_media.py). Each
file's keyframes and dedup are computed once; both engines then read the same unique frames through
``ocr.read_frames`` (changed bands re-read, the detection-size rule), in alternating order.

Words: 3+ letters, upper-cased, per file (a word glued to its neighbour, "DEPLOY--TARGETSTAGING", is not
the word). Where the on-screen text is known (fixture facts, the bench screencast's topics), "ref" is the
share of those reference words each engine read; elsewhere only the words read are compared.
Seconds: OCR time of the file's unique frames (models loaded and warmed before).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import re
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT / "bench"), str(ROOT / "bench" / "baseline"), str(ROOT / "tests")]
EVAL = ROOT.parent / "shared" / "eval" / "media"


def words(text: str) -> set[str]:
    return {w.upper() for w in re.findall(r"[A-Za-z]{3,}", text)}


def references(skip_long: bool) -> dict[str, set[str] | None]:
    """{file: reference words, or None where the on-screen text is not known}."""
    from fixture_facts import FIXTURES_DIR, SCREENCAST_SCENES, SILENT_SCENES, WINDOW_TITLE_TEXT

    out: dict[str, set[str] | None] = {
        str(FIXTURES_DIR / "screencast.mp4"): set().union(
            words(WINDOW_TITLE_TEXT), *(words(s["title"] + " " + s["subtitle"]) for s in SCREENCAST_SCENES)),
        str(FIXTURES_DIR / "silent_video.mp4"): set().union(
            *(words(s["title"] + " " + s["subtitle"]) for s in SILENT_SCENES))}
    out.update({str(p): None for p in sorted((EVAL / "video").glob("*")) if p.suffix in (".mp4", ".webm")})
    if not skip_long:
        try:
            import make_long_media as ml

            media = ml.ensure_media(quiet=True)
            titles = json.loads((media["screencast"].parent / "media.json").read_text())["screencast"]["titles"]
            ref = words(WINDOW_TITLE_TEXT)
            for title, sub, term in ml.TOPICS:
                if title in titles:
                    ref |= words(f"{title} {sub} {term}")
            out[str(media["screencast"])] = ref
        except Exception as e:  # no TTS tools: the long file is left out, saying so
            print(f"(10-min screencast unavailable: {e})")
    return out


def unique_frames(path: str, workdir: Path) -> list:
    from talkthrough_assets.stages import dedup
    from talkthrough_assets.model import frames as frames_model
    from talkthrough_assets.store.schemas import as_row
    from talkthrough_assets.stages import keyframes
    from talkthrough_assets.pipeline import settings as S
    from talkthrough_assets.stages import probe

    d = workdir / Path(path).stem
    r = dataclasses.asdict(keyframes.extract(path, d, duration_s=probe.probe_file(path).duration_ms / 1000,
                          max_frames=S.DEFAULTS["max_frames"]))
    marks = [as_row(m) for m in dedup.mark([f["ms"] for f in r["frames"]], [dedup.signature(d / f["file"]) for f in r["frames"]])]
    from talkthrough_assets.stages.ocr.records import FrameToRead

    return [FrameToRead(ms=f["ms"], path=d / f["file"], bands=frames_model.FrameChange.from_row(m).changed)
            for f, m in zip(r["frames"], marks) if m["duplicate_of"] is None]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--skip-long", action="store_true", help="leave out the 10-min bench screencast")
    ap.add_argument("--only", action="append", default=[], metavar="SUBSTR",
                    help="only files whose name contains SUBSTR (repeatable)")
    a = ap.parse_args()

    import ocr_v1

    from talkthrough_assets.stages import ocr
    from talkthrough_assets.stages.ocr import engine as ocr_engine

    new, status = ocr_engine.engine_status(True)
    if new is None:
        print(f"new engine: {status}")
        return 2
    try:
        old = ocr_v1.load()
    except ImportError as e:
        print(f"old engine unavailable ({e}): pip install rapidocr-onnxruntime (Python <= 3.12)")
        return 2
    engines = {"old": old, "new": new}
    names = {"old": ocr_v1.name(), "new": ocr.engine_name()}
    print(f"old: {names['old']}\nnew: {names['new']}")
    refs = references(a.skip_long)
    if a.only:
        refs = {f: r for f, r in refs.items() if any(o in Path(f).name for o in a.only)}
    workdir = Path(tempfile.mkdtemp(prefix="tt-bench-ocr-"))
    warm = unique_frames(str(ROOT / "fixtures" / "screencast.mp4"), workdir / "warm")[:1]
    for e in engines.values():
        ocr.read_frames(e, warm)

    print(f"\n{'file':<38}{'frames':>7}{'old w':>7}{'new w':>7}{'old ref':>9}{'new ref':>9}"
          f"{'old s':>7}{'new s':>7}  only old / only new")
    tot = {"old": [0, 0.0, 0], "new": [0, 0.0, 0]}  # words, seconds, reference words read
    ref_total = 0
    for i, (f, ref) in enumerate(refs.items()):
        frames = unique_frames(f, workdir)
        got, secs = {}, {}
        for k in (("old", "new") if i % 2 == 0 else ("new", "old")):
            t = time.perf_counter()
            res = ocr.read_frames(engines[k], frames)
            secs[k] = time.perf_counter() - t
            got[k] = set().union(*(words(r.text) for r in res)) if res else set()
        for k in tot:
            tot[k][0] += len(got[k])
            tot[k][1] += secs[k]
            tot[k][2] += len(got[k] & ref) if ref else 0
        ref_total += len(ref) if ref else 0
        rr = {k: (f"{len(got[k] & ref)}/{len(ref)}" if ref else "-") for k in got}
        print(f"{Path(f).name[:37]:<38}{len(frames):>7}{len(got['old']):>7}{len(got['new']):>7}{rr['old']:>9}"
              f"{rr['new']:>9}{secs['old']:>7.1f}{secs['new']:>7.1f}  "
              f"{sorted(got['old'] - got['new'])[:8]} / {sorted(got['new'] - got['old'])[:8]}", flush=True)
    ref_col = {k: f"{tot[k][2]}/{ref_total}" for k in tot}
    print(f"{'total':<38}{'':>7}{tot['old'][0]:>7}{tot['new'][0]:>7}{ref_col['old']:>9}{ref_col['new']:>9}"
          f"{tot['old'][1]:>7.1f}{tot['new'][1]:>7.1f}")
    print(f"\nreference words read: old {tot['old'][2] / max(ref_total, 1):.1%}, new {tot['new'][2] / max(ref_total, 1):.1%}; "
          f"words read: new/old {tot['new'][0] / max(tot['old'][0], 1):.2f}x; "
          f"OCR seconds: new/old {tot['new'][1] / max(tot['old'][1], 1e-9):.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())

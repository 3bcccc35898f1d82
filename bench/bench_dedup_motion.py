#!/usr/bin/env python3
"""Duplicate removal with small moving things, this checkout's dedup vs an earlier commit's, same keyframes.

    python bench/bench_dedup_motion.py --before REF [--long] [--ocr]

Generates the pointer, caret, clock and typed screencasts of tests/motion_clips.py, takes the keyframes of
those, the fixtures and the public clips of ../shared/eval/media/video once, and prints for each how many
of them each version of ``dedup.mark`` keeps as unique (``--before``: a git ref whose
talkthrough_assets/stages/dedup.py is the baseline). The date and load are printed with it.

``--long`` adds the bench screencasts of bench/make_long_media.py (the 10-min one and the 3-min seed-0
generation; 24 and 9 scenes, each typing its terminal line at the same spot). ``--ocr`` also reads each
version's unique frames the way the OCR stage does (only the changed bands of a frame little changed) and
prints the OCR words (3+ letters) and, for the typed clip and the bench screencasts, in how many scenes
every word of the typed line (that no slide shows) was read on a frame of that scene.
"""

from __future__ import annotations

import argparse
import dataclasses
import importlib.util
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT / "bench"))


def main() -> int:
    import motion_clips as mc

    from talkthrough_assets.pipeline import settings
    from talkthrough_assets.stages import dedup, keyframes, probe
    from talkthrough_assets.store.schemas import as_row

    ap = argparse.ArgumentParser()
    ap.add_argument("--before", required=True, help="git ref of the baseline dedup")
    ap.add_argument("--long", action="store_true", help="add the bench screencasts (make_long_media.py)")
    ap.add_argument("--ocr", action="store_true", help="OCR words and typed terminal lines read, per version")
    args = ap.parse_args()
    print(time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "load", os.getloadavg())
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        src = subprocess.run(["git", "show", f"{args.before}:talkthrough_assets/stages/dedup.py"], cwd=ROOT,
                             check=True, capture_output=True, text=True).stdout
        (tmp / "dedup_before.py").write_text(src)
        spec = importlib.util.spec_from_file_location("dedup_before", tmp / "dedup_before.py")
        before = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(before)
        clips = [mc.write_clip(k, tmp / f"{k}.mp4") for k in (*mc.KINDS, "typed")]
        clips += [ROOT / "fixtures" / "screencast.mp4", ROOT / "fixtures" / "silent_video.mp4"]
        clips += sorted((ROOT.parent / "shared" / "eval" / "media" / "video").glob("*"))
        scenes = {clips[len(mc.KINDS)]: typed_lines(mc)} | (long_screencasts() if args.long else {})
        clips += [p for p in scenes if p not in clips]
        for clip in clips:
            out = tmp / clip.stem
            info = probe.probe_file(clip)
            res = dataclasses.asdict(keyframes.extract(clip, out, duration_s=info.duration_ms / 1000,
                                    max_frames=settings.DEFAULTS["max_frames"]))
            counts, reads = [], []
            for mod in (before, dedup):
                # this version's mark takes the frames' times; a version before it took the rows
                frames = [f["ms"] for f in res["frames"]] if mod is dedup else res["frames"]
                rows = mod.mark(frames, [mod.signature(out / f["file"]) for f in res["frames"]])
                counts.append(sum(as_row(r)["duplicate_of"] is None for r in rows))
                if args.ocr:
                    reads.append(ocr_read(out, res["frames"], [as_row(r) for r in rows], scenes.get(clip)))
            print(f"{clip.name}: keyframes {len(res['frames'])}, unique before {counts[0]}, after {counts[1]}"
                  + "".join(f"; {name}: {r}" for name, r in zip(("before", "after"), reads)), flush=True)
    return 0


def typed_lines(mc) -> list:
    """The typed clip's slides: [(start ms, the words of its typed line that its slide does not show)]."""
    import re

    out = []
    for (title, body, _), (start, _), line in zip(mc.SLIDES, mc.slide_spans_ms(), mc.TYPED):
        shown = set(re.findall(r"[A-Z]{3,}", f"{title} {body}".upper()))
        out.append((start, [w for w in re.findall(r"[A-Z]{3,}", line.upper()) if w not in shown]))
    return out


def long_screencasts() -> dict:
    """The bench screencasts: path -> [(scene start ms, the words of its terminal line)]."""
    import json
    import re

    import make_long_media as lm

    shown = {w for title, sub, _ in lm.TOPICS for w in re.findall(r"[A-Z]{3,}", f"{title} {sub}".upper())}
    # a typed line is read when its words that no title or subtitle holds are read
    terminal = {title: [w for w in re.findall(r"[A-Z]{3,}", term.upper()) if w not in shown]
                for title, _, term in lm.TOPICS}
    ten = lm.ensure_media(quiet=True)["screencast"]
    facts = json.loads((ten.parent / "media.json").read_text())["screencast"]
    three, facts3 = lm.screencast_variant(0, minutes=3, quiet=True)
    return {p: [(int(s * 1000), terminal[t]) for s, t in zip(f["scene_cuts_s"], f["titles"])]
            for p, f in ((ten, facts), (three, facts3))}


def ocr_read(folder: Path, frames: list[dict], rows: list[dict], scenes: list | None) -> str:
    """OCR words on the unique frames, read as the OCR stage reads them, and the scenes (start ms,
    terminal line's words) whose typed line was read on one of their frames."""
    import re

    from talkthrough_assets.model import frames as frames_model
    from talkthrough_assets.stages import ocr
    from talkthrough_assets.stages.ocr import engine as ocr_engine

    engine, _ = ocr_engine.engine_status(True)
    unique = [{"ms": f["ms"], "path": folder / f["file"], "bands": frames_model.bands(r)}
              for f, r in zip(frames, rows) if r["duplicate_of"] is None]
    texts = [(r["ms"], r["text"].upper()) for r in ocr.read_frames(engine, unique)]
    words = {w for _, t in texts for w in re.findall(r"[A-Z]{3,}", t)}
    out = f"OCR words {len(words)}"
    if scenes:
        ends = [s for s, _ in scenes[1:]] + [10**12]
        typed = sum(any(s <= ms < e and all(w in re.findall(r"[A-Z]{3,}", t) for w in line) for ms, t in texts)
                    for (s, line), e in zip(scenes, ends))
        out += f", typed lines read {typed}/{len(scenes)}"
    return out


if __name__ == "__main__":
    raise SystemExit(main())

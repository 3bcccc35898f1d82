#!/usr/bin/env python3
"""Duplicate removal with small moving things, this checkout's dedup vs an earlier commit's, same keyframes.

    python bench/bench_dedup_motion.py --before REF

Generates the pointer, caret and clock screencasts of tests/motion_clips.py, takes the keyframes of
those, the fixtures and the public clips of ../shared/eval/media/video once, and prints for each how many
of them each version of ``dedup.mark`` keeps as unique (``--before``: a git ref whose
talkthrough_assets/stages/dedup.py is the baseline). The date and load are printed with it.
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


def main() -> int:
    import motion_clips as mc

    from talkthrough_assets.pipeline import settings
    from talkthrough_assets.stages import dedup, keyframes, probe
    from talkthrough_assets.store.schemas import as_row

    ap = argparse.ArgumentParser()
    ap.add_argument("--before", required=True, help="git ref of the baseline dedup")
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
        clips = [mc.write_clip(k, tmp / f"{k}.mp4") for k in mc.KINDS]
        clips += [ROOT / "fixtures" / "screencast.mp4", ROOT / "fixtures" / "silent_video.mp4"]
        clips += sorted((ROOT.parent / "shared" / "eval" / "media" / "video").glob("*"))
        for clip in clips:
            out = tmp / clip.stem
            info = probe.probe_file(clip)
            res = dataclasses.asdict(keyframes.extract(clip, out, duration_s=info.duration_ms / 1000,
                                    max_frames=settings.DEFAULTS["max_frames"]))
            counts = []
            for mod in (before, dedup):
                # this version's mark takes the frames' times; a version before it took the rows
                frames = [f["ms"] for f in res["frames"]] if mod is dedup else res["frames"]
                rows = mod.mark(frames, [mod.signature(out / f["file"]) for f in res["frames"]])
                counts.append(sum(as_row(r)["duplicate_of"] is None for r in rows))
            print(f"{clip.name}: keyframes {len(res['frames'])}, unique before {counts[0]}, after {counts[1]}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

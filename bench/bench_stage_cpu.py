#!/usr/bin/env python3
"""Each stage's CPU on one recording, stage by stage: where `process`'s CPU goes beside the decoder.

    python bench/bench_stage_cpu.py [FILE] [--stages keyframes,dedup,ocr,segments] [--json]

FILE (default: the 10-min screencast of bench/make_long_media.py) is processed once, cold, by `talkthrough process`
in a new data root; then each stage named is run again on its own, in this process, one after the other, with the
stored Whisper chunk and OCR results removed before each (so it decodes and reads everything again), and its
process CPU seconds and wall seconds are printed with its metadata. Each stage runs alone here: Whisper on its
threads for a stage with nothing beside it, OCR on every core. Printed beside them: the share of the stages' CPU
each took. The branch whose stages take the most CPU is the one `process` waits for on two cores.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("file", nargs="?")
    ap.add_argument("--stages", default="keyframes,dedup,ocr,segments")
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args(argv)
    if a.file is None:
        import make_long_media

        a.file = str(make_long_media.ensure_media(quiet=True)["screencast"])
    home = Path(tempfile.mkdtemp(prefix="tt-bench-stagecpu-"))
    os.environ["TALKTHROUGH_HOME"] = str(home)
    os.environ.pop("DAGSTER_HOME", None)
    try:
        exe = Path(sys.executable).parent / "talkthrough"
        cmd = [str(exe)] if exe.exists() else [sys.executable, "-m", "talkthrough_assets.cli.main"]
        out = subprocess.run([*cmd, "process", a.file, "--json"], capture_output=True, text=True, check=True)
        rid = json.loads(out.stdout)[0]["recording_id"]
        rows = run_stages(home, rid, a.stages.split(","))
    finally:
        shutil.rmtree(home, ignore_errors=True)
    total = sum(r["cpu_s"] for r in rows) or 1.0
    print(f"{Path(a.file).name}: each stage alone, its stored results removed first; load {os.getloadavg()[0]:.1f}")
    for r in rows:
        print(f"{r['stage']:<10}{r['cpu_s']:>8.1f} s CPU{r['wall_s']:>8.1f} s wall{100 * r['cpu_s'] / total:>6.1f} %   "
              + json.dumps(r["metadata"])[:300])
    if a.json:
        print(json.dumps(rows, indent=2))
    return 0


def run_stages(home: Path, rid: str, stages: list[str]) -> list[dict]:
    from talkthrough_assets.pipeline.engines import shared
    from talkthrough_assets.pipeline.stagerun import run_stage

    rows = []
    for stage in stages:
        for kind in ("whisper", "ocr"):  # stored results: decoded and read again
            shutil.rmtree(home / "chunks" / kind, ignore_errors=True)
        c, t = time.process_time(), time.perf_counter()
        res = run_stage(stage, rid, None, shared())
        rows.append({"stage": stage, "cpu_s": time.process_time() - c, "wall_s": time.perf_counter() - t,
                     "metadata": {k: v for k, v in res.metadata.items() if k not in ("transcript_head", "frames_dir")}})
    return rows


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""Would a keyframe scan resumable by time range pay? (#19 item 2), in one run:

    python bench/bench_keyframe_resume.py [--kill-share 0.6] [--media PATH]

``talkthrough process`` of the 10-min bench screencast (bench/make_long_media.py) in a fresh data root (clean run:
each stage's start and seconds from ``stage_runs``), then in another fresh root the same run killed with SIGKILL
when the keyframes stage is ``--kill-share`` through (its start and length taken from the clean run), and run
again. Prints the keyframe scan's seconds against the whole run, what the re-run cost against the clean run, and
the most a resumable scan could have saved (the share of the scan done before the kill).
"""

from __future__ import annotations

import argparse
import os
import resource
import signal
import shutil
import subprocess
import sys
import tempfile
import time
from datetime import datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))


def _stage_runs(home: Path) -> dict[str, dict]:
    import pyarrow.parquet as pq

    files = [f for f in (home / "tables" / "stage_runs").rglob("*.parquet") if "__schema__" not in str(f)] \
        if (home / "tables" / "stage_runs").exists() else []
    return {r["stage"]: r for f in files for r in pq.read_table(f).to_pylist()}


def _run(home: Path, media: Path, kill_after: float | None = None) -> tuple[float, float, float, int]:
    """(wall s, CPU s of it and its children, start as epoch s, exit code)."""
    env = dict(os.environ, TALKTHROUGH_HOME=str(home), DAGSTER_HOME=str(home / "dagster"))
    cmd = [sys.executable, "-m", "talkthrough_assets.cli.main", "process", str(media), "--json"]
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0, w0 = time.time(), time.perf_counter()
    p = subprocess.Popen(cmd, env=env, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                         start_new_session=True)
    try:
        rc = p.wait(timeout=kill_after)
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)
        rc = p.wait()
    wall = time.perf_counter() - w0
    ru2 = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (ru2.ru_utime - ru.ru_utime) + (ru2.ru_stime - ru.ru_stime), t0, rc


def _timeline(runs: dict[str, dict], t0: float, since: float = 0.0) -> dict[str, tuple[float, float]]:
    """stage -> (start s after t0, seconds) of the stages that finished after ``since`` (epoch s)."""
    out = {}
    for stage, r in runs.items():
        end = datetime.fromisoformat(r["finished_at"]).timestamp()
        if end >= since:
            out[stage] = (end - r["elapsed_s"] - t0, r["elapsed_s"])
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--kill-share", type=float, default=0.6)
    ap.add_argument("--media", type=Path)
    args = ap.parse_args()
    import make_long_media as ml

    media = args.media or ml.ensure_media(quiet=True)["screencast"]
    work = Path(tempfile.mkdtemp(prefix="bench-kfresume-"))
    load0 = os.getloadavg()[0]
    try:
        clean_home, crash_home = work / "clean", work / "crash"
        clean_wall, clean_cpu, t0, rc = _run(clean_home, media)
        assert rc == 0, f"clean run failed (exit {rc})"
        clean = _timeline(_stage_runs(clean_home), t0)
        print(f"== {media.name}: clean run {clean_wall:.1f} s wall / {clean_cpu:.1f} s CPU (load {load0:.1f})")
        for stage, (start, secs) in sorted(clean.items(), key=lambda kv: kv[1][0]):
            print(f"  {stage:12} starts {start:6.1f} s, {secs:6.1f} s ({secs / clean_wall:5.1%} of the run)")
        kf_start, kf_s = clean["keyframes"]
        kill_at = kf_start + args.kill_share * kf_s
        killed_wall, _, _, rc = _run(crash_home, media, kill_after=kill_at)
        done = sorted(_stage_runs(crash_home))
        rerun_wall, rerun_cpu, t1, rc2 = _run(crash_home, media)
        assert rc2 == 0, f"re-run failed (exit {rc2})"
        again = _timeline(_stage_runs(crash_home), t1, since=t1)
        print(f"killed at {kill_at:.1f} s ({args.kill_share:.0%} into the keyframe scan; exit {rc}); stages finished "
              f"before the kill: {', '.join(done) or 'none'}")
        print(f"re-run {rerun_wall:.1f} s wall / {rerun_cpu:.1f} s CPU = {rerun_wall / clean_wall:.2f}x / "
              f"{rerun_cpu / clean_cpu:.2f}x the clean run; its stages: "
              + ", ".join(f"{s} {v[1]:.1f} s" for s, v in sorted(again.items(), key=lambda kv: kv[1][0])))
        saved = args.kill_share * kf_s
        print(f"keyframe scan {kf_s:.1f} s = {kf_s / clean_wall:.1%} of the clean run; a scan resumable by time range "
              f"would save at most {saved:.1f} s = {saved / rerun_wall:.1%} of the re-run, "
              f"{saved / clean_wall:.1%} of a clean run (load {os.getloadavg()[0]:.1f} at the end)")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

#!/usr/bin/env python3
"""Branch concurrency: the audio branch (audio -> segments) and the visual branch (keyframes ->
dedup -> ocr) are independent. Is the whole graph as fast as its slower branch?

    python bench/bench_branches.py [--file PATH] [--variants dagster,dagster_seq,audio,visual,...]

Default file: the 10-min 1080p30 screencast from bench/make_long_media.py. One process, one fresh
TALKTHROUGH_HOME, models warmed up on fixtures/screencast.mp4 first. Measured on the long file:

  dagster        the whole graph through the product job (runs.run_stages): one multi-asset step,
                 stages in 2 threads as soon as their inputs are ready (scheduler.run_stages)
  dagster_seq    the same with TALKTHROUGH_STAGE_WORKERS=1 (stages one after another): the old shape
  dagster_w1     concurrent, Whisper on 1 thread (TALKTHROUGH_WHISPER_THREADS=1) instead of 2
  audio          the audio branch alone: stagerun.run_stage("audio"), ("segments")
  visual         the visual branch alone: run_stage("keyframes"), ("dedup"), ("ocr")

ratio = variant wall / slower branch alone (target <= 1.2). The CPU bound on this machine is
(audio cpu + visual cpu) / CPUs: no scheduling can beat it.
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))
AUDIO = ("audio", "segments")
VISUAL = ("keyframes", "dedup", "ocr")


def _cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    c = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime + c.ru_utime + c.ru_stime


def _cpu_str(name: str, cpu: float) -> str:
    return f"{cpu:.1f}"


def timed(fn) -> tuple[float, float]:
    c0, t0 = _cpu(), time.perf_counter()
    fn()
    return time.perf_counter() - t0, _cpu() - c0


def run_dagster(rid: str, inst, **env: str) -> None:
    from talkthrough_assets.app import runs
    from talkthrough_assets.pipeline.settings import STAGES

    saved = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    try:
        res = runs.run_stages(rid, list(STAGES), inst)
    finally:
        for k, v in saved.items():
            os.environ.pop(k, None) if v is None else os.environ.__setitem__(k, v)
    assert res.success, "in-process run failed"


def run_branch(rid: str, stages: tuple[str, ...]) -> None:
    from talkthrough_assets.pipeline import stagerun

    for s in stages:
        stagerun.run_stage(s, rid)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--file", help="video with audio (default: the 10-min bench screencast)")
    ap.add_argument("--variants", default="dagster,dagster_seq,dagster_w1,audio,visual")
    ap.add_argument("--overhead-file", default=str(ROOT / "fixtures" / "screencast.mp4"))
    a = ap.parse_args(argv)
    if not a.file:
        import make_long_media

        a.file = str(make_long_media.ensure_media()["screencast"])
    home = Path(tempfile.mkdtemp(prefix="tt-bench-br-"))
    os.environ["TALKTHROUGH_HOME"] = str(home)
    os.environ.pop("DAGSTER_HOME", None)
    from talkthrough_assets.app import service
    from talkthrough_assets.app import runs

    ncpu = os.cpu_count() or 1
    try:
        inst = runs.instance()
        small = service.register(a.overhead_file, inst)
        t = time.perf_counter()
        run_dagster(small, inst)  # warm-up: imports, whisper + OCR model loads
        print(f"warm-up on {Path(a.overhead_file).name}: {time.perf_counter() - t:.1f}s; {ncpu} CPUs, "
              f"load average {os.getloadavg()[0]:.1f}")
        rid = service.register(a.file, inst)
        import av

        with av.open(a.file) as c:
            dur = c.duration / 1e6
        print(f"file: {a.file} ({dur:.0f}s)")
        names = [v.strip() for v in a.variants.split(",") if v.strip()]
        if names and names[0] != "dagster":  # every variant needs probe's output first
            run_dagster(rid, inst)
        fns = {"dagster": lambda: run_dagster(rid, inst),
               "dagster_seq": lambda: run_dagster(rid, inst, TALKTHROUGH_STAGE_WORKERS="1"),
               "dagster_w1": lambda: run_dagster(rid, inst, TALKTHROUGH_WHISPER_THREADS="1"),
               "audio": lambda: run_branch(rid, AUDIO), "visual": lambda: run_branch(rid, VISUAL)}
        res: dict[str, tuple[float, float]] = {}
        for n in names:
            res[n] = timed(fns[n])
            print(f"  {n:<15} {res[n][0]:7.1f}s wall {_cpu_str(n, res[n][1])}s cpu", flush=True)

        if "audio" in res and "visual" in res:
            slower = max(res["audio"][0], res["visual"][0])
            print(f"\n{'variant':<16}{'wall s':>8}{'cpu s':>8}{'x realtime':>11}{'/ slower branch':>17}  target <= 1.2")
            for n, (w, c) in res.items():
                ok = "" if n in ("audio", "visual") else ("met" if w / slower <= 1.2 else "MISSED")
                print(f"{n:<16}{w:>8.1f}{_cpu_str(n, c):>8}{dur / w:>11.2f}{w / slower:>17.2f}  {ok}")
            bound = (res["audio"][1] + res["visual"][1]) / ncpu
            print(f"{'cpu bound':<16}{bound:>8.1f}{'':>8}{dur / bound:>11.2f}{max(bound, slower) / slower:>17.2f}"
                  f"  (audio+visual cpu / {ncpu} CPUs: best any scheduler can do here)")
            print(f"sum of branches {res['audio'][0] + res['visual'][0]:.1f}s = "
                  f"{(res['audio'][0] + res['visual'][0]) / slower:.2f} x slower branch")

    finally:
        shutil.rmtree(home, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())

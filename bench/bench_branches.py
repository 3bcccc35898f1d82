#!/usr/bin/env python3
"""Branch concurrency: the audio branch (audio -> segments) and the visual branch (keyframes ->
dedup -> ocr) are independent. Is the whole graph as fast as its slower branch?

    python bench/bench_branches.py [--file PATH] [--variants ...] [--overhead-rounds 2]

Default file: the 10-min 1080p30 screencast from bench/make_long_media.py. One process, one
fresh TALKTHROUGH_HOME, models warmed up on fixtures/screencast.mp4 first. Measured on the long file:

  dagster      the whole graph through the product job (service.run_stages: in-process executor)
  audio        the audio branch alone: pipeline.run_stage("audio"), ("segments")
  visual       the visual branch alone: run_stage("keyframes"), ("dedup"), ("ocr")
  threads      prototype: probe, wall_clock; then the two branches in a 2-thread pool (run_stage
               calls, partition lock held by the caller as service.process does); then manifest
  mp_nolock    prototype: the same assets in a one-off job with multiprocess_executor
               (max_concurrent=2), with the per-stage partition lock lifted in the step processes
               (as shipped, that flock makes the two branches' steps wait for each other)
  (optional: `mp` = multiprocess as shipped, lock on; `mp_fork_nolock` = forkserver start method
               with talkthrough_assets.definitions preloaded, lock lifted)

ratio = variant wall / slower branch alone (target <= 1.2). The CPU bound on this machine is
(audio cpu + visual cpu) / CPUs: no scheduling can beat it.

Then the per-run cost of the multiprocess executor on the small fixture (24 s): in-process vs
multiprocess as shipped (`mp`), with the lock lifted (`mp_nolock`), and forkserver-started with the
lock lifted (`mp_fork_nolock`), alternating.
Product code is not modified; the one-off job and the lock lift exist only inside this script.
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import statistics
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from contextlib import nullcontext
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))
LIFT_ENV = "TT_BENCH_LIFT_STAGE_LOCK"
START_ENV = "TT_BENCH_MP_START"
AUDIO = ("audio", "segments")
VISUAL = ("keyframes", "dedup", "ocr")


def mp_job():
    """The product's assets in a job with the multiprocess executor (loaded by every step process)."""
    from dagster import AssetSelection, Definitions, define_asset_job, multiprocess_executor

    from talkthrough_assets import definitions as d
    from talkthrough_assets.settings import STAGES

    if os.environ.get(LIFT_ENV) == "1":
        from talkthrough_assets import store

        store.partition_lock = lambda recording_id, timeout_s=0.0: nullcontext()
    cfg: dict = {"max_concurrent": 2}
    if os.environ.get(START_ENV) == "forkserver":  # steps fork from a server that already imported everything
        cfg["start_method"] = {"forkserver": {"preload_modules": ["talkthrough_assets.definitions"]}}
    job = define_asset_job("process_recording_mp", selection=AssetSelection.assets(*STAGES),
                           executor_def=multiprocess_executor.configured(cfg))
    return Definitions(assets=d.ASSETS, jobs=[job]).resolve_job_def("process_recording_mp")


def _cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    c = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime + c.ru_utime + c.ru_stime


def _cpu_str(name: str, cpu: float) -> str:
    # forkserver step workers are the server's children, not ours: their CPU is not visible here
    return "-" if "fork" in name else f"{cpu:.1f}"


def timed(fn) -> tuple[float, float]:
    c0, t0 = _cpu(), time.perf_counter()
    fn()
    return time.perf_counter() - t0, _cpu() - c0


def run_dagster(rid: str, inst) -> None:
    from talkthrough_assets import service
    from talkthrough_assets.settings import STAGES

    res = service.run_stages(rid, list(STAGES), inst)
    assert res.success, "in-process run failed"


def run_mp(rid: str, inst, lift_lock: bool, start: str = "spawn") -> None:
    from dagster import AssetKey, execute_job, reconstructable

    from talkthrough_assets.settings import STAGES

    os.environ[LIFT_ENV] = "1" if lift_lock else "0"
    os.environ[START_ENV] = start
    # step workers log "Executing step ... in subprocess" at DEBUG to the inherited stderr: park it
    log = tempfile.TemporaryFile()
    saved = os.dup(2)
    sys.stderr.flush()
    os.dup2(log.fileno(), 2)
    try:
        res = execute_job(reconstructable(mp_job), instance=inst, tags={"dagster/partition": rid},
                          asset_selection=[AssetKey(s) for s in STAGES],
                          run_config={"loggers": {"console": {"config": {"log_level": "CRITICAL"}}}})
    finally:
        sys.stderr.flush()
        os.dup2(saved, 2)
        os.close(saved)
        os.environ.pop(LIFT_ENV, None)
        os.environ.pop(START_ENV, None)
    if not res.success:
        log.seek(0)
        sys.stderr.write(log.read().decode(errors="replace")[-4000:])
        raise RuntimeError("multiprocess run failed")
    log.close()


def run_branch(rid: str, stages: tuple[str, ...]) -> None:
    from talkthrough_assets import pipeline

    for s in stages:
        pipeline.run_stage(s, rid)


def run_threads(rid: str) -> None:
    from talkthrough_assets import pipeline, store

    with store.partition_lock(rid):  # held by the caller, like service.process; steps re-enter it
        for s in ("probe", "wall_clock"):
            pipeline.run_stage(s, rid)
        with ThreadPoolExecutor(2) as ex:
            futs = [ex.submit(run_branch, rid, AUDIO + ("turns",)), ex.submit(run_branch, rid, VISUAL)]
            for f in futs:
                f.result()
        pipeline.run_stage("manifest", rid)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--file", help="video with audio (default: the 10-min bench screencast)")
    ap.add_argument("--variants", default="dagster,audio,visual,threads,mp_nolock,mp_fork_nolock")
    ap.add_argument("--overhead-file", default=str(ROOT / "fixtures" / "screencast.mp4"))
    ap.add_argument("--overhead-rounds", type=int, default=2, help="0 skips the executor-overhead part")
    a = ap.parse_args(argv)
    if not a.file:
        import make_long_media

        a.file = str(make_long_media.ensure_media()["screencast"])
    home = Path(tempfile.mkdtemp(prefix="tt-bench-br-"))
    os.environ["TALKTHROUGH_HOME"] = str(home)
    os.environ.pop("DAGSTER_HOME", None)
    from talkthrough_assets import service
    from talkthrough_assets.settings import STAGES

    ncpu = os.cpu_count() or 1
    try:
        inst = service.instance()
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
        fns = {"dagster": lambda: run_dagster(rid, inst), "audio": lambda: run_branch(rid, AUDIO),
               "visual": lambda: run_branch(rid, VISUAL), "threads": lambda: run_threads(rid),
               "mp_nolock": lambda: run_mp(rid, inst, True), "mp": lambda: run_mp(rid, inst, False),
               "mp_fork_nolock": lambda: run_mp(rid, inst, True, "forkserver")}
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

        if a.overhead_rounds > 0:
            print(f"\nexecutor overhead per run on {Path(a.overhead_file).name} (all {len(STAGES)} stages, "
                  f"{a.overhead_rounds} rounds, medians):")
            ov = {"in_process": [], "mp": [], "mp_nolock": [], "mp_fork_nolock": []}
            for _ in range(a.overhead_rounds):
                ov["in_process"].append(timed(lambda: run_dagster(small, inst))[0])
                ov["mp"].append(timed(lambda: run_mp(small, inst, False))[0])
                ov["mp_nolock"].append(timed(lambda: run_mp(small, inst, True))[0])
                ov["mp_fork_nolock"].append(timed(lambda: run_mp(small, inst, True, "forkserver"))[0])
            base = statistics.median(ov["in_process"])
            print(f"{'executor':<16}{'wall s':>8}{'x in-process':>14}{'extra s/run':>13}")
            for n, xs in ov.items():
                m = statistics.median(xs)
                print(f"{n:<16}{m:>8.1f}{m / base:>14.2f}{m - base:>+13.1f}")
    finally:
        shutil.rmtree(home, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Orchestration overhead: the same stage functions called directly vs. materialized through the
Dagster job (in-process executor, SQLite instance), on the same file, alternating, same process.

    python bench/bench_overhead.py [FILE] [--rounds 3]

Prints per-round timings, medians, and the ratio dagster/direct (target <= 1.10).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("file", nargs="?", default=str(ROOT / "fixtures" / "screencast.mp4"))
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    os.environ["TALKTHROUGH_HOME"] = tempfile.mkdtemp(prefix="tt-bench-")
    os.environ.pop("DAGSTER_HOME", None)
    from talkthrough_assets.pipeline import stagerun
    from talkthrough_assets.app import service
    from talkthrough_assets.app import runs
    from talkthrough_assets.pipeline.settings import STAGES

    inst = runs.instance()
    rid = service.register(args.file, inst)
    t = time.perf_counter()
    for s in STAGES:  # warm-up: model loads and imports are not orchestration cost
        stagerun.run_stage(s, rid)
    print(f"warm-up (first run incl. model loads): {time.perf_counter() - t:.2f}s")
    direct, dag = [], []
    for r in range(args.rounds):
        t = time.perf_counter()
        for s in STAGES:
            stagerun.run_stage(s, rid)
        direct.append(time.perf_counter() - t)
        t = time.perf_counter()
        res = runs.run_stages(rid, list(STAGES), inst)
        dag.append(time.perf_counter() - t)
        assert res.success
        print(f"round {r + 1}: direct {direct[-1]:.2f}s  dagster {dag[-1]:.2f}s")
    md, mg = statistics.median(direct), statistics.median(dag)
    print(f"\nmedian direct  {md:.2f}s\nmedian dagster {mg:.2f}s\noverhead       {mg - md:+.2f}s"
          f"\nratio dagster/direct {mg / md:.3f}  (target <= 1.10)")


if __name__ == "__main__":
    sys.exit(main())

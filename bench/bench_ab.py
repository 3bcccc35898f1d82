#!/usr/bin/env python3
"""Cold `talkthrough process` of one file under two or more environments, interleaved (A, B, A, B, ...) so that
load drift hits each alike.

    python bench/bench_ab.py FILE [--reps 2] --variant NAME:VAR=VALUE[,VAR=VALUE] --variant NAME: [--json]

e.g. ``--variant one-thread:TALKTHROUGH_WHISPER_THREADS=1 --variant default:`` (a variant with nothing after the
colon runs with the environment as it is). Each run: a new empty data root (``bench_throughput.run_process``).
Printed per run and as medians: wall and CPU seconds of the child, and its stages' own seconds (segments,
keyframes, ocr); then each variant's median wall against the first variant's. Only ratios within one run mean
anything on a shared machine: the load average is printed at start and end.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import bench_throughput as tp  # noqa: E402  (run_process)


def variant(text: str) -> tuple[str, dict]:
    name, _, assigns = text.partition(":")
    env = dict(a.split("=", 1) for a in assigns.split(",") if a)
    return name, env


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("file")
    ap.add_argument("--reps", type=int, default=2)
    ap.add_argument("--variant", action="append", type=variant, required=True)
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args()
    variants = dict(a.variant)
    print(f"{os.cpu_count()} CPUs, load average {' '.join(f'{x:.1f}' for x in os.getloadavg())}; "
          f"{Path(a.file).name}, {a.reps} cold runs per variant, interleaved", flush=True)
    res: dict[str, list[dict]] = {k: [] for k in variants}
    for _ in range(a.reps):
        for name, env in variants.items():
            proc, stages, _summary = tp.run_process(a.file, env)
            st = {k: round(v.get("elapsed_s") or 0.0, 1) for k, v in stages.items()}
            row = {"wall_s": proc["wall_s"], "cpu_s": proc["cpu_s"], "stages": st}
            res[name].append(row)
            print(f"  {name:<16} wall {row['wall_s']:6.1f} s  cpu {row['cpu_s']:6.1f} s  segments "
                  f"{st.get('segments')}  keyframes {st.get('keyframes')}  ocr {st.get('ocr')}", flush=True)
    first = statistics.median(r["wall_s"] for r in res[next(iter(res))])
    print(f"\n{'median':<18}{'wall s':>8}{'cpu s':>8}{'segments':>10}{'wall / first':>14}")
    for name, rows in res.items():
        wall = statistics.median(r["wall_s"] for r in rows)
        print(f"{name:<18}{wall:>8.1f}{statistics.median(r['cpu_s'] for r in rows):>8.1f}"
              f"{statistics.median(r['stages'].get('segments', 0.0) for r in rows):>10.1f}{wall / first:>14.2f}")
    print(f"load average at the end: {' '.join(f'{x:.1f}' for x in os.getloadavg())}")
    if a.json:
        print(json.dumps(res))
    return 0


if __name__ == "__main__":
    sys.exit(main())

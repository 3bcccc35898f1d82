#!/usr/bin/env python3
"""Dagster's own cost of one in-process run, nothing else: a job of nine ops that do nothing (as many steps as
Talkthrough has stages) executed again and again in one warm process on a SQLite instance under a new data root.

    python bench/bench_run_cost.py [--rounds 5]

Three ways, interleaved round by round (medians; only ratios mean anything on a shared machine):

  none            Dagster's per-event SQLite connections are the last to their database when they close (each
                  close checkpoints the write-ahead log: an fsync per event), and each run's event-log database
                  is created by Dagster (SQLAlchemy create_all + alembic stamp) on its first event
  held            defs/sqlite_tuning.py holds an idle connection to each database while the run executes, and
                  lets them go after it (one checkpoint each), as `talkthrough process` does; with the shipped
                  instance class (defs/sqlite_storage.py) each database is then also reached through one engine
                  and its one connection, and a partition found is not looked up again
  held + shard    ... and the run's event-log database is written from the template first
                  (defs/storage_template.py prepare_run: the default for `talkthrough process`)
"""

from __future__ import annotations

import argparse
import contextlib
import logging
import os
import statistics
import tempfile
import time


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=5)
    a = ap.parse_args()
    os.environ["TALKTHROUGH_HOME"] = tempfile.mkdtemp(prefix="tt-bench-runcost-")
    os.environ.pop("DAGSTER_HOME", None)
    from dagster import job, op

    from talkthrough_assets.defs import instance as tt_instance
    from talkthrough_assets.defs import sqlite_tuning
    from talkthrough_assets.defs import storage_template as T

    inst = tt_instance.instance()

    @job
    def nine():
        for i in range(9):
            op(name=f"stage{i}")(lambda: 1)()

    def once(hold: bool, prepare: bool) -> tuple[float, float]:
        t, c = time.perf_counter(), time.process_time()
        with sqlite_tuning.holding() if hold else contextlib.nullcontext():  # let go after: as app/runs.py
            assert nine.execute_in_process(instance=inst, run_id=T.prepare_run(inst) if prepare else None).success
        return time.perf_counter() - t, time.process_time() - c

    logging.disable(logging.CRITICAL)
    ways = {"none": (False, False), "held": (True, False), "held + shard": (True, True)}
    out: dict[str, list] = {w: [] for w in ways}
    once(True, True)  # warm-up: imports, the job's definition
    print(f"{os.cpu_count()} CPUs, load average {' '.join(f'{x:.1f}' for x in os.getloadavg())}")
    for _ in range(a.rounds):
        for way, (hold, prepare) in ways.items():
            out[way].append(once(hold, prepare))
    base = statistics.median(w for w, _ in out["none"])
    for way, rows in out.items():
        wall, cpu = statistics.median(w for w, _ in rows), statistics.median(c for _, c in rows)
        print(f"{way:<14} wall {wall:.3f} s ({wall / base:.2f}x none)  CPU {cpu:.3f} s")
    print(f"load average at the end: {' '.join(f'{x:.1f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()

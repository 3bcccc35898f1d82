#!/usr/bin/env python3
"""Dagster storage at scale: N dynamic partitions of `recordings`, embedded SQLite vs Postgres.

    python bench/bench_partitions.py [--sqlite 5000,50000] [--postgres 5000,50000] [--runs 5]

For each backend and size, a fresh Dagster instance (the repo's dagster.yaml, plus the Postgres storage
block that TALKTHROUGH_PG_URL selects) gets N random 16-hex partition keys, registered in batches of
1 000 like `register_folder` does, then:

- `get_dynamic_partitions` (the whole list; the drop-folder sensor and `register_many` call it);
- `has_dynamic_partition` (one key; what `talkthrough process` calls per file), per call;
- a drop-folder sensor tick (`drop_dir_sensor` evaluated against the instance, on an empty folder:
  the partition lookup is what scales with N);
- one run launch: an in-process `process_recording` run of the `manifest` stage for a recording that
  was processed once beforehand (silent_video.mp4), i.e. what `talkthrough name` or a re-anchor costs
  in Dagster bookkeeping at that size.

Postgres is a throwaway cluster from Debian's `postgresql` package (tests/pg_cluster.py; as root the
server runs as the `postgres` user) on a loopback port with fsync off, so its figures are a floor for
the server itself; the client work (SQLAlchemy, Dagster) is real. Medians of --runs; ratios are
against the first row (the smallest size measured in this run, on SQLite), because these 2-core
machines are noisy.
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

BATCH = 1_000


def _median(fn, runs: int) -> float:
    xs = []
    for _ in range(runs):
        t = time.perf_counter()
        fn()
        xs.append(time.perf_counter() - t)
    return statistics.median(xs)


def _instance(dagster_home: Path, pg_url: str | None):
    from dagster import DagsterInstance

    from talkthrough_assets.defs.instance import _pin_pg_driver, instance_yaml
    from talkthrough_assets.defs import sqlite_tuning

    if pg_url:
        os.environ["TALKTHROUGH_PG_URL"] = pg_url
    else:
        os.environ.pop("TALKTHROUGH_PG_URL", None)
    _pin_pg_driver()
    sqlite_tuning.install()
    dagster_home.mkdir(parents=True)
    (dagster_home / "dagster.yaml").write_text(instance_yaml())
    return DagsterInstance.from_config(str(dagster_home))


def measure(backend: str, n: int, inst, rid: str, drop_dir: Path, runs: int) -> dict:
    from dagster import build_sensor_context

    from talkthrough_assets.app import runs
    from talkthrough_assets.defs.partitions import PARTITIONS_NAME
    from talkthrough_assets.defs.sensors import drop_dir_sensor

    rng = random.Random(n)
    keys = [f"{rng.getrandbits(64):016x}" for _ in range(n - 1)] + [rid]
    t = time.perf_counter()
    for i in range(0, n, BATCH):
        inst.add_dynamic_partitions(PARTITIONS_NAME, keys[i:i + BATCH])
    register_s = time.perf_counter() - t
    assert len(inst.get_dynamic_partitions(PARTITIONS_NAME)) == n

    get_all_s = _median(lambda: inst.get_dynamic_partitions(PARTITIONS_NAME), runs)
    probes = [keys[rng.randrange(n)] for _ in range(100)] + [f"{rng.getrandbits(64):016x}" for _ in range(100)]
    t = time.perf_counter()
    for k in probes:
        inst.has_dynamic_partition(PARTITIONS_NAME, k)
    has_s = (time.perf_counter() - t) / len(probes)

    os.environ["TALKTHROUGH_DROP_DIR"] = str(drop_dir)

    def tick():
        with build_sensor_context(instance=inst) as ctx:
            drop_dir_sensor.evaluate_tick(ctx)

    tick_s = _median(tick, runs)

    def launch():
        assert runs.run_stages(rid, ["manifest"], inst).success

    launch()  # first run at this size also warms this instance's connections
    launch_s = _median(launch, max(3, runs // 2))
    return {"backend": backend, "n": n, "register_s": register_s, "get_all_ms": get_all_s * 1e3,
            "has_ms": has_s * 1e3, "tick_ms": tick_s * 1e3, "launch_s": launch_s}


COLS = [("register_s", "register N", "{:.2f} s"), ("get_all_ms", "get_dynamic_partitions", "{:.0f} ms"),
        ("has_ms", "has_dynamic_partition", "{:.2f} ms"), ("tick_ms", "sensor tick", "{:.0f} ms"),
        ("launch_s", "run launch (manifest)", "{:.2f} s")]


def table(rows: list[dict]) -> str:
    base = rows[0]
    head = "| storage | partitions | " + " | ".join(c[1] for c in COLS) + " |"
    out = [head, "|" + "---|" * (len(COLS) + 2)]
    for r in rows:
        cells = [f"{fmt.format(r[k])} ({r[k] / base[k]:.1f}×)" if r is not base else fmt.format(r[k])
                 for k, _, fmt in COLS]
        out.append(f"| {r['backend']} | {r['n']:,} | " + " | ".join(cells) + " |")
    out.append(f"\nratios (×) against the first row: {base['backend']} at {base['n']:,} partitions")
    return "\n".join(out).replace(",", " ")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sqlite", default="5000,50000", help="comma-separated sizes ('' to skip)")
    ap.add_argument("--postgres", default="5000,50000", help="comma-separated sizes ('' to skip)")
    ap.add_argument("--runs", type=int, default=5)
    args = ap.parse_args()
    sizes = {b: sorted(int(x) for x in v.split(",") if x.strip())
             for b, v in (("sqlite", args.sqlite), ("postgres", args.postgres))}

    work = Path(tempfile.mkdtemp(prefix="talkthrough-bench-partitions-"))
    os.environ["TALKTHROUGH_HOME"] = str(work / "home")
    os.environ["TALKTHROUGH_LOG_LEVEL"] = "CRITICAL"
    os.environ.pop("TALKTHROUGH_PG_URL", None)
    os.environ["DAGSTER_HOME"] = str(work / "setup-dagster")
    drop = work / "drop"
    drop.mkdir()

    from talkthrough_assets.app import service

    # one processed recording whose manifest every instance re-materializes (Parquet outputs are
    # shared; the Dagster instances differ)
    t = time.perf_counter()
    res = service.process(ROOT / "fixtures" / "silent_video.mp4")
    assert res["status"] == "processed", res
    rid = res["recording_id"]
    print(f"setup: processed silent_video.mp4 in {time.perf_counter() - t:.1f} s", file=sys.stderr)

    cluster = None
    rows = []
    try:
        for n in sizes["sqlite"]:
            inst = _instance(work / f"sqlite-{n}", None)
            rows.append(measure("SQLite", n, inst, rid, drop, args.runs))
            inst.dispose()
            print(rows[-1], file=sys.stderr)
        if sizes["postgres"]:
            from pg_cluster import PgUnavailable, start_cluster

            try:
                cluster = start_cluster()
            except PgUnavailable as e:
                print(f"Postgres skipped: {e}", file=sys.stderr)
            for n in sizes["postgres"] if cluster else []:
                inst = _instance(work / f"pg-{n}", cluster.create_db(f"bench_{n}"))
                rows.append(measure("Postgres", n, inst, rid, drop, args.runs))
                inst.dispose()
                print(rows[-1], file=sys.stderr)
    finally:
        if cluster:
            cluster.stop()
        import shutil

        shutil.rmtree(work, ignore_errors=True)
    print(table(rows))


if __name__ == "__main__":
    main()

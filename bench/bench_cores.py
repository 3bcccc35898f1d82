#!/usr/bin/env python3
"""Are both cores busy from the first to the last second of `talkthrough process`? (issue #33 item 4)

    python bench/bench_cores.py [--file PATH] [--interval 1.0] [--json]

Runs `talkthrough process FILE --json` cold (a new empty TALKTHROUGH_HOME; default FILE: the first 60 s of the
10-min bench screencast, cut as bench_throughput.py does) and samples, every ``--interval`` seconds, from /proc
(no psutil): the run's own CPU (utime + stime of all its threads, /proc/PID/stat; in cores, 0..N) and each core's
busy share machine-wide (/proc/stat cpuN: the other users of a shared machine included). After the run, the
stages' intervals come from its ``stage_runs`` table. Printed: a per-interval timeline (cores used by the run, each
core's machine-wide busy %, the stages running), then the run's idle-core seconds (N x wall - its CPU seconds)
overall and per phase: before the first stage (imports, Dagster, model loads), while stages run, after the last.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from datetime import datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))

import bench_throughput as tp  # noqa: E402  (cut, talkthrough_cmd)

TICK = os.sysconf("SC_CLK_TCK")


def proc_cpu_s(pid: int) -> float | None:
    """utime + stime of process ``pid`` (all its threads), in seconds; None once it is gone."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None
    return (int(fields[11]) + int(fields[12])) / TICK  # fields 14 and 15 of proc(5), after pid and comm


def cores_busy() -> list[tuple[int, int]]:
    """(busy, total) jiffies of each core since boot, from /proc/stat."""
    out = []
    for line in Path("/proc/stat").read_text().splitlines():
        if line.startswith("cpu") and line[3].isdigit():
            v = [int(x) for x in line.split()[1:]]
            idle = v[3] + (v[4] if len(v) > 4 else 0)  # idle + iowait
            out.append((sum(v) - idle, sum(v)))
    return out


class Sampler(threading.Thread):
    def __init__(self, pid: int, interval: float):
        super().__init__(daemon=True, name="sampler")
        self.pid, self.interval, self.rows = pid, interval, []
        self.stop = threading.Event()

    def run(self) -> None:
        t0, last_cpu, last_cores = time.time(), proc_cpu_s(self.pid) or 0.0, cores_busy()
        last_t = t0
        while not self.stop.wait(self.interval):
            now, cpu, cores = time.time(), proc_cpu_s(self.pid), cores_busy()
            if cpu is None:
                break
            dt = now - last_t
            busy = [(b - lb) / max(1, t - lt) for (b, t), (lb, lt) in zip(cores, last_cores)]
            self.rows.append({"t0": last_t, "t1": now, "run_cores": (cpu - last_cpu) / dt, "core_busy": busy})
            last_t, last_cpu, last_cores = now, cpu, cores


def _ts(text: str) -> float:
    return datetime.fromisoformat(text).timestamp()


def run(path: str, interval: float) -> dict:
    home = Path(tempfile.mkdtemp(prefix="tt-bench-cores-"))
    env = dict(os.environ, TALKTHROUGH_HOME=str(home))
    env.pop("DAGSTER_HOME", None)
    try:
        with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
            start = time.time()
            p = subprocess.Popen([*tp.talkthrough_cmd(), "process", path, "--json"], env=env, stdout=out, stderr=err)
            s = Sampler(p.pid, interval)
            s.start()
            _, status, ru = os.wait4(p.pid, 0)
            end = time.time()
            s.stop.set()
            s.join()
            out.seek(0)
            err.seek(0)
            if os.waitstatus_to_exitcode(status) != 0:
                raise RuntimeError(err.read().decode()[-2000:])
            summary = json.loads(out.read().decode())[0]
        old = os.environ.get("TALKTHROUGH_HOME")
        os.environ["TALKTHROUGH_HOME"] = str(home)
        from talkthrough_assets import store

        stages = [{"stage": r["stage"], "t1": _ts(r["finished_at"]), "t0": _ts(r["finished_at"]) - r["elapsed_s"]}
                  for r in store.read_rows("stage_runs", summary["recording_id"], part=None)]
        os.environ.pop("TALKTHROUGH_HOME") if old is None else os.environ.update(TALKTHROUGH_HOME=old)
    finally:
        shutil.rmtree(home, ignore_errors=True)
    return {"start": start, "end": end, "cpu_s": ru.ru_utime + ru.ru_stime, "samples": s.rows, "stages": stages,
            "ncores": len(cores_busy())}


def report(r: dict) -> None:
    n, t0 = r["ncores"], r["start"]
    print(f"{'t s':>6} {'run cores':>9}  " + " ".join(f"cpu{i} busy" for i in range(n)) + "  stages running")
    for row in r["samples"]:
        running = [s["stage"] for s in r["stages"] if s["t0"] < row["t1"] and s["t1"] > row["t0"]]
        print(f"{row['t0'] - t0:>6.1f} {row['run_cores']:>9.2f}  "
              + " ".join(f"{b * 100:>8.0f}%" for b in row["core_busy"]) + "  " + ", ".join(running))
    wall = r["end"] - r["start"]
    first = min(s["t0"] for s in r["stages"])
    last = max(s["t1"] for s in r["stages"])
    print(f"\nwall {wall:.1f} s, the run's CPU {r['cpu_s']:.1f} s = {r['cpu_s'] / wall:.2f} of {n} cores on average; "
          f"idle-core seconds {n * wall - r['cpu_s']:.1f} of {n * wall:.1f}")

    def phase(a: float, b: float) -> tuple[float, float]:
        cpu = sum(row["run_cores"] * max(0.0, min(b, row["t1"]) - max(a, row["t0"])) for row in r["samples"])
        return b - a, cpu

    for label, (a, b) in (("before the first stage", (r["start"], first)), ("while stages run", (first, last)),
                          ("after the last stage", (last, r["end"]))):
        dur, cpu = phase(a, b)
        if dur > 0:
            print(f"  {label:<24} {dur:>6.1f} s wall, run CPU {cpu:>6.1f} s ({cpu / dur:.2f} cores), "
                  f"idle-core seconds {max(0.0, n * dur - cpu):.1f}")
    mean_busy = [sum(row["core_busy"][i] * (row["t1"] - row["t0"]) for row in r["samples"]) / max(1e-9, wall)
                 for i in range(n)]
    print("  machine-wide core busy over the run (every user): "
          + ", ".join(f"cpu{i} {b * 100:.0f}%" for i, b in enumerate(mean_busy)))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--file", help="media file (default: the first 60 s of the 10-min bench screencast)")
    ap.add_argument("--interval", type=float, default=1.0, help="seconds between samples (default 1)")
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args(argv)
    if not a.file:
        import make_long_media

        a.file = tp.cut(str(make_long_media.ensure_media(quiet=True)["screencast"]), 60)
    print(f"{os.cpu_count()} CPUs, load average {' '.join(f'{x:.1f}' for x in os.getloadavg())}; {a.file}")
    r = run(a.file, a.interval)
    report(r)
    print(f"load average at the end: {' '.join(f'{x:.1f}' for x in os.getloadavg())}")
    if a.json:
        print(json.dumps(r, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""Cold start of `talkthrough process` (issue #33 item 3): the fixed cost beyond the stages' own time.

    python bench/bench_cold_start.py [--before REF] [--runs 3] [--clip PATH] [--json]

One run prints, for this working tree ("after") and, with ``--before REF``, for the packages of that git
commit exported into a temporary folder ("before"; its children get it first on PYTHONPATH), measured in
the same run with the children interleaved (before, after, before, after ...) so that load drift hits both:

  python -c pass            the interpreter's floor
  import cli                python -c "import talkthrough_assets.cli.main"
  talkthrough --help
  process (cold)            `talkthrough process CLIP --json` with a new empty TALKTHROUGH_HOME (its DAGSTER_HOME
                            under it: Dagster's SQLite storage created, models loaded): wall and CPU seconds
  process (warm)            the same clip on a data root that has processed another recording already
                            (fixtures/silent_video.mp4, untimed): Dagster's storage exists, nothing is shared
                            with the clip; what users hit most
  stage span                the wall-clock time during which at least one stage ran (the union of the
                            ``stage_runs`` intervals: the audio and visual branches overlap)
  stage sum                 the sum of the stages' own seconds (overlapping ones counted twice)
  fixed cost                process wall - stage span: imports, Dagster instance, run start and end, model
                            loads not hidden behind a stage (target: <= 1 s), cold and warm

Medians of ``--runs`` (3) cold processes and of 5 short children. The clip: the first 5 s of
fixtures/screencast.mp4 (stream copy, cached in the bench media folder). Only ratios against the other tree
measured in the same run mean anything on a shared machine: the load average is printed at start and end.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from datetime import datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))

import bench_throughput as tp  # noqa: E402  (run_child, cut, talkthrough_cmd)

TARGET_FIXED_S = 1.0
PRIME = ROOT / "fixtures" / "silent_video.mp4"  # processed first on the warm data root
SHORT = {"python -c pass": ["-c", "pass"], "import cli": ["-c", "import talkthrough_assets.cli.main"]}


def clip(seconds: int = 5) -> str:
    """The first ``seconds`` of the fixture screencast (stream copy), cached beside the bench media."""
    folder = Path(os.environ.get("TALKTHROUGH_BENCH_MEDIA", "/tmp/talkthrough-bench-media"))
    folder.mkdir(parents=True, exist_ok=True)
    src = folder / "fixture_screencast.mp4"
    if not src.exists():
        shutil.copyfile(ROOT / "fixtures" / "screencast.mp4", src)
    return tp.cut(str(src), seconds)


def export(ref: str, dest: Path) -> Path:
    """The packages of git commit ``ref`` under ``dest`` (as bench_answer_size.py does)."""
    arch = subprocess.run(["git", "-C", str(ROOT), "archive", ref, "talkthrough_mcp", "talkthrough_assets",
                           "dagster.yaml"], capture_output=True, check=True).stdout
    subprocess.run(["tar", "-x", "-C", str(dest)], input=arch, check=True)
    return dest


def env_for(src: Path, **extra) -> dict:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(src), *filter(None, [os.environ.get("PYTHONPATH")])]),
               **extra)
    env.pop("DAGSTER_HOME", None)
    return env


def _ts(text: str) -> float:
    return datetime.fromisoformat(text).timestamp()


def stage_times(home: Path, rid: str) -> tuple[float, float, dict]:
    """(span, sum, per stage) of one recording's ``stage_runs`` rows (read with this tree's store)."""
    from talkthrough_assets import store

    old = os.environ.get("TALKTHROUGH_HOME")
    os.environ["TALKTHROUGH_HOME"] = str(home)
    try:
        rows = store.read_rows("stage_runs", rid, part=None)
    finally:
        os.environ.pop("TALKTHROUGH_HOME") if old is None else os.environ.update(TALKTHROUGH_HOME=old)
    if not rows:
        raise RuntimeError(f"no stage_runs rows under {home}")
    spans = sorted((_ts(r["finished_at"]) - r["elapsed_s"], _ts(r["finished_at"])) for r in rows)
    union, cur = 0.0, None
    for a, b in spans:
        if cur is None or a > cur[1]:
            if cur:
                union += cur[1] - cur[0]
            cur = [a, b]
        else:
            cur[1] = max(cur[1], b)
    union += cur[1] - cur[0]
    return union, sum(r["elapsed_s"] for r in rows), {r["stage"]: r["elapsed_s"] for r in rows}


def cold_process(src: Path, path: str, warm: bool = False) -> dict:
    """One `process` of ``path`` on a new data root, or (``warm``) on one that processed :data:`PRIME` first."""
    home = Path(tempfile.mkdtemp(prefix="tt-bench-cold-"))
    try:
        env = env_for(src, TALKTHROUGH_HOME=str(home))
        if warm:
            tp.run_child([*tp.talkthrough_cmd(), "process", str(PRIME), "--json"], env=env)
        r = tp.run_child([*tp.talkthrough_cmd(), "process", path, "--json"], env=env)
        summary = json.loads(r["stdout"])[0]
        if summary.get("status") != "processed":
            raise RuntimeError(f"process did not succeed: {summary}")
        span, total, per = stage_times(home, summary["recording_id"])
    finally:
        shutil.rmtree(home, ignore_errors=True)
    return {"wall_s": r["wall_s"], "cpu_s": r["cpu_s"], "span_s": span, "sum_s": total, "stages": per,
            "fixed_s": r["wall_s"] - span}


def short(src: Path, args: list[str]) -> float:
    return tp.run_child([sys.executable, *args], env=env_for(src))["wall_s"]


def help_cmd() -> list[str]:
    return [*tp.talkthrough_cmd(), "--help"]


def measure(trees: dict[str, Path], path: str, runs: int, shorts: int = 5) -> dict:
    out = {name: {"short": {k: [] for k in [*SHORT, "talkthrough --help"]}, "process": [], "warm": []}
           for name in trees}
    for _ in range(shorts):
        for name, src in trees.items():
            for label, args in SHORT.items():
                out[name]["short"][label].append(short(src, args))
            out[name]["short"]["talkthrough --help"].append(tp.run_child(help_cmd(), env=env_for(src))["wall_s"])
    for i in range(runs):
        for name, src in trees.items():
            for kind, warm in (("process", False), ("warm", True)):
                r = cold_process(src, path, warm=warm)
                print(f"  run {i + 1} {name:<6} {'warm' if warm else 'cold'} wall {r['wall_s']:.2f} s, cpu "
                      f"{r['cpu_s']:.2f} s, stage span {r['span_s']:.2f} s, fixed {r['fixed_s']:.2f} s", flush=True)
                out[name][kind].append(r)
    return out


def med(rows: list[dict], key: str) -> float:
    return statistics.median(r[key] for r in rows)


def report(res: dict) -> None:
    names = list(res)
    print(f"\n{'median seconds':<34}" + "".join(f"{n:>10}" for n in names)
          + (f"{'after/before':>14}" if len(names) == 2 else ""))

    def line(label: str, vals: list[float]) -> None:
        ratio = f"{vals[1] / vals[0]:>14.2f}" if len(vals) == 2 and vals[0] > 0 else ""
        print(f"{label:<34}" + "".join(f"{v:>10.2f}" for v in vals) + ratio)

    for label in [*SHORT, "talkthrough --help"]:
        line(label, [statistics.median(res[n]["short"][label]) for n in names])
    for key, label in (("wall_s", "process (cold) wall"), ("cpu_s", "process (cold) CPU"),
                       ("span_s", "stage span (any stage running)"), ("sum_s", "stage sum (overlaps twice)"),
                       ("fixed_s", "fixed cost = wall - span")):
        line(label, [med(res[n]["process"], key) for n in names])
    line("wall - stage sum", [med(res[n]["process"], "wall_s") - med(res[n]["process"], "sum_s") for n in names])
    for key, label in (("wall_s", "process (warm) wall"), ("cpu_s", "process (warm) CPU"),
                       ("span_s", "warm stage span"), ("fixed_s", "warm fixed cost = wall - span")):
        line(label, [med(res[n]["warm"], key) for n in names])
    stages = sorted({s for n in names for r in res[n]["process"] for s in r["stages"]})
    for s in stages:
        line(f"  stage {s}", [statistics.median(r["stages"].get(s, 0.0) for r in res[n]["process"]) for n in names])
    for kind in ("process", "warm"):
        fixed = med(res[names[-1]][kind], "fixed_s")
        print(f"{'' if kind == 'warm' else chr(10)}target: {'cold' if kind == 'process' else 'warm'} fixed cost <= "
              f"{TARGET_FIXED_S:.0f} s ({names[-1]}): {fixed:.2f} s -> {'met' if fixed <= TARGET_FIXED_S else 'MISSED'}")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--before", help="a git ref to compare against (its packages exported to a temp folder)")
    ap.add_argument("--runs", type=int, default=3, help="cold processes per tree (median; default 3)")
    ap.add_argument("--clip", help="media file (default: the first 5 s of fixtures/screencast.mp4)")
    ap.add_argument("--json", action="store_true", help="also print the raw results as JSON")
    a = ap.parse_args(argv)
    path = a.clip or clip()
    print(f"{os.cpu_count()} CPUs, load average {' '.join(f'{x:.1f}' for x in os.getloadavg())}; clip {path}; "
          f"{a.runs} cold runs per tree (fresh TALKTHROUGH_HOME each), interleaved", flush=True)
    with tempfile.TemporaryDirectory(prefix="tt-bench-before-") as tmp:
        trees = {}
        if a.before:
            trees["before"] = export(a.before, Path(tmp))
        trees["after"] = ROOT
        res = measure(trees, path, a.runs)
    report(res)
    print(f"load average at the end: {' '.join(f'{x:.1f}' for x in os.getloadavg())}")
    if a.json:
        print(json.dumps(res, indent=2, default=str))
    return 0


if __name__ == "__main__":
    sys.exit(main())

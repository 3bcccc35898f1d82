#!/usr/bin/env python3
"""Throughput of `talkthrough process` (the real Dagster job, fresh data root) vs a plain PyAV
decode of the same file, measured in the same run.

    python bench/bench_throughput.py [--screencast PATH] [--meeting PATH] [--only NAME] [--no-sequential]

Defaults: the 10-min 1080p30 screencast, its first 60 s (stream copy, like `ffmpeg -t 60 -c copy`)
and the 30-min meeting from bench/make_long_media.py (generated into /tmp/talkthrough-bench-media if
missing). For each file, child processes run one after the other:

  decode      python -c "decode every video frame (thread_type AUTO) and every audio frame": the
              physical floor of reading the file at all
  process     `talkthrough process FILE --json` with TALKTHROUGH_HOME = a new empty folder (cold:
              Dagster SQLite storage created, models loaded, every stage materialized)
  sequential  the same with TALKTHROUGH_STAGE_WORKERS=1: stages one after another (the branches
              not overlapped), the baseline for the concurrency gain

Targets (issue #11): 10-min screencast <= 60 s wall, the 60-s cut <= 10 s, 30-min meeting >= 25x.

Each child's wall time, CPU time and peak RSS come from os.wait4 (the per-child form of
getrusage(RUSAGE_CHILDREN)); per-stage seconds come from the run's own `stage_runs` table.
Printed: realtime factors (media seconds / wall seconds) overall and per stage, and ratios
against the decode floor. Nothing outside the temporary data roots is written.
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

DECODE_CHILD = r"""
import sys, av
n_v = n_a = 0
with av.open(sys.argv[1]) as c:
    for s in c.streams.video:
        s.thread_type = "AUTO"
    for s in c.streams.audio:
        s.thread_type = "AUTO"
    streams = [*c.streams.video[:1], *c.streams.audio[:1]]
    for f in c.decode(*streams):
        if f.__class__.__name__ == "VideoFrame":
            n_v += 1
        else:
            n_a += f.samples
print(n_v, n_a)
"""


def run_child(cmd: list[str], env: dict | None = None) -> dict:
    """Run a child; return wall/cpu/peak-RSS (from wait4) and its stdout."""
    t0 = time.perf_counter()
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        p = subprocess.Popen(cmd, env=env, stdout=out, stderr=err)
        _, status, ru = os.wait4(p.pid, 0)
        p.returncode = os.waitstatus_to_exitcode(status)
        wall = time.perf_counter() - t0
        out.seek(0)
        err.seek(0)
        stdout, stderr = out.read().decode(), err.read().decode()
    if p.returncode != 0:
        raise RuntimeError(f"{cmd[:3]} exited {p.returncode}: {stderr[-2000:]}")
    return {"wall_s": wall, "cpu_s": ru.ru_utime + ru.ru_stime, "maxrss_mb": ru.ru_maxrss / 1024,
            "stdout": stdout}


def talkthrough_cmd() -> list[str]:
    exe = Path(sys.executable).parent / "talkthrough"
    return [str(exe)] if exe.exists() else [sys.executable, "-m", "talkthrough_assets.cli.main"]


def media_seconds(path: str) -> float:
    import av

    with av.open(path) as c:
        return c.duration / 1e6


def cut(path: str, seconds: int) -> str:
    """The first ``seconds`` of ``path``, stream-copied (no re-encode), cached beside it."""
    import av

    src = Path(path)
    dst = src.with_name(f"{src.stem}_first{seconds}s{src.suffix}")
    if dst.exists():
        return str(dst)
    tmp = dst.with_suffix(".part" + dst.suffix)
    with av.open(str(src)) as i, av.open(str(tmp), "w", format="mp4") as o:
        smap = {s.index: o.add_stream_from_template(s) for s in i.streams if s.type in ("video", "audio")}
        for pkt in i.demux(*[s for s in i.streams if s.index in smap]):
            if pkt.dts is None:
                continue
            if float(pkt.pts * pkt.time_base) >= seconds:
                continue
            pkt.stream = smap[pkt.stream.index]
            o.mux(pkt)
    tmp.replace(dst)
    return str(dst)


def run_process(path: str, extra_env: dict | None = None, tables: tuple[str, ...] = ()) -> tuple[dict, dict, dict]:
    """One cold `talkthrough process` (a new data root, removed after): (the child's figures, its stage_runs rows
    by stage, its summary); ``tables``: those tables' rows of the recording too, read before the data root goes,
    in the child's figures under "rows"."""
    home = Path(tempfile.mkdtemp(prefix="tt-bench-tp-"))
    env = dict(os.environ, TALKTHROUGH_HOME=str(home), **(extra_env or {}))
    env.pop("DAGSTER_HOME", None)
    try:
        proc = run_child([*talkthrough_cmd(), "process", path, "--json"], env=env)
        summary = json.loads(proc["stdout"])[0]
        if summary.get("status") != "processed":
            raise RuntimeError(f"process did not succeed: {summary}")
        os.environ["TALKTHROUGH_HOME"] = str(home)
        from talkthrough_assets import store

        stages = {r["stage"]: r for r in store.read_rows("stage_runs", summary["recording_id"], part=None)}
        if tables:
            proc["rows"] = {t: store.read_rows(t, summary["recording_id"], part=None) for t in tables}
    finally:
        shutil.rmtree(home, ignore_errors=True)
    return proc, stages, summary


def bench_file(path: str, label: str, sequential: bool = True) -> dict:
    dur = media_seconds(path)
    dec = run_child([sys.executable, "-c", DECODE_CHILD, path])
    proc, stages, summary = run_process(path)
    seq = run_process(path, {"TALKTHROUGH_STAGE_WORKERS": "1"})[0] if sequential else None
    return {"label": label, "path": path, "media_s": dur, "decode": dec, "process": proc, "stages": stages,
            "sequential": seq, "summary": {k: summary.get(k) for k in ("kind", "duration_s", "transcript", "frames")}}


TARGETS = {"screencast": ("wall", 60.0), "screencast 60 s": ("wall", 10.0), "meeting": ("realtime", 25.0)}


def target_line(r: dict) -> str:
    kind, value = TARGETS.get(r["label"], (None, None))
    wall = r["process"]["wall_s"]
    if kind == "wall":
        return f"target <= {value:.0f} s wall: {wall:.1f} s -> {'met' if wall <= value else 'MISSED'}"
    if kind == "realtime":
        x = r["media_s"] / wall
        return f"target >= {value:.0f}x realtime: {x:.1f}x -> {'met' if x >= value else 'MISSED'}"
    return ""


def print_report(r: dict) -> None:
    from talkthrough_assets.pipeline.settings import STAGES

    dur, dec, proc = r["media_s"], r["decode"], r["process"]
    print(f"\n== {r['label']}: {Path(r['path']).name}, {dur:.0f} s of media ==")
    tr, fr = r["summary"].get("transcript") or {}, r["summary"].get("frames") or {}
    print(f"   {tr.get('segments')} transcript segments; {fr.get('count')} keyframes ({fr.get('unique')} unique)")
    print(f"{'':<26}{'wall s':>8}{'x realtime':>11}{'x decode':>10}{'cpu s':>8}{'peak RSS MB':>13}")
    print(f"{'plain decode (floor)':<26}{dec['wall_s']:>8.1f}{dur / dec['wall_s']:>11.1f}{1.0:>10.2f}"
          f"{dec['cpu_s']:>8.1f}{dec['maxrss_mb']:>13.0f}")
    print(f"{'talkthrough process':<26}{proc['wall_s']:>8.1f}{dur / proc['wall_s']:>11.1f}"
          f"{proc['wall_s'] / dec['wall_s']:>10.2f}{proc['cpu_s']:>8.1f}{proc['maxrss_mb']:>13.0f}")
    seq = r.get("sequential")
    if seq:
        print(f"{'  same, stages sequential':<26}{seq['wall_s']:>8.1f}{dur / seq['wall_s']:>11.1f}"
              f"{seq['wall_s'] / dec['wall_s']:>10.2f}{seq['cpu_s']:>8.1f}{seq['maxrss_mb']:>13.0f}"
              f"   concurrent / sequential = {proc['wall_s'] / seq['wall_s']:.2f}")
    total_stage = 0.0
    for s in STAGES:
        row = r["stages"].get(s)
        if not row:
            continue
        e = row["elapsed_s"]
        total_stage += e
        xr = f"{dur / e:.1f}" if e > 0 else "inf"
        print(f"{'  stage ' + s:<26}{e:>8.1f}{xr:>11}{e / dec['wall_s']:>10.2f}{'':>8}{'':>13}"
              + ("" if row["status"] == "ok" else f"  {row['status']}: {row['reason']}"))
    print("   (stage seconds overlap: the audio and visual branches run at once)")
    print("   " + target_line(r))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--screencast", help="video file (default: the 10-min bench screencast)")
    ap.add_argument("--meeting", help="audio file (default: the 30-min bench meeting)")
    ap.add_argument("--only", choices=["screencast", "cut", "meeting"], help="run just one file")
    ap.add_argument("--no-sequential", action="store_true", help="skip the sequential-stages baseline")
    ap.add_argument("--json", action="store_true", help="also print the raw results as JSON")
    a = ap.parse_args(argv)
    if not (a.screencast and a.meeting):
        import make_long_media

        media = make_long_media.ensure_media()
        a.screencast = a.screencast or str(media["screencast"])
        a.meeting = a.meeting or str(media["meeting"])
    print(f"{os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f}; each figure is one cold run "
          f"(fresh TALKTHROUGH_HOME), children run sequentially")
    results = []
    files = (("screencast 60 s", "cut", cut(a.screencast, 60)), ("screencast", "screencast", a.screencast),
             ("meeting", "meeting", a.meeting))
    for label, key, path in files:
        if a.only and a.only != key:
            continue
        r = bench_file(path, label, sequential=not a.no_sequential)
        print_report(r)
        results.append(r)
    if a.json:
        for r in results:
            r["decode"].pop("stdout", None)
            r["process"].pop("stdout", None)
        print(json.dumps(results, indent=2, default=str))
    return 0


if __name__ == "__main__":
    sys.exit(main())

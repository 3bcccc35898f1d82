#!/usr/bin/env python3
"""Time until the first partial transcript is readable over MCP (#19 item 5), as a share of the whole run:

    python bench/bench_partial.py [--file /tmp/talkthrough-bench-media/meeting_30min.m4a] [--poll-s 0.5] [--keep]

A real MCP client session (the official ``mcp`` SDK, ``talkthrough mcp`` over stdio) is opened on a fresh data root
(no stored chunk results: everything is decoded); then ``talkthrough process FILE --json`` starts (t=0) and the
client calls ``get_transcript`` every ``--poll-s`` seconds until the run exits. Printed: the time of the first
answer marked ``partial`` that holds transcript segments, the whole run's time (the baseline, same run), their
ratio (target < 15 %), every partial generation the client saw (covered range, segments), that the final
generation replaced the partial one (no ``partial`` marking, its transcript starting with the last partial's),
the run's CPU seconds and the load average before and after.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

MEETING = Path("/tmp/talkthrough-bench-media/meeting_30min.m4a")


def talkthrough() -> str:
    return shutil.which("talkthrough") or str(Path(sys.executable).with_name("talkthrough"))


async def measure(path: Path, home: Path, poll_s: float) -> dict:
    import anyio
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client

    from talkthrough_assets.core import ids

    rid = ids.recording_id(path)
    env = {**os.environ, "TALKTHROUGH_HOME": str(home), "DAGSTER_HOME": str(home / "dagster"),
           "TALKTHROUGH_MCP_REFRESH_S": "0"}
    out: dict = {"recording": rid, "generations": []}
    params = StdioServerParameters(command=talkthrough(), args=["mcp"], env=env)
    async with stdio_client(params) as (r, w), ClientSession(r, w) as s:
        await s.initialize()
        await s.call_tool("list_recordings", {})  # the server is up and answering before the run starts
        cpu0 = resource.getrusage(resource.RUSAGE_CHILDREN)
        t0 = time.monotonic()
        run = subprocess.Popen([talkthrough(), "process", str(path), "--json"], env=env,
                               stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        last_gen = None
        while True:
            done = run.poll() is not None
            res = await s.call_tool("get_transcript", {"id": rid, "max_chars": 30000})
            t = time.monotonic() - t0
            if not res.is_error:
                body = json.loads(res.content[0].text)
                if body.get("partial") and body["generation"] != last_gen:
                    last_gen = body["generation"]
                    out["generations"].append({"t_s": round(t, 1), "covered_ms": body["covered_ms"],
                                               "segments": body["returned"], "next_start_ms": body["next_start_ms"],
                                               "first": [(x["t_ms"], x["text"]) for x in body["segments"][:3]]})
                    if body["returned"] and "first_partial_s" not in out:
                        out["first_partial_s"] = t
            if done:
                break
            await anyio.sleep(poll_s)
        out["run_s"] = time.monotonic() - t0
        stdout = run.stdout.read()
        out["returncode"] = run.returncode
        cpu1 = resource.getrusage(resource.RUSAGE_CHILDREN)
        out["run_cpu_s"] = (cpu1.ru_utime - cpu0.ru_utime) + (cpu1.ru_stime - cpu0.ru_stime)
        try:
            out["status"] = json.loads(stdout)[0]["status"]
        except (ValueError, IndexError, KeyError):
            out["status"] = "?"
        final = json.loads((await s.call_tool("get_transcript", {"id": rid, "max_chars": 30000})).content[0].text)
        out["final_partial"] = bool(final.get("partial"))
        out["final_segments_head"] = [(x["t_ms"], x["text"]) for x in final["segments"][:3]]
        out["final_generation"] = final["generation"]
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--file", type=Path, default=MEETING)
    ap.add_argument("--poll-s", type=float, default=0.5)
    ap.add_argument("--keep", action="store_true", help="keep the data root (printed)")
    args = ap.parse_args()
    import anyio

    if not args.file.is_file():
        print(f"missing {args.file}: run python bench/make_long_media.py", file=sys.stderr)
        return 2
    home = Path(tempfile.mkdtemp(prefix="bench-partial-"))
    load0 = os.getloadavg()
    try:
        r = anyio.run(measure, args.file, home, args.poll_s)
    finally:
        if not args.keep:
            shutil.rmtree(home, ignore_errors=True)
    load1 = os.getloadavg()
    print(f"file: {args.file.name}  recording {r['recording']}  run status {r['status']} (rc {r['returncode']})")
    for g in r["generations"]:
        print(f"  partial at {g['t_s']:7.1f} s: covered {g['covered_ms']} ms, {g['segments']} segments, "
              f"next_start_ms {g['next_start_ms']}")
    first = r.get("first_partial_s")
    print(f"whole run (baseline, same run): {r['run_s']:.1f} s wall, {r['run_cpu_s']:.1f} s CPU")
    if first is None:
        print("first partial transcript: never seen (FAIL)")
    else:
        share = first / r["run_s"]
        print(f"first partial transcript readable over MCP: {first:.1f} s = {100 * share:.1f} % of the whole run "
              f"(target < 15 %: {'ok' if share < 0.15 else 'MISSED'})")
    last = r["generations"][-1]["first"] if r["generations"] else []
    print(f"final generation replaced it: partial marking gone {not r['final_partial']}, "
          f"its transcript starts with the partial one's {r['final_segments_head'][:len(last)] == last}")
    print(f"load average before {load0[0]:.1f}/{load0[1]:.1f}/{load0[2]:.1f}, "
          f"after {load1[0]:.1f}/{load1[1]:.1f}/{load1[2]:.1f} (1/5/15 min; {os.cpu_count()} cores)")
    if args.keep:
        print(f"data root kept: {home}")
    return 0 if first is not None and not r["final_partial"] else 1


if __name__ == "__main__":
    sys.exit(main())

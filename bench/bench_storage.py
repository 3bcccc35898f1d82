"""Local data root vs an ``s3://`` data root, in the same run (ratios, not absolutes: noisy machines).

    python bench/bench_storage.py [--rounds 2]

Needs `moto[server]` (in the test extra): a moto S3 server on loopback stands in for the object store,
so the S3 figures are the cost of the object-store code path plus a slow, single-threaded Python S3
server, an upper bound for a real store on a fast network. Per data root, each round:
  process   `talkthrough process fixtures/screencast.mp4 fixtures/meeting_audio.m4a --json`, cold
            (fresh data root and fresh local directory, SQLite Dagster storage)
  cached    the same command again (nothing to run: hash, plan from stage_runs, summary)
  duckdb    store.connect() + one query over every table (recordings, frames, words)
  manifests read every published manifest 20 times (what the MCP index refresh does)
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FILES = [ROOT / "fixtures" / "screencast.mp4", ROOT / "fixtures" / "meeting_audio.m4a"]
CLI = [sys.executable, "-m", "talkthrough_assets.cli.main"]


def _moto() -> tuple[subprocess.Popen, str]:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    proc = subprocess.Popen([sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}"
    for _ in range(200):
        try:
            urllib.request.urlopen(url, timeout=1).read()
            return proc, url
        except OSError:
            time.sleep(0.1)
    raise SystemExit("moto server did not start")


def _timed(fn) -> float:
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def _env(home: str, local: str, endpoint: str) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("TALKTHROUGH_", "DAGSTER_"))}
    env.update(TALKTHROUGH_HOME=home, TALKTHROUGH_LOCAL_HOME=local, AWS_ENDPOINT_URL=endpoint,
               AWS_ACCESS_KEY_ID="bench", AWS_SECRET_ACCESS_KEY="bench", AWS_REGION="us-east-1")
    return env


def _process(env: dict) -> None:
    p = subprocess.run(CLI + ["process", "--json", *map(str, FILES)], env=env, capture_output=True, text=True)
    if p.returncode != 0:
        raise SystemExit(f"process failed:\n{p.stderr[-2000:]}")
    assert all(s["status"] in ("processed", "cached") for s in json.loads(p.stdout))


def _reads(env: dict) -> tuple[float, float]:
    code = r"""
import json, sys, time
from talkthrough_assets import store
t0 = time.perf_counter()
con = store.connect()
con.execute("SELECT count(*) FROM recordings").fetchall()
con.execute("SELECT count(*) FROM frames").fetchall()
con.execute("SELECT count(*) FROM words").fetchall()
t1 = time.perf_counter()
ids = [n[:-5] for n in store.list_names("manifests") if n.endswith(".json")]
for _ in range(20):
    for rid in ids:
        store.stamp(store.manifest_key(rid)); json.loads(store.get_bytes(store.manifest_key(rid)))
print(json.dumps([t1 - t0, time.perf_counter() - t1]))
"""
    p = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    return tuple(json.loads(p.stdout))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rounds", type=int, default=2)
    args = ap.parse_args()
    import pyarrow.fs as pafs

    proc, endpoint = _moto()
    try:
        pafs.S3FileSystem(endpoint_override=endpoint.split("://")[1], scheme="http", region="us-east-1",
                          access_key="bench", secret_key="bench", allow_bucket_creation=True).create_dir("bench")
        res: dict[str, dict[str, list[float]]] = {"local": {}, "s3": {}}
        for r in range(args.rounds):
            for kind in ("local", "s3"):  # alternate, so drift in machine load hits both
                work = Path(tempfile.mkdtemp(prefix=f"tt-bench-storage-{kind}-"))
                home = str(work / "home") if kind == "local" else f"s3://bench/round{r}"
                env = _env(home, str(work / "local"), endpoint)
                out = res[kind]
                out.setdefault("process", []).append(_timed(lambda: _process(env)))
                out.setdefault("cached", []).append(_timed(lambda: _process(env)))
                duck, mani = _reads(env)
                out.setdefault("duckdb", []).append(duck)
                out.setdefault("manifests", []).append(mani)
                print(f"round {r + 1} {kind}: " + ", ".join(f"{k} {v[-1]:.2f}s" for k, v in out.items()), flush=True)
        print(f"\nmedians over {args.rounds} rounds (load {os.getloadavg()[0]:.1f}); s3 = moto on loopback")
        print("| step | local | s3:// | s3 / local |\n|---|---|---|---|")
        for step in res["local"]:
            lo, s3 = statistics.median(res["local"][step]), statistics.median(res["s3"][step])
            print(f"| {step} | {lo:.2f} s | {s3:.2f} s | {s3 / lo:.2f}x |")
    finally:
        proc.terminate()


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""A UI backfill of many short recordings against one `talkthrough process` over the same files, same run.

    python bench/bench_backfill.py [--count 24] [--seconds 4] [--stock]

Makes ``--count`` short recordings (espeak-ng speech, "Recording number N ...", WAV), then:

  cli       `talkthrough process FOLDER` on a new data root (one process: one Dagster instance, one model
            load, the files one after another): the baseline;
  backfill  `talkthrough ui` on another new data root: the register_folder job over the folder, then the
            backfill the process_recording job page's "Materialize all" sends, timed from its launch until
            every run has ended (the UI is up before; its start is not counted).

For each it prints the wall time per recording and the time per recording during which no stage of any
recording ran ("beyond the stages": process start, instance, run workers, model loads, queueing), the
ratio backfill/cli of both (target: <= 1.2), and for the backfill the time from the launch to its first
run's start, split by Dagster's own timestamps: the backfill row, the run created (the backfill daemon's
loop), dequeued (the run queue), started (the run worker's start). ``--stock`` runs the backfill as Dagster
does by default: plain `dagster dev` (30 s backfill loop), the run queue's 5 s dequeue interval, one
recording per run (TALKTHROUGH_BACKFILL_BATCH=1). The machine's date, load and cores are printed: only
the ratio of two paths measured in the same run means anything on a shared machine.
"""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))
from bench_cold_start import _ts  # noqa: E402

REPO = {"repositoryLocationName": "talkthrough_assets.definitions", "repositoryName": "__repository__"}
LAUNCH_RUN = """mutation($p: ExecutionParams!) { launchRun(executionParams: $p) {
  __typename ... on LaunchRunSuccess { run { runId } } ... on PythonError { message } } }"""
RUN = """query($id: ID!) { runOrError(runId: $id) { ... on Run { status } } }"""
LAUNCH_BACKFILL = """mutation($p: LaunchBackfillParams!) { launchPartitionBackfill(backfillParams: $p) {
  __typename ... on LaunchBackfillSuccess { backfillId } ... on PythonError { message } } }"""
BACKFILL = """query($id: String!) { partitionBackfillOrError(backfillId: $id) {
  ... on PartitionBackfill { status runs(limit: 500) { runId status } } } }"""
DONE = ("COMPLETED", "COMPLETED_SUCCESS", "COMPLETED_FAILED", "FAILED", "CANCELED")
STOCK_YAML = """concurrency:
  runs:
    max_concurrent_runs: 2
    tag_concurrency_limits:
      - key: dagster/partition
        value:
          applyLimitPerUniqueValue: true
        limit: 1
telemetry:
  enabled: false
"""


def make_recordings(folder: Path, count: int, seconds: float) -> list[Path]:
    folder.mkdir(parents=True, exist_ok=True)
    words = " ".join(["The build passed and the deploy is next."] * max(1, int(seconds / 2.5)))
    out = []
    for i in range(count):
        path = folder / f"rec_{i:03d}.wav"
        subprocess.run(["espeak-ng", "-v", "en-us", "-s", "170", "-w", str(path), f"Recording number {i}. {words}"],
                       check=True, capture_output=True)
        out.append(path)
    return out


def stage_intervals(home: Path, ids: list[str]) -> list[tuple[float, float]]:
    """Every stage run's (start, end) of recordings ``ids`` under ``home`` (their ``stage_runs`` rows)."""
    os.environ["TALKTHROUGH_HOME"] = str(home)
    from talkthrough_assets import store

    rows = [r for rid in ids for r in store.read_rows("stage_runs", rid, part=None)]
    return sorted((_ts(r["finished_at"]) - r["elapsed_s"], _ts(r["finished_at"])) for r in rows)


def busy_time(spans: list[tuple[float, float]]) -> float:
    union, cur = 0.0, None
    for a, b in spans:
        if cur is None or a > cur[1]:
            union += (cur[1] - cur[0]) if cur else 0.0
            cur = [a, b]
        else:
            cur[1] = max(cur[1], b)
    return union + ((cur[1] - cur[0]) if cur else 0.0)


def run_cli(folder: Path, home: Path) -> float:
    env = dict(os.environ, TALKTHROUGH_HOME=str(home))
    env.pop("DAGSTER_HOME", None)
    exe = Path(sys.executable).with_name("talkthrough")
    t = time.perf_counter()
    subprocess.run([str(exe), "process", str(folder), "--json"], env=env, check=True, capture_output=True)
    return time.perf_counter() - t


def gql(url: str, query: str, variables: dict) -> dict:
    body = httpx.post(url, json={"query": query, "variables": variables}, timeout=60).json()
    assert "errors" not in body, body
    return body["data"]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_ui(home: Path, port: int, stock: bool) -> subprocess.Popen:
    env = dict(os.environ, TALKTHROUGH_HOME=str(home), DAGSTER_HOME=str(home / "dagster"))
    env.pop("TALKTHROUGH_DROP_DIR", None)
    if stock:
        (home / "dagster").mkdir(parents=True)
        (home / "dagster" / "dagster.yaml").write_text(STOCK_YAML)
        env["TALKTHROUGH_BACKFILL_BATCH"] = "1"
        cmd = [sys.executable, "-m", "dagster", "dev", "-m", "talkthrough_assets.definitions", "-p", str(port)]
    else:
        cmd = [str(Path(sys.executable).with_name("talkthrough")), "ui", "--port", str(port)]
    proc = subprocess.Popen(cmd, env=env, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            start_new_session=True)
    deadline = time.time() + 180
    while time.time() < deadline:
        try:
            r = httpx.post(f"http://127.0.0.1:{port}/graphql", timeout=5, json={"query": """
                { repositoriesOrError { ... on RepositoryConnection { nodes { jobs { name } } } } }"""})
            nodes = (r.json().get("data") or {}).get("repositoriesOrError", {}).get("nodes") or []
            if any(j["name"] == "process_recording" for n in nodes for j in n["jobs"]):
                return proc
        except (httpx.HTTPError, ValueError):
            pass
        time.sleep(1)
    raise RuntimeError("the UI did not come up")


def _wait_run(url: str, run_id: str) -> str:
    while (status := gql(url, RUN, {"id": run_id})["runOrError"]["status"]) not in ("SUCCESS", "FAILURE", "CANCELED"):
        time.sleep(1)
    return status


def run_backfill(folder: Path, home: Path, stock: bool) -> dict:
    port = _free_port()
    url = f"http://127.0.0.1:{port}/graphql"
    proc = start_ui(home, port, stock)
    try:
        reg = gql(url, LAUNCH_RUN, {"p": {"selector": dict(REPO, jobName="register_folder"), "runConfigData": {
            "ops": {"register_folder_op": {"config": {"folder": str(folder)}}}}}})["launchRun"]["run"]["runId"]
        assert _wait_run(url, reg) == "SUCCESS"
        from talkthrough_assets.app import service
        from talkthrough_assets.pipeline.settings import STAGES

        ids = sorted(service.recording_id_for(p) for p in folder.iterdir())
        t_launch = time.time()
        res = gql(url, LAUNCH_BACKFILL, {"p": {
            "selector": {"partitionSetName": "process_recording_partition_set", "repositorySelector": REPO},
            "assetSelection": [{"path": [s]} for s in STAGES], "partitionNames": ids, "fromFailure": False,
            "tags": []}})["launchPartitionBackfill"]
        while (bf := gql(url, BACKFILL, {"id": res["backfillId"]})["partitionBackfillOrError"])["status"] not in DONE:
            time.sleep(0.5)
        wall = time.time() - t_launch
        return {"wall": wall, "t_launch": t_launch, "backfill_id": res["backfillId"], "status": bf["status"],
                "runs": bf["runs"]}
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=90)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)


def first_run_timeline(home: Path, backfill_id: str, t_launch: float) -> dict:
    """Seconds from the launch to the backfill row, and to the first run's creation, dequeue and start."""
    from dagster import DagsterEventType, DagsterInstance, RunsFilter

    with DagsterInstance.from_config(str(home / "dagster")) as inst:
        created = inst.get_backfill(backfill_id).backfill_timestamp
        records = inst.get_run_records(RunsFilter(tags={"dagster/backfill": backfill_id}))
        first = min(records, key=lambda r: r.create_timestamp.timestamp())
        times = {}
        for e in inst.all_logs(first.dagster_run.run_id):
            if e.dagster_event and e.dagster_event.event_type not in times:
                times[e.dagster_event.event_type] = e.timestamp
        at = {"backfill row": created, "run created": first.create_timestamp.timestamp(),
              "queued": times.get(DagsterEventType.RUN_ENQUEUED),
              "dequeued": times.get(DagsterEventType.RUN_STARTING),
              "run started": times.get(DagsterEventType.RUN_START),
              "step started": times.get(DagsterEventType.STEP_START)}
        return {**{k: (v or float("nan")) - t_launch for k, v in at.items()}, "runs": len(records)}


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--count", type=int, default=24)
    ap.add_argument("--seconds", type=float, default=4.0)
    ap.add_argument("--stock", action="store_true", help="Dagster's default backfill path (the 'before')")
    args = ap.parse_args()
    base = Path(tempfile.mkdtemp(prefix="tt-bench-backfill-"))
    path = "stock Dagster" if args.stock else "talkthrough ui"
    print(f"{datetime.now(timezone.utc):%Y-%m-%d %H:%M} UTC, load {os.getloadavg()[0]:.2f}, {os.cpu_count()} cores, "
          f"{args.count} recordings of ~{args.seconds:.0f} s, backfill path: {path}")
    files = make_recordings(base / "recordings", args.count, args.seconds)
    cli_wall = run_cli(base / "recordings", base / "cli")
    bf = run_backfill(base / "recordings", base / "ui", args.stock)
    assert bf["status"] == "COMPLETED_SUCCESS", bf
    timeline = first_run_timeline(base / "ui", bf["backfill_id"], bf["t_launch"])
    n = len(files)
    from talkthrough_assets.app import service

    ids = [service.recording_id_for(p) for p in files]
    cli_beyond = cli_wall - busy_time(stage_intervals(base / "cli", ids))
    ui_beyond = bf["wall"] - busy_time(stage_intervals(base / "ui", ids))
    print(f"cli       wall {cli_wall:6.1f} s  per recording {cli_wall / n:5.2f} s  "
          f"beyond the stages {cli_beyond / n:5.2f} s")
    print(f"backfill  wall {bf['wall']:6.1f} s  per recording {bf['wall'] / n:5.2f} s  beyond the stages "
          f"{ui_beyond / n:5.2f} s  ({timeline.pop('runs')} runs)")
    print(f"ratio backfill/cli: per recording {bf['wall'] / cli_wall:.2f}, beyond the stages "
          f"{ui_beyond / cli_beyond:.2f}  (target <= 1.2)")
    print("launch -> " + ", ".join(f"{k} {v:.1f} s" for k, v in timeline.items()) + "  (target: run started <= 5 s)")
    print(f"load at end {os.getloadavg()[0]:.2f}")
    shutil.rmtree(base, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())

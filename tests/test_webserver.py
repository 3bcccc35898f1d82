"""End to end through the real Dagster webserver + daemon: register a folder, backfill it over
GraphQL (what the UI's "Materialize all" / backfill button sends), wait for success."""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import time

import duckdb
import httpx
import pytest
from fixture_facts import FIXTURES_DIR, MEETING_NAME, SILENT_NAME

from talkthrough_assets.settings import STAGES

LAUNCH = """
mutation($params: LaunchBackfillParams!) {
  launchPartitionBackfill(backfillParams: $params) {
    __typename
    ... on LaunchBackfillSuccess { backfillId }
    ... on PythonError { message }
    ... on InvalidSubsetError { message }
  }
}"""
STATUS = """
query($id: String!) {
  partitionBackfillOrError(backfillId: $id) {
    ... on PartitionBackfill { status numPartitions }
    ... on PythonError { message }
  }
}"""
LAUNCH_JOB = """
mutation($params: ExecutionParams!) {
  launchRun(executionParams: $params) {
    __typename
    ... on LaunchRunSuccess { run { runId } }
    ... on PythonError { message }
    ... on RunConfigValidationInvalid { errors { message } }
  }
}"""
RUN_STATUS = """
query($id: ID!) { runOrError(runId: $id) { ... on Run { status } } }"""


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _gql(url: str, query: str, variables: dict | None = None) -> dict:
    r = httpx.post(url, json={"query": query, "variables": variables or {}}, timeout=30)
    r.raise_for_status()
    body = r.json()
    assert "errors" not in body, body
    return body["data"]


@pytest.fixture()
def dagster_dev(tmp_path):
    home = tmp_path / "home"
    env = dict(os.environ, TALKTHROUGH_HOME=str(home), DAGSTER_HOME=str(home / "dagster"))
    env.pop("TALKTHROUGH_DROP_DIR", None)
    (home / "dagster").mkdir(parents=True)
    shutil.copy(os.path.join(os.path.dirname(__file__), "..", "dagster.yaml"), home / "dagster" / "dagster.yaml")
    port = _free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "dagster", "dev", "-m", "talkthrough_assets.definitions", "-h", "127.0.0.1",
         "-p", str(port)], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    url = f"http://127.0.0.1:{port}/graphql"
    try:
        deadline = time.time() + 120
        while time.time() < deadline:
            try:
                if httpx.get(f"http://127.0.0.1:{port}/server_info", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            assert proc.poll() is None, "dagster dev exited"
            time.sleep(1)
        else:
            pytest.fail("dagster webserver did not come up within 120 s")
        yield url, env
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)


def _wait_run(url: str, run_id: str, timeout: float = 180) -> str:
    deadline = time.time() + timeout
    while time.time() < deadline:
        status = _gql(url, RUN_STATUS, {"id": run_id})["runOrError"]["status"]
        if status in ("SUCCESS", "FAILURE", "CANCELED"):
            return status
        time.sleep(2)
    return "TIMEOUT"


def test_register_folder_then_backfill_from_the_ui_api(dagster_dev, tmp_path):
    url, env = dagster_dev
    folder = tmp_path / "recordings"
    folder.mkdir()
    for name in (SILENT_NAME, MEETING_NAME):
        shutil.copy(FIXTURES_DIR / name, folder / name)
    (folder / "notes.txt").write_text("skipped")
    selector = {"repositoryLocationName": "talkthrough_assets.definitions", "repositoryName": "__repository__",
                "jobName": "register_folder"}
    res = _gql(url, LAUNCH_JOB, {"params": {
        "selector": selector, "runConfigData": {"ops": {"register_folder_op": {"config": {"folder": str(folder)}}}}}})
    assert res["launchRun"]["__typename"] == "LaunchRunSuccess", res
    assert _wait_run(url, res["launchRun"]["run"]["runId"]) == "SUCCESS"

    from talkthrough_assets import service

    ids = sorted(service.recording_id_for(folder / n) for n in (SILENT_NAME, MEETING_NAME))
    res = _gql(url, LAUNCH, {"params": {"partitionNames": ids,
                                         "assetSelection": [{"path": [s]} for s in STAGES]}})
    assert res["launchPartitionBackfill"]["__typename"] == "LaunchBackfillSuccess", res
    backfill_id = res["launchPartitionBackfill"]["backfillId"]
    deadline = time.time() + 400
    status = None
    while time.time() < deadline:
        status = _gql(url, STATUS, {"id": backfill_id})["partitionBackfillOrError"]["status"]
        if status in ("COMPLETED", "COMPLETED_SUCCESS", "COMPLETED_FAILED", "FAILED", "CANCELED"):
            break
        time.sleep(3)
    assert status in ("COMPLETED", "COMPLETED_SUCCESS"), status
    # the outputs landed in this server's data root (read straight from its Parquet tree)
    glob = os.path.join(env["TALKTHROUGH_HOME"], "tables", "recordings", "recording=*", "*.parquet")
    got = {r[0] for r in duckdb.sql(f"SELECT recording FROM read_parquet('{glob}', hive_partitioning=true) "
                                    f"WHERE recording <> '__schema__'").fetchall()}
    assert got == set(ids)

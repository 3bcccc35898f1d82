"""The multi-worker shape, as far as one machine allows: `talkthrough ui` (webserver + daemon) on
Postgres storage with the data root in S3 (moto on loopback). The drop-folder sensor asks for runs, the
daemon's run queue starts each in its own run-worker process (Dagster's default run launcher), and
every worker writes to the bucket. Two runs of one recording queued at once never overlap (the
queue's per-partition limit in dagster.yaml), while runs of different recordings may.

The `pg` and `s3` fixtures (tests/conftest.py) skip, with the reason, when Postgres, dagster-postgres
or moto is unavailable.
"""

from __future__ import annotations

import os
import shutil
import time

import pytest
from fixture_facts import FIXTURES_DIR, MEETING_NAME, SILENT_NAME
from test_webserver import LAUNCH_RUN, REPO, RUNS_BY_TAG, _free_port, gql, running_ui

BUCKET = "talkthrough-ui"
RUN_TIMES = """
query($id: ID!) { runOrError(runId: $id) { ... on Run { status startTime endTime tags { key value } } } }"""


@pytest.fixture(scope="module")
def ui_on_pg_s3(pg, s3, tmp_path_factory):
    base = tmp_path_factory.mktemp("scale_out")
    drop = base / "drop"
    drop.mkdir()
    for name in (SILENT_NAME, MEETING_NAME):
        shutil.copy(FIXTURES_DIR / name, drop / name)
    s3.bucket(BUCKET)
    env = {k: v for k, v in os.environ.items() if k not in ("TALKTHROUGH_HOME", "DAGSTER_HOME")}
    env.update(TALKTHROUGH_HOME=f"s3://{BUCKET}/lib", TALKTHROUGH_LOCAL_HOME=str(base / "local"),
               TALKTHROUGH_PG_URL=pg.create_db("tt_ui"), TALKTHROUGH_DROP_DIR=str(drop),
               TALKTHROUGH_DROP_INTERVAL_S="2", **s3.env())
    port = _free_port()
    with running_ui(env, port):
        yield {"url": f"http://127.0.0.1:{port}/graphql", "s3": s3, "pg": pg, "env": env}


def _run(url: str, run_id: str) -> dict:
    return gql(url, RUN_TIMES, {"id": run_id})["runOrError"]


def _wait(url: str, run_id: str, timeout: float = 300) -> dict:
    deadline = time.time() + timeout
    while time.time() < deadline:
        run = _run(url, run_id)
        if run["status"] in ("SUCCESS", "FAILURE", "CANCELED"):
            return run
        time.sleep(2)
    pytest.fail(f"run {run_id} did not end within {timeout:.0f} s (last status {run['status']})")


def _drop_run(url: str, filename: str, timeout: float = 300) -> tuple[str, dict]:
    deadline = time.time() + timeout
    while time.time() < deadline:
        runs = gql(url, RUNS_BY_TAG, {"key": "talkthrough/filename", "value": filename})["runsOrError"]["results"]
        if runs:
            return runs[0]["runId"], _wait(url, runs[0]["runId"], timeout)
        time.sleep(2)
    pytest.fail(f"the sensor did not launch a run for {filename}")


@pytest.fixture(scope="module")
def dropped(ui_on_pg_s3) -> dict[str, str]:
    """Both drop-folder files processed by queued, daemon-launched run workers: filename -> recording id."""
    url, out = ui_on_pg_s3["url"], {}
    for name in (SILENT_NAME, MEETING_NAME):
        run_id, run = _drop_run(url, name)
        assert run["status"] == "SUCCESS", (name, run)
        out[name] = {t["key"]: t["value"] for t in run["tags"]}["dagster/partition"]
    return out


def test_drop_folder_runs_write_to_s3_with_postgres_storage(ui_on_pg_s3, dropped):
    s3, pg = ui_on_pg_s3["s3"], ui_on_pg_s3["pg"]
    keys = s3.keys(f"{BUCKET}/lib")
    for rid in dropped.values():
        assert f"{BUCKET}/lib/manifests/{rid}.json" in keys
        assert f"{BUCKET}/lib/tables/recordings/recording={rid}/part-0.parquet" in keys
    # the instance is the shared Postgres one: the runs and their partitions are recorded there
    runs = pg.query("SELECT count(*) FROM runs WHERE status = 'SUCCESS'", db="tt_ui")[0][0]
    assert runs >= 2
    partitions = {r[0] for r in pg.query("SELECT partition FROM dynamic_partitions", db="tt_ui")}
    assert set(dropped.values()) <= partitions
    # nothing of the library is kept on the machine but caches and Dagster's local files
    local = ui_on_pg_s3["env"]["TALKTHROUGH_LOCAL_HOME"]
    assert not os.path.exists(os.path.join(local, "tables")) and not os.path.exists(os.path.join(local, "manifests"))


def test_queued_runs_of_one_recording_never_overlap(ui_on_pg_s3, dropped, monkeypatch):
    """Two re-anchors of the meeting and one of the silent video, submitted at once: the queue starts
    the meeting's second run only after its first ended; each run is its own worker process."""
    url = ui_on_pg_s3["url"]

    def launch(rid: str, recorded_at: str) -> str:
        res = gql(url, LAUNCH_RUN, {"params": {
            "selector": dict(REPO, jobName="process_recording",
                             assetSelection=[{"path": ["wall_clock"]}, {"path": ["manifest"]}]),
            "runConfigData": {"ops": {"talkthrough_stages": {"config": {"recorded_at": recorded_at}}}},
            "executionMetadata": {"tags": [{"key": "dagster/partition", "value": rid}]}}})["launchRun"]
        assert res["__typename"] == "LaunchRunSuccess", res
        return res["run"]["runId"]

    mt, sv = dropped[MEETING_NAME], dropped[SILENT_NAME]
    first = launch(mt, "2026-05-01T09:00:00+00:00")
    second = launch(mt, "2026-05-01T10:00:00+00:00")
    other = launch(sv, "2026-05-01T11:00:00+00:00")
    runs = {rid: _wait(url, rid) for rid in (first, second, other)}
    assert all(r["status"] == "SUCCESS" for r in runs.values()), runs
    a, b = sorted((runs[first], runs[second]), key=lambda r: r["startTime"])
    assert b["startTime"] >= a["endTime"], (a, b)  # one recording, one run at a time
    # the last re-anchor applied is the one whose run ended last, as in the library on S3
    from talkthrough_assets import store

    for k in ("TALKTHROUGH_HOME", "TALKTHROUGH_LOCAL_HOME", "AWS_ENDPOINT_URL", "AWS_ACCESS_KEY_ID",
              "AWS_SECRET_ACCESS_KEY", "AWS_REGION"):
        monkeypatch.setenv(k, ui_on_pg_s3["env"][k])
    wc = store.read_one("wall_clock", mt)
    last = "10:00" if runs[second] is b else "09:00"
    assert wc["source"] == "recorded_at" and f"2026-05-01T{last}" in wc["start_utc"], wc

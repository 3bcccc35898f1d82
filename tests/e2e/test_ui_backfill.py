"""A UI backfill runs its recordings in batches (several per run), through the real webserver and daemon
that `talkthrough ui` starts, on real engines and fixtures:

- three registered recordings, one of them a file that is no media (registered, then bad at its probe),
  backfilled from the process_recording job page: one batch run over the three;
- the two good recordings are materialized and their data stored; the bad one fails with its reason,
  naming it, in the run's failure and in the partition view; the run fails, and nothing is left STARTED;
- the batch run is created within seconds of the launch (before: the backfill daemon's 30 s loop), and is named
  by its recordings' files while it waits (queued or starting), not only once its step starts.
"""

from __future__ import annotations

import shutil
import time
from pathlib import Path

import pytest

from dagster import DagsterInstance, DagsterRunStatus, RunsFilter
from dagster_records import unsynced
from fixture_facts import FIXTURES_DIR, MEETING_NAME, SILENT_NAME
from test_ui_runs import _env
from test_webserver import (BACKFILL_STATUS, CHECKS, LAUNCH_BACKFILL, REPO, _events, _free_port, _launch,
                            _partition_events, _read_table, _tags, gql, running_ui, wait_run)

from talkthrough_assets.app import service
from talkthrough_assets.app.runs import runs_of
from talkthrough_assets.defs import assets as definitions
from talkthrough_assets.pipeline.settings import STAGES

BAD_NAME = "not a video.mp4"
STATUSES = """
query($key: AssetKeyInput!) {
  assetNodeOrError(assetKey: $key) {
    ... on AssetNode { assetPartitionStatuses {
      ... on DefaultPartitionStatuses { materializedPartitions failedPartitions } } }
  }
}"""
# from the backfill's row to its run's creation: the daemon's backfill loop (2 s here; Dagster's own 30 s
# averaged 15 s) and the submission; 1-2 s measured at load 7-15. The run's start after it (the run worker's
# Python start) depends on the machine's load too much to bound here: bench/bench_backfill.py times it.
RUN_CREATED_S = 10.0


def _backfill_until_done(url: str, ids: list[str]) -> dict:
    """Launch the job page's backfill of ``ids``; the backfill (its id added) once done, with ``first_seen``: each
    of its runs as first seen submitted (status, tags; the daemon creates a run, then submits it to the queue),
    polled often enough to see a run before its step starts (a run worker's start takes seconds)."""
    res = gql(url, LAUNCH_BACKFILL, {"params": {
        "selector": {"partitionSetName": "process_recording_partition_set", "repositorySelector": REPO},
        "assetSelection": [{"path": [s]} for s in STAGES], "partitionNames": ids,
        "fromFailure": False, "tags": []}})["launchPartitionBackfill"]
    assert res["__typename"] == "LaunchBackfillSuccess", res
    deadline = time.monotonic() + 500
    first_seen: dict[str, tuple[str, dict]] = {}
    while time.monotonic() < deadline:
        backfill = gql(url, BACKFILL_STATUS, {"id": res["backfillId"]})["partitionBackfillOrError"]
        for run in backfill["runs"]:
            if run["status"] != "NOT_STARTED":
                first_seen.setdefault(run["runId"], (run["status"], _tags(run)))
        if backfill["status"] in ("COMPLETED", "COMPLETED_SUCCESS", "COMPLETED_FAILED", "FAILED", "CANCELED"):
            return {**backfill, "id": res["backfillId"], "first_seen": first_seen}
        time.sleep(0.25)
    pytest.fail(f"the backfill did not end within 500 s: {backfill}")


def test_backfill_runs_a_batch_stores_the_good_recordings_and_names_the_bad_one(tmp_path):
    home = tmp_path / "home"
    env = _env(home)
    folder = tmp_path / "recordings"
    folder.mkdir()
    for name in (SILENT_NAME, MEETING_NAME):
        shutil.copy(FIXTURES_DIR / name, folder / name)
    (folder / BAD_NAME).write_bytes(b"this is no media file\n" * 200)
    ids = {n: service.recording_id_for(folder / n) for n in (SILENT_NAME, MEETING_NAME, BAD_NAME)}
    port = _free_port()
    url = f"http://127.0.0.1:{port}/graphql"
    with running_ui(env, port):
        reg = _launch(url, {"selector": dict(REPO, jobName="register_folder"),
                            "runConfigData": {"ops": {"register_folder_op": {"config": {"folder": str(folder)}}}}})
        assert wait_run(url, reg) == "SUCCESS"
        backfill = _backfill_until_done(url, sorted(ids.values()))
        assert backfill["status"] == "COMPLETED_FAILED", backfill
        runs = backfill["runs"]
        # one run for the three: a partition range, no per-recording partition tag
        assert len(runs) == 1 and runs[0]["status"] == "FAILURE", runs
        tags = _tags(runs[0])
        assert "dagster/partition" not in tags and tags["dagster/asset_partition_range_start"], tags
        # named in the runs list by its recordings' files from the start: seen waiting (queued, or its run worker
        # starting: before any step, which is where the name was added before), already named
        label = f"{next(n for n, i in ids.items() if i == tags['dagster/asset_partition_range_start'])} and 2 more"
        seen_status, seen_tags = backfill["first_seen"][runs[0]["runId"]]
        assert seen_status in ("QUEUED", "STARTING"), (seen_status, seen_tags)
        assert seen_tags.get("talkthrough/filename") == label == tags["talkthrough/filename"], seen_tags
        # the failure names the bad recording (file and id), and only it
        failure = tags["talkthrough/failure"]
        assert f"{BAD_NAME} ({ids[BAD_NAME]})" in failure and "1 of 3" in failure, failure
        assert SILENT_NAME not in failure and MEETING_NAME not in failure, failure
        messages = [e.get("message") or "" for e in _events(url, runs[0]["runId"])]
        assert any(m.startswith(f"{BAD_NAME} ({ids[BAD_NAME]}) failed: probe") for m in messages), messages
        # the partition view: the good ones materialized, the bad one failed with its reason
        for stage in ("probe", "manifest"):
            st = gql(url, STATUSES, {"key": {"path": [stage]}})["assetNodeOrError"]["assetPartitionStatuses"]
            assert set(st["materializedPartitions"]) == {ids[SILENT_NAME], ids[MEETING_NAME]}, (stage, st)
            assert st["failedPartitions"] == [ids[BAD_NAME]], (stage, st)
        bad = [e for e in _partition_events(url, "probe", ids[BAD_NAME]) if e["__typename"] == "ObservationEvent"]
        assert bad and bad[0]["description"].startswith("probe: "), bad
        for name in (SILENT_NAME, MEETING_NAME):
            probe = [e for e in _partition_events(url, "probe", ids[name]) if e["__typename"] == "MaterializationEvent"]
            md = {m["label"]: m.get("text", m.get("floatValue")) for m in probe[0]["metadataEntries"]}
            assert probe[0]["runId"] == runs[0]["runId"] and md["filename"] == name, md
        # checks evaluated per partition: passed for the good ones, "not checked" (a warning) for the bad one
        data = gql(url, CHECKS, {"key": {"path": ["manifest"]}, "name": "manifest_schema_valid"})
        execs = {e["partition"]: e for e in data["assetCheckExecutions"]}
        assert set(execs) == set(ids.values()), data["assetCheckExecutions"]
        assert all(execs[ids[n]]["status"] == "SUCCEEDED" for n in (SILENT_NAME, MEETING_NAME)), execs
        assert execs[ids[BAD_NAME]]["evaluation"]["description"].startswith("not checked: manifest"), execs
    # the good recordings' data is stored; nothing of the bad one; no run left open
    stored = {r["recording"] for r in _read_table(home, "recordings", "*")}
    assert stored >= {ids[SILENT_NAME], ids[MEETING_NAME]} and ids[BAD_NAME] not in stored, stored
    assert _read_table(home, "segments", ids[MEETING_NAME]), "the meeting's transcript was not stored"
    with DagsterInstance.from_config(str(Path(home) / "dagster")) as inst:
        assert all(r.is_finished for r in inst.get_runs()), [(r.run_id, r.status) for r in inst.get_runs()]
        # a recording's runs include the batch that held it (what `talkthrough forget` and the orphan sweep ask)
        created = inst.get_backfill(backfill["id"]).backfill_timestamp
        record = inst.get_run_records(RunsFilter(run_ids=[runs[0]["runId"]]))[0]
        print(f"backfill row -> run created {record.create_timestamp.timestamp() - created:.1f} s")
        assert record.create_timestamp.timestamp() - created < RUN_CREATED_S
        finished = [DagsterRunStatus.FAILURE]
        assert [r.run_id for r in runs_of(inst, ids[BAD_NAME], finished)] == [runs[0]["runId"]]
        assert [r.run_id for r in runs_of(inst, ids[SILENT_NAME], finished)] == [runs[0]["runId"]]
        assert runs_of(inst, "0123456789abcdef", finished) == []
        # the batch recorded Dagster's provenance (code and input data versions): nothing reads as unsynced
        for name in (SILENT_NAME, MEETING_NAME):
            assert unsynced(inst, definitions.ASSETS, ids[name]) == set(), name

"""What a person sees in the Dagster UI, through the real webserver + daemon that `talkthrough ui`
starts (one server for the session): every request here is a GraphQL call the UI itself sends.

- a folder registered by the `register_folder` job and backfilled from the `process_recording` job
  page: one run history (the sensor and the CLI run that job too), filenames in run tags and probe
  metadata, partitioned checks with descriptions, a small contact-sheet preview;
- the amend snippet of docs/operations.md launched as run config;
- a check that really fails (a deleted keyframe, re-verified with "Execute check");
- a zero-byte file in the drop folder: the sensor names it while it waits, then its run fails with
  the one-line reason, no Python stack, and the reason recorded for the partition view;
- quiet sensor ticks leave no log file behind.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
from contextlib import contextmanager
from datetime import datetime, timezone
from pathlib import Path

import duckdb
import httpx
import pytest
from fixture_facts import FIXTURES_DIR, MEETING_NAME, SILENT_NAME

from talkthrough_assets.pipeline.settings import STAGES

ROOT = Path(__file__).resolve().parents[2]
REPO = {"repositoryLocationName": "talkthrough_assets.definitions", "repositoryName": "__repository__"}
EMPTY_NAME = "empty drop.mp4"
SECOND_EMPTY_NAME = "empty again.mp4"

LAUNCH_BACKFILL = """
mutation($params: LaunchBackfillParams!) {
  launchPartitionBackfill(backfillParams: $params) {
    __typename
    ... on LaunchBackfillSuccess { backfillId }
    ... on PythonError { message }
    ... on InvalidSubsetError { message }
  }
}"""
BACKFILL_STATUS = """
query($id: String!) {
  partitionBackfillOrError(backfillId: $id) {
    ... on PartitionBackfill { status runs(limit: 50) { runId jobName status tags { key value } } }
    ... on PythonError { message }
  }
}"""
LAUNCH_RUN = """
mutation($params: ExecutionParams!) {
  launchRun(executionParams: $params) {
    __typename
    ... on LaunchRunSuccess { run { runId } }
    ... on PythonError { message }
    ... on RunConfigValidationInvalid { errors { message } }
    ... on InvalidSubsetError { message }
  }
}"""
RUN = """
query($id: ID!) { runOrError(runId: $id) { ... on Run { status jobName tags { key value } } } }"""
RUNS_BY_TAG = """
query($key: String!, $value: String!) {
  runsOrError(filter: {tags: [{key: $key, value: $value}]}) {
    ... on Runs { results { runId status jobName tags { key value } } }
  }
}"""
RUN_EVENTS = """
query($id: ID!) {
  logsForRun(runId: $id, limit: 1000) {
    ... on EventConnection {
      events {
        __typename
        ... on MessageEvent { message level }
        ... on ExecutionStepFailureEvent {
          errorSource
          error { message stack errorChain { error { message stack } } }
        }
        ... on RunFailureEvent { error { message stack errorChain { error { message stack } } } }
      }
    }
  }
}"""
PARTITION_EVENTS = """
query($key: AssetKeyInput!, $partition: String!) {
  assetOrError(assetKey: $key) {
    ... on Asset {
      assetEventHistory(partitions: [$partition], limit: 100,
                        eventTypeSelectors: [MATERIALIZATION, OBSERVATION, FAILED_TO_MATERIALIZE]) {
        results {
          __typename
          ... on MaterializationEvent { runId description metadataEntries { label ... on TextMetadataEntry { text }
            ... on FloatMetadataEntry { floatValue } ... on MarkdownMetadataEntry { mdStr }
            ... on PathMetadataEntry { path } } }
          ... on ObservationEvent { runId description metadataEntries { label ... on TextMetadataEntry { text } } }
        }
      }
    }
  }
}"""
CHECKS = """
query($key: AssetKeyInput!, $name: String!) {
  assetNodeOrError(assetKey: $key) {
    ... on AssetNode {
      assetChecksOrError { ... on AssetChecks { checks { name description partitionDefinition { name } } } }
    }
  }
  assetCheckExecutions(assetKey: $key, checkName: $name, limit: 50) {
    runId status partition
    evaluation { success severity description partition }
  }
}"""
SENSOR_TICKS = """
query($selector: SensorSelector!) {
  sensorOrError(sensorSelector: $selector) {
    ... on Sensor { sensorState { status ticks(limit: 200) { status skipReason logKey runIds } } }
  }
}"""


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def gql(url: str, query: str, variables: dict | None = None) -> dict:
    r = httpx.post(url, json={"query": query, "variables": variables or {}}, timeout=60)
    assert r.status_code == 200, r.text[:2000]
    body = r.json()
    assert "errors" not in body, body
    return body["data"]


def talkthrough_command() -> list[str]:
    exe = Path(sys.executable).with_name("talkthrough")
    return [str(exe)] if exe.exists() else [sys.executable, "-m", "talkthrough_assets.cli.main"]


def start_ui(env: dict, port: int) -> subprocess.Popen:
    """`talkthrough ui` as a person starts it, in its own process group (as a terminal would)."""
    return subprocess.Popen(talkthrough_command() + ["ui", "--port", str(port)], env=env, cwd=ROOT,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)


@contextmanager
def running_ui(env: dict, port: int):
    """`talkthrough ui` up on ``port`` for the block, then stopped as a terminal would (SIGTERM)."""
    proc = start_ui(env, port)
    try:
        wait_until_up(proc, port)
        yield proc
    finally:
        stop_ui(proc)


def stop_ui(proc: subprocess.Popen) -> None:
    """Stop `talkthrough ui` as a terminal would (SIGTERM); its whole group killed if it does not end in 90 s."""
    proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(timeout=90)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)


def wait_until_up(proc: subprocess.Popen, port: int, timeout: float = 150) -> None:
    deadline = time.time() + timeout
    while time.time() < deadline:
        try:
            if httpx.get(f"http://127.0.0.1:{port}/server_info", timeout=2).status_code == 200:
                # the code location loads after the server answers: wait until the job is known
                r = httpx.post(f"http://127.0.0.1:{port}/graphql", timeout=10, json={"query": """
                    { repositoriesOrError { ... on RepositoryConnection { nodes { jobs { name } } } } }"""})
                nodes = (r.json().get("data") or {}).get("repositoriesOrError", {}).get("nodes") or []
                if any(j["name"] == "process_recording" for n in nodes for j in n["jobs"]):
                    return
        except (httpx.HTTPError, ValueError):
            pass
        assert proc.poll() is None, f"talkthrough ui exited with {proc.returncode}"
        time.sleep(1)
    pytest.fail(f"the Dagster webserver did not come up within {timeout:.0f} s")


@pytest.fixture(scope="session")
def dagster_ui(tmp_path_factory):
    """One `talkthrough ui` (webserver + daemon) with a drop folder holding a zero-byte file."""
    base = tmp_path_factory.mktemp("ui")
    home, drop = base / "home", base / "drop"
    drop.mkdir()
    (drop / EMPTY_NAME).write_bytes(b"")
    env = dict(os.environ, TALKTHROUGH_HOME=str(home), DAGSTER_HOME=str(home / "dagster"),
               TALKTHROUGH_DROP_DIR=str(drop), TALKTHROUGH_DROP_INTERVAL_S="2", TALKTHROUGH_DROP_ZERO_WAIT_S="6")
    port = _free_port()
    with running_ui(env, port):
        yield {"url": f"http://127.0.0.1:{port}/graphql", "base": f"http://127.0.0.1:{port}", "env": env,
               "home": home, "drop": drop, "tmp": base}


def wait_run(url: str, run_id: str, timeout: float = 240) -> str:
    deadline = time.time() + timeout
    while time.time() < deadline:
        status = gql(url, RUN, {"id": run_id})["runOrError"]["status"]
        if status in ("SUCCESS", "FAILURE", "CANCELED"):
            return status
        time.sleep(2)
    return "TIMEOUT"


def drop_failure_run(url: str, timeout: float = 240, name: str = EMPTY_NAME) -> dict:
    """The run the sensor launched for the zero-byte drop file ``name``, once it has ended."""
    deadline = time.time() + timeout
    while time.time() < deadline:
        runs = gql(url, RUNS_BY_TAG, {"key": "talkthrough/filename", "value": name})["runsOrError"]["results"]
        if runs and runs[0]["status"] in ("SUCCESS", "FAILURE", "CANCELED"):
            return runs[0]
        time.sleep(2)
    pytest.fail("the sensor did not run the zero-byte drop file within the time allowed")


def _tags(run: dict) -> dict:
    return {t["key"]: t["value"] for t in run["tags"]}


def _launch(url: str, params: dict) -> str:
    res = gql(url, LAUNCH_RUN, {"params": params})["launchRun"]
    assert res["__typename"] == "LaunchRunSuccess", res
    return res["run"]["runId"]


def _events(url: str, run_id: str) -> list[dict]:
    return gql(url, RUN_EVENTS, {"id": run_id})["logsForRun"]["events"]


def assert_one_line_failure(events: list[dict], reason: str) -> None:
    """Item 9 of #24: the first ERROR event, the STEP_FAILURE and the RUN_FAILURE each carry ``reason``
    as their whole message, with no stack and no cause chain (Dagster's DagsterExecutionStepExecutionError
    wrapper used to hold the reason as a cause, and RUN_FAILURE repeated that wrapper's stack)."""
    errors = [e["message"] for e in events if e["__typename"] == "LogMessageEvent" and e["level"] == "ERROR"]
    assert errors and errors[0].startswith(reason), errors
    for kind in ("ExecutionStepFailureEvent", "RunFailureEvent"):
        failure = [e for e in events if e["__typename"] == kind]
        assert len(failure) == 1, (kind, events)
        error = failure[0]["error"]
        assert error["message"].startswith(reason) and error["stack"] == [] and error["errorChain"] == [], (kind, error)
    assert "Traceback" not in str(events) and "DagsterExecutionStepExecutionError" not in str(events)


def _partition_events(url: str, asset: str, rid: str) -> list[dict]:
    return gql(url, PARTITION_EVENTS, {"key": {"path": [asset]}, "partition": rid})["assetOrError"][
        "assetEventHistory"]["results"]


def _read_table(home: Path, table: str, rid: str) -> list[dict]:
    glob = home / "tables" / table / f"recording={rid}" / "*.parquet"
    rel = duckdb.sql(f"SELECT * FROM read_parquet('{glob}', hive_partitioning=true) WHERE recording <> '__schema__'")
    return [dict(zip(rel.columns, row)) for row in rel.fetchall()]


@pytest.fixture(scope="session")
def backfilled(dagster_ui):
    """register_folder, then the backfill that the process_recording job page's "Materialize all" sends."""
    url, tmp = dagster_ui["url"], dagster_ui["tmp"]
    folder = tmp / "recordings"
    folder.mkdir()
    for name in (SILENT_NAME, MEETING_NAME):
        shutil.copy(FIXTURES_DIR / name, folder / name)
    (folder / "notes.txt").write_text("skipped")
    run_id = _launch(url, {"selector": dict(REPO, jobName="register_folder"), "runConfigData": {
        "ops": {"register_folder_op": {"config": {"folder": str(folder)}}}}})
    assert wait_run(url, run_id) == "SUCCESS"
    register_log = [e["message"] for e in _events(url, run_id) if e.get("message", "").startswith("registered ")]

    from talkthrough_assets.app import service

    ids = {n: service.recording_id_for(folder / n) for n in (SILENT_NAME, MEETING_NAME)}
    res = gql(url, LAUNCH_BACKFILL, {"params": {
        "selector": {"partitionSetName": "process_recording_partition_set",
                     "repositorySelector": REPO},
        "assetSelection": [{"path": [s]} for s in STAGES], "partitionNames": sorted(ids.values()),
        "fromFailure": False, "tags": []}})["launchPartitionBackfill"]
    assert res["__typename"] == "LaunchBackfillSuccess", res
    deadline, backfill = time.time() + 400, None
    while time.time() < deadline:
        backfill = gql(url, BACKFILL_STATUS, {"id": res["backfillId"]})["partitionBackfillOrError"]
        if backfill["status"] in ("COMPLETED", "COMPLETED_SUCCESS", "COMPLETED_FAILED", "FAILED", "CANCELED"):
            break
        time.sleep(3)
    return {"ids": ids, "backfill": backfill, "register_log": register_log}


def test_backfill_from_the_job_page_is_one_history_with_filenames_and_partitioned_checks(dagster_ui, backfilled):
    url, home, ids = dagster_ui["url"], dagster_ui["home"], backfilled["ids"]
    assert backfilled["backfill"]["status"] in ("COMPLETED", "COMPLETED_SUCCESS"), backfilled["backfill"]
    # register_folder says where to go next, in the README's words
    assert backfilled["register_log"] and "process_recording > Materialize all" in backfilled["register_log"][0]
    # item 12: the backfill's runs are process_recording runs, like the sensor's and the CLI's; both
    # recordings in one batch run (the stages asset's backfill policy), over their partition range
    runs = backfilled["backfill"]["runs"]
    assert len(runs) == 1 and {r["jobName"] for r in runs} == {"process_recording"}, runs
    tags = _tags(runs[0])
    assert {tags["dagster/asset_partition_range_start"], tags["dagster/asset_partition_range_end"]} == set(ids.values())
    # item 11: the run says which files it holds, and probe's metadata in the partition view which file each is
    assert tags["talkthrough/filename"] in {f"{n} and 1 more" for n in ids}, tags
    assert tags["talkthrough/duration"].endswith(" s"), tags
    for name, rid in ids.items():
        probe = [e for e in _partition_events(url, "probe", rid) if e["__typename"] == "MaterializationEvent"][0]
        md = {m["label"]: m.get("text", m.get("floatValue")) for m in probe["metadataEntries"]}
        assert md["filename"] == name and md["duration_s"] > 1
    # item 9: every check is partitioned, described, and evaluated per partition
    for stage, check in (("segments", "transcript_present_when_audible"), ("keyframes", "frame_index_matches_disk"),
                         ("manifest", "manifest_schema_valid")):
        data = gql(url, CHECKS, {"key": {"path": [stage]}, "name": check})
        spec = [c for c in data["assetNodeOrError"]["assetChecksOrError"]["checks"] if c["name"] == check][0]
        assert spec["partitionDefinition"] is not None and len(spec["description"]) > 40, spec
        execs = [e for e in data["assetCheckExecutions"] if e["partition"] in ids.values()]
        assert sorted(e["partition"] for e in execs) == sorted(ids.values()), data["assetCheckExecutions"]
        assert all(e["status"] == "SUCCEEDED" and e["evaluation"]["description"] for e in execs), execs
        # a failed run of another recording (the zero-byte drop file) marks only its own partition
        assert all(e["partition"] for e in data["assetCheckExecutions"])
    # item 14: the contact sheet is a path plus a small thumbnail, not the whole sheet inline; the manifest's
    # materialization names it beside the report (every scene once: it is made from the published manifest)
    mf = [e for e in _partition_events(url, "manifest", ids[SILENT_NAME]) if e["__typename"] == "MaterializationEvent"][0]
    md = {m["label"]: m for m in mf["metadataEntries"]}
    assert md["contact_sheet"]["path"].endswith(f"reports/{ids[SILENT_NAME]}.contact_sheet.jpg"), md["contact_sheet"]
    preview = md["contact_sheet_preview"]["mdStr"]
    assert preview.startswith("![contact sheet](data:image/jpeg;base64,") and len(preview) < 24_000, len(preview)
    # outputs landed in this server's data root
    assert {r["recording"] for r in _read_table(home, "recordings", "*")} >= set(ids.values())


def test_docs_amend_snippet_relaunches_wall_clock_and_manifest(dagster_ui, backfilled):
    """Item 13: the docs' YAML (docs/operations.md), as pasted into the launchpad of the job page with two assets
    selected."""
    import yaml

    url, home = dagster_ui["url"], dagster_ui["home"]
    rid = backfilled["ids"][SILENT_NAME]
    doc = (ROOT / "docs" / "operations.md").read_text()
    section = doc[doc.index("**Amends from the UI:**"):]
    snippet = re.search(r"```yaml\n(.*?)```", section, re.S).group(1)
    config = yaml.safe_load(snippet)
    wanted = config["ops"]["talkthrough_stages"]["config"]["recorded_at"]
    before = _read_table(home, "wall_clock", rid)[0]["start_utc"]
    expected = datetime.fromisoformat(wanted).astimezone(timezone.utc)
    assert datetime.fromisoformat(str(before).replace("Z", "+00:00")) != expected, "the snippet would change nothing"
    run_id = _launch(url, {
        "selector": dict(REPO, jobName="process_recording",
                         assetSelection=[{"path": ["wall_clock"]}, {"path": ["manifest"]}]),
        "runConfigData": snippet, "executionMetadata": {"tags": [{"key": "dagster/partition", "value": rid}]}})
    assert wait_run(url, run_id) == "SUCCESS"
    after = _read_table(home, "wall_clock", rid)[0]
    assert datetime.fromisoformat(str(after["start_utc"]).replace("Z", "+00:00")) == expected
    assert after["source"] == "recorded_at"


def test_a_check_really_fails_when_a_keyframe_is_deleted(dagster_ui, backfilled):
    """Item 9: "Execute check" on one partition re-verifies the disk; a missing frame fails it (ERROR)."""
    url, home = dagster_ui["url"], dagster_ui["home"]
    rid = backfilled["ids"][SILENT_NAME]
    frames = _read_table(home, "keyframes", rid)
    victim = home / frames[-1]["file"]
    assert victim.is_file()
    victim.unlink()
    run_id = _launch(url, {
        "selector": dict(REPO, jobName="process_recording", assetSelection=[],
                         assetCheckSelection=[{"assetKey": {"path": ["keyframes"]}, "name": "frame_index_matches_disk"}]),
        "executionMetadata": {"tags": [{"key": "dagster/partition", "value": rid}]}})
    assert wait_run(url, run_id) == "SUCCESS"
    execs = gql(url, CHECKS, {"key": {"path": ["keyframes"]}, "name": "frame_index_matches_disk"})[
        "assetCheckExecutions"]
    mine = [e for e in execs if e["runId"] == run_id]
    assert len(mine) == 1 and mine[0]["partition"] == rid, execs
    ev = mine[0]["evaluation"]
    assert (mine[0]["status"], ev["success"], ev["severity"]) == ("FAILED", False, "ERROR"), mine
    assert f"{len(frames) - 1}/{len(frames)}" in ev["description"] and victim.name in ev["description"]
    # the other partition's check is untouched by this one's failure
    other = backfilled["ids"][MEETING_NAME]
    assert all(e["status"] == "SUCCEEDED" for e in execs if e["partition"] == other)


def test_zero_byte_drop_file_is_named_while_waiting_then_fails_with_its_reason_and_no_stack(dagster_ui):
    """Items 8 and 10 (and the sensor half of 11 and 14)."""
    url = dagster_ui["url"]
    run = drop_failure_run(url)
    tags = _tags(run)
    assert (run["status"], run["jobName"]) == ("FAILURE", "process_recording")
    reason = "probe: empty file (0 bytes)"
    assert tags["talkthrough/failure"].startswith(reason), tags
    # the event log: the reason is an ERROR event's whole message, and the step failure and the run failure
    # (the row the run page opens scrolled to) are that reason alone: no stack, no Dagster wrapper around it
    events = _events(url, run["runId"])
    assert_one_line_failure(events, reason)
    # the partition view (asset event history of that partition) records why it did not materialize
    rid = tags["dagster/partition"]
    for asset, says in (("probe", reason), ("manifest", f"manifest: not run because {reason}")):
        obs = [e for e in _partition_events(url, asset, rid) if e["__typename"] == "ObservationEvent"]
        assert obs and obs[0]["description"].startswith(says), obs
    # item 8: while it waited, every tick's skip reason named the file and why
    ticks = gql(url, SENSOR_TICKS, {"selector": dict(REPO, sensorName="drop_dir_sensor")})[
        "sensorOrError"]["sensorState"]["ticks"]
    waiting = [t for t in ticks if t["status"] == "SKIPPED" and EMPTY_NAME in (t["skipReason"] or "")]
    assert waiting and all("empty, 0 bytes" in t["skipReason"] for t in waiting), ticks
    launched = [t for t in ticks if t["runIds"]]
    assert len(launched) == 1, ticks
    # item 14: quiet ticks (nothing new) write no captured log file, so they cannot pile up; only the
    # tick with news logged (the daemon gives every tick a log key, the file exists only if it logged)
    quiet = [t for t in ticks if t["status"] == "SKIPPED"]
    assert len(quiet) >= 3, ticks
    logs = Path(dagster_ui["env"]["DAGSTER_HOME"]) / "storage" / "__repository__" / "drop_dir_sensor"
    assert {p.stem for p in logs.iterdir()} == {launched[0]["logKey"][-1]}, sorted(logs.iterdir())


# ------------------------------------------------------------------ what a person sees, in Chromium



def _page_text(page, url: str, wait_for: str, timeout_ms: int = 60_000) -> str:
    page.goto(url)
    page.get_by_text(wait_for, exact=False).first.wait_for(timeout=timeout_ms)
    return page.inner_text("body")


def test_browser_failed_run_shows_the_reason_without_a_stack_and_names_the_file(dagster_ui, browser, tmp_path):
    """Items 10 and 11 of #14 and item 9 of #24 as a person sees them: the run page and the partition page
    of the zero-byte drop file. Screenshots go to $TALKTHROUGH_TEST_ARTIFACTS (default: the test's tmp)."""
    art = Path(os.environ.get("TALKTHROUGH_TEST_ARTIFACTS") or tmp_path / "artifacts")
    art.mkdir(parents=True, exist_ok=True)
    run = drop_failure_run(dagster_ui["url"])
    reason = "probe: empty file (0 bytes): empty drop.mp4 (8 downstream stage(s) skipped)"
    page = browser.new_page(viewport={"width": 1600, "height": 1200})
    text = _page_text(page, f"{dagster_ui['base']}/runs/{run['runId']}", "RUN_FAILURE")
    page.screenshot(path=str(art / "run_page_failure.png"))
    # the run page opens scrolled to its last rows: the step failure and the run failure, each the reason
    # alone. Before: DagsterExecutionStepExecutionError around the reason, and Dagster's stack on RUN_FAILURE
    assert "Stack Trace:" not in text and "Error occurred while executing op" not in text, text
    assert "DagsterExecutionStepExecutionError" not in text and "talkthrough_assets/" not in text, text
    assert text.split("RUN_FAILURE", 1)[1].split("\n")[2] == reason, text
    assert text.split("STEP_FAILURE", 1)[1].split("\n")[1] == reason, text
    shown = page.get_by_text(reason, exact=True).last.bounding_box()
    assert shown and 0 <= shown["y"] < 1200, shown  # in the first screen, without scrolling
    assert EMPTY_NAME in text  # the run's tags name the file
    # the partition view of probe: Dagster's own banner names the failed run; its "View logs" opens that
    # run's log, whose first ERROR row is the reason (one click); the event history holds the observation
    rid = _tags(run)["dagster/partition"]
    text = _page_text(page, f"{dagster_ui['base']}/assets/probe?view=partitions&partition={rid}",
                      "did not materialize")
    assert f"Run {run['runId'][:8]} failed, and did not materialize this asset." in text, text
    assert "View all historical events (1)" in text
    skip = page.get_by_role("button", name="Skip")  # Dagster's newsletter dialog, shown once per browser
    if skip.count():
        skip.first.click()
    page.get_by_role("button", name="View logs").click()
    dialog = page.locator("[role=dialog]").last
    dialog.get_by_text(reason, exact=True).first.wait_for(timeout=60_000)
    page.screenshot(path=str(art / "partition_page_view_logs.png"))
    logs = dialog.inner_text()
    rows = [line.strip() for line in logs.splitlines()]
    assert "ERROR" in rows and rows[rows.index("ERROR") + 1] == reason, logs
    assert "Stack Trace:" not in logs
    # the same page with the event history open (its state lives in the URL)
    text = _page_text(page, f"{dagster_ui['base']}/assets/probe?view=partitions&partition={rid}&showAllEvents=true",
                      "Observation")
    # it lists the observation from this run; its text (the reason) is checked over GraphQL above
    assert "process_recording" in text and run["runId"][:8] in text
    page.close()


def test_an_empty_file_dropped_after_another_fails_on_its_own_and_is_no_alias(dagster_ui):
    """Every empty file has the same bytes, so the same id: the second one used to be recorded as an alias of the
    first and never got a run. Each is refused on its own: a failed run each, naming its file, and neither is
    registered (no recording, no alias). Last in this module: the pages above show the first file's run alone."""
    url, drop, home = dagster_ui["url"], dagster_ui["drop"], dagster_ui["home"]
    first = drop_failure_run(url)
    (drop / SECOND_EMPTY_NAME).write_bytes(b"")
    second = drop_failure_run(url, name=SECOND_EMPTY_NAME)
    tags, first_tags = _tags(second), _tags(first)
    assert second["status"] == "FAILURE" and second["runId"] != first["runId"]
    assert tags["dagster/partition"] == first_tags["dagster/partition"]  # the same bytes' partition records both
    assert tags["talkthrough/failure"] == f"probe: empty file (0 bytes): {SECOND_EMPTY_NAME}", tags
    assert tags["talkthrough/source"] == str(drop / SECOND_EMPTY_NAME) and first_tags["talkthrough/source"] == str(
        drop / EMPTY_NAME), (tags, first_tags)
    assert_one_line_failure(_events(url, second["runId"]), f"probe: empty file (0 bytes): {SECOND_EMPTY_NAME}")
    # no file of either is registered: the sources table has no partition for the empty bytes' id
    assert not (home / "tables" / "sources" / f"recording={tags['dagster/partition']}").exists()

"""What a Dagster user does beside processing (#24 items 4-10), over the real webserver and daemon that
`talkthrough ui` starts (one server for this module, one recording processed through the job):

- checks re-verified per recording with the `check_recording` job; an unpartitioned check run (the
  asset graph's "Execute all") fails with a one-line reason, not a crash;
- every stage's materialization, the registration log and the runs name the file; an alias (same bytes,
  another name) keeps the first name and is listed as an alias; `talkthrough recordings --find NAME`
  says which partition a file is;
- a partition key that is no recording id ("Add a partition" accepts any text) fails its run at the start
  with the reason and is removed.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import time

import pytest
from fixture_facts import FIXTURES_DIR, SILENT_NAME
from test_webserver import (CHECKS, REPO, RUNS_BY_TAG, _events, _free_port, _launch, _page_text, _partition_events, _tags,
                            assert_one_line_failure, gql, running_ui, talkthrough_command, wait_run)

from talkthrough_assets.app import service
from talkthrough_assets.pipeline.settings import STAGES

RUN_TAGS = """
query($id: ID!) { runOrError(runId: $id) { ... on Run { status tags { key value } } } }"""
ADD_PARTITION = """
mutation($repo: RepositorySelector!, $name: String!, $key: String!) {
  addDynamicPartition(repositorySelector: $repo, partitionsDefName: $name, partitionKey: $key) { __typename }
}"""
PARTITION_KEYS = """
query($repo: RepositorySelector!) {
  repositoryOrError(repositorySelector: $repo) {
    ... on Repository { partitionSets { name partitionsOrError { ... on Partitions { results { name } } } } }
  }
}"""
CHECK_KEYS = (("segments", "transcript_present_when_audible"), ("keyframes", "frame_index_matches_disk"),
              ("manifest", "manifest_schema_valid"))


@pytest.fixture(scope="module")
def ui(tmp_path_factory):
    base = tmp_path_factory.mktemp("uiops")
    home, folder = base / "home", base / "recordings"
    folder.mkdir()
    shutil.copy(FIXTURES_DIR / SILENT_NAME, folder / SILENT_NAME)
    env = dict(os.environ, TALKTHROUGH_HOME=str(home), DAGSTER_HOME=str(home / "dagster"))
    env.pop("TALKTHROUGH_DROP_DIR", None)
    port = _free_port()
    url = f"http://127.0.0.1:{port}/graphql"
    with running_ui(env, port):
        reg = _launch(url, {"selector": dict(REPO, jobName="register_folder"),
                            "runConfigData": {"ops": {"register_folder_op": {"config": {"folder": str(folder)}}}}})
        assert wait_run(url, reg) == "SUCCESS"
        rid = service.recording_id_for(folder / SILENT_NAME)
        run = _launch(url, {"selector": dict(REPO, jobName="process_recording",
                                             assetSelection=[{"path": [s]} for s in STAGES]),
                            "executionMetadata": {"tags": [{"key": "dagster/partition", "value": rid}]}})
        assert wait_run(url, run, timeout=400) == "SUCCESS"
        yield {"url": url, "base": f"http://127.0.0.1:{port}", "home": home, "rid": rid, "folder": folder,
               "register_run": reg, "process_run": run, "env": env, "tmp": base}


def _run(url: str, run_id: str) -> dict:
    return gql(url, RUN_TAGS, {"id": run_id})["runOrError"]


def _one_line_failure(url: str, run_id: str, reason_start: str) -> None:
    """The run failed; its failure tag, first ERROR event, step failure and run failure carry the reason."""
    run = _run(url, run_id)
    assert run["status"] == "FAILURE"
    assert _tags(run)["talkthrough/failure"].startswith(reason_start), _tags(run)
    assert_one_line_failure(_events(url, run_id), reason_start)


def test_check_recording_job_reverifies_the_checks_of_one_recording(ui):
    """Item 4: the Checks tab cannot execute a partitioned check; the check_recording job can."""
    url, rid = ui["url"], ui["rid"]
    run_id = _launch(url, {"selector": dict(REPO, jobName="check_recording"),
                           "executionMetadata": {"tags": [{"key": "dagster/partition", "value": rid}]}})
    assert wait_run(url, run_id) == "SUCCESS"
    assert _tags(_run(url, run_id))["talkthrough/filename"] == SILENT_NAME
    for stage, check in CHECK_KEYS:
        execs = gql(url, CHECKS, {"key": {"path": [stage]}, "name": check})["assetCheckExecutions"]
        mine = [e for e in execs if e["runId"] == run_id]
        assert len(mine) == 1 and mine[0]["partition"] == rid, execs
        assert mine[0]["status"] == "SUCCEEDED" and mine[0]["evaluation"]["description"], mine


def test_unpartitioned_runs_check_every_recording_or_fail_with_a_one_line_reason(ui):
    """Items 4 and 5: "Execute all" on the asset graph's checks launches __ASSET_JOB with no partition. It
    checks every recording, each result recorded for its own partition, and leaves no "Execution failed"
    without a partition behind; materializing with no partition picked fails at once with the reason."""
    url, rid = ui["url"], ui["rid"]
    run_id = _launch(url, {"selector": dict(REPO, jobName="__ASSET_JOB", assetSelection=[], assetCheckSelection=[
        {"assetKey": {"path": [stage]}, "name": check} for stage, check in CHECK_KEYS])})
    assert wait_run(url, run_id) == "SUCCESS"
    for stage, check in CHECK_KEYS:
        execs = [e for e in gql(url, CHECKS, {"key": {"path": [stage]}, "name": check})["assetCheckExecutions"]
                 if e["runId"] == run_id]
        assert [(e["partition"], e["status"]) for e in execs if e["partition"]] == [(rid, "SUCCEEDED")], execs
        assert all(e["status"] == "SKIPPED" for e in execs if not e["partition"]), execs
    run_id = _launch(url, {"selector": dict(REPO, jobName="__ASSET_JOB", assetSelection=[{"path": ["probe"]}])})
    assert wait_run(url, run_id) == "FAILURE"
    _one_line_failure(url, run_id, "no recording picked")
    assert "check_recording" in _tags(_run(url, run_id))["talkthrough/failure"]


def test_a_partition_key_that_is_no_recording_id_fails_at_the_start_and_is_removed(ui):
    """Item 8: "Add a partition" took a path; the run failed with InvalidRecordingId in a stack."""
    url, bogus = ui["url"], str(ui["folder"] / SILENT_NAME)
    res = gql(url, ADD_PARTITION, {"repo": REPO, "name": "recordings", "key": bogus})["addDynamicPartition"]
    assert res["__typename"] == "AddDynamicPartitionSuccess", res
    run_id = _launch(url, {"selector": dict(REPO, jobName="process_recording",
                                            assetSelection=[{"path": [s]} for s in STAGES]),
                           "executionMetadata": {"tags": [{"key": "dagster/partition", "value": bogus}]}})
    assert wait_run(url, run_id) == "FAILURE"
    _one_line_failure(url, run_id, f"partition {bogus!r} is not a recording id")
    sets = gql(url, PARTITION_KEYS, {"repo": REPO})["repositoryOrError"]["partitionSets"]
    keys = {p["name"] for s in sets if s["name"] == "process_recording_partition_set"
            for p in s["partitionsOrError"]["results"]}
    assert ui["rid"] in keys and bogus not in keys, keys


def _messages(url: str, run_id: str) -> list[str]:
    return [e.get("message") or "" for e in _events(url, run_id)]


def test_every_stage_the_registration_log_and_an_alias_name_the_file(ui):
    """Items 6 and 7: names, not hashes; an alias does not rename the recording."""
    url, rid = ui["url"], ui["rid"]
    assert any(f"{rid}  {SILENT_NAME}" in m for m in _messages(url, ui["register_run"])), _messages(url, ui["register_run"])
    for stage in STAGES:
        mat = [e for e in _partition_events(url, stage, rid) if e["__typename"] == "MaterializationEvent"][0]
        md = {m["label"]: m.get("text") for m in mat["metadataEntries"]}
        assert md.get("filename") == SILENT_NAME, (stage, md)
    # the same bytes under another name, registered later: an alias, logged as one
    again = ui["tmp"] / "more"
    again.mkdir()
    shutil.copy(ui["folder"] / SILENT_NAME, again / "silent_again.mp4")
    reg = _launch(url, {"selector": dict(REPO, jobName="register_folder"),
                        "runConfigData": {"ops": {"register_folder_op": {"config": {"folder": str(again)}}}}})
    assert wait_run(url, reg) == "SUCCESS"
    assert any(f"{rid}  silent_again.mp4  (alias of {SILENT_NAME})" in m for m in _messages(url, reg))
    # a re-anchor of the recording still carries its first name (and its duration: probe did not run)
    run_id = _launch(url, {"selector": dict(REPO, jobName="process_recording",
                                            assetSelection=[{"path": ["wall_clock"]}, {"path": ["manifest"]}]),
                           "runConfigData": {"ops": {"talkthrough_stages": {"config": {
                               "recorded_at": "2026-03-14T11:00:00+01:00"}}}},
                           "executionMetadata": {"tags": [{"key": "dagster/partition", "value": rid}]}})
    assert wait_run(url, run_id) == "SUCCESS"
    tags = _tags(_run(url, run_id))
    assert tags["talkthrough/filename"] == SILENT_NAME and tags["talkthrough/duration"].endswith(" s"), tags
    # which partition is that file? (the Partitions tab filters ids only)
    out = subprocess.run(talkthrough_command() + ["recordings", "--find", "silent_again", "--json"], env=ui["env"],
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    found = json.loads(out.stdout)
    coverage = [f.pop("coverage") for f in found]  # how much of its audio has a stored Whisper result
    assert found == [{"recording": rid, "filename": SILENT_NAME, "aliases": ["silent_again.mp4"],
                      "state": "processed", "reason": None}]
    assert coverage[0] is None or re.match(r"(\d+) of \1 chunks", coverage[0]), coverage


ASSET_NODES = """
{ assetNodes(group: {groupName: "talkthrough", repositoryName: "__repository__",
                     repositoryLocationName: "talkthrough_assets.definitions"}) {
    assetKey { path } kinds owners { ... on TeamAssetOwner { team } } tags { key value }
    metadataEntries { label ... on TableSchemaMetadataEntry { schema { columns { name type } } } }
} }"""
CONFIG_TYPES = """
query($selector: PipelineSelector!) {
  runConfigSchemaOrError(selector: $selector) {
    ... on RunConfigSchema { allConfigTypes { key ... on CompositeConfigType { fields { name description } } } }
  }
}"""


def test_launchpad_fields_are_described_and_assets_carry_schemas_kinds_and_owners(ui):
    """Item 10: what a Dagster user expects of the Launchpad and the asset catalog, from stagespec/store."""
    from talkthrough_assets import store
    from talkthrough_assets.pipeline.stagespec import SETTINGS, SPECS

    url = ui["url"]
    types = gql(url, CONFIG_TYPES, {"selector": dict(REPO, pipelineName="process_recording")})[
        "runConfigSchemaOrError"]["allConfigTypes"]
    stages = [t for t in types if {f["name"] for f in t.get("fields") or []} == {st.name for st in SETTINGS}]
    assert stages, "the talkthrough_stages config type"
    for f in stages[0]["fields"]:
        st = next(st for st in SETTINGS if st.name == f["name"])
        assert f["description"] and f["description"].startswith(st.help) and "Read by" in f["description"], f
    nodes = {n["assetKey"]["path"][-1]: n for n in gql(url, ASSET_NODES)["assetNodes"]}
    assert set(nodes) == set(STAGES)
    for sp in SPECS:
        node = nodes[sp.name]
        assert node["owners"] == [{"team": "talkthrough"}] and {t["key"] for t in node["tags"]} >= {"talkthrough/branch"}
        tables = [t for t in sp.writes if t in store.SCHEMAS]
        if not tables:
            continue
        assert {"parquet", "duckdb"} <= set(node["kinds"]), node
        schema = [m for m in node["metadataEntries"] if m["label"] == "dagster/column_schema"][0]["schema"]
        assert [c["name"] for c in schema["columns"]] == store.SCHEMAS[tables[0]].names, (sp.name, schema)


ASSET_STATES = """
{ assetNodes(group: {groupName: "talkthrough", repositoryName: "__repository__",
                     repositoryLocationName: "talkthrough_assets.definitions"}) {
    assetKey { path } partitionStats { numMaterialized numFailed numPartitions }
    assetChecksOrError { ... on AssetChecks { checks { name
      executionForLatestMaterialization { status partition evaluation { severity } } } } }
} }"""


def _asset_states(url: str) -> dict:
    return {n["assetKey"]["path"][-1]: n for n in gql(url, ASSET_STATES)["assetNodes"]}


def _painted_failed(node: dict) -> list[str]:
    """Why the asset graph paints this asset failed as a whole: the UI's own rule (AssetNodeStatusContent) is
    any failed partition, or a check whose latest execution failed at ERROR severity or could not execute."""
    why = [f"{node['partitionStats']['numFailed']} failed partition(s)"] if node["partitionStats"]["numFailed"] else []
    for c in node["assetChecksOrError"].get("checks") or []:
        ex = c["executionForLatestMaterialization"] or {}
        if ex.get("status") == "EXECUTION_FAILED" or (
                ex.get("status") == "FAILED" and (ex.get("evaluation") or {}).get("severity") == "ERROR"):
            why.append(f"check {c['name']}: {ex}")
    return why


def test_a_bad_recording_is_one_failed_partition_its_checks_warnings_and_forget_clears_it(ui):
    """Item 5: two bad drops painted every node red and left "Execution failed" on the checks. A bad recording
    is a failed partition of each stage (Dagster counts it); its checks, which could not run, are warnings
    for that partition, never "Execution failed"; forgetting it leaves nothing marked failed."""
    url = ui["url"]
    bad = ui["tmp"] / "bad"
    bad.mkdir()
    (bad / "notes.mp4").write_text("not a video, only a name that says so")
    reg = _launch(url, {"selector": dict(REPO, jobName="register_folder"),
                        "runConfigData": {"ops": {"register_folder_op": {"config": {"folder": str(bad)}}}}})
    assert wait_run(url, reg) == "SUCCESS"
    rid = service.recording_id_for(bad / "notes.mp4")
    run_id = _launch(url, {"selector": dict(REPO, jobName="process_recording",
                                            assetSelection=[{"path": [s]} for s in STAGES]),
                           "executionMetadata": {"tags": [{"key": "dagster/partition", "value": rid}]}})
    assert wait_run(url, run_id) == "FAILURE"
    _one_line_failure(url, run_id, "probe: not a readable media file")
    states = _asset_states(url)
    for stage in STAGES:
        stats = states[stage]["partitionStats"]
        assert stats["numFailed"] == 1 and stats["numMaterialized"] >= 1, (stage, stats)  # the good one stays
    for stage, check in CHECK_KEYS:
        execs = gql(url, CHECKS, {"key": {"path": [stage]}, "name": check})["assetCheckExecutions"]
        mine = [e for e in execs if e["runId"] == run_id]
        assert [(e["partition"], e["status"], e["evaluation"]["severity"]) for e in mine] == [
            (rid, "FAILED", "WARN")], execs
        assert mine[0]["evaluation"]["description"].startswith(f"not checked: {stage} did not materialize"), mine
        assert not [e for e in execs if e["status"] == "EXECUTION_FAILED"], execs
        assert not [why for why in _painted_failed(states[stage]) if why.startswith("check")], states[stage]
    out = subprocess.run(talkthrough_command() + ["forget", rid, "--yes"], env=ui["env"],
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0 and "Dagster partition deleted" in out.stdout + out.stderr, (out.stdout, out.stderr)
    states = _asset_states(url)
    assert {stage: _painted_failed(states[stage]) for stage in STAGES} == {stage: [] for stage in STAGES}


MANIFEST_REPORT = """
query($partition: String!) {
  assetOrError(assetKey: {path: ["manifest"]}) {
    ... on Asset { assetEventHistory(partitions: [$partition], limit: 5, eventTypeSelectors: [MATERIALIZATION]) {
      results { ... on MaterializationEvent { runId metadataEntries { label ... on PathMetadataEntry { path } } } } } }
  }
}"""


def test_the_manifest_materialization_links_the_recordings_html_report(ui, browser):
    """#22 item 1: the manifest stage's materialization names the report each run writes beside the manifest
    (the same page as `talkthrough report`), and `forget` removes it with the rest."""
    from talkthrough_assets import store

    url, rid = ui["url"], ui["rid"]
    events = gql(url, MANIFEST_REPORT, {"partition": rid})["assetOrError"]["assetEventHistory"]["results"]
    mine = [e for e in events if e["runId"] == ui["process_run"]]
    assert mine, events
    paths = [m["path"] for m in mine[0]["metadataEntries"] if m["label"] == "report"]
    assert paths == [str(ui["home"] / "reports" / f"{rid}.html")], mine
    html = (ui["home"] / "reports" / f"{rid}.html").read_text()
    assert html.startswith("<!doctype html>") and SILENT_NAME in html and "Content-Security-Policy" in html
    out = subprocess.run(talkthrough_command() + ["report", rid, "-o", str(ui["tmp"] / "report.html")],
                         env=ui["env"], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert (ui["tmp"] / "report.html").read_text() == html  # one page, wherever it is written
    assert f"reports/{rid}.html" in store.recording_keys(rid)  # what `talkthrough forget` removes
    # in the UI: the manifest partition's page lists it among the materialization's metadata
    page = browser.new_page(viewport={"width": 1600, "height": 1200})
    try:
        _page_text(page, f"{ui['base']}/assets/manifest?view=partitions&partition={rid}", paths[0])
        row = page.locator("tr", has_text=paths[0]).first.inner_text()
        assert row.split()[0] == "report", row
    finally:
        page.close()


def test_a_file_the_cli_rejects_shows_in_the_ui_as_a_failed_run_and_partition(ui):
    """#38 item 3: `talkthrough process bad/` on text renamed .mp4 prints one line and exits 1 at once, with no
    run; a detached process then runs the job for it, which fails at probe: the operator's Runs list and
    the stages' Failed partitions show it, with the reason and the `talkthrough/failure` tag."""
    url = ui["url"]
    bad = ui["tmp"] / "rejected"
    bad.mkdir()
    (bad / "notes.mp4").write_text("text, rejected by the command line before any run")
    rid = service.recording_id_for(bad / "notes.mp4")
    out = subprocess.run(talkthrough_command() + ["process", str(bad)], env=dict(ui["env"], COLUMNS="400"),
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 1, (out.stdout, out.stderr)
    assert f"id={rid}" in out.stdout and "reason: probe: not a readable media file" in out.stdout, out.stdout
    deadline, runs = time.time() + 240, []
    while time.time() < deadline:
        runs = gql(url, RUNS_BY_TAG, {"key": "dagster/partition", "value": rid})["runsOrError"]["results"]
        if runs and runs[0]["status"] in ("FAILURE", "SUCCESS"):
            break
        time.sleep(1)
    assert len(runs) == 1 and runs[0]["jobName"] == "process_recording", runs
    tags = _tags(runs[0])
    assert tags["talkthrough/filename"] == "notes.mp4" and tags["talkthrough/origin"].startswith("talkthrough process")
    _one_line_failure(url, runs[0]["runId"], "probe: not a readable media file")
    assert _asset_states(url)["probe"]["partitionStats"]["numFailed"] == 1
    # the same rejection again is not a second failed run (its newest run says it already)
    out = subprocess.run(talkthrough_command() + ["process", str(bad)], env=ui["env"], capture_output=True,
                         text=True, timeout=120)
    assert out.returncode == 1
    assert _wait_gone(ui["home"] / "state" / "rejections" / f"{rid}.json")
    assert len(gql(url, RUNS_BY_TAG, {"key": "dagster/partition", "value": rid})["runsOrError"]["results"]) == 1
    forgot = subprocess.run(talkthrough_command() + ["forget", rid, "--yes"], env=ui["env"], capture_output=True,
                            text=True, timeout=120)
    assert forgot.returncode == 0, forgot.stderr


def _wait_gone(path, timeout: float = 180) -> bool:
    deadline = time.time() + timeout
    while time.time() < deadline:
        if not path.exists():
            return True
        time.sleep(0.5)
    return False

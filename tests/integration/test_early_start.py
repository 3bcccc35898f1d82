"""Stages that start before their Dagster run exists (issue #50, the run's fixed cost): `talkthrough process`
starts a recording's stages while Dagster imports, opens its storage and creates the run in another thread;
the run then takes them over (``scheduler.start_early`` / ``run_stages``) and records every stage as before.

Through the real CLI in a process of its own (its Dagster import is what the stages overlap): the stages start
before the run does and the run records all nine; Ctrl-C before the run exists stops them, the run is still
created and records them stopped, and a re-run completes. At the pipeline's level (no Dagster): a schedule no run
took over marks what it finished to be run again, and one another selection finds is stopped."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections import Counter
from datetime import datetime
from pathlib import Path

import pytest
from dagster import DagsterEventType, DagsterInstance, DagsterRunStatus
from dagster_records import materialized_in_run, run_ids
from fixture_facts import FIXTURES_DIR, SCREENCAST_PATH, SILENT_NAME, TWO_VOICES_PATH, unique_copy

from talkthrough_assets import store
from talkthrough_assets.app import service
from talkthrough_assets.core.ids import recording_id
from talkthrough_assets.pipeline import events, freshness, scheduler, sources
from talkthrough_assets.pipeline import settings as S

TALKTHROUGH = str(Path(sys.executable).with_name("talkthrough"))


@pytest.fixture()
def cli_home(tmp_path, monkeypatch, tt_home):
    """A data root of its own, for the CLI's processes and for what this test reads of them."""
    home = tmp_path / "home"
    monkeypatch.setenv("TALKTHROUGH_HOME", str(home))
    monkeypatch.setenv("DAGSTER_HOME", str(home / "dagster"))
    env = {k: v for k, v in os.environ.items() if k != "TALKTHROUGH_PG_URL"}
    return home, env


def _stage_starts(rid: str) -> dict[str, float]:
    """Each stage's start (its stage_runs row: finished_at - elapsed_s), epoch seconds."""
    return {r["stage"]: datetime.fromisoformat(r["finished_at"]).timestamp() - r["elapsed_s"]
            for r in store.read_rows("stage_runs", rid, part=None)}


def _run_started_at(inst: DagsterInstance, run_id: str) -> float:
    (start,) = [e.timestamp for e in inst.all_logs(run_id, of_type=DagsterEventType.RUN_START)]
    return start


def test_the_stages_start_before_their_run_and_the_run_records_every_one(cli_home, tmp_path):
    home, env = cli_home
    src = unique_copy(SCREENCAST_PATH, tmp_path / "early.mp4", "early-start")
    rid = recording_id(src)
    done = subprocess.run([TALKTHROUGH, "process", str(src), "--json"], env=env, capture_output=True, text=True,
                          timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    out = json.loads(done.stdout)[0]
    assert out["status"] == "processed" and out["stages_run"] == list(S.STAGES), out
    inst = DagsterInstance.get()
    (run_id,) = run_ids(inst, rid)
    run = inst.get_run_by_id(run_id)
    assert run.status == DagsterRunStatus.SUCCESS
    # every stage's materialization is in the run's record, with the stage's own metadata
    assert materialized_in_run(inst, run_id, rid, S.STAGES) == set(S.STAGES)
    # ... though the first stages started before Dagster started the run (the overlap this is for)
    starts = _stage_starts(rid)
    assert min(starts.values()) < _run_started_at(inst, run_id), (starts, _run_started_at(inst, run_id))
    assert freshness.plan(rid) == []


def test_ctrl_c_before_the_run_exists_stops_the_stages_and_the_run_records_it(cli_home, tmp_path):
    home, env = cli_home
    src = unique_copy(SCREENCAST_PATH, tmp_path / "stopped.mp4", "early-ctrl-c")
    rid = recording_id(src)
    proc = subprocess.Popen([TALKTHROUGH, "process", str(src), "--json"], env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and proc.poll() is None:  # the first stage is done: stop it now
            if store.has_partition("stage_runs", rid):
                break
            time.sleep(0.01)
        assert proc.poll() is None, "the run ended before it could be stopped"
        sent_at = time.time()
        proc.send_signal(signal.SIGINT)
        stdout, stderr = proc.communicate(timeout=300)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode != 0, (stdout, stderr[-3000:])
    assert "Traceback" not in stderr, stderr[-3000:]
    out = json.loads(stdout)[0]
    assert out["status"] == "failed" and "interrupted" in out["reason"], out
    inst = DagsterInstance.get()
    (run_id,) = run_ids(inst, rid)
    run_start = _run_started_at(inst, run_id)
    assert sent_at < run_start, "the signal came once the run existed: this test is for the time before"
    # the run was still created; it records what finished and fails with the stop as its reason
    assert inst.get_run_by_id(run_id).status == DagsterRunStatus.FAILURE
    recorded = materialized_in_run(inst, run_id, rid, S.STAGES)
    assert "probe" in recorded and recorded != set(S.STAGES), recorded
    rows = {r["stage"]: r for r in store.read_rows("stage_runs", rid, part=None)}
    assert any(r["status"] == "failed" and "interrupted" in r["reason"] for r in rows.values()), rows
    again = subprocess.run([TALKTHROUGH, "process", str(src), "--json"], env=env, capture_output=True, text=True,
                           timeout=600)
    assert again.returncode == 0 and json.loads(again.stdout)[0]["status"] == "processed", again.stderr[-3000:]
    second = next(r for r in run_ids(inst, rid) if r != run_id)
    # the re-run ran (and recorded) what the stopped one had not finished, nothing it had
    assert materialized_in_run(inst, second, rid, S.STAGES) == set(S.STAGES) - (recorded - {"manifest"})
    assert freshness.plan(rid) == []


def _registered(tmp_path, tag: str) -> tuple[Path, str]:
    src = unique_copy(FIXTURES_DIR / SILENT_NAME, tmp_path / f"{tag}.mp4", tag)
    rid = recording_id(src)
    sources.register_source(src, rid)
    return src, rid


def _wait_for(early: scheduler.EarlyRun, stage: str, timeout_s: float = 120) -> None:
    deadline = time.monotonic() + timeout_s
    while stage not in early.schedule.done and time.monotonic() < deadline:
        time.sleep(0.01)
    assert stage in early.schedule.done, f"{stage} did not finish"


def test_a_schedule_no_run_took_over_is_run_again_next_time(cli_home, tmp_path):
    src, rid = _registered(tmp_path, "early-unclaimed")
    with store.partition_lock(rid):
        early = scheduler.start_early(rid, list(S.STAGES))
        _wait_for(early, "probe")
        early.end("disk full at /somewhere: 0 MB free, 2 MB needed")
    finished = [s for s in S.STAGES if s in early.schedule.done]
    rows = {r["stage"]: r for r in store.read_rows("stage_runs", rid, part=None)}
    for stage in finished:  # stored, but Dagster never heard of it: failed, with the reason, and planned again
        assert rows[stage]["status"] == "failed" and rows[stage]["reason"].startswith("disk full at /somewhere"), rows
        assert "not recorded in Dagster" in rows[stage]["reason"]
    assert set(finished) <= set(freshness.plan(rid)) and "probe" in finished
    assert not early.thread.is_alive() and scheduler._EARLY.get(rid) is None
    # the next `process` runs them again, in a run Dagster records, and succeeds
    again = service.process(src)
    assert again["status"] == "processed" and set(finished) <= set(again["stages_run"]), again
    inst = DagsterInstance.get()
    (run_id,) = run_ids(inst, rid)  # the schedule itself made no run
    assert set(finished) <= materialized_in_run(inst, run_id, rid, S.STAGES)
    assert freshness.plan(rid) == []


def test_a_run_of_other_stages_stops_the_schedule_started_ahead_and_runs_its_own(cli_home, tmp_path):
    _src, rid = _registered(tmp_path, "early-other")
    with store.partition_lock(rid):
        early = scheduler.start_early(rid, list(S.STAGES))
        _wait_for(early, "probe")
        events = list(scheduler.run_stages(rid, ["probe"]))  # another selection: not this schedule's run
        early.end()
    assert not early.claimed and not early.thread.is_alive()
    assert [(s, e) for s, e in events if not isinstance(e, str)][-1][0] == "probe"
    assert all(not isinstance(e, Exception) for _s, e in events), events
    rows = {r["stage"]: r for r in store.read_rows("stage_runs", rid, part=None)}
    assert rows["probe"]["status"] == "ok", rows  # the run's own probe, after the stopped schedule's


def test_the_run_takes_over_what_was_started_for_it_with_its_settings(cli_home, tmp_path):
    """The run finds the schedule started for it whatever settings it carries: a first run, a forced re-anchor
    (only wall_clock and manifest) and a diarize amend (only turns and manifest) each start every stage once (a
    schedule the run did not take over would be stopped and its stages started again)."""
    src = unique_copy(TWO_VOICES_PATH, tmp_path / "amends.m4a", "early-amends")
    for overrides, expected in ((None, list(S.STAGES)),
                                ({"recorded_at": "2026-01-02T03:04:05+01:00"}, ["wall_clock", "manifest"]),
                                ({"diarize": True, "num_speakers": 2}, ["turns", "manifest"])):
        started = Counter()
        watcher = events.Observer(on_stage=lambda stage, r, state, info: started.update([stage] * (state == "started")))
        out = service.process(src, overrides=overrides, observer=watcher)
        assert out["status"] == "processed" and out["stages_run"] == expected, (overrides, out)
        assert started == Counter(expected), (overrides, started)

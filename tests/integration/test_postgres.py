"""Postgres-backed Dagster storage, for real: a throwaway cluster from Debian's `postgresql` package
(installed by .ci/run) on a loopback port, and `talkthrough process` CLI processes with
TALKTHROUGH_PG_URL set. Skipped, with the reason, when Postgres or dagster-postgres is unavailable.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml
from fixture_facts import FIXTURES_DIR, MEETING_NAME, SILENT_NAME


ROOT = Path(__file__).resolve().parents[2]
CLI = [sys.executable, "-m", "talkthrough_assets.cli.main"]


@pytest.fixture()
def pg_home(pg, tmp_path, monkeypatch):
    """A fresh data root and a fresh database, selected through TALKTHROUGH_PG_URL (also for this process)."""
    db = f"tt_{tmp_path.name.lower().replace('-', '_')[-40:]}"
    url = pg.create_db(db)
    monkeypatch.setenv("TALKTHROUGH_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("DAGSTER_HOME", str(tmp_path / "home" / "dagster"))
    monkeypatch.setenv("TALKTHROUGH_PG_URL", url)
    return tmp_path / "home", db


def _cli(args: list[str]) -> subprocess.Popen:
    env = dict(os.environ, TALKTHROUGH_LOG_LEVEL="DEBUG", COLUMNS="200")
    return subprocess.Popen(CLI + args, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True)


def _wait_for_stage(proc: subprocess.Popen, stage: str, timeout: float = 180) -> list[str]:
    seen, deadline = [], time.time() + timeout
    for line in proc.stderr:
        seen.append(line)
        if f'Started stage "{stage}"' in line:
            return seen
        if time.time() > deadline:
            break
    pytest.fail(f"stage {stage} never started; stderr tail:\n{''.join(seen[-30:])}")


def _finish(proc: subprocess.Popen, timeout: float = 300) -> list[dict]:
    out, err = proc.communicate(timeout=timeout)
    assert proc.returncode == 0, f"rc {proc.returncode}\n{err[-3000:]}"
    return json.loads(out)


def test_process_on_postgres_two_cli_processes_share_one_instance(pg, pg_home):
    from talkthrough_assets.app import service
    from talkthrough_assets.app import runs as app_runs

    home, db = pg_home
    silent, meeting = FIXTURES_DIR / SILENT_NAME, FIXTURES_DIR / MEETING_NAME
    # two separate `talkthrough process` runs at once, of two fixtures, on one fresh database
    # (both create Dagster's tables on first use)
    a = _cli(["process", "--json", str(silent)])
    b = _cli(["process", "--json", str(meeting)])
    try:
        _wait_for_stage(a, "probe")
        # a second run of the recording being processed is refused, not interleaved
        second = service.process(silent, force=True)
        assert second["status"] == "refused" and "being processed by another run" in second["reason"], second
    finally:
        (res_a,), (res_b,) = _finish(a), _finish(b)
    assert res_a["status"] == res_b["status"] == "processed", (res_a, res_b)
    rid_a, rid_b = res_a["recording_id"], res_b["recording_id"]
    assert res_a["frames"]["count"] > 0 and res_b["transcript"]["segments"] > 0

    # the runs, materializations and partitions are in Postgres, and nothing went to SQLite
    runs = pg.query("SELECT partition, status FROM runs", db=db)
    assert sorted(runs) == sorted([(rid_a, "SUCCESS"), (rid_b, "SUCCESS")]), runs
    mats = pg.query("SELECT partition, asset_key FROM event_logs WHERE dagster_event_type = 'ASSET_MATERIALIZATION'",
                    db=db)
    by_partition = {rid: {json.loads(k)[0] for p, k in mats if p == rid} for rid in (rid_a, rid_b)}
    for rid, stages in zip((rid_a, rid_b), (res_a["stages_run"], res_b["stages_run"])):
        assert by_partition[rid] == set(stages) and "manifest" in stages, (rid, by_partition[rid], stages)
    parts = pg.query("SELECT partition FROM dynamic_partitions WHERE partitions_def_name = 'recordings'", db=db)
    assert {p for (p,) in parts} == {rid_a, rid_b}
    assert not list((home / "dagster").rglob("*.db")), "a SQLite storage was created beside Postgres"
    yaml_text = (home / "dagster" / "dagster.yaml").read_text()
    assert "postgres_url" in yaml_text and pg.password not in yaml_text

    # this process sees the same instance: both runs, both partitions; a third run is stored there too
    inst = app_runs.instance()
    try:
        assert type(inst.run_storage).__name__ == "PostgresRunStorage"
        assert {r.tags["dagster/partition"] for r in inst.get_runs()} == {rid_a, rid_b}
        assert inst.has_dynamic_partition("recordings", rid_b)
        result = app_runs.run_stages(rid_a, ["manifest"], inst)
        assert result.success
    finally:
        inst.dispose()
    assert len(pg.query("SELECT run_id FROM runs WHERE partition = %s", (rid_a,), db=db)) == 2
    assert service.process(silent)["status"] == "cached"


def test_deploy_instance_yaml_loads_against_a_live_postgres(pg, pg_home, tmp_path):
    """deploy/dagster.yaml's storage and run queue, instantiated for real (its Docker launcher needs
    dagster-docker and a Docker socket, so the default launcher stands in)."""
    from dagster import DagsterInstance

    _, db = pg_home
    os.environ["TALKTHROUGH_PG_URL"] = pg.url(db).replace("postgresql://", "postgresql+psycopg2://")  # as in compose
    config = yaml.safe_load((ROOT / "deploy" / "dagster.yaml").read_text())
    del config["run_launcher"]
    config["compute_logs"]["config"]["base_dir"] = str(tmp_path / "logs")
    inst_dir = tmp_path / "deploy_home"
    inst_dir.mkdir()
    (inst_dir / "dagster.yaml").write_text(yaml.safe_dump(config))
    inst = DagsterInstance.from_config(str(inst_dir))
    try:
        assert type(inst.run_storage).__name__ == "PostgresRunStorage"
        assert type(inst.event_log_storage).__name__ == "PostgresEventLogStorage"
        assert type(inst.schedule_storage).__name__ == "PostgresScheduleStorage"
        assert type(inst.run_coordinator).__name__ == "NamingRunCoordinator"  # Dagster's queue, naming its runs
        assert inst.run_monitoring_enabled
        inst.add_dynamic_partitions("recordings", ["0123456789abcdef"])
        assert inst.get_dynamic_partitions("recordings") == ["0123456789abcdef"]
    finally:
        inst.dispose()

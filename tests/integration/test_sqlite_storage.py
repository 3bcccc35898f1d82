"""Dagster's SQLite storage of a DAGSTER_HOME Talkthrough owns (defs/sqlite_storage.py), on a real instance of the
shipped settings: what a run records is what Dagster's own classes record, while a run executes each database is
reached through one engine and its one connection, and outside a run nothing stays open."""

from __future__ import annotations

import sqlite3


RID = "0123456789abcdef"


def _tiny_job():
    from dagster import Definitions, DynamicPartitionsDefinition, MaterializeResult, asset, define_asset_job

    parts = DynamicPartitionsDefinition(name="recordings")

    @asset(partitions_def=parts)
    def first(context):
        return MaterializeResult(metadata={"key": context.partition_key})

    @asset(partitions_def=parts, deps=[first])
    def second(context):
        return MaterializeResult(metadata={"key": context.partition_key})

    defs = Definitions(assets=[first, second], jobs=[define_asset_job("both", selection=[first, second])])
    return defs.resolve_job_def("both")


def _recorded(inst, run_id: str) -> list[tuple]:
    """What the UI reads of a run: its events (kind, step, message), its status and the assets' partitions."""
    from dagster import AssetKey

    events = [(e.dagster_event.event_type_value if e.dagster_event else "log", e.step_key, e.user_message)
              for e in inst.all_logs(run_id)]
    run = inst.get_run_by_id(run_id)
    parts = {k: sorted(inst.get_materialized_partitions(AssetKey(k))) for k in ("first", "second")}
    return [tuple(e[:2]) for e in events] + [("status", run.status.value), ("partitions", str(parts))]


def _run(inst, job, run_id=None):
    from talkthrough_assets.defs import sqlite_tuning

    with sqlite_tuning.holding():  # as app/runs.py executes a run
        result = job.execute_in_process(instance=inst, partition_key=RID, run_id=run_id)
    assert result.success
    return result.run_id


def test_a_run_records_what_dagsters_own_storage_records(fresh_home, tmp_path):
    from dagster import DagsterInstance

    from talkthrough_assets.defs import instance as tt_instance
    from talkthrough_assets.defs import sqlite_storage, storage_template

    job = _tiny_job()
    ours = tt_instance.instance()
    theirs_home = tmp_path / "theirs"
    theirs_home.mkdir()
    (theirs_home / "dagster.yaml").write_text("telemetry:\n  enabled: false\n")
    theirs = DagsterInstance.from_config(str(theirs_home))
    try:
        assert type(ours.event_log_storage) is sqlite_storage.EventLogStorage
        assert type(theirs.event_log_storage).__name__ == "SqliteEventLogStorage"
        for inst in (ours, theirs):
            inst.add_dynamic_partitions("recordings", [RID])
        mine = _run(ours, job, storage_template.prepare_run(ours))
        own = _run(theirs, job)
        assert _recorded(ours, mine) == _recorded(theirs, own)
        # the same rows in the run's own event log and in the cross-run index
        assert ours.get_latest_materialization_event(_key("second")).asset_materialization.partition == RID
        assert ours.has_dynamic_partition("recordings", RID) and not ours.has_dynamic_partition("recordings", "f" * 16)
    finally:
        ours.dispose()
        theirs.dispose()


def _key(name):
    from dagster import AssetKey

    return AssetKey(name)


def test_one_engine_per_database_while_a_run_executes_and_none_after(fresh_home):
    import sqlalchemy as sa

    from talkthrough_assets.defs import instance as tt_instance
    from talkthrough_assets.defs import sqlite_storage, sqlite_tuning, storage_template

    inst = tt_instance.instance()
    made: list[str] = []

    def count(conn, _record):
        made.append(conn.execute("PRAGMA database_list").fetchall()[0][2])

    sa.event.listen(sa.engine.Engine, "connect", count)
    try:
        inst.add_dynamic_partitions("recordings", [RID])
        job = _tiny_job()
        _run(inst, job, storage_template.prepare_run(inst))  # the index's first use in this process
        made.clear()
        run_id = _run(inst, job, storage_template.prepare_run(inst))  # as app/runs.py: its event log from the template
        # one connection per database the run wrote: runs.db, the index, the run's own event log
        assert sorted(set(made)) == sorted(made) and len(made) == 3, made
        assert any(p.endswith(f"{run_id}.db") for p in made) and any(p.endswith("index.db") for p in made)
        assert sqlite_storage._ENGINES._engines == {}  # let go with the run
        assert sqlite_tuning.held() == []
        made.clear()
        inst.get_runs(limit=1)
        inst.get_runs(limit=1)
        assert len(made) == 2  # outside a run: Dagster's own engine and connection per call, nothing kept open
    finally:
        sa.event.remove(sa.engine.Engine, "connect", count)
        inst.dispose()


def test_partitions_are_looked_up_again_once_the_run_ended(fresh_home):
    """A partition found during a run is not looked up again in that run; one deleted, or deleted by another
    process once the run ended, is not found."""
    from talkthrough_assets.defs import instance as tt_instance
    from talkthrough_assets.defs import sqlite_tuning

    inst = tt_instance.instance()
    try:
        inst.add_dynamic_partitions("recordings", [RID, "f" * 16])
        index = fresh_home / "history" / "runs" / "index.db"
        with sqlite_tuning.holding():
            assert inst.has_dynamic_partition("recordings", RID)
            with sqlite3.connect(index) as other:  # another process's forget
                other.execute("DELETE FROM dynamic_partitions WHERE partition = ?", (RID,))
            other.close()
            assert inst.has_dynamic_partition("recordings", RID)  # found once in this run
            inst.delete_dynamic_partition("recordings", "f" * 16)
            assert not inst.has_dynamic_partition("recordings", "f" * 16)
        assert not inst.has_dynamic_partition("recordings", RID)
        with sqlite_tuning.holding():
            assert not inst.has_dynamic_partition("recordings", RID)
    finally:
        inst.dispose()


def test_a_database_without_its_revision_is_made_by_dagster(fresh_home):
    """The alembic check is skipped only for a stamped database: an empty run event log (a file without tables,
    as a crash between create and stamp leaves it) is made and stamped by Dagster as before."""
    from talkthrough_assets.defs import instance as tt_instance
    from talkthrough_assets.defs import storage_template

    inst = tt_instance.instance()
    try:
        run_id = "11111111-2222-3333-4444-555555555555"
        shard = fresh_home / storage_template.RUN_SHARD.format(run_id=run_id)
        sqlite3.connect(shard).close()  # an empty file
        assert inst.all_logs(run_id) == []
        with sqlite3.connect(shard) as conn:
            assert conn.execute("SELECT count(*) FROM alembic_version").fetchone()[0] == 1
            assert conn.execute("SELECT count(*) FROM event_logs").fetchone()[0] == 0
        conn.close()
    finally:
        inst.dispose()

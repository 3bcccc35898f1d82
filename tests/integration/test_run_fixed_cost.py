"""What keeps a run's fixed cost low (bench/bench_cold_start.py, bench/bench_run_cost.py), each on a real Dagster
instance: Dagster's SQLite connections are never the last one to their database (closing them would checkpoint
the write-ahead log and fsync, per event), and a new data root's storage and each run's event log are written from
the shipped template, which must be what the installed Dagster itself creates."""

from __future__ import annotations

import sqlite3


def test_dagsters_sqlite_files_stay_held_so_an_event_never_checkpoints(fresh_home):
    from talkthrough_assets.defs import instance as tt_instance
    from talkthrough_assets.defs import sqlite_tuning

    inst = tt_instance.instance()
    try:
        assert sqlite_tuning.held() == []  # outside a run nothing stays open
        with sqlite_tuning.holding():  # as while a run executes
            inst.get_runs(limit=1)
            assert str(fresh_home / "history" / "runs.db") in sqlite_tuning.held()
            inst.add_dynamic_partitions("recordings", ["0123456789abcdef"])  # a write through a new connection
            # its connection closed without checkpointing: the log is still there, and a reader sees the row
            assert (fresh_home / "history" / "runs" / "index.db-wal").exists()
            assert inst.has_dynamic_partition("recordings", "0123456789abcdef")
        assert sqlite_tuning.held() == []  # let go: each log checkpointed into its database and removed
        assert not (fresh_home / "history" / "runs" / "index.db-wal").exists()
        with sqlite3.connect(fresh_home / "history" / "runs" / "index.db") as other:
            assert other.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
            assert other.execute("SELECT count(*) FROM dynamic_partitions").fetchone()[0] == 1
    finally:
        inst.dispose()


def test_held_files_are_bounded(tmp_path):
    import sqlalchemy as sa

    from talkthrough_assets.defs import sqlite_tuning

    sqlite_tuning.install()
    with sqlite_tuning.holding():
        for i in range(sqlite_tuning.HELD_MAX + 3):
            engine = sa.create_engine(f"sqlite:///{tmp_path / f'f{i}.db'}", poolclass=sa.pool.NullPool)
            with engine.connect() as conn:
                conn.execute(sa.text("CREATE TABLE t (a)"))
                conn.commit()
            engine.dispose()
        held = sqlite_tuning.held()
    assert len(held) <= sqlite_tuning.HELD_MAX
    assert str(tmp_path / f"f{sqlite_tuning.HELD_MAX + 2}.db") in held  # the most recent ones
    assert str(tmp_path / "f0.db") not in held


def _schema(path) -> dict:
    """What Dagster reads of a database: its tables, indexes and their SQL, the alembic revision, the data
    migrations marked done."""
    with sqlite3.connect(path) as conn:
        master = sorted(conn.execute("SELECT type, name, tbl_name, sql FROM sqlite_master").fetchall())
        revision = conn.execute("SELECT version_num FROM alembic_version").fetchall()
        done = sorted(r[0] for r in conn.execute("SELECT name FROM secondary_indexes")) \
            if any(m[1] == "secondary_indexes" for m in master) else []
    conn.close()
    return {"master": master, "revision": revision, "migrations": done}


def _dagsters_own(home):
    """A DAGSTER_HOME whose SQLite storage Dagster created itself, and one run's event log."""
    from dagster import DagsterInstance

    home.mkdir(parents=True)
    (home / "dagster.yaml").write_text("telemetry:\n  enabled: false\n")
    with DagsterInstance.from_config(str(home)) as inst:
        inst.get_runs(limit=1)
        inst.all_logs("11111111-2222-3333-4444-555555555555")
    return home


def test_the_storage_template_writes_what_the_installed_dagster_writes(tmp_path):
    """The shipped template fits the installed Dagster (else: remake it, see defs/storage_template.py), and the
    databases it writes are Dagster's own, table by table, index by index, at the same alembic revision."""
    from talkthrough_assets.defs import storage_template as T

    assert T.usable() is not None, (f"defs/dagster_storage.json was made with Dagster {T._template()['dagster']}, "
                                    f"{T.dagster_version()} is installed: python -m {T.__name__} "
                                    "talkthrough_assets/defs/dagster_storage.json")
    ours, theirs = tmp_path / "ours", _dagsters_own(tmp_path / "theirs")
    assert T.restore(ours)
    assert not T.restore(ours)  # never over an existing storage
    for rel in T.FILES.values():
        assert _schema(ours / rel) == _schema(theirs / rel), rel
    shard = _schema(theirs / T.RUN_SHARD.format(run_id="11111111-2222-3333-4444-555555555555"))
    with sqlite3.connect(":memory:") as mem:
        mem.executescript(T.usable()["run_shard"])
        with sqlite3.connect(tmp_path / "shard.db") as out:
            mem.backup(out)
    assert _schema(tmp_path / "shard.db") == shard


def test_a_storage_from_the_template_needs_no_migration_and_records_runs(fresh_home, tmp_path):
    """`dagster instance migrate` on it changes nothing; a run whose event log was written ahead records there."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    from dagster import DagsterInstance

    from talkthrough_assets.defs import instance as tt_instance
    from talkthrough_assets.defs import storage_template as T

    tt_instance.instance().dispose()  # a new data root: its storage written from the template
    before = {rel: _schema(fresh_home / rel) for rel in T.FILES.values()}
    dagster = Path(sys.executable).with_name("dagster")
    done = subprocess.run([str(dagster), "instance", "migrate"], env=dict(os.environ, DAGSTER_HOME=str(fresh_home)),
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert {rel: _schema(fresh_home / rel) for rel in T.FILES.values()} == before
    inst = DagsterInstance.get()
    try:
        run_id = T.prepare_run(inst)
        assert run_id and (fresh_home / T.RUN_SHARD.format(run_id=run_id)).exists()
        from dagster import job, op

        @op
        def one():
            return 1

        @job
        def tiny():
            one()

        result = tiny.execute_in_process(instance=inst, run_id=run_id)
        assert result.success and result.run_id == run_id
        assert inst.get_run_by_id(run_id).is_success
        kinds = [e.dagster_event.event_type_value for e in inst.all_logs(run_id) if e.dagster_event]
        assert "PIPELINE_SUCCESS" in kinds or "RUN_SUCCESS" in kinds, kinds
    finally:
        inst.dispose()


def test_a_held_file_deleted_and_made_again_loses_nothing(tmp_path):
    """A held connection outlives its database (deleted, made again at the same path): letting it go never
    touches the new database's log, whose rows stay."""
    import sqlalchemy as sa

    from talkthrough_assets.defs import sqlite_tuning

    sqlite_tuning.install()
    path = tmp_path / "x.db"

    def write(value: int) -> None:
        engine = sa.create_engine(f"sqlite:///{path}", poolclass=sa.pool.NullPool)
        with engine.connect() as conn:
            conn.execute(sa.text("CREATE TABLE IF NOT EXISTS t (a)"))
            conn.execute(sa.text("INSERT INTO t VALUES (:v)"), {"v": value})
            conn.commit()
        engine.dispose()

    with sqlite_tuning.holding():
        write(1)
        for f in tmp_path.glob("x.db*"):
            f.unlink()
        write(2)  # the held connection is the old file's; this one's rows are in its log
    with sqlite3.connect(path) as conn:
        assert conn.execute("SELECT a FROM t").fetchall() == [(2,)]

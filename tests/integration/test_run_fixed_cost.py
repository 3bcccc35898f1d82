"""What keeps a run's fixed cost low (bench/bench_cold_start.py), each on a real Dagster instance: Dagster's
SQLite connections are never the last one to their database (closing them would checkpoint the write-ahead log
and fsync, per event)."""

from __future__ import annotations

import sqlite3

import pytest


@pytest.fixture
def fresh_home(tmp_path, monkeypatch):
    monkeypatch.delenv("TALKTHROUGH_PG_URL", raising=False)
    monkeypatch.setenv("TALKTHROUGH_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("DAGSTER_HOME", str(tmp_path / "home" / "dagster"))
    return tmp_path / "home" / "dagster"


def test_dagsters_sqlite_files_stay_held_so_an_event_never_checkpoints(fresh_home):
    from talkthrough_assets.defs import instance as tt_instance
    from talkthrough_assets.defs import sqlite_tuning

    inst = tt_instance.instance()
    try:
        runs_db = fresh_home / "history" / "runs.db"
        assert str(runs_db) in sqlite_tuning.held()
        inst.add_dynamic_partitions("recordings", ["0123456789abcdef"])  # a write through a new connection
        # its connection closed without checkpointing: the log is still there, and a reader sees the row
        assert (fresh_home / "history" / "runs" / "index.db-wal").exists()
        assert inst.has_dynamic_partition("recordings", "0123456789abcdef")
        with sqlite3.connect(fresh_home / "history" / "runs" / "index.db") as other:
            assert other.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    finally:
        inst.dispose()


def test_held_files_are_bounded(tmp_path):
    import sqlalchemy as sa

    from talkthrough_assets.defs import sqlite_tuning

    sqlite_tuning.install()
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

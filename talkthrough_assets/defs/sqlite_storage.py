"""Dagster's SQLite storage under a DAGSTER_HOME Talkthrough owns: the shipped dagster.yaml names :class:`Instance`,
whose default storage (no ``storage:`` block; Postgres keeps its own) is :class:`SqliteStorage`, Dagster's
own run, event-log and schedule storage with less Python per process and per event. Same files, same rows.

- A database already stamped with its alembic revision (every one but a new data root's, and each run's event log
  written from the template) is used as it is: Dagster's check of it loads every migration script of the
  installed Dagster to learn the head revision (~0.1 s of CPU), for each database a process opens, and only ever
  acts on a database that has no revision.
- While a run executes in this process (:func:`sqlite_tuning.holding`), each database has one engine whose
  connection stays open until the run ends, instead of a new engine, connection and set of compiled statements
  for every event (Dagster's ~60 per run), and a partition found is not looked up again (~36 times per run).
- A table found once is not looked for again (Dagster asks before each partition look-up).

Each shortcut is taken only with the Dagster version the storage template was made with
(:func:`storage_template.usable`); any other version gets Dagster's classes as they are.
tests/integration/test_sqlite_storage.py holds them to Dagster's own behaviour.
"""

from __future__ import annotations

import os
import sqlite3
import threading
from contextlib import closing, contextmanager
from functools import lru_cache
from typing import Iterator

import yaml
from dagster import DagsterInstance
from dagster._core.instance.ref import InstanceRef
from dagster._core.storage.base_storage import DagsterStorage
from dagster._core.storage.event_log import SqliteEventLogStorage
from dagster._core.storage.runs import SqliteRunStorage
from dagster._core.storage.schedules import SqliteScheduleStorage
from dagster._core.storage.sql import create_engine
from dagster._core.storage.sqlite import SQLITE_BUSY_TIMEOUT_SECONDS, create_db_conn_string
from dagster._core.storage.sqlite_storage import DagsterSqliteStorage
from dagster._serdes import ConfigurableClassData
from sqlalchemy.engine import Connection, Engine

from talkthrough_assets.defs import sqlite_tuning, storage_template

INDEX_SHARD = "index"  # the event log's cross-run database (SqliteEventLogStorage's INDEX_SHARD_NAME)


@lru_cache(maxsize=1)
def _fits() -> bool:
    return storage_template.usable() is not None


def _stamped(path: str, table: str | None = None) -> bool:
    """Whether the SQLite database at ``path`` has its alembic revision (and ``table``): made by Dagster before,
    or written from the template."""
    if not os.path.exists(path):
        return False
    try:
        with closing(sqlite3.connect(path, timeout=SQLITE_BUSY_TIMEOUT_SECONDS)) as conn:
            if conn.execute("SELECT 1 FROM alembic_version LIMIT 1").fetchone() is None:
                return False
            return table is None or conn.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?",
                                                 (table,)).fetchone() is not None
    except sqlite3.Error:  # no alembic_version table yet: Dagster makes the database
        return False


class _RunEngines:
    """One engine per database file while runs execute in this process, let go when they end."""

    def __init__(self) -> None:
        self._engines: dict[str, Engine] = {}
        self._lock = threading.Lock()
        sqlite_tuning.on_release(self.dispose)

    def get(self, conn_string: str) -> Engine | None:
        """The run's engine of ``conn_string``; None outside a run (Dagster's engine per connection then)."""
        if not sqlite_tuning.active() or not _fits():
            return None
        with self._lock:
            engine = self._engines.get(conn_string)
            if engine is None:  # its one connection reused, in whichever thread asks (one at a time: pool of 1)
                engine = create_engine(conn_string, pool_size=1, max_overflow=8,
                                       connect_args={"timeout": SQLITE_BUSY_TIMEOUT_SECONDS})
                self._engines[conn_string] = engine
            return engine

    def dispose(self) -> None:
        with self._lock:
            engines, self._engines = list(self._engines.values()), {}
        for engine in engines:
            engine.dispose()


_ENGINES = _RunEngines()


@contextmanager
def _on(engine: Engine) -> Iterator[Connection]:
    with engine.connect() as conn, conn.begin():
        yield conn


class EventLogStorage(SqliteEventLogStorage):
    """Dagster's event log storage (one database per run, one cross-run index)."""

    def __init__(self, base_dir: str, inst_data: ConfigurableClassData | None = None):
        self._tables: set[str] = set()
        self._partitions: tuple[int, set[tuple[str, str]]] = (0, set())  # (run stretch, partitions found in it)
        super().__init__(base_dir, inst_data)

    @classmethod
    def from_config_value(cls, inst_data, config_value):
        return cls(inst_data=inst_data, **config_value)

    def _initdb(self, engine: Engine, for_index_shard: bool = False) -> None:
        if not (_fits() and _stamped(engine.url.database)):
            super()._initdb(engine, for_index_shard=for_index_shard)

    @contextmanager
    def _pooled(self, shard: str) -> Iterator[Connection]:
        engine = _ENGINES.get(self.conn_string_for_shard(shard))
        if engine is None:  # Dagster's own: a new engine, the database made or checked on its first use here
            with self._connect(shard) as conn:
                yield conn
            return
        with self._db_lock:
            if shard not in self._initialized_dbs:  # made or checked on its first use here, as Dagster's own does
                self._initdb(engine)
                self._initialized_dbs.add(shard)
            with _on(engine) as conn:
                yield conn

    def run_connection(self, run_id: str | None = None):
        return self._pooled(run_id) if isinstance(run_id, str) else super().run_connection(run_id)

    def index_connection(self):
        return self._pooled(INDEX_SHARD)

    def has_table(self, table_name: str) -> bool:
        if table_name in self._tables:
            return True
        found = super().has_table(table_name)
        if found and _fits():
            self._tables.add(table_name)
        return found

    def _found(self) -> set[tuple[str, str]] | None:
        """The partitions found during the runs executing now (None outside a run: nothing kept)."""
        stretch = sqlite_tuning.active()
        if not stretch or not _fits():
            return None
        if self._partitions[0] != stretch:
            self._partitions = (stretch, set())
        return self._partitions[1]

    def has_dynamic_partition(self, partitions_def_name: str, partition_key: str) -> bool:
        found = self._found()
        if found is not None and (partitions_def_name, partition_key) in found:
            return True
        there = super().has_dynamic_partition(partitions_def_name, partition_key)
        if there and found is not None:
            found.add((partitions_def_name, partition_key))
        return there

    def delete_dynamic_partition(self, partitions_def_name: str, partition_key: str) -> None:
        self._partitions[1].discard((partitions_def_name, partition_key))
        super().delete_dynamic_partition(partitions_def_name, partition_key)


class RunStorage(SqliteRunStorage):
    """Dagster's run storage (runs.db)."""

    @classmethod
    def from_local(cls, base_dir: str, inst_data: ConfigurableClassData | None = None):
        path = os.path.join(base_dir, "runs.db")
        if _fits() and _stamped(path, table="instance_info"):
            return cls(create_db_conn_string(base_dir, "runs"), inst_data)
        return super().from_local(base_dir, inst_data)

    @contextmanager
    def connect(self) -> Iterator[Connection]:
        engine = _ENGINES.get(self._conn_string)
        if engine is None:
            with super().connect() as conn:
                yield conn
            return
        with _on(engine) as conn:
            yield conn


class ScheduleStorage(SqliteScheduleStorage):
    """Dagster's schedule and sensor storage (schedules.db)."""

    @classmethod
    def from_local(cls, base_dir: str, inst_data: ConfigurableClassData | None = None):
        if _fits() and _stamped(os.path.join(base_dir, "schedules.db")):
            return cls(create_db_conn_string(base_dir, "schedules"), inst_data)
        return super().from_local(base_dir, inst_data)


class SqliteStorage(DagsterSqliteStorage):
    """Dagster's SQLite storage under ``base_dir`` (DAGSTER_HOME), of the three classes above."""

    def __init__(self, base_dir: str, inst_data: ConfigurableClassData | None = None):
        self.base_dir = base_dir
        history = os.path.join(base_dir, "history")
        self._run_storage = RunStorage.from_local(history)
        self._event_log_storage = EventLogStorage(os.path.join(history, "runs", ""))
        self._schedule_storage = ScheduleStorage.from_local(os.path.join(base_dir, "schedules"))
        self._inst_data = inst_data
        DagsterStorage.__init__(self)

    @classmethod
    def from_config_value(cls, inst_data, config_value):
        return cls.from_local(inst_data=inst_data, **config_value)


class Instance(DagsterInstance):
    """Dagster's instance, whose storage by default is :class:`SqliteStorage` under its DAGSTER_HOME (where
    Dagster's default is its own SQLite storage there)."""

    @classmethod
    def config_schema(cls) -> dict:  # the instance settings it adds to Dagster's: none
        return {}

    @classmethod
    def config_type(cls) -> dict:  # its own config, as of any class a dagster.yaml names: none
        return {}

    @staticmethod
    def config_defaults(base_dir: str) -> dict:
        defaults = dict(InstanceRef.config_defaults(base_dir))
        defaults["storage"] = ConfigurableClassData(__name__, SqliteStorage.__name__,
                                                    yaml.dump({"base_dir": base_dir}, default_flow_style=False))
        return defaults

"""`talkthrough ui`'s daemon stores a run's planned events as one batch (app/dagster_dev.py): on a real SQLite
instance, the batched write leaves exactly the records Dagster's own event-by-event write leaves, and a batch
that fails part-way leaves nothing of itself behind (Dagster then falls back to writing the events one by one).
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from dagster import AssetKey, DagsterEventType, DagsterInstance, EventRecordsFilter
from dagster._core.events import (AssetMaterializationPlannedData, DagsterEvent, DagsterEventBatchMetadata,
                                  generate_event_batch_id)
from dagster._core.events.log import EventLogEntry
from dagster._core.storage.event_log.sqlite.sqlite_event_log import SqliteEventLogStorage

from talkthrough_assets.app import dagster_dev
from talkthrough_assets.pipeline.settings import STAGES

RUN_ID = "5a1e5a1e-0000-4000-8000-000000000001"
PARTITIONS = [f"{i:016x}" for i in range(1, 13)]  # a batch of 12 recordings


def _planned(run_id: str) -> list[EventLogEntry]:
    """A batch run's planned materializations: a stage per recording, as the daemon records them."""
    out = []
    for stage in STAGES:
        for pk in PARTITIONS:
            ev = DagsterEvent.build_asset_materialization_planned_event(
                "process_recording", stage, AssetMaterializationPlannedData(AssetKey(stage), partition=pk))
            out.append(EventLogEntry(user_message="", level=10, job_name="process_recording", run_id=run_id,
                                     error_info=None, timestamp=time.time(), dagster_event=ev))
    return out


def _stored(instance: DagsterInstance) -> list[tuple]:
    recs = instance.event_log_storage.get_event_records(EventRecordsFilter(DagsterEventType.ASSET_MATERIALIZATION_PLANNED))
    per_run = instance.all_logs(RUN_ID)
    return sorted((r.event_log_entry.dagster_event.asset_key.to_user_string(),
                   r.event_log_entry.dagster_event.event_specific_data.partition) for r in recs) + [len(per_run)]


def _instance(home: Path) -> DagsterInstance:
    home.mkdir()
    return DagsterInstance.from_config(str(home))


@pytest.fixture
def batched(monkeypatch):
    """The daemon's batched write, undone after the test (it replaces a method of Dagster's class)."""
    monkeypatch.setattr(SqliteEventLogStorage, "store_event_batch", SqliteEventLogStorage.store_event_batch)
    monkeypatch.setenv("DAGSTER_EVENT_BATCH_SIZE", str(dagster_dev.EVENT_BATCH_SIZE))
    dagster_dev._batch_sqlite_events()


def test_batched_planned_events_are_stored_as_dagster_stores_them(tmp_path, batched):
    one_by_one = _instance(tmp_path / "one_by_one")
    for entry in _planned(RUN_ID):
        one_by_one.event_log_storage.store_event(entry)

    as_batch = _instance(tmp_path / "batch")
    events = _planned(RUN_ID)
    batch_id = generate_event_batch_id()
    for i, entry in enumerate(events):  # the daemon's path: handle_new_event buffers, then one batch write
        as_batch.handle_new_event(entry, batch_metadata=DagsterEventBatchMetadata(batch_id, i == len(events) - 1))

    assert len(events) == len(STAGES) * len(PARTITIONS)
    assert _stored(as_batch) == _stored(one_by_one)
    assert _stored(as_batch)[-1] == len(events)
    info = as_batch.get_latest_planned_materialization_info(AssetKey(STAGES[0]), PARTITIONS[-1])
    assert info is not None and info.run_id == RUN_ID


def test_a_failed_batch_leaves_nothing_half_written(tmp_path, batched):
    inst = _instance(tmp_path / "home")
    events = _planned(RUN_ID)
    with pytest.raises(Exception):  # the sixth is no event: its write fails after five were written
        inst.event_log_storage.store_event_batch([*events[:5], None, *events[5:]])
    assert _stored(inst) == [0]  # the five written before it were rolled back with it
    inst.event_log_storage.store_event_batch(events)  # and the storage is usable afterwards
    assert _stored(inst)[-1] == len(events)

"""Drop-folder state lives with the sensor cursor (#13 item 6): a file is done only when the run request it
earned is returned with the new cursor. Real Dagster instance, the sensor evaluated as the daemon does it
(each tick from the cursor the previous tick returned; a tick that raises returns none)."""

from __future__ import annotations

import json
import os
import shutil

import pytest
from fixture_facts import FIXTURES_DIR
from sensor_ticks import Sensor

from talkthrough_assets.pipeline import dropdir
from talkthrough_assets.pipeline import sources
from talkthrough_assets.defs import sensors
from talkthrough_assets.app import service
from talkthrough_assets.app import runs
from talkthrough_assets import store


def _unique_copy(drop, name: str, tag: bytes):
    """A fixture's bytes plus a tag: a recording no other test has registered."""
    src = drop.parent / f"{name}-source.m4a"
    src.write_bytes((FIXTURES_DIR / "meeting_audio.m4a").read_bytes() + b"\0" * 8 + tag)
    f = drop / f"{name}.m4a"
    shutil.copy2(src, f)
    return src, f, service.recording_id_for(src)


def test_a_file_that_vanishes_after_hashing_is_looked_at_again_not_marked_done(drop, monkeypatch):
    """Hashed by the tick, gone before the sensor registers it: no run, no crash, not done; when the very
    same file (same size and mtime) comes back, the next stable tick requests its run."""
    sensor = Sensor(runs.instance())
    src, f, rid = _unique_copy(drop, "flaky", b"cursor-vanish")
    assert not sensor().run_requests  # first sight: waits one tick for stability
    st = os.stat(f)
    real = sources.register_source

    def vanish_first(path, recording_id):
        os.unlink(path)  # gone between hashing and registration
        return real(path, recording_id)

    monkeypatch.setattr(sources, "register_source", vanish_first)
    tick = sensor()
    assert not tick.run_requests and "flaky.m4a (vanished before it could be registered" in tick.skip_message
    assert not store.has_partition("sources", rid)
    monkeypatch.setattr(sources, "register_source", real)
    shutil.copy2(src, f)
    os.utime(f, ns=(st.st_atime_ns, st.st_mtime_ns))  # the very same file, back again
    again = sensor()
    assert not again.run_requests and "flaky.m4a (new or still being written)" in again.skip_message
    assert [r.partition_key for r in sensor().run_requests] == [rid]
    assert store.has_partition("sources", rid)
    assert not sensor().run_requests  # now done: never requested again


def test_a_tick_that_raises_marks_nothing_done(drop, monkeypatch):
    """The tick hashes and registers the file, then fails before returning: its cursor is not stored, so
    the next tick starts from the previous state and requests the run (the old state file marked the file
    done first, and its run was never requested)."""
    sensor = Sensor(runs.instance())
    _src, f, rid = _unique_copy(drop, "crashy", b"cursor-raise")
    assert not sensor().run_requests
    before = sensor.cursor

    def boom(**_kw):
        raise RuntimeError("daemon died mid-tick")

    real = sensors.SensorResult
    monkeypatch.setattr(sensors, "SensorResult", boom)
    with pytest.raises(Exception, match="daemon died mid-tick"):
        sensor()
    assert sensor.cursor == before  # a failed tick stores no cursor: the previous one stays in force
    monkeypatch.setattr(sensors, "SensorResult", real)
    tick = sensor()
    assert [r.partition_key for r in tick.run_requests] == [rid]
    assert tick.dynamic_partitions_requests[0].partition_keys == [rid]
    assert not sensor().run_requests


def test_the_cursor_stays_small_and_quiet_ticks_keep_it(drop):
    """The cursor only names the state (Dagster copies it into every tick it keeps); the state file
    grows ~11 bytes a file. A tick that changes nothing returns the same cursor and writes nothing."""
    n = 300
    for i in range(n):
        (drop / f"note{i:03d}.txt").write_text(f"not media {i}")  # skipped once: done without hashing
    sensor = Sensor(runs.instance())
    first = sensor()
    assert len(first.cursor) < 100, first.cursor
    state_file = dropdir._states_dir(drop) / f"{json.loads(first.cursor)['state']}.json"
    assert state_file.stat().st_size < 200 + 11 * n
    assert len(dropdir.load(drop, first.cursor).done) == n
    mtime = state_file.stat().st_mtime_ns
    again = sensor()
    assert again.cursor == first.cursor and state_file.stat().st_mtime_ns == mtime
    assert "seen 300, hashed 0" in again.skip_message


def test_a_cursor_for_another_folder_or_a_lost_state_starts_afresh(drop, tmp_path):
    other = tmp_path / "other"
    other.mkdir()
    (other / "a.txt").write_text("x")
    cursor = dropdir.commit(other, dropdir.tick(other, known_ids=set()).state)
    assert dropdir.load(other, cursor).done and dropdir.load(drop, cursor) == dropdir.DropState()
    for p in dropdir._states_dir(other).glob("*.json"):
        p.unlink()
    assert dropdir.load(other, cursor) == dropdir.DropState()
    assert dropdir.load(other, "not json") == dropdir.DropState()

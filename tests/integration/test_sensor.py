"""Drop-folder sensor against a real Dagster instance (SQLite, under the test data root)."""

from __future__ import annotations

import os
import shutil
import time

import pytest
from dagster import SkipReason, build_sensor_context
from fixture_facts import FIXTURES_DIR

from talkthrough_assets import dropdir, service, store
from talkthrough_assets.definitions import PARTITIONS_NAME, drop_dir_sensor


@pytest.fixture()
def drop(tmp_path, tt_home, monkeypatch):
    d = tmp_path / "drop"
    d.mkdir()
    monkeypatch.setenv("TALKTHROUGH_DROP_DIR", str(d))
    return d


def _evaluate(instance):
    ctx = build_sensor_context(instance=instance)
    return drop_dir_sensor(ctx)


def test_sensor_waits_for_stability_then_requests_one_run_and_dedupes(drop):
    inst = service.instance()
    src = drop.parent / "standup-source.m4a"  # bytes no other test has registered
    src.write_bytes((FIXTURES_DIR / "meeting_audio.m4a").read_bytes() + b"\0" * 8 + b"sensor")
    shutil.copy(src, drop / "standup.m4a")
    (drop / "notes.txt").write_text("not media")
    first = _evaluate(inst)
    assert isinstance(first, SkipReason)  # seen once: not yet stable, nothing hashed
    second = _evaluate(inst)
    rid = service.recording_id_for(src)
    assert [r.partition_key for r in second.run_requests] == [rid]
    assert second.dynamic_partitions_requests[0].partition_keys == [rid]
    inst.add_dynamic_partitions(PARTITIONS_NAME, [rid])  # what the daemon does with the request
    assert {r["path"] for r in store.read_rows("sources", rid)} >= {str((drop / "standup.m4a").resolve())}

    # same bytes under another name: alias recorded, no second partition or run
    shutil.copy(src, drop / "standup copy (1).m4a")
    assert isinstance(_evaluate(inst), SkipReason)
    third = _evaluate(inst)
    assert isinstance(third, SkipReason)
    paths = {os.path.basename(r["path"]) for r in store.read_rows("sources", rid)}
    assert "standup copy (1).m4a" in paths
    assert inst.get_dynamic_partitions(PARTITIONS_NAME).count(rid) == 1


def test_growing_file_is_never_hashed_until_stable_and_seen_files_are_not_rehashed(drop):
    known: set[str] = set()
    f = drop / "rec.mp4"
    data = (FIXTURES_DIR / "silent_video.mp4").read_bytes()
    f.write_bytes(data[: len(data) // 2])
    r1 = dropdir.tick(drop, known_ids=known)
    assert (r1.hashed, r1.new) == (0, [])
    with open(f, "ab") as fh:  # the copy goes on
        fh.write(data[len(data) // 2:])
    os.utime(f, (time.time() + 1, time.time() + 1))
    r2 = dropdir.tick(drop, known_ids=known)
    assert (r2.hashed, r2.new) == (0, []) and str(f) in r2.waiting
    r3 = dropdir.tick(drop, known_ids=known)
    assert r3.hashed == 1 and r3.new == [(service.recording_id_for(f), str(f))]
    r4 = dropdir.tick(drop, known_ids=known | {r3.new[0][0]})
    assert (r4.hashed, r4.new, r4.seen) == (0, [], 1)


def test_non_media_is_skipped_once_with_a_reason(drop):
    (drop / "readme.md").write_text("hello")
    r1 = dropdir.tick(drop, known_ids=set())
    assert r1.skipped == [(str(drop / "readme.md"), "not a media file extension (.md)")]
    r2 = dropdir.tick(drop, known_ids=set())
    assert r2.skipped == [] and r2.hashed == 0


def test_hashing_is_bounded_per_tick(drop):
    for i in range(5):
        (drop / f"clip{i}.wav").write_bytes(os.urandom(1000))
    dropdir.tick(drop, known_ids=set())
    r = dropdir.tick(drop, known_ids=set(), max_hash_files=2)
    assert r.hashed == 2 and len(r.new) == 2 and len(r.waiting) == 3
    r = dropdir.tick(drop, known_ids=set(), max_hash_files=2)
    assert r.hashed == 2


def test_zero_byte_file_is_named_in_the_skip_reason_then_released_with_its_filename(drop, monkeypatch):
    """#14 item 8 (sensor side): the tick's skip reason names the waiting file and why; after the
    bounded wait it is requested like any file (its run then fails at probe: empty file (0 bytes))."""
    inst = service.instance()
    monkeypatch.setenv("TALKTHROUGH_DROP_ZERO_WAIT_S", "0.5")
    (drop / "zero.mp4").write_bytes(b"")
    rid = service.recording_id_for(drop / "zero.mp4")
    if inst.has_dynamic_partition(PARTITIONS_NAME, rid):  # empty bytes another test registered: start anew
        inst.delete_dynamic_partition(PARTITIONS_NAME, rid)
    first = _evaluate(inst)
    assert isinstance(first, SkipReason)
    assert "zero.mp4 (empty, 0 bytes; run in" in first.skip_message, first.skip_message
    time.sleep(0.6)
    second = _evaluate(inst)
    assert [(r.partition_key, r.tags["talkthrough/filename"]) for r in second.run_requests] == [(rid, "zero.mp4")]


def test_a_file_that_vanishes_after_hashing_is_looked_at_again_not_marked_done(drop):
    """The tick hashed it, then it was gone before registration: no run, no crash, and when the same
    bytes (same size and mtime) come back, the next stable tick registers them."""
    src = drop.parent / "flaky-source.m4a"  # bytes no other test has registered
    src.write_bytes((FIXTURES_DIR / "meeting_audio.m4a").read_bytes() + b"\0" * 8 + b"vanish")
    f = drop / "flaky.m4a"
    shutil.copy2(src, f)
    assert dropdir.tick(drop, known_ids=set()).new == []  # first sight: waits
    res = dropdir.tick(drop, known_ids=set())  # stable: hashed
    rid = service.recording_id_for(src)
    assert res.new == [(rid, str(f))]
    st = os.stat(f)
    f.unlink()  # gone before the sensor records it
    assert dropdir.register(drop, res) == []
    assert str(f) in res.waiting and "vanished" in res.message
    assert str(f) not in dropdir.load_state(drop)["files"]
    assert not store.has_partition("sources", rid)
    shutil.copy2(src, f)
    os.utime(f, ns=(st.st_atime_ns, st.st_mtime_ns))  # the very same file, back again
    inst = service.instance()
    assert isinstance(_evaluate(inst), SkipReason)  # seen again: waits one tick for stability
    again = _evaluate(inst)
    assert [r.partition_key for r in again.run_requests] == [rid]
    assert store.has_partition("sources", rid)

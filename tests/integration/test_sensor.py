"""Drop-folder sensor against a real Dagster instance (SQLite, under the test data root). The sensor is
evaluated as the daemon does it: each tick gets the cursor the previous one returned."""

from __future__ import annotations

import os
import shutil
import time

from fixture_facts import FIXTURES_DIR
from sensor_ticks import Sensor

from talkthrough_assets.pipeline import dropdir
from talkthrough_assets.app import service
from talkthrough_assets.app import runs
from talkthrough_assets import store
from talkthrough_assets.defs.partitions import PARTITIONS_NAME


def test_sensor_waits_for_stability_then_requests_one_run_and_dedupes(drop):
    inst = runs.instance()
    _evaluate = Sensor(inst)
    src = drop.parent / "standup-source.m4a"  # bytes no other test has registered
    src.write_bytes((FIXTURES_DIR / "meeting_audio.m4a").read_bytes() + b"\0" * 8 + b"sensor")
    shutil.copy(src, drop / "standup.m4a")
    (drop / "notes.txt").write_text("not media")
    first = _evaluate()
    assert first.skip_message and not first.run_requests  # seen once: not yet stable, nothing hashed
    second = _evaluate()
    rid = service.recording_id_for(src)
    assert [r.partition_key for r in second.run_requests] == [rid]
    assert second.dynamic_partitions_requests[0].partition_keys == [rid]
    inst.add_dynamic_partitions(PARTITIONS_NAME, [rid])  # what the daemon does with the request
    assert {r["path"] for r in store.read_rows("sources", rid)} >= {str((drop / "standup.m4a").resolve())}

    # same bytes under another name: alias recorded, no second partition or run
    shutil.copy(src, drop / "standup copy (1).m4a")
    assert _evaluate().skip_message
    third = _evaluate()
    assert third.skip_message and not third.run_requests
    paths = {os.path.basename(r["path"]) for r in store.read_rows("sources", rid)}
    assert "standup copy (1).m4a" in paths
    assert inst.get_dynamic_partitions(PARTITIONS_NAME).count(rid) == 1


def test_growing_file_is_never_hashed_until_stable_and_seen_files_are_not_rehashed(drop):
    known: set[str] = set()
    folder = dropdir.Folder(drop)
    f = drop / "rec.mp4"
    data = (FIXTURES_DIR / "silent_video.mp4").read_bytes()
    f.write_bytes(data[: len(data) // 2])
    r1 = folder.tick(known_ids=known)
    assert (r1.hashed, r1.new) == (0, [])
    with open(f, "ab") as fh:  # the copy goes on
        fh.write(data[len(data) // 2:])
    os.utime(f, (time.time() + 1, time.time() + 1))
    r2 = folder.tick(known_ids=known)
    assert (r2.hashed, r2.new) == (0, []) and str(f) in r2.waiting
    r3 = folder.tick(known_ids=known)
    assert r3.hashed == 1 and r3.new == [(service.recording_id_for(f), str(f))]
    r4 = folder.tick(known_ids=known | {r3.new[0][0]})
    assert (r4.hashed, r4.new, r4.seen) == (0, [], 1)


def test_non_media_is_skipped_once_with_a_reason(drop):
    folder = dropdir.Folder(drop)
    (drop / "readme.md").write_text("hello")
    r1 = folder.tick(known_ids=set())
    assert r1.skipped == [(str(drop / "readme.md"), "not a media file extension (.md)")]
    r2 = folder.tick(known_ids=set())
    assert r2.skipped == [] and r2.hashed == 0


def test_hashing_is_bounded_per_tick(drop):
    folder = dropdir.Folder(drop)
    for i in range(5):  # random bytes: no media, so the stages' checks are left out (they would refuse them)
        (drop / f"clip{i}.wav").write_bytes(os.urandom(1000))
    folder.tick(known_ids=set(), refuse=lambda path: None)
    r = folder.tick(known_ids=set(), max_hash_files=2, refuse=lambda path: None)
    assert r.hashed == 2 and len(r.new) == 2 and len(r.waiting) == 3
    r = folder.tick(known_ids=set(), max_hash_files=2, refuse=lambda path: None)
    assert r.hashed == 2


def test_zero_byte_file_is_named_in_the_skip_reason_then_refused_with_its_filename(drop, monkeypatch):
    """#14 item 8 (sensor side): the tick's skip reason names the waiting file and why; after the
    bounded wait it gets a run of its own, which fails with the reason (empty file (0 bytes)). An empty file
    dropped after it (the same bytes, so the same id) is no alias: it gets its own failed run, naming it; neither
    is registered. Both runs through the real job, on the test's Dagster instance."""
    from talkthrough_assets.pipeline.settings import STAGES

    inst = runs.instance()
    _evaluate = Sensor(inst)
    monkeypatch.setenv("TALKTHROUGH_DROP_ZERO_WAIT_S", "0.5")
    (drop / "zero.mp4").write_bytes(b"")
    rid = service.recording_id_for(drop / "zero.mp4")
    first = _evaluate()
    assert not first.run_requests
    assert "zero.mp4 (empty, 0 bytes; run in" in first.skip_message, first.skip_message
    time.sleep(0.6)
    second = _evaluate()
    (drop / "zero again.mp4").write_bytes(b"")  # after the first was handled: its bytes' id is known now
    for req in second.dynamic_partitions_requests:  # none when an earlier test of the session added the empty id
        inst.add_dynamic_partitions(PARTITIONS_NAME, [r for r in req.partition_keys
                                                      if not inst.has_dynamic_partition(PARTITIONS_NAME, r)])
    _evaluate()
    time.sleep(0.6)
    third = _evaluate()
    requests = second.run_requests + third.run_requests
    assert [(r.partition_key, r.tags["talkthrough/filename"]) for r in requests] == [
        (rid, "zero.mp4"), (rid, "zero again.mp4")]
    assert len({r.run_key for r in requests}) == 2  # a run each, though their bytes (and id) are the same
    assert [r.tags["talkthrough/refused"] for r in requests] == [
        "probe: empty file (0 bytes): zero.mp4", "probe: empty file (0 bytes): zero again.mp4"]
    assert [r.tags["talkthrough/source"] for r in requests] == [str(drop / "zero.mp4"), str(drop / "zero again.mp4")]
    registered = {r["path"] for r in store.read_rows("sources", rid)} if store.has_partition("sources", rid) else set()
    assert not registered & {str((drop / n).resolve()) for n in ("zero.mp4", "zero again.mp4")}, registered
    for req in requests:  # each request's run, as the daemon would launch it: fails with its file's reason
        result = runs.run_stages(req.partition_key, list(STAGES), inst, tags=req.tags)
        run = inst.get_run_by_id(result.run_id)
        assert not result.success and run.tags["talkthrough/filename"] == req.tags["talkthrough/filename"], run.tags
        assert run.tags["talkthrough/failure"] == req.tags["talkthrough/refused"], run.tags

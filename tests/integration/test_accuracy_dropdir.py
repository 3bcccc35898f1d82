"""Drop folder: a zero-byte file gets a bounded wait, then is released and refused by the real probe check
(``empty file (0 bytes)``), as is a later empty file with the same (empty) bytes: no recording, no alias; every
tick's message names the files it is waiting on and the ones it refused. Real files, real probe; each tick
starts from the state the previous one proposed."""

from __future__ import annotations

import hashlib
import os

import pytest
from fixture_facts import FIXTURES_DIR

from talkthrough_assets.pipeline import dropdir
from talkthrough_assets.core.errors import BadMediaError
from talkthrough_assets.stages import probe

EMPTY_ID = hashlib.sha256(b"").hexdigest()[:16]


@pytest.fixture()
def drop(tmp_path, tt_home):
    d = tmp_path / "drop"
    d.mkdir()
    return d


def test_zero_byte_file_waits_a_bounded_time_then_is_refused_and_so_is_the_next_one(drop):
    folder = dropdir.Folder(drop)
    empty = drop / "empty.mp4"
    empty.write_bytes(b"")
    for _ in range(3):  # within the default wait (60 s): waiting, named with its reason
        r = folder.tick(known_ids=set())
        assert (r.new, r.waiting) == ([], [str(empty)])
        assert "empty.mp4 (empty, 0 bytes; run in" in r.message, r.message
    assert dropdir.ZERO_WAIT_S <= 120  # bounded

    # the wait is over (same state, zero wait): released like any stable file, and refused (no recording)
    r = folder.tick(known_ids=set(), zero_wait_s=0)
    assert (r.new, r.aliases, r.waiting) == ([], [], [])
    assert [(x.rid, x.path, x.stage, x.reason) for x in r.refused] == [
        (EMPTY_ID, str(empty), "probe", "empty file (0 bytes): empty.mp4")]
    assert "refused 1" in r.message and "empty.mp4 (probe: empty file (0 bytes): empty.mp4)" in r.message
    with pytest.raises(BadMediaError, match=r"empty file \(0 bytes\)"):  # the same check as the probe stage's
        probe.probe_file(empty)
    r = folder.tick(known_ids={EMPTY_ID}, zero_wait_s=0)  # handled once, never re-requested
    assert (r.new, r.refused, r.waiting, r.hashed) == ([], [], [], 0)
    # another empty file, after the first: the same bytes, yet refused on its own, not an alias of anything
    again = drop / "empty again.mp4"
    again.write_bytes(b"")
    assert folder.tick(known_ids={EMPTY_ID}, zero_wait_s=0).waiting == [str(again)]  # first sight
    r = folder.tick(known_ids={EMPTY_ID}, zero_wait_s=0)
    assert (r.new, r.aliases) == ([], [])
    assert [(x.rid, x.path, x.reason) for x in r.refused] == [
        (EMPTY_ID, str(again), "empty file (0 bytes): empty again.mp4")]
    first_key = dropdir.fingerprint("empty.mp4", 0, empty.stat().st_mtime_ns).hex()
    assert r.refused[0].key != first_key  # its run is keyed by the file, not the bytes


def test_a_file_that_is_no_media_is_refused_with_the_probe_reason(drop):
    folder = dropdir.Folder(drop)
    text = drop / "notes renamed.mp4"
    text.write_bytes(b"no media here\n" * 50)
    folder.tick(known_ids=set())
    r = folder.tick(known_ids=set())
    assert r.new == [] and [(x.path, x.stage) for x in r.refused] == [(str(text), "probe")]
    assert r.refused[0].reason.startswith("not a readable media file") and "notes renamed.mp4" in r.refused[0].reason


def test_zero_byte_file_that_starts_filling_is_a_normal_copy(drop):
    folder = dropdir.Folder(drop)
    f = drop / "rec.mp4"
    f.write_bytes(b"")
    assert folder.tick(known_ids=set(), zero_wait_s=0).waiting == [str(f)]  # first sight: waits
    f.write_bytes((FIXTURES_DIR / "silent_video.mp4").read_bytes())
    os.utime(f, (1_700_000_000, 1_700_000_000))
    r = folder.tick(known_ids=set(), zero_wait_s=0)
    assert r.new == [] and r.why_waiting[str(f)] == "new or still being written"
    r = folder.tick(known_ids=set(), zero_wait_s=0)
    assert [p for _, p in r.new] == [str(f)] and r.refused == []


def test_message_names_every_waiting_file_up_to_a_limit(drop):
    folder = dropdir.Folder(drop)
    names = [f"clip{i:02d}.wav" for i in range(dropdir.MESSAGE_MAX_FILES + 2)]
    for n in names:
        (drop / n).write_bytes(os.urandom(100))
    r = folder.tick(known_ids=set())
    assert r.message.startswith(f"seen {len(names)}, hashed 0, new 0, aliases 0, refused 0, waiting {len(names)}: ")
    assert sum(n in r.message for n in names) == dropdir.MESSAGE_MAX_FILES and r.message.endswith("and 2 more")
    assert "(new or still being written)" in r.message
    r = folder.tick(known_ids=set(), max_hash_files=3, refuse=lambda path: None)  # random bytes: checks left out
    assert r.hashed == 3 and "(over this tick's hashing budget)" in r.message
    r = folder.tick(known_ids=set(), max_hash_files=100, refuse=lambda path: None)
    assert r.waiting == [] and r.message == f"seen {len(names)}, hashed {len(names) - 3}, new {len(names) - 3}, " \
                                            f"aliases 0, refused 0, waiting 0"

"""store.tempfiles: which temp files have no live writer (a real dead pid, a live one, a reused one)."""

from __future__ import annotations

import os
import subprocess
import sys
import time

from talkthrough_assets import store
from talkthrough_assets.store import tempfiles


def _dead_pid() -> int:
    p = subprocess.Popen([sys.executable, "-c", "pass"])
    p.wait()
    return p.pid


def test_a_writer_is_told_by_host_and_pid(tmp_path, monkeypatch):
    monkeypatch.setenv("TALKTHROUGH_HOME", str(tmp_path))
    host = tempfiles.writer_prefix()[len(tempfiles.PREFIX):].split(".")[0]
    now = time.time()
    dead, live = _dead_pid(), os.getppid()
    assert tempfiles.orphaned(f".tmp-{host}.{dead}-abc.wav.part", now)
    assert not tempfiles.orphaned(f"{tempfiles.writer_prefix()}abc.wav.part", now - 10 * 86400)  # this process
    assert not tempfiles.orphaned(f".tmp-{host}.{live}-abc.wav.part", now)
    # older than the process now holding that pid: that process did not write it (the pid was reused)
    assert tempfiles.orphaned(f".tmp-{host}.{live}-abc.wav.part", tempfiles.started_at(live) - 60)
    # another host's, or a name without a writer: only once it was not written for a day
    for name in (".tmp-00000000.1-abc.part", ".tmp-k3j2h1.parquet.part"):
        assert not tempfiles.orphaned(name, now - 3600) and tempfiles.orphaned(name, now - 2 * 86400)
    assert not tempfiles.orphaned("part-0.parquet", 0)


def test_sweep_removes_only_orphans_and_skips_dagsters_storage(tmp_path, monkeypatch):
    monkeypatch.setenv("TALKTHROUGH_HOME", str(tmp_path))
    host = tempfiles.writer_prefix()[len(tempfiles.PREFIX):].split(".")[0]
    dead = _dead_pid()
    orphan = tmp_path / "audio" / f".tmp-{host}.{dead}-x.wav.part"
    mine = tmp_path / "audio" / f"{tempfiles.writer_prefix()}y.wav.part"
    theirs = tmp_path / "dagster" / f".tmp-{host}.{dead}-z.part"
    for p in (orphan, mine, theirs):
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(b"x" * 10)
    assert tempfiles.sweep(remove=False) == [(str(orphan), 10)] and orphan.exists()
    assert tempfiles.sweep() == [(str(orphan), 10)]
    assert not orphan.exists() and mine.exists() and theirs.exists()
    with store.atomic_path(tmp_path / "audio" / "a.wav") as tmp:  # a publish names its writer
        assert tmp.name.startswith(tempfiles.writer_prefix())

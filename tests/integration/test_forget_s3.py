"""`talkthrough forget` on an ``s3://`` data root (#22 item 3): a moto S3 server on loopback, recordings
processed by the real CLI in subprocesses, then one forgotten by the CLI while the MCP server's Reader (in this
process) reads the same bucket: every object of the forgotten recording is gone
from the bucket and from this machine's cache, the other recording's objects are untouched, and the reader no
longer lists it."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import fixture_facts as F

CLI = [sys.executable, "-m", "talkthrough_assets.cli.main"]
BUCKET = "talkthrough-forget"


def test_forget_on_an_s3_data_root(s3, tmp_path, monkeypatch):
    s3.bucket(BUCKET)
    env = dict(os.environ)
    for k in ("TALKTHROUGH_HOME", "DAGSTER_HOME", "TALKTHROUGH_LOCAL_HOME", "TALKTHROUGH_PG_URL"):
        env.pop(k, None)
    env.update(TALKTHROUGH_HOME=f"s3://{BUCKET}/lib", TALKTHROUGH_LOCAL_HOME=str(tmp_path / "local"), **s3.env())
    gone = F.unique_copy(F.SILENT_PATH, tmp_path / "gone.mp4", "forget-s3")
    keep = F.unique_copy(F.SILENT_PATH, tmp_path / "keep.mp4", "keep-s3")
    r = subprocess.run(CLI + ["process", "--json", str(gone), str(keep)], env=env, capture_output=True, text=True,
                       timeout=500)
    assert r.returncode == 0, r.stderr[-3000:]
    rid, kid = (s["recording_id"] for s in json.loads(r.stdout))
    before = s3.keys(f"{BUCKET}/lib")
    mine = {k for k in before if rid in k}
    assert any("/manifests/" in k for k in mine) and any("/tables/sources/" in k for k in mine)
    assert any("/frames/" in k for k in mine)
    # the merged search-index buckets hold every recording's postings: forget re-merges them under new names
    others = {k for k in before if rid not in k and "/index/merged/" not in k}
    for k, v in env.items():
        if k.startswith(("TALKTHROUGH_", "AWS_", "DAGSTER_")):
            monkeypatch.setenv(k, v)
    from talkthrough_assets.read.reader import Reader

    reader = Reader(refresh_interval=0)
    try:
        assert {r["id"] for r in reader.list_recordings(limit=100).dump()["recordings"]} == {rid, kid}
        f = subprocess.run(CLI + ["forget", rid, "--yes", "--json"], env=env, capture_output=True, text=True,
                           timeout=300)
        assert f.returncode == 0, f.stderr[-3000:]
        out = json.loads(f.stdout)
        assert out["dagster_partition_removed"] and f"s3://{BUCKET}/lib/manifests/{rid}.json" in out["removed"]
        after = s3.keys(f"{BUCKET}/lib")
        assert not {k for k in after if rid in k}, sorted(k for k in after if rid in k)
        assert others <= after  # the other recording (and the schema files) still there
        # this machine's cache holds nothing of it; the empty per-recording lock file stays (removing a lock
        # file others may be waiting on would let two writers in)
        left = [p for p in (tmp_path / "local").rglob(f"*{rid}*") if p.parent.name != "locks"]
        assert not left, left
        assert {r["id"] for r in reader.list_recordings(limit=100).dump()["recordings"]} == {kid}
    finally:
        reader.index.close()


def test_forget_on_an_s3_data_root_keeps_the_chunk_results_another_recording_uses(s3, tmp_path):
    """#22 item 3 with #19's chunk store: two files with the same audio (two recordings) share their Whisper
    chunk results in the bucket; forgetting one leaves them (the other still uses them), forgetting the
    other removes them."""
    s3.bucket(BUCKET + "-chunks")
    env = dict(os.environ)
    for k in ("TALKTHROUGH_HOME", "DAGSTER_HOME", "TALKTHROUGH_LOCAL_HOME", "TALKTHROUGH_PG_URL"):
        env.pop(k, None)
    env.update(TALKTHROUGH_HOME=f"s3://{BUCKET}-chunks/lib", TALKTHROUGH_LOCAL_HOME=str(tmp_path / "local"),
               **s3.env())
    first = F.unique_copy(F.TWO_VOICES_PATH, tmp_path / "call.m4a", "chunks-s3-a")
    second = F.unique_copy(F.TWO_VOICES_PATH, tmp_path / "call again.m4a", "chunks-s3-b")
    r = subprocess.run(CLI + ["process", "--json", str(first), str(second)], env=env, capture_output=True,
                       text=True, timeout=500)
    assert r.returncode == 0, r.stderr[-3000:]
    a, b = (s["recording_id"] for s in json.loads(r.stdout))
    assert a != b

    def chunk_results() -> set[str]:
        return {k for k in s3.keys(f"{BUCKET}-chunks/lib") if "/chunks/whisper/" in k}

    shared = chunk_results()
    assert shared, "the Whisper chunk results are stored in the bucket"
    for rid, left in ((a, shared), (b, set())):
        f = subprocess.run(CLI + ["forget", rid, "--yes", "--json"], env=env, capture_output=True, text=True,
                           timeout=300)
        assert f.returncode == 0, f.stderr[-3000:]
        removed = [x for x in json.loads(f.stdout)["removed"] if "/chunks/whisper/" in x]
        assert chunk_results() == left and len(removed) == len(shared - left), (rid, removed)

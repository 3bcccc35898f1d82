"""Outputs on object storage, for real: a moto S3 server on loopback (`moto[server]`, a real
S3-compatible HTTP endpoint) as ``TALKTHROUGH_HOME=s3://bucket/prefix``, a throwaway Postgres cluster
(Debian's `postgresql`) as the shared Dagster storage, and two `talkthrough process` worker processes
with separate local directories, i.e. two machines sharing only Postgres and S3. A third "machine"
then reads everything back through a real MCP stdio client session and through DuckDB.

The `pg` and `s3` fixtures (tests/conftest.py) skip, with the reason, when moto, Postgres or
dagster-postgres is unavailable (never silently passing).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import anyio
import pytest

import fixture_facts as F

CLI = [sys.executable, "-m", "talkthrough_assets.cli.main"]
TALKTHROUGH = shutil.which("talkthrough") or str(Path(sys.executable).with_name("talkthrough"))
BUCKET = "talkthrough-test"


@pytest.fixture(scope="module")
def cluster_env(s3, pg, tmp_path_factory):
    """Environment shared by every "machine": the s3:// data root, the endpoint and credentials, and
    TALKTHROUGH_PG_URL; each machine adds its own TALKTHROUGH_LOCAL_HOME."""
    s3.bucket(BUCKET)
    env = dict(os.environ)
    for k in ("TALKTHROUGH_HOME", "DAGSTER_HOME", "TALKTHROUGH_LOCAL_HOME"):
        env.pop(k, None)
    env.update(TALKTHROUGH_HOME=f"s3://{BUCKET}/library", TALKTHROUGH_PG_URL=pg.create_db("tt_s3"),
               TALKTHROUGH_LOG_LEVEL="DEBUG", COLUMNS="200", **s3.env())
    env.setdefault("TALKTHROUGH_DIARIZATION_MODELS", str(F.FIXTURES_DIR.parent.parent / "shared/models/diarization"))
    return env, tmp_path_factory.mktemp("machines")


def _machine(cluster_env, name: str) -> dict:
    env, machines = cluster_env
    return dict(env, TALKTHROUGH_LOCAL_HOME=str(machines / name))


def _cli(env: dict, args: list[str]) -> subprocess.Popen:
    return subprocess.Popen(CLI + args, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True)


def _finish(proc: subprocess.Popen, timeout: float = 420, rc: int = 0) -> list[dict]:
    out, err = proc.communicate(timeout=timeout)
    assert proc.returncode == rc, f"rc {proc.returncode}\n{out[-2000:]}\n{err[-3000:]}"
    return json.loads(out)


@pytest.fixture(scope="module")
def two_workers(cluster_env) -> dict[str, dict]:
    """The fixtures folder split over two machines working at the same time: A takes the videos, B the
    audio files (the two-voice meeting diarized)."""
    a = _cli(_machine(cluster_env, "a"), ["process", "--json", str(F.SCREENCAST_PATH), str(F.SILENT_PATH)])
    b = _cli(_machine(cluster_env, "b"), ["process", "--json", "--diarize", "--num-speakers", "2",
                                          str(F.MEETING_PATH), str(F.FIXTURES_DIR / F.TWO_VOICES_NAME),
                                          str(F.VOICES_AGAIN_PATH)])
    out = {}
    for proc in (a, b):
        for summary in _finish(proc):
            assert summary["status"] == "processed", summary
            out[Path(summary["source"]).name] = summary
    return out


def test_two_machines_write_one_library_on_s3(cluster_env, two_workers, s3):
    env, machines = cluster_env
    sc, mt = two_workers[F.SCREENCAST_NAME], two_workers[F.MEETING_NAME]
    assert sc["manifest"] == f"s3://{BUCKET}/library/manifests/{sc['recording_id']}.json"
    assert sc["frames"]["count"] >= len(F.SCREENCAST_SCENE_STARTS_MS)
    assert mt["transcript"]["segments"] >= 3

    keys = s3.keys(f"{BUCKET}/library")
    for summary in two_workers.values():
        rid = summary["recording_id"]
        for key in (f"manifests/{rid}.json", f"audio/{rid}.wav", f"tables/segments/recording={rid}/part-0.parquet",
                    f"tables/recordings/recording={rid}/part-0.parquet"):
            assert f"{BUCKET}/library/{key}" in keys, key
    tv = two_workers[F.TWO_VOICES_NAME]
    assert f"{BUCKET}/library/settings/{tv['recording_id']}.json" in keys  # --diarize persisted, in S3
    assert tv["diarized"] and tv["speakers"] == 2
    # the report and the contact sheet beside it, one PUT each (every scene once: the fixture's four)
    sheet = f"reports/{sc['recording_id']}.contact_sheet.jpg"
    assert f"{BUCKET}/library/{sheet}" in keys and sc["frames"]["contact_sheet"] == f"s3://{BUCKET}/library/{sheet}"
    frames = sorted(k for k in keys if f"/frames/{sc['recording_id']}/" in k)
    assert len(frames) == sc["frames"]["count"] and all(k.endswith(".jpg") for k in frames)
    # every object was published whole: no temp names, nothing machine-local in the bucket
    assert not [k for k in keys if "/.tmp-" in k or k.endswith(".part")]
    assert not [k for k in keys if "/dagster/" in k or "/locks/" in k or "/models/" in k]
    # each machine kept its Dagster-free local state apart (Dagster storage is the shared Postgres)
    assert (machines / "a" / "frames" / sc["recording_id"]).is_dir()
    assert not (machines / "b" / "frames").exists()
    assert not list((machines / "a").glob("dagster/*.db")) and not list((machines / "a").glob("dagster/**/*.db"))


def test_processing_again_from_the_other_machine_runs_nothing(cluster_env, two_workers):
    # machine B runs the README's `talkthrough process fixtures/`: it sees A's outputs and stage records
    # (S3) and the two-voice meeting's persisted --diarize, so every recording is a no-op there
    again = _finish(_cli(_machine(cluster_env, "b"), ["process", "--json", str(F.FIXTURES_DIR)]))
    assert {s["recording_id"]: (s["status"], s["stages_run"]) for s in again} == \
        {s["recording_id"]: ("cached", []) for s in two_workers.values()}


def test_one_writer_per_recording_across_machines(cluster_env, two_workers):
    """The per-recording lock is a Postgres advisory lock when storage is shared: while machine A
    re-processes the meeting, machine B is refused (not a second writer on the same S3 prefix)."""
    a = _cli(_machine(cluster_env, "a"), ["process", "--json", "--force", str(F.MEETING_PATH)])
    seen = []
    deadline = time.time() + 240
    for line in a.stderr:
        seen.append(line)
        if 'Started stage "' in line or "STEP_START" in line:
            break
        assert time.time() < deadline, "".join(seen[-30:])
    b = _finish(_cli(_machine(cluster_env, "b"), ["process", "--json", "--force", str(F.MEETING_PATH)]), rc=1)
    assert b[0]["status"] == "refused", b
    assert "being processed by another run" in b[0]["reason"]
    out, err = a.communicate(timeout=420)
    assert a.returncode == 0, err[-3000:]
    assert json.loads(out)[0]["status"] == "processed"


def test_duckdb_reads_the_s3_tables(cluster_env, two_workers, monkeypatch):
    env, machines = cluster_env
    for k in ("TALKTHROUGH_HOME", "TALKTHROUGH_LOCAL_HOME", "AWS_ENDPOINT_URL", "AWS_ACCESS_KEY_ID",
              "AWS_SECRET_ACCESS_KEY", "AWS_REGION"):
        monkeypatch.setenv(k, _machine(cluster_env, "c")[k])
    from talkthrough_assets import store

    con = store.connect()
    try:
        rows = dict(con.execute("SELECT filename, segment_count FROM recordings").fetchall())
        assert set(rows) == set(two_workers)
        n_frames = con.execute("SELECT count(*) FROM frames WHERE recording = ?",
                               [two_workers[F.SCREENCAST_NAME]["recording_id"]]).fetchone()[0]
        assert n_frames == two_workers[F.SCREENCAST_NAME]["frames"]["count"]
        words = {w.lower().strip(".,") for (w,) in con.execute("SELECT word FROM words").fetchall()}
        assert {"budget", "migration"} <= {w.strip() for w in words}
    finally:
        con.close()


def test_duckdb_reads_an_earlier_versions_transcripts_on_s3(cluster_env, two_workers, monkeypatch):
    """A transcripts file written before its span columns were Parquet structs (JSON strings then) still reads
    through SQL on an object-store root, beside the files of today's form, and the stored file is left as it was."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    env, machines = cluster_env
    for k in ("TALKTHROUGH_HOME", "TALKTHROUGH_LOCAL_HOME", "AWS_ENDPOINT_URL", "AWS_ACCESS_KEY_ID",
              "AWS_SECRET_ACCESS_KEY", "AWS_REGION"):
        monkeypatch.setenv(k, _machine(cluster_env, "c")[k])
    from talkthrough_assets import store
    from talkthrough_assets.store.s3 import s3_filesystem

    mt = two_workers[F.MEETING_NAME]["recording_id"]
    fs, base = s3_filesystem()
    path = f"{base}/tables/transcripts/recording={mt}/part-0.parquet"
    now = pq.read_table(path, filesystem=fs)
    spans = ("dropped", "doubtful", "uncovered")
    old = pa.table({n: (pa.array([json.dumps(v) for v in now.column(n).to_pylist()], pa.string())
                        if n in spans else now.column(n)) for n in now.column_names})
    expected = {n: now.column(n).to_pylist()[0] for n in spans}
    pq.write_table(old, path, filesystem=fs)
    try:
        con = store.connect()
        try:
            got = con.execute("SELECT dropped, doubtful, uncovered FROM transcripts WHERE recording = ?",
                              [mt]).fetchone()
            others = con.execute("SELECT count(*) FROM transcripts").fetchone()[0]
        finally:
            con.close()
        assert dict(zip(spans, got)) == expected
        assert others == len(two_workers)
        assert pq.read_schema(path, filesystem=fs).field("dropped").type == pa.string()  # a reader only reads
    finally:
        pq.write_table(now, path, filesystem=fs)


async def _mcp(env: dict, sc: str, mt: str) -> dict:
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client

    params = StdioServerParameters(command=TALKTHROUGH, args=["mcp"], env={**env, "TALKTHROUGH_MCP_REFRESH_S": "0"})
    out = {}
    with anyio.fail_after(240):
        async with stdio_client(params) as (r, w), ClientSession(r, w) as s:
            await s.initialize()
            out["list"] = await s.call_tool("list_recordings", {})
            out["tr_mt"] = await s.call_tool("get_transcript", {"id": mt})
            out["fr_sc"] = await s.call_tool("get_frames", {"id": sc})
            out["se_budget"] = await s.call_tool("search", {"query": "budget"})
            out["se_ocr"] = await s.call_tool("search", {"query": "pipeline", "id": sc, "limit": 50})
    return out


def test_mcp_reads_the_library_from_a_third_machine(cluster_env, two_workers):
    sc, mt = two_workers[F.SCREENCAST_NAME]["recording_id"], two_workers[F.MEETING_NAME]["recording_id"]
    env = _machine(cluster_env, "c")
    out = anyio.run(_mcp, env, sc, mt)

    def payload(res) -> dict:
        assert not res.is_error, res.content[0].text
        return json.loads(res.content[0].text)

    listed = {r["id"] for r in payload(out["list"])["recordings"]}
    assert listed == {s["recording_id"] for s in two_workers.values()}
    text = " ".join(s["text"] for s in payload(out["tr_mt"])["segments"]).lower()
    assert "budget" in text and "migration" in text
    images = [c for c in out["fr_sc"].content if c.type == "image"]
    assert len(images) >= len(F.SCREENCAST_SCENE_STARTS_MS)  # JPEG bytes fetched from S3
    assert mt in {h["recording"] for h in payload(out["se_budget"])["hits"]}
    assert any(h["source"] == "ocr" for h in payload(out["se_ocr"])["hits"])
    # the reader only read: machine C holds no data and no Dagster state, only its local copy of the merged
    # search-index buckets (a cache of index/merged/ in the bucket, memory-mapped)
    c = Path(env["TALKTHROUGH_LOCAL_HOME"])
    kept = [p for p in c.rglob("*") if p.is_file()] if c.exists() else []
    assert all(p.relative_to(c).parts[:2] == ("index", "merged") for p in kept), kept


def test_local_copies_are_reused_and_fetched_once(cluster_env, two_workers, monkeypatch):
    """The machine that made a WAV or a frame uses its own copy (no download); another machine fetches
    it once into its cache and then reuses it."""
    from talkthrough_assets import store

    sc = two_workers[F.SCREENCAST_NAME]["recording_id"]
    env_a = _machine(cluster_env, "a")
    for k in ("TALKTHROUGH_HOME", "TALKTHROUGH_LOCAL_HOME", "AWS_ENDPOINT_URL", "AWS_ACCESS_KEY_ID",
              "AWS_SECRET_ACCESS_KEY", "AWS_REGION"):
        monkeypatch.setenv(k, env_a[k])
    wav = Path(env_a["TALKTHROUGH_LOCAL_HOME"]) / "audio" / f"{sc}.wav"
    before = wav.stat()
    assert store.local_file(store.audio_key(sc)) == wav
    assert wav.stat().st_ino == before.st_ino  # not replaced by a download
    frame = store.read_rows("keyframes", sc)[0]["file"]
    assert store.local_file(frame, immutable=True) == Path(env_a["TALKTHROUGH_LOCAL_HOME"]) / frame

    monkeypatch.setenv("TALKTHROUGH_LOCAL_HOME", _machine(cluster_env, "d")["TALKTHROUGH_LOCAL_HOME"])
    fetched = store.local_file(store.audio_key(sc))
    assert fetched.read_bytes() == store.get_bytes(store.audio_key(sc))
    ino = fetched.stat().st_ino
    assert store.local_file(store.audio_key(sc)).stat().st_ino == ino  # second call: the cached copy

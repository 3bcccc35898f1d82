"""Outputs on object storage, for real: a moto S3 server on loopback (`moto[server]`, a real
S3-compatible HTTP endpoint) as ``TALKTHROUGH_HOME=s3://bucket/prefix``, a throwaway Postgres cluster
(Debian's `postgresql`) as the shared Dagster storage, and two `talkthrough process` worker processes
with separate local directories, i.e. two machines sharing only Postgres and S3. A third "machine"
then reads everything back through a real MCP stdio client session and through DuckDB.

Skipped, with the reason, when moto, Postgres or dagster-postgres is unavailable (never silently passing).
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import anyio
import pytest

import fixture_facts as F
from pg_cluster import PgUnavailable, start_cluster

CLI = [sys.executable, "-m", "talkthrough_assets.cli"]
TALKTHROUGH = shutil.which("talkthrough") or str(Path(sys.executable).with_name("talkthrough"))
BUCKET = "talkthrough-test"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def s3_endpoint():
    try:
        import moto.server  # noqa: F401
    except ImportError:
        pytest.skip("moto[server] is not installed (pip install -c constraints.txt -e '.[test]')")
    port = _free_port()
    log = open(Path(os.environ.get("TMPDIR", "/tmp")) / f"moto-{port}.log", "wb")
    proc = subprocess.Popen([sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
                            stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    url = f"http://127.0.0.1:{port}"
    deadline = time.time() + 60
    while True:
        try:
            urllib.request.urlopen(url, timeout=2).read()
            break
        except OSError:
            if proc.poll() is not None or time.time() > deadline:
                proc.kill()
                pytest.fail(f"moto server did not start (rc {proc.poll()}); see {log.name}")
            time.sleep(0.3)
    yield url
    proc.terminate()
    try:
        proc.wait(10)
    except subprocess.TimeoutExpired:
        proc.kill()
    log.close()


@pytest.fixture(scope="module")
def pg():
    try:
        import dagster_postgres  # noqa: F401
    except ImportError:
        pytest.skip("dagster-postgres is not installed (pip install -c constraints.txt -e '.[test]')")
    try:
        cluster = start_cluster()
    except PgUnavailable as e:
        pytest.skip(f"Postgres cannot be started here: {e}")
    yield cluster
    cluster.stop()


def _s3fs(endpoint: str):
    import pyarrow.fs as pafs

    return pafs.S3FileSystem(endpoint_override=endpoint.split("://")[1], scheme="http", region="us-east-1",
                             access_key="test", secret_key="test", allow_bucket_creation=True)


@pytest.fixture(scope="module")
def cluster_env(s3_endpoint, pg, tmp_path_factory):
    """Environment shared by every "machine": the s3:// data root, the endpoint and credentials, and
    TALKTHROUGH_PG_URL; each machine adds its own TALKTHROUGH_LOCAL_HOME."""
    _s3fs(s3_endpoint).create_dir(BUCKET)
    env = dict(os.environ)
    for k in ("TALKTHROUGH_HOME", "DAGSTER_HOME", "TALKTHROUGH_LOCAL_HOME"):
        env.pop(k, None)
    env.update(TALKTHROUGH_HOME=f"s3://{BUCKET}/library", TALKTHROUGH_PG_URL=pg.create_db("tt_s3"),
               AWS_ENDPOINT_URL=s3_endpoint, AWS_ACCESS_KEY_ID="test", AWS_SECRET_ACCESS_KEY="test",
               AWS_REGION="us-east-1", TALKTHROUGH_LOG_LEVEL="DEBUG", COLUMNS="200")
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
    """Machine A processes the screencast while machine B processes the meeting, at the same time."""
    a = _cli(_machine(cluster_env, "a"), ["process", "--json", str(F.SCREENCAST_PATH)])
    b = _cli(_machine(cluster_env, "b"), ["process", "--json", str(F.MEETING_PATH)])
    out = {}
    for proc in (a, b):
        for summary in _finish(proc):
            assert summary["status"] == "processed", summary
            out[Path(summary["source"]).name] = summary
    return out


def test_two_machines_write_one_library_on_s3(cluster_env, two_workers, s3_endpoint):
    import pyarrow.fs as pafs

    env, machines = cluster_env
    sc, mt = two_workers[F.SCREENCAST_NAME], two_workers[F.MEETING_NAME]
    assert sc["manifest"] == f"s3://{BUCKET}/library/manifests/{sc['recording_id']}.json"
    assert sc["frames"]["count"] >= len(F.SCREENCAST_SCENE_STARTS_MS)
    assert mt["transcript"]["segments"] >= 3

    keys = {i.path for i in _s3fs(s3_endpoint).get_file_info(pafs.FileSelector(f"{BUCKET}/library", recursive=True))
            if i.type == pafs.FileType.File}
    for rid in (sc["recording_id"], mt["recording_id"]):
        for key in (f"manifests/{rid}.json", f"settings/{rid}.json", f"audio/{rid}.wav",
                    f"tables/segments/recording={rid}/part-0.parquet",
                    f"tables/recordings/recording={rid}/part-0.parquet"):
            if key.startswith("settings/"):
                continue  # written only when a setting was given
            assert f"{BUCKET}/library/{key}" in keys, key
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
    # machine B sees A's outputs (S3) and A's stage records: the same bytes are a no-op there
    again = _finish(_cli(_machine(cluster_env, "b"), ["process", "--json", str(F.SCREENCAST_PATH)]))
    assert again[0]["status"] == "cached" and again[0]["stages_run"] == []
    assert again[0]["recording_id"] == two_workers[F.SCREENCAST_NAME]["recording_id"]


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
        assert set(rows) == {F.SCREENCAST_NAME, F.MEETING_NAME}
        n_frames = con.execute("SELECT count(*) FROM frames WHERE recording = ?",
                               [two_workers[F.SCREENCAST_NAME]["recording_id"]]).fetchone()[0]
        assert n_frames == two_workers[F.SCREENCAST_NAME]["frames"]["count"]
        words = {w.lower().strip(".,") for (w,) in con.execute("SELECT word FROM words").fetchall()}
        assert {"budget", "migration"} <= {w.strip() for w in words}
    finally:
        con.close()


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
    assert listed == {sc, mt}
    text = " ".join(s["text"] for s in payload(out["tr_mt"])["segments"]).lower()
    assert "budget" in text and "migration" in text
    images = [c for c in out["fr_sc"].content if c.type == "image"]
    assert len(images) >= len(F.SCREENCAST_SCENE_STARTS_MS)  # JPEG bytes fetched from S3
    assert {h["recording"] for h in payload(out["se_budget"])["hits"]} == {mt}
    assert any(h["source"] == "ocr" for h in payload(out["se_ocr"])["hits"])
    # the reader only read: machine C holds no data and no Dagster state
    c = Path(env["TALKTHROUGH_LOCAL_HOME"])
    assert not c.exists() or not [p for p in c.rglob("*") if p.is_file()]

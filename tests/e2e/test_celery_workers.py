"""Past one machine on Dagster's own distributed machinery, played on this one: `talkthrough ui` (webserver +
daemon) on a head "machine" with deploy/celery/dagster.yaml, three `talkthrough worker` processes, each a
"machine" of its own (its own TALKTHROUGH_LOCAL_HOME and cwd, the installed package: PYTHONSAFEPATH=1), all
sharing only Postgres (Dagster storage), the S3 data root (moto) and a RabbitMQ broker (Debian's package).

A UI backfill of eight recordings (the meeting fixture remuxed with a different tag each: same audio, other
bytes, other ids) is spread over the workers by the broker. One worker is killed with -9 while it processes a
recording: another worker finishes that recording, no run stays STARTED, nothing stored is lost, every other
recording's stages ran once, and the killed recording's transcript is the same as the seven clean runs'.

The `pg`, `s3` and `rabbitmq` fixtures (tests/conftest.py) skip, with the reason, where a server is missing.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import time
from pathlib import Path

import pytest
from fixture_facts import FIXTURES_DIR, MEETING_NAME
from test_webserver import (BACKFILL_STATUS, LAUNCH_BACKFILL, LAUNCH_RUN, REPO, _free_port, gql,
                            talkthrough_command, running_ui, wait_run)

from talkthrough_assets.pipeline.settings import STAGES

ROOT = Path(__file__).resolve().parents[2]
BUCKET = "talkthrough-celery"
DB = "tt_celery"
RECORDINGS = 8
WORKERS = ("w1", "w2", "w3")
WORKER_TAG = "talkthrough/worker"
DONE = ("SUCCESS", "FAILURE", "CANCELED")


def _copies(folder: Path, n: int) -> list[Path]:
    """``n`` recordings with the meeting fixture's audio packets, each with its own metadata tag (other bytes,
    so another recording id), remuxed without re-encoding: the same audio for every copy."""
    import av

    folder.mkdir()
    out = []
    for i in range(n):
        dest = folder / f"meeting copy {i}.m4a"
        with av.open(str(FIXTURES_DIR / MEETING_NAME)) as src, av.open(str(dest), "w", format="ipod") as dst:
            dst.metadata["title"] = f"meeting copy {i}"
            stream = dst.add_stream_from_template(src.streams.audio[0])
            for packet in src.demux(src.streams.audio[0]):
                if packet.dts is not None:
                    packet.stream = stream
                    dst.mux(packet)
        out.append(dest)
    return out


class Worker:
    """One `talkthrough worker` "machine": its own local folder, started outside the checkout."""

    def __init__(self, name: str, env: dict, base: Path) -> None:
        self.name, self.home = name, base / name
        self.home.mkdir()
        self.log = self.home / "worker.log"
        env = dict(env, TALKTHROUGH_LOCAL_HOME=str(self.home), PYTHONSAFEPATH="1")
        with open(self.log, "wb") as log:
            self.proc = subprocess.Popen(talkthrough_command() + ["worker", "--name", name], env=env,
                                         cwd=self.home, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)

    def ready(self) -> bool:
        assert self.proc.poll() is None, f"worker {self.name} exited ({self.proc.returncode}): {self.tail()}"
        return " ready." in self.log.read_text(errors="replace")

    def tail(self) -> str:
        return self.log.read_text(errors="replace")[-3000:]

    def kill(self, sig: int = signal.SIGKILL) -> None:
        """SIGKILL: the machine is gone, every process of the worker ends at once (SIGTERM: a stop)."""
        try:
            os.killpg(self.proc.pid, sig)
            self.proc.wait(60)
        except ProcessLookupError:
            pass
        except subprocess.TimeoutExpired:  # a stop that waits on a recording: end it anyway
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait(60)


@pytest.fixture(scope="module")
def cluster(pg, s3, rabbitmq, tmp_path_factory):
    base = tmp_path_factory.mktemp("celery")
    files = _copies(base / "recordings", RECORDINGS)
    s3.bucket(BUCKET)
    env = {k: v for k, v in os.environ.items()
           if k not in ("TALKTHROUGH_HOME", "DAGSTER_HOME", "TALKTHROUGH_LOCAL_HOME")}
    # three workers share two cores here: one Whisper thread each (the same for every recording)
    env.update(TALKTHROUGH_HOME=f"s3://{BUCKET}/lib", TALKTHROUGH_PG_URL=pg.create_db(DB),
               TALKTHROUGH_CELERY_BROKER=rabbitmq.url, TALKTHROUGH_WHISPER_THREADS="1", **s3.env())
    workers = [Worker(name, env, base) for name in WORKERS]
    # the operator's instance of the Celery route, as docs/scaling.md has it: a DAGSTER_HOME of its own, outside
    # the local folder (whose dagster/ Talkthrough owns and writes)
    head, dagster_home = base / "head", base / "dagster_home"
    head.mkdir()
    dagster_home.mkdir()
    shutil.copy(ROOT / "deploy" / "celery" / "dagster.yaml", dagster_home / "dagster.yaml")
    head_env = dict(env, TALKTHROUGH_LOCAL_HOME=str(head), DAGSTER_HOME=str(dagster_home))
    port = _free_port()
    try:
        with running_ui(head_env, port):
            deadline = time.time() + 180
            while not all(w.ready() for w in workers):
                assert time.time() < deadline, [w.tail() for w in workers]
                time.sleep(1)
            yield {"url": f"http://127.0.0.1:{port}/graphql", "files": files, "workers": workers,
                   "env": head_env, "pg": pg, "s3": s3}
    finally:
        for w in workers:
            if w.proc.poll() is None:
                w.kill(signal.SIGTERM)


def _runs(pg) -> dict[str, dict]:
    """process_recording runs in the shared storage: run id -> status and tags."""
    rows = pg.query("SELECT r.run_id, r.status, t.key, t.value FROM runs r LEFT JOIN run_tags t "
                    "ON t.run_id = r.run_id WHERE r.pipeline_name = 'process_recording'", db=DB)
    out: dict[str, dict] = {}
    for run_id, status, key, value in rows:
        run = out.setdefault(run_id, {"status": status, "tags": {}})
        if key:
            run["tags"][key] = value
    return out


def _celery_events(pg) -> dict[str, list[str]]:
    """run id -> the Celery workers that started executing its step, in order (dagster-celery's engine event)."""
    rows = pg.query("SELECT run_id, event FROM event_logs WHERE dagster_event_type = 'ENGINE_EVENT' "
                    "AND event LIKE '%%in celery worker%%' ORDER BY id", db=DB)
    from dagster._serdes import deserialize_value

    out: dict[str, list[str]] = {}
    for run_id, event in rows:
        md = deserialize_value(event).dagster_event.event_specific_data.metadata
        out.setdefault(run_id, []).append(md["Celery worker"].value)
    return out


def _kill_one_mid_recording(cluster, ids: dict[str, str]) -> dict:
    """Wait for a run whose step a worker has started, then kill that worker with -9 before the recording's
    manifest (written last) is in the bucket."""
    pg, s3 = cluster["pg"], cluster["s3"]
    by_name = {w.name: w for w in cluster["workers"]}
    deadline = time.time() + 300
    while time.time() < deadline:
        for run_id, run in _runs(pg).items():
            worker = run["tags"].get(WORKER_TAG, "").partition("@")[0]
            if run["status"] == "STARTED" and worker in by_name:
                rid = run["tags"]["dagster/partition"]
                time.sleep(1.5)  # well into its stages, still far from its manifest
                manifest = f"{BUCKET}/lib/manifests/{rid}.json"
                assert manifest not in s3.keys(f"{BUCKET}/lib/manifests"), "killed too late: the recording was done"
                by_name[worker].kill()
                stored = {k for k in s3.keys(f"{BUCKET}/lib/tables") if f"/recording={rid}/" in k}
                return {"run_id": run_id, "rid": rid, "worker": worker, "stored_before": len(stored)}
        time.sleep(0.3)
    pytest.fail("no worker started a recording within 300 s: " + " | ".join(w.tail() for w in by_name.values()))


@pytest.fixture(scope="module")
def backfilled(cluster) -> dict:
    """register_folder, then the backfill the process_recording page's "Materialize all" sends; one worker is
    killed with -9 mid-recording; the backfill is waited for."""
    url, started = cluster["url"], time.time()
    # the operator's dagster.yaml is used as it is (not rewritten with the one-machine settings)
    assert (Path(cluster["env"]["DAGSTER_HOME"]) / "dagster.yaml").read_bytes() == \
        (ROOT / "deploy" / "celery" / "dagster.yaml").read_bytes()
    folder = cluster["files"][0].parent
    res = gql(url, LAUNCH_RUN, {"params": {"selector": dict(REPO, jobName="register_folder"), "runConfigData": {
        "ops": {"register_folder_op": {"config": {"folder": str(folder)}}}}}})["launchRun"]
    assert res["__typename"] == "LaunchRunSuccess", res
    assert wait_run(url, res["run"]["runId"]) == "SUCCESS"
    from talkthrough_assets.app import service

    ids = {p.name: service.recording_id_for(p) for p in cluster["files"]}
    assert len(set(ids.values())) == RECORDINGS
    res = gql(url, LAUNCH_BACKFILL, {"params": {
        "selector": {"partitionSetName": "process_recording_partition_set", "repositorySelector": REPO},
        "assetSelection": [{"path": [s]} for s in STAGES], "partitionNames": sorted(ids.values()),
        "fromFailure": False, "tags": []}})["launchPartitionBackfill"]
    assert res["__typename"] == "LaunchBackfillSuccess", res
    killed = _kill_one_mid_recording(cluster, ids)
    deadline, backfill = time.time() + 480, None
    while time.time() < deadline:
        backfill = gql(url, BACKFILL_STATUS, {"id": res["backfillId"]})["partitionBackfillOrError"]
        runs = _runs(cluster["pg"])
        if (backfill["status"] not in ("REQUESTED",) and len(runs) >= RECORDINGS
                and all(r["status"] in DONE for r in runs.values())):
            break
        time.sleep(2)
    else:
        pytest.fail(f"the backfill did not end: {backfill} {_runs(cluster['pg'])} "
                    + " | ".join(w.tail() for w in cluster["workers"]))
    wall = time.time() - started
    runs = _runs(cluster["pg"])
    per_worker: dict[str, int] = {}
    for run in runs.values():
        name = run["tags"].get(WORKER_TAG, "?").partition("@")[0]
        per_worker[name] = per_worker.get(name, 0) + 1
    print(f"\ncelery backfill: {RECORDINGS} recordings, {len(WORKERS)} workers, {wall:.0f} s from register_folder "
          f"to the last run's end; finished per worker {per_worker}; killed {killed['worker']} on {killed['rid']} "
          f"({killed['stored_before']} of its table files stored by then)")
    return {"ids": ids, "backfill": backfill, "runs": runs, "killed": killed, "per_worker": per_worker,
            "celery": _celery_events(cluster["pg"])}


def test_backfill_spreads_over_workers_and_lands_once(cluster, backfilled):
    runs, ids, killed = backfilled["runs"], backfilled["ids"], backfilled["killed"]
    # one run per recording, every one a success: none stays STARTED, none was launched twice
    by_rid = {}
    for run_id, run in runs.items():
        by_rid.setdefault(run["tags"]["dagster/partition"], []).append(run)
    assert sorted(by_rid) == sorted(ids.values()), by_rid.keys()
    assert all(len(v) == 1 and v[0]["status"] == "SUCCESS" for v in by_rid.values()), by_rid
    pg = cluster["pg"]
    assert pg.query("SELECT count(*) FROM runs WHERE status NOT IN ('SUCCESS')", db=DB)[0][0] == 0
    # the broker spread the recordings: at least two workers finished some, and each step went to a worker
    assert len([w for w, n in backfilled["per_worker"].items() if w in WORKERS and n]) >= 2, backfilled["per_worker"]
    celery = backfilled["celery"]
    assert set(celery) == set(runs), (set(runs) - set(celery))
    # nothing re-run: every recording but the killed one was executed once, by one worker
    for run_id, workers in celery.items():
        assert len(workers) == (2 if run_id == killed["run_id"] else 1), (run_id, workers)
    # ... and each of its stages materialized once (Dagster's event log in the shared Postgres)
    counts = pg.query("SELECT partition, asset_key, count(*) FROM event_logs WHERE dagster_event_type = "
                      "'ASSET_MATERIALIZATION' GROUP BY partition, asset_key", db=DB)
    clean = {}
    for rid, asset, n in counts:
        if rid != killed["rid"]:
            assert n == 1, (rid, asset, n)
            clean.setdefault(rid, set()).add(asset)
    assert len(clean) == RECORDINGS - 1 and len({frozenset(v) for v in clean.values()}) == 1, clean
    # each recording landed in the bucket: its manifest and its tables, no temp objects
    keys = cluster["s3"].keys(f"{BUCKET}/lib")
    for rid in ids.values():
        assert f"{BUCKET}/lib/manifests/{rid}.json" in keys
        assert f"{BUCKET}/lib/tables/recordings/recording={rid}/part-0.parquet" in keys
    assert not [k for k in keys if "/.tmp-" in k or k.endswith(".part")]


def _tables_of(keys: set[str], rid: str) -> set[str]:
    """The tables holding a partition of ``rid``, with their file names."""
    marker = f"/recording={rid}/"
    return {k.split("/lib/tables/")[1].replace(marker, "/") for k in keys if marker in k and "/lib/tables/" in k}


def test_killed_workers_recording_is_finished_by_another(cluster, backfilled, monkeypatch):
    killed, runs = backfilled["killed"], backfilled["runs"]
    workers = backfilled["celery"][killed["run_id"]]
    # the killed worker had started it; another one took the task the broker gave back, and the run succeeded
    assert workers[0].startswith(killed["worker"] + "@") and not workers[1].startswith(killed["worker"] + "@"), workers
    assert runs[killed["run_id"]]["status"] == "SUCCESS"
    assert not runs[killed["run_id"]]["tags"][WORKER_TAG].startswith(killed["worker"] + "@")
    # nothing stored is lost: the killed recording has every table file a clean recording has
    keys = cluster["s3"].keys(f"{BUCKET}/lib/tables")
    others = [rid for rid in backfilled["ids"].values() if rid != killed["rid"]]
    assert _tables_of(keys, killed["rid"]) == _tables_of(keys, others[0]) != set()
    # the transcript is identical to a clean run's: the seven others hold the same audio and ran uninterrupted
    from talkthrough_assets import store

    for k in ("TALKTHROUGH_HOME", "TALKTHROUGH_LOCAL_HOME", "AWS_ENDPOINT_URL", "AWS_ACCESS_KEY_ID",
              "AWS_SECRET_ACCESS_KEY", "AWS_REGION"):
        monkeypatch.setenv(k, cluster["env"][k])

    def transcript(rid: str) -> tuple:
        return tuple(store.read_rows(t, rid, part=None) for t in ("segments", "words"))

    resumed = transcript(killed["rid"])
    assert resumed[0] and resumed[1], resumed
    for rid in others:
        assert transcript(rid) == resumed, rid
    # the live workers are still serving; the killed one is gone
    assert [w.name for w in cluster["workers"] if w.proc.poll() is None] == [w for w in WORKERS if w != killed["worker"]]

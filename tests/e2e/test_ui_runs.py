"""Runs in progress when `talkthrough ui` stops (#24 items 1 and 2), through the real webserver and daemon.

- a UI killed outright (kill -9 of every process) leaves its run STARTED in storage: the next
  `talkthrough ui` marks it failed at start, with the reason, and a new run of the same recording is
  not held in the queue by the dead one;
- the UI's Terminate ends a live run as canceled;
- a graceful stop (SIGTERM) asks the run in progress to stop and exits 0 with the run CANCELED, not
  STARTED;
- started in the background from a script (SIGINT ignored, as a non-interactive shell does for `&`),
  `dagster dev` does not inherit the ignored signals, and SIGINT or SIGTERM stops everything.

The run is held in progress by the recording's writer lock, taken by this test (a recording busy in
another process), so it is in progress for as long as the test needs, on any machine speed.
"""

from __future__ import annotations

import fcntl
import os
import shutil
import signal
import subprocess
import time
from pathlib import Path

import pytest
from dagster import DagsterInstance, DagsterRunStatus
from fixture_facts import FIXTURES_DIR, SILENT_NAME
from test_ui_signals import _alive
from test_webserver import (REPO, RUN, ROOT, _free_port, _launch, _events, gql, start_ui, talkthrough_command,
                            wait_run, wait_until_up)

from talkthrough_assets.app import service
from talkthrough_assets.app import runs
from talkthrough_assets.core.proctree import descendants as _descendants


TERMINATE = """
mutation($id: String!) { terminateRun(runId: $id) { __typename ... on PythonError { message } } }"""


def _env(home: Path) -> dict:
    env = dict(os.environ, TALKTHROUGH_HOME=str(home), DAGSTER_HOME=str(home / "dagster"))
    env.pop("TALKTHROUGH_DROP_DIR", None)
    return env


def _status(url: str, run_id: str) -> str:
    return gql(url, RUN, {"id": run_id})["runOrError"]["status"]


def _wait_status(url: str, run_id: str, wanted: set[str], timeout: float = 180) -> str:
    deadline = time.time() + timeout
    while time.time() < deadline:
        status = _status(url, run_id)
        if status in wanted:
            return status
        time.sleep(1)
    pytest.fail(f"run {run_id} did not reach {wanted} within {timeout:.0f} s (status {status})")


def _launch_process_run(url: str, rid: str) -> str:
    return _launch(url, {"selector": dict(REPO, jobName="process_recording",
                                          assetSelection=[{"path": ["probe"]}]),
                         "executionMetadata": {"tags": [{"key": "dagster/partition", "value": rid}]}})


def _wait_runner_tag(home: Path, run_id: str, timeout: float = 120) -> None:
    """Until the run's own step has started (its process is named by its talkthrough/process tag)."""
    deadline = time.time() + timeout
    while time.time() < deadline:
        with DagsterInstance.from_config(str(home / "dagster")) as inst:
            if runs.ORPHAN_TAG in inst.get_run_by_id(run_id).tags:
                return
        time.sleep(1)
    pytest.fail("the run's step never started")


def _hold_lock(home: Path, rid: str):
    path = home / "locks" / f"{rid}.lock"
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    fcntl.flock(fd, fcntl.LOCK_EX)
    return fd


def _ui_case(tmp_path: Path) -> tuple[Path, dict, Path, str, int, str]:
    """(data root, its environment, a folder holding the silent fixture, that recording's id, a free port, the
    UI's GraphQL URL on it)."""
    home = tmp_path / "home"
    env = _env(home)
    folder = tmp_path / "recordings"
    folder.mkdir()
    shutil.copy(FIXTURES_DIR / SILENT_NAME, folder / SILENT_NAME)
    rid = service.recording_id_for(folder / SILENT_NAME)
    port = _free_port()
    return home, env, folder, rid, port, f"http://127.0.0.1:{port}/graphql"


def test_runs_in_progress_when_the_ui_stops_or_dies_are_never_left_started(tmp_path):
    home, env, folder, rid, port, url = _ui_case(tmp_path)

    # 1. a run in progress, then every process of the UI killed (a crash, a lost machine)
    proc = start_ui(env, port)
    try:
        wait_until_up(proc, port)
        reg = _launch(url, {"selector": dict(REPO, jobName="register_folder"),
                            "runConfigData": {"ops": {"register_folder_op": {"config": {"folder": str(folder)}}}}})
        assert wait_run(url, reg) == "SUCCESS"
        lock = _hold_lock(home, rid)
        dead = _launch_process_run(url, rid)
        _wait_status(url, dead, {"STARTED"})
        _wait_runner_tag(home, dead)
        family = _descendants(proc.pid) | {proc.pid}
        for pid in family:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        proc.wait(timeout=30)
        deadline = time.time() + 30
        while time.time() < deadline and any(_alive(p) for p in family):
            time.sleep(0.5)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    with DagsterInstance.from_config(str(home / "dagster")) as inst:
        assert inst.get_run_by_id(dead).status == DagsterRunStatus.STARTED  # what the issue saw: stuck

    # 2. the next UI marks it failed at start, and a new run of that recording is not queued behind it
    proc = start_ui(env, port)
    try:
        wait_until_up(proc, port)
        assert _status(url, dead) == "FAILURE"
        failure = [e["message"] for e in _events(url, dead) if "process" in (e.get("message") or "")]
        assert any("is gone" in m for m in failure), failure
        terminated = _launch_process_run(url, rid)
        _wait_status(url, terminated, {"STARTED"}, timeout=120)  # before: QUEUED (the dead run held the slot)
        _wait_runner_tag(home, terminated)
        # the UI's Terminate reaches a live run: it ends canceled (before: it hung at "Canceling")
        res = gql(url, TERMINATE, {"id": terminated})["terminateRun"]
        assert res["__typename"] == "TerminateRunSuccess", res
        assert _wait_status(url, terminated, {"CANCELED", "FAILURE", "SUCCESS"}, timeout=90) == "CANCELED"
        second = _launch_process_run(url, rid)
        _wait_status(url, second, {"STARTED"}, timeout=120)
        _wait_runner_tag(home, second)
        # 3. a graceful stop asks it to stop and exits 0 with the run canceled
        proc.send_signal(signal.SIGTERM)
        rc = proc.wait(timeout=120)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
        os.close(lock)
    assert rc == 0
    with DagsterInstance.from_config(str(home / "dagster")) as inst:
        run = inst.get_run_by_id(second)
        assert run.status == DagsterRunStatus.CANCELED, run.status
        assert all(r.is_finished for r in inst.get_runs()), [(r.run_id, r.status) for r in inst.get_runs()]


@pytest.mark.parametrize("sig", ["SIGINT", "SIGTERM"])
def test_ui_started_in_the_background_from_a_script_stops_on_signals(tmp_path, sig):
    home = tmp_path / "home"
    env = _env(home)
    port = _free_port()
    pidfile, rcfile = tmp_path / "pid", tmp_path / "rc"
    cmd = " ".join(f"'{c}'" for c in talkthrough_command())
    # a non-interactive shell runs `&` jobs with SIGINT (and SIGQUIT) ignored; it waits and keeps the status
    script = f"{cmd} ui --port {port} >/dev/null 2>&1 & echo $! > '{pidfile}'; wait $!; echo $? > '{rcfile}'"
    shell = subprocess.Popen(["bash", "-c", script], env=env, cwd=ROOT, start_new_session=True)
    try:
        deadline = time.time() + 30
        while not (pidfile.exists() and pidfile.read_text().strip()) and time.time() < deadline:
            time.sleep(0.2)
        ui_pid = int(pidfile.read_text())
        while b"ui\x00--port" not in Path(f"/proc/{ui_pid}/cmdline").read_bytes() and time.time() < deadline:
            time.sleep(0.05)  # until the forked shell has exec'd talkthrough (its dispositions are set by then)
        assert _ignored(ui_pid) & (1 << (signal.SIGINT - 1)), "the shell did not start it with SIGINT ignored"
        wait_until_up(shell, port)
        family = _descendants(ui_pid)
        dev = [p for p in family if b"dagster\x00dev" in Path(f"/proc/{p}/cmdline").read_bytes()]
        assert dev, family
        for p in family:  # nothing it started ignores the signals that stop it
            cmdline = Path(f"/proc/{p}/cmdline").read_bytes()
            if any(m in cmdline for m in (b"multiprocessing.forkserver", b"multiprocessing.resource_tracker")):
                continue  # the code server's forkserver and its helper ignore them by design, and end with it
            assert not _ignored(p) & ((1 << (signal.SIGINT - 1)) | (1 << (signal.SIGTERM - 1))), (p, cmdline)
        os.kill(ui_pid, getattr(signal, sig))
        shell.wait(timeout=120)
    finally:
        if shell.poll() is None:
            os.killpg(shell.pid, signal.SIGKILL)
    assert rcfile.read_text().strip() == "0"
    deadline = time.time() + 10
    while time.time() < deadline and any(_alive(p) for p in family):
        time.sleep(0.5)
    assert not [p for p in family if _alive(p)], "processes left running after talkthrough ui stopped"


def _ignored(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("SigIgn:"):
            return int(line.split()[1], 16)
    return 0

"""`kill -9` of `talkthrough ui` (#38 items 1 and 2), through the real webserver, daemon, code server and run
worker that it starts:

- killing its process group with -9 while a run is in progress leaves nothing running: `dagster dev`, the
  webserver, the daemon, the code server and the run worker (in a session of their own) die with it, and
  the port is free;
- a start is refused, in one line naming the PIDs, while the port is taken, while another UI of the same
  data root runs, and while processes an earlier UI left behind are alive (here: its watchdog stopped
  with SIGSTOP before the kill, so that nothing cleans up); once they are gone, it starts;
- the killed run is, after that restart, Failure, its step is failed (no longer executing) with the reason,
  and it carries the `talkthrough/failure` tag.

The run is held in progress by the recording's writer lock, taken by this test (see test_ui_runs.py).
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import time

from test_ui_runs import _env, _hold_lock, _launch_process_run, _ui_case, _wait_runner_tag, _wait_status
from test_webserver import REPO, ROOT, _events, _free_port, _launch, _tags, gql, start_ui, talkthrough_command, \
    wait_run, wait_until_up

from talkthrough_assets.core import proctree

RUN_STEPS = """
query($id: ID!) { runOrError(runId: $id) { ... on Run { status tags { key value } stepStats { stepKey status } } } }"""


def _start_refused(env: dict, port: int) -> str:
    """`talkthrough ui` that must refuse to start: its one-line reason (rc 1, Dagster never started)."""
    out = subprocess.run(talkthrough_command() + ["ui", "--port", str(port)], env=dict(env, COLUMNS="400"),
                         cwd=ROOT, capture_output=True, text=True, timeout=120)
    lines = [ln for ln in out.stderr.splitlines() if ln.strip()]
    assert out.returncode == 1 and len(lines) == 1, (out.returncode, out.stdout, out.stderr)
    assert lines[0].startswith("talkthrough ui not started: "), lines
    return lines[0]


def _all_dead(pids, timeout: float = 15) -> list[tuple[int, str]]:
    deadline = time.time() + timeout
    while time.time() < deadline and any(proctree.alive(p) for p in pids):
        time.sleep(0.1)
    return [(p, proctree.name(p)) for p in pids if proctree.alive(p)]


def _port_free(port: int) -> bool:
    with socket.socket() as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind(("127.0.0.1", port))
            return True
        except OSError:
            return False


def test_kill_9_of_the_ui_leaves_nothing_running_and_its_run_is_ended_on_restart(tmp_path):
    home, env, folder, rid, port, url = _ui_case(tmp_path)
    lock = None
    try:
        # 1. a run in progress, then `kill -9 -PGID` of the UI (the steps)
        ui = start_ui(env, port)
        try:
            wait_until_up(ui, port)
            reg = _launch(url, {"selector": dict(REPO, jobName="register_folder"), "runConfigData": {
                "ops": {"register_folder_op": {"config": {"folder": str(folder)}}}}})
            assert wait_run(url, reg) == "SUCCESS"
            lock = _hold_lock(home, rid)
            killed = _launch_process_run(url, rid)
            _wait_status(url, killed, {"STARTED"})
            _wait_runner_tag(home, killed)
            family = proctree.descendants(ui.pid)
            names = " ".join(proctree.name(p) for p in family)
            for part in ("ui_watchdog", "dagster dev", "dagster_webserver", "dagster._daemon", "dagster api"):
                assert part in names, names  # (`dagster api`: the code server and the run worker)
            # a second UI is refused: on this port (another data root), and for this data root (another port)
            why = _start_refused(_env(tmp_path / "other"), port)
            assert f"port {port} is in use by PID " in why and "dagster_webserver" in why, why
            why = _start_refused(env, _free_port())
            assert f"another `talkthrough ui` (PID {ui.pid}) is running for this data root" in why, why
            os.killpg(ui.pid, signal.SIGKILL)
            ui.wait(timeout=30)
            assert _all_dead(family) == []
            assert _port_free(port)
        finally:
            if ui.poll() is None:
                os.killpg(ui.pid, signal.SIGKILL)

        # 2. the restart ends the killed run: failed, its step failed with the reason, its failure tag
        ui = start_ui(env, port)
        try:
            wait_until_up(ui, port)
            run = gql(url, RUN_STEPS, {"id": killed})["runOrError"]
            assert run["status"] == "FAILURE", run
            assert [s["status"] for s in run["stepStats"]] == ["FAILURE"], run["stepStats"]
            assert _tags(run)["talkthrough/failure"].startswith("its process is gone"), _tags(run)
            events = _events(url, killed)
            steps = [e for e in events if e["__typename"] == "ExecutionStepFailureEvent"]
            assert len(steps) == 1 and steps[0]["error"]["message"].startswith("its process is gone"), steps
            assert steps[0]["error"]["stack"] == [], steps
            failure = [e for e in events if e["__typename"] == "RunFailureEvent"]
            assert failure and failure[-1]["error"]["message"].startswith("its process is gone"), failure

            # 3. leftovers of a UI whose watchdog could not act (stopped): the next start names them
            second = _launch_process_run(url, rid)
            _wait_status(url, second, {"STARTED"})
            _wait_runner_tag(home, second)
            family = proctree.descendants(ui.pid)
            watchdog = [p for p in family if proctree.name(p) == "talkthrough_assets.app.ui_watchdog"]
            assert len(watchdog) == 1, family
            os.kill(watchdog[0], signal.SIGSTOP)
            os.killpg(ui.pid, signal.SIGKILL)
            ui.wait(timeout=30)
            left = [p for p in family if proctree.alive(p)]
            assert len(left) >= 5, left  # the watchdog, `dagster dev`, webserver, daemon, code server ...
            why = _start_refused(env, _free_port())
            assert "processes of an earlier `talkthrough ui` for this data root are still running: " in why, why
            for p in left:
                assert f"PID {p} (" in why, (p, why)
            os.kill(watchdog[0], signal.SIGCONT)  # its pipe's end of file is there: it kills them all
            assert _all_dead(family) == []
            assert _port_free(port)
        finally:
            for p in proctree.descendants(ui.pid) if ui.poll() is None else ():
                os.kill(p, signal.SIGCONT)
            if ui.poll() is None:
                os.killpg(ui.pid, signal.SIGKILL)
    finally:
        if lock is not None:
            os.close(lock)

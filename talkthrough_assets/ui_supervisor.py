"""`talkthrough ui`: run `dagster dev` (webserver + daemon) on loopback in its own process group, mark runs whose
process is gone, and on Ctrl-C/SIGTERM/SIGHUP ask the runs in progress to stop before stopping it."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

from . import service


def serve(port: int, err) -> int:
    """Supervise `dagster dev` until it ends or a stop signal comes; the exit code (0 when asked to stop).
    ``err``: a rich console for what happens to runs."""
    inst = service.instance()  # created (on a new data root) before the webserver and daemon open it
    _report_orphans(err, service.fail_orphaned_runs(inst, why="its process is gone (talkthrough ui or the "
                                                              "machine stopped while it ran)"))
    cmd = [sys.executable, "-m", "dagster", "dev", "-m", "talkthrough_assets.definitions",
           "-h", "127.0.0.1", "-p", str(port)]
    stop_requested: list[int] = []

    def on_signal(signum, _frame):
        stop_requested.append(signum)

    # Handlers first: a signal that comes while `dagster dev` starts is not lost, and the child starts
    # with these signals at their defaults (exec resets a caught signal, but keeps an ignored one: started
    # in the background from a script, this process inherits SIGINT ignored, and `dagster dev` maps SIGTERM
    # to whatever SIGINT does, so it would have ignored both). `dagster dev` runs in its own process group
    # and gets one SIGTERM from here on Ctrl-C, SIGTERM or SIGHUP (a terminal's Ctrl-C would otherwise hit
    # it and its children at once, and a SIGTERM to this process alone would leave them all running).
    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, on_signal)
    proc = subprocess.Popen(cmd, env=os.environ.copy(), start_new_session=True)  # the child inherits the environment
    deadline = canceled = None
    next_sweep = time.monotonic() + ORPHAN_SWEEP_S
    while True:
        try:
            rc = proc.wait(timeout=0.5)
            break
        except subprocess.TimeoutExpired:
            pass
        if stop_requested and canceled is None:
            # runs in progress are asked to stop (as the UI's Terminate does) and given a while to end
            # as canceled; then `dagster dev` is stopped and what is left of it killed
            canceled = service.cancel_runs_here(inst)
            if canceled:
                err.print(f"stopping: asked {len(canceled)} run(s) in progress to stop")
            wait_until = time.monotonic() + UI_RUN_STOP_WAIT_S
            while canceled and time.monotonic() < wait_until and not service.runs_finished(inst, canceled):
                time.sleep(0.5)
            _signal(proc, signal.SIGTERM)
            deadline = time.monotonic() + UI_STOP_WAIT_S
        if deadline is not None and time.monotonic() > deadline:
            _signal_group(proc.pid, signal.SIGKILL)
        if deadline is None and time.monotonic() > next_sweep:  # a run worker killed meanwhile (OOM...)
            _report_orphans(err, service.fail_orphaned_runs(inst))
            next_sweep = time.monotonic() + ORPHAN_SWEEP_S
    _signal_group(proc.pid, signal.SIGKILL)  # leftovers of the group (a code server, a run worker)
    for _ in range(20):  # whatever run is still open now lost its process with the group
        left = service.fail_orphaned_runs(inst, canceled=canceled or (),
                                          why="talkthrough ui stopped while the run was in progress")
        _report_orphans(err, left)
        if not any(not alive or service.launched(run) for run, _pid, alive in service.active_runs_here(inst)):
            break
        time.sleep(0.25)
    return 0 if stop_requested else rc


UI_STOP_WAIT_S = 45.0  # for `dagster dev` to stop its webserver and daemon
UI_RUN_STOP_WAIT_S = 30.0  # for runs in progress to end once asked to stop
ORPHAN_SWEEP_S = 30.0


def _report_orphans(err, marked: list[tuple[str, str]]) -> None:
    for run_id, reason in marked:
        err.print(f"run {run_id} marked as ended: {reason}")


def _signal(proc: subprocess.Popen, sig: int) -> None:
    try:
        proc.send_signal(sig)
    except ProcessLookupError:
        pass


def _signal_group(pgid: int, sig: int) -> None:
    try:
        os.killpg(pgid, sig)
    except (ProcessLookupError, PermissionError):
        pass

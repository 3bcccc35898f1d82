"""`talkthrough ui`: run `dagster dev` (webserver + daemon) on loopback, mark runs whose process is gone, and on
Ctrl-C/SIGTERM/SIGHUP ask the runs in progress to stop before stopping it.

Nothing it starts outlives it, even when it is killed with -9: `dagster dev` runs under
:mod:`talkthrough_assets.app.ui_watchdog` (in a session of its own, a child subreaper), which kills everything
below it once the pipe from this process reaches end of file; this process is a subreaper too, for what
is left if the watchdog itself is killed. A start is refused, in one line naming the PIDs, while another
UI of this data root, processes an earlier one left, or another server on the port are alive
(:mod:`talkthrough_assets.app.ui_guard`)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from talkthrough_assets.core import proctree
from talkthrough_assets.defs import run_marks
from talkthrough_assets.app import runs
from talkthrough_assets.defs.instance import ensure_dagster_home
from talkthrough_assets.app import ui_guard


# Variables that name a folder: given relative, they mean the folder the user started `talkthrough ui` in
PATH_VARS = ("DAGSTER_HOME", "TALKTHROUGH_HOME", "TALKTHROUGH_LOCAL_HOME", "TALKTHROUGH_MODELS_DIR",
             "TALKTHROUGH_DIARIZATION_MODELS", "TALKTHROUGH_DROP_DIR")


def absolute_paths(env: dict) -> dict:
    """The folder variables of ``env`` that are relative, made absolute against the current folder."""
    return {k: str(Path(env[k]).expanduser().absolute()) for k in PATH_VARS
            if env.get(k) and "://" not in env[k] and not Path(env[k]).expanduser().is_absolute()}


def code_root() -> str:
    """The folder this package is imported from, as Dagster's working directory: its code server puts that folder
    first on the path, and the caller's current folder (a checkout, say) must not shadow the installed package."""
    import talkthrough_assets

    return str(Path(talkthrough_assets.__file__).resolve().parents[1])


def serve(port: int, err) -> int:
    """Supervise `dagster dev` until it ends or a stop signal comes; the exit code (0 when asked to stop).
    ``err``: a rich console for what happens to runs."""
    home = ensure_dagster_home()
    try:
        lock = ui_guard.claim(port, home)  # held (close-on-exec) until this process ends, however it ends
    except ui_guard.Refused as e:
        err.print(f"[red]talkthrough ui not started:[/red] {e}", highlight=False, soft_wrap=True)
        return 1
    proctree.become_subreaper()  # orphans of a killed watchdog come here, and are killed at the end
    inst = runs.instance()  # created (on a new data root) before the webserver and daemon open it
    _report_orphans(err, runs.fail_orphaned_runs(inst, why="its process is gone (talkthrough ui or the "
                                                              "machine stopped while it ran)"))
    run_marks.tag_untagged_failures(inst)
    stop_requested: list[int] = []

    def on_signal(signum, _frame):
        stop_requested.append(signum)

    # Handlers first: a signal that comes while `dagster dev` starts is not lost, and the child starts
    # with these signals at their defaults (exec resets a caught signal, but keeps an ignored one: started
    # in the background from a script, this process inherits SIGINT ignored, and `dagster dev` maps SIGTERM
    # to whatever SIGINT does, so it would have ignored both). The watchdog and `dagster dev` run in a session
    # of their own and get one SIGTERM from here on Ctrl-C, SIGTERM or SIGHUP, which the watchdog passes on
    # (a terminal's Ctrl-C would otherwise hit them and their children at once).
    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, on_signal)
    proc, watch_w = _start(port, home)
    rc, canceled = _supervise(proc, inst, err, stop_requested)
    _signal_group(proc.pid, signal.SIGKILL)  # leftovers of the group (a code server, a run worker)
    proctree.kill_descendants(os.getpid(), signal.SIGKILL, reap=True)  # and orphans re-parented here
    os.close(watch_w)
    _mark_left_runs(inst, err, canceled)
    os.close(lock)
    return 0 if stop_requested else rc


def _start(port: int, home: Path) -> tuple[subprocess.Popen, int]:
    """`dagster dev` under the watchdog, and the write end of the watchdog's pipe (this process holds the only
    one: end of file there = this process is gone)."""
    watch_r, watch_w = os.pipe()
    # -P: the current folder (a checkout, say) never shadows the installed package
    cmd = [sys.executable, "-P", "-m", "talkthrough_assets.app.ui_watchdog", str(watch_r), "--",
           # `dagster dev`, with a daemon that picks up a new backfill within 2 s (app/dagster_dev.py); its notice
           # that `dg dev` supersedes it is Dagster's to its own users, not news to ours
           sys.executable, "-P", "-W", "ignore:Function `dev_command` is superseded",
           "-m", "talkthrough_assets.app.dagster_dev", "dagster", "dev",
           "-m", "talkthrough_assets.definitions", "-d", code_root(), "-h", "127.0.0.1", "-p", str(port)]
    env = {**os.environ, ui_guard.MARKER: ui_guard.marker_value(home)}  # every process below carries it
    env.update(absolute_paths(env))  # the services start in DAGSTER_HOME: a relative folder means the user's
    # started in DAGSTER_HOME: `dagster dev` warns about (and would ignore) a dagster.yaml in the current folder,
    # such as a checkout's
    proc = subprocess.Popen(cmd, env=env, cwd=str(home), start_new_session=True, pass_fds=[watch_r])
    os.close(watch_r)
    return proc, watch_w


def _supervise(proc: subprocess.Popen, inst, err, stop_requested: list[int]) -> tuple[int | None, list[str] | None]:
    """Wait for `dagster dev` to end, marking runs whose process is gone meanwhile; on a stop signal, ask the runs
    in progress to stop, then stop it (killed after UI_STOP_WAIT_S). Its exit code and the runs asked to stop."""
    deadline = canceled = None
    next_sweep = time.monotonic() + ORPHAN_SWEEP_S
    while True:
        try:
            return proc.wait(timeout=0.5), canceled
        except subprocess.TimeoutExpired:
            pass
        if stop_requested and canceled is None:
            # runs in progress are asked to stop (as the UI's Terminate does) and given a while to end
            # as canceled; then `dagster dev` is stopped and what is left of it killed
            canceled = runs.cancel_runs_here(inst)
            if canceled:
                err.print(f"stopping: asked {len(canceled)} run(s) in progress to stop")
            wait_until = time.monotonic() + UI_RUN_STOP_WAIT_S
            while canceled and time.monotonic() < wait_until and not runs.runs_finished(inst, canceled):
                time.sleep(0.5)
            _signal(proc, signal.SIGTERM)
            deadline = time.monotonic() + UI_STOP_WAIT_S
        if deadline is not None and time.monotonic() > deadline:
            _signal_group(proc.pid, signal.SIGKILL)
        if deadline is None and time.monotonic() > next_sweep:  # a run worker killed meanwhile (OOM...)
            _report_orphans(err, runs.fail_orphaned_runs(inst))
            run_marks.tag_untagged_failures(inst)
            next_sweep = time.monotonic() + ORPHAN_SWEEP_S


def _mark_left_runs(inst, err, canceled: list[str] | None) -> None:
    """Whatever run is still open once `dagster dev` is gone lost its process with the group: marked ended."""
    for _ in range(20):
        left = runs.fail_orphaned_runs(inst, canceled=canceled or (),
                                       why="talkthrough ui stopped while the run was in progress")
        _report_orphans(err, left)
        if not any(not alive or runs.launched(run) for run, _pid, alive in runs.active_runs_here(inst)):
            break
        time.sleep(0.25)
    run_marks.tag_untagged_failures(inst)


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

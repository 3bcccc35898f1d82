"""The process between `talkthrough ui` and `dagster dev`: `python -m talkthrough_assets.app.ui_watchdog FD -- CMD...`.

It runs CMD (``dagster dev``) and makes sure nothing CMD starts outlives the `talkthrough ui` that started it:

- it is a child subreaper (Linux ``PR_SET_CHILD_SUBREAPER``): the webserver, daemon, code server and run
  workers Dagster starts stay below it in the process tree even when their own parent dies first;
- FD is the read end of a pipe whose only write end is held by `talkthrough ui`: end of file means that
  process is gone, however it ended (``kill -9`` included), and then every process below this one is
  killed and this one exits;
- CMD gets a parent-death signal (SIGKILL): if this process is killed, ``dagster dev`` dies with it, and
  its orphans go to `talkthrough ui` (a subreaper too), which kills them;
- SIGTERM, SIGINT or SIGHUP is passed to CMD as one SIGTERM (a graceful stop); once CMD has ended, what
  is left below this process gets SIGTERM, then SIGKILL after :data:`LEFTOVER_WAIT_S`.

It runs in a session of its own, so a signal to the process group of `talkthrough ui` does not reach it.
"""

from __future__ import annotations

import os
import select
import signal
import subprocess
import sys
import time

from talkthrough_assets.core import proctree

LEFTOVER_WAIT_S = 5.0


def main(argv: list[str]) -> int:
    fd = int(argv[0])
    cmd = argv[argv.index("--") + 1:]
    proctree.become_subreaper()
    stop: list[int] = []

    def on_signal(signum, _frame):
        stop.append(signum)

    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, on_signal)
    os.set_blocking(fd, False)
    if _owner_gone(fd):  # the owner died before this process got here
        return 1
    # this process has no other thread: a preexec_fn is safe here
    child = subprocess.Popen(cmd, preexec_fn=proctree.die_with_parent)
    me, forwarded = os.getpid(), False
    while child.poll() is None:
        if stop and not forwarded:
            _send(child, signal.SIGTERM)
            forwarded = True
        try:
            ready = select.select([fd], [], [], 0.5)[0]
        except InterruptedError:
            ready = []
        if ready and _owner_gone(fd):
            # `talkthrough ui` is gone (killed): nothing of it may go on running, a run worker included
            proctree.kill_descendants(me, signal.SIGKILL)
            child.wait()
            proctree.reap_children()
            return 1
        _reap_orphans(child.pid)
    if proctree.kill_descendants(me, signal.SIGTERM):
        deadline = time.monotonic() + LEFTOVER_WAIT_S
        while proctree.descendants(me) and time.monotonic() < deadline:
            _reap_orphans(None)
            time.sleep(0.1)
        proctree.kill_descendants(me, signal.SIGKILL, reap=True)
    proctree.reap_children()
    return child.returncode


def _owner_gone(fd: int) -> bool:
    try:
        return os.read(fd, 64) == b""
    except BlockingIOError:
        return False
    except OSError:
        return True


def _reap_orphans(keep: int | None) -> None:
    """Collect exited orphans re-parented here (not ``keep``, whose status ``Popen`` reads)."""
    while True:
        try:
            info = os.waitid(os.P_ALL, 0, os.WEXITED | os.WNOHANG | os.WNOWAIT)
        except ChildProcessError:
            return
        if info is None or info.si_pid == keep:
            return
        try:
            os.waitpid(info.si_pid, os.WNOHANG)
        except ChildProcessError:
            pass


def _send(proc: subprocess.Popen, sig: int) -> None:
    try:
        proc.send_signal(sig)
    except ProcessLookupError:
        pass


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

"""What keeps `talkthrough ui`'s processes from outliving it (#38 item 1), on real processes, without Dagster:

- the watchdog kills everything below it, a grandchild in a session of its own included, once its owner is
  killed with -9; it stops its command gracefully (SIGTERM) when asked;
- a killed watchdog takes its command with it (parent-death signal);
- the start checks name the PIDs in the way: a listener on the port, a process of an earlier UI (its marker).
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from talkthrough_assets.core import proctree
from talkthrough_assets.app import ui_guard

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="Linux /proc and prctl")

# the command under the watchdog: a child that starts a grandchild in its own session (as Dagster's servers
# are started), writes both PIDs, then both sleep
TREE = """
import os, subprocess, sys, time
g = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(300)"], start_new_session=True)
open(sys.argv[1], "w").write(f"{os.getpid()} {g.pid}")
time.sleep(300)
"""

# the owner: starts the watchdog as `talkthrough ui` does (own session, the pipe's read end), writes its PID
OWNER = """
import os, subprocess, sys, time
r, w = os.pipe()
wd = subprocess.Popen([sys.executable, "-m", "talkthrough_assets.app.ui_watchdog", str(r), "--",
                       sys.executable, "-c", sys.argv[1], sys.argv[2]], pass_fds=[r], start_new_session=True)
os.close(r)
open(sys.argv[3], "w").write(str(wd.pid))
time.sleep(300)
"""


def _wait(cond, timeout: float = 30.0) -> bool:
    deadline = time.time() + timeout
    while time.time() < deadline:
        if cond():
            return True
        time.sleep(0.05)
    return False


def _read_pids(path: Path) -> list[int]:
    assert _wait(lambda: path.exists() and path.read_text().strip()), path
    return [int(x) for x in path.read_text().split()]


@pytest.fixture
def tree(tmp_path):
    # the watchdog module comes from the installed package, as `talkthrough ui` starts it
    owner = subprocess.Popen([sys.executable, "-c", OWNER, TREE, str(tmp_path / "tree"), str(tmp_path / "wd")],
                             start_new_session=True)
    watchdog = _read_pids(tmp_path / "wd")[0]
    child, grandchild = _read_pids(tmp_path / "tree")
    everything = [owner.pid, watchdog, child, grandchild]
    yield owner, watchdog, child, grandchild
    for p in everything:
        try:
            os.kill(p, signal.SIGKILL)
        except ProcessLookupError:
            pass
    owner.wait()


def test_everything_below_the_watchdog_dies_when_its_owner_is_killed_with_minus_9(tree):
    owner, watchdog, child, grandchild = tree
    assert os.getsid(grandchild) == grandchild != os.getsid(child)  # escaped into a session of its own
    assert proctree.descendants(owner.pid) >= {watchdog, child, grandchild}
    os.killpg(owner.pid, signal.SIGKILL)  # the owner's process group (as `kill -9 -PGID`): not the watchdog's
    owner.wait()
    assert _wait(lambda: not any(proctree.alive(p) for p in (watchdog, child, grandchild)), 10), \
        [(p, proctree.name(p)) for p in (watchdog, child, grandchild) if proctree.alive(p)]


def test_a_killed_watchdog_takes_its_command_with_it(tree):
    _owner, watchdog, child, _grandchild = tree
    os.kill(watchdog, signal.SIGKILL)
    assert _wait(lambda: not proctree.alive(child), 10)  # the parent-death signal


def test_sigterm_stops_the_command_and_what_is_left_below(tree):
    _owner, watchdog, child, grandchild = tree
    os.kill(watchdog, signal.SIGTERM)
    assert _wait(lambda: not any(proctree.alive(p) for p in (watchdog, child, grandchild)), 20)


def test_a_taken_port_is_refused_with_the_pid_listening_on_it():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        port = s.getsockname()[1]
        why = ui_guard.port_in_use(port)
        assert why and why.startswith(f"port {port} is in use by PID {os.getpid()} ("), why
        assert "\n" not in why
    assert ui_guard.port_in_use(port) is None


def test_leftovers_of_an_earlier_ui_are_found_by_their_marker(tmp_path):
    home = tmp_path / "dagster"
    env = dict(os.environ, **{ui_guard.MARKER: ui_guard.marker_value(home)})
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"], env=env)
    try:
        assert _wait(lambda: proc.pid in ui_guard.leftovers(home), 10)
        assert ui_guard.leftovers(tmp_path / "other") == set()
    finally:
        proc.kill()
        proc.wait()
    assert proc.pid not in ui_guard.leftovers(home)

"""`talkthrough ui` stops cleanly on SIGTERM and on Ctrl-C: the webserver, the daemon and every
process they started are gone, the port is free, and the exit status is 0."""

from __future__ import annotations

import os
import signal
import socket
import time
from pathlib import Path

import pytest
from test_webserver import _free_port, start_ui, wait_until_up

from talkthrough_assets.core.proctree import descendants


def _alive(pid: int) -> bool:
    try:
        state = (Path("/proc") / str(pid) / "stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


@pytest.mark.parametrize("how", ["SIGTERM", "Ctrl-C"])
def test_ui_stops_cleanly(tmp_path, how):
    home = tmp_path / "home"
    env = dict(os.environ, TALKTHROUGH_HOME=str(home), DAGSTER_HOME=str(home / "dagster"))
    env.pop("TALKTHROUGH_DROP_DIR", None)
    port = _free_port()
    proc = start_ui(env, port)
    try:
        wait_until_up(proc, port)
        family = descendants(proc.pid)
        assert len(family) >= 3, family  # dagster dev, its webserver and its daemon (+ code servers)
        if how == "SIGTERM":
            proc.send_signal(signal.SIGTERM)  # e.g. systemd or `kill`: only this process is signalled
        else:
            os.killpg(proc.pid, signal.SIGINT)  # a terminal's Ctrl-C: the whole foreground group
        rc = proc.wait(timeout=90)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    assert rc == 0
    deadline = time.time() + 10
    while time.time() < deadline and any(_alive(p) for p in family):
        time.sleep(0.5)
    assert not [p for p in family if _alive(p)], "processes left running after talkthrough ui stopped"
    with socket.socket() as s:
        s.bind(("127.0.0.1", port))  # the port is free again

"""Before `talkthrough ui` starts Dagster: one UI per data root, nothing left running of an earlier one, a
free port. Each refusal is one line naming the PIDs in the way."""

from __future__ import annotations

import errno
import fcntl
import os
import socket
from pathlib import Path

from talkthrough_assets.core import proctree
from talkthrough_assets.core.errors import TalkthroughError
from talkthrough_assets import store

# set in the environment of everything `talkthrough ui` starts (watchdog, `dagster dev`, the webserver, daemon,
# code server and run workers inherit it): its value is the DAGSTER_HOME they serve
MARKER = "_TALKTHROUGH_UI_OF"  # not a setting: no TALKTHROUGH_ prefix (config.py declares those)


class Refused(TalkthroughError):
    """This data root's UI cannot start here; ``reason`` says why."""


def claim(port: int, dagster_home: str | os.PathLike) -> int:
    """Take this data root's UI lock (an open file descriptor, held until this process ends) or raise
    :class:`Refused`: another `talkthrough ui` of this data root is running, processes an earlier one started
    outlived it, or ``port`` is taken."""
    path = store.ui_lock_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)  # not inherited by children (close-on-exec)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            pid, _, held_port = os.pread(fd, 64, 0).decode(errors="replace").strip().partition(" ")
            raise Refused(f"another `talkthrough ui` (PID {pid or '?'}) is running for this data root "
                          f"({store.home()}), on port {held_port or '?'}; stop it first") from None
        left = leftovers(dagster_home)
        if left:
            raise Refused(f"processes of an earlier `talkthrough ui` for this data root are still running: "
                          f"{proctree.describe(left)}; stop them (kill {' '.join(map(str, sorted(left)))}) "
                          "and start again")
        why = port_in_use(port)
        if why:
            raise Refused(why)
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()} {port}\n".encode(), 0)
        return fd
    except BaseException:
        os.close(fd)
        raise


def leftovers(dagster_home: str | os.PathLike) -> set[int]:
    return proctree.marked(MARKER, marker_value(dagster_home))


def marker_value(dagster_home: str | os.PathLike) -> str:
    return str(Path(dagster_home).resolve())


def port_in_use(port: int, host: str = "127.0.0.1") -> str | None:
    """Why ``port`` cannot be served (the PIDs listening on it, where this user may see them), else None."""
    with socket.socket() as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as the webserver binds: TIME_WAIT is no obstacle
        try:
            s.bind((host, port))
            return None
        except OSError as e:
            if e.errno != errno.EADDRINUSE:
                return f"port {port} cannot be used: {e.strerror}; pick another with --port"
    who = proctree.listeners(port)
    return (f"port {port} is in use by {proctree.describe(who) if who else 'another process (PID not visible)'}; "
            "stop it or pick another with --port")

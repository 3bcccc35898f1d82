"""Run a command on a real pseudo-terminal, as a user's shell would: its exit code and everything it wrote."""

from __future__ import annotations

import fcntl
import os
import pty
import re
import select
import struct
import subprocess
import termios
import time


def on_pty(cmd: list[str], env: dict, cols: int = 80, timeout_s: float = 300) -> tuple[int, str]:
    """(exit code, the text it wrote with ANSI escapes removed) of ``cmd`` on a ``cols``x24 pseudo-terminal."""
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 24, cols, 0, 0))
    proc = subprocess.Popen(cmd, stdin=slave, stdout=slave, stderr=slave, env=env, close_fds=True)
    os.close(slave)
    out, t0 = b"", time.monotonic()
    while time.monotonic() - t0 < timeout_s:
        ready, _, _ = select.select([master], [], [], 0.2)
        if ready:
            try:
                data = os.read(master, 65536)
            except OSError:
                break
            if not data:
                break
            out += data
        elif proc.poll() is not None:
            break
    os.close(master)
    rc = proc.wait(timeout=60)
    return rc, re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", out.decode("utf-8", "replace"))

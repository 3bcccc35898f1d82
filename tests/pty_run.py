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
from typing import Callable


def pty_chunks(cmd: list[str], env: dict, cols: int = 80, timeout_s: float = 300,
               on_output: Callable[[bytes, subprocess.Popen], None] | None = None, **popen
               ) -> tuple[int, list[tuple[float, bytes]]]:
    """(exit code, (seconds since start, bytes) of every chunk written) of ``cmd`` on a ``cols``x24
    pseudo-terminal; ``on_output(all written so far, process)`` after each chunk (to send it a signal, say)."""
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 24, cols, 0, 0))
    proc = subprocess.Popen(cmd, stdin=slave, stdout=slave, stderr=slave, env=env, close_fds=True, **popen)
    os.close(slave)
    chunks: list[tuple[float, bytes]] = []
    t0 = time.monotonic()
    while time.monotonic() - t0 < timeout_s:
        ready, _, _ = select.select([master], [], [], 0.05)
        if ready:
            try:
                data = os.read(master, 65536)
            except OSError:
                break
            if not data:
                break
            chunks.append((time.monotonic() - t0, data))
            if on_output is not None:
                on_output(b"".join(c for _, c in chunks), proc)
        elif proc.poll() is not None:
            break
    os.close(master)
    return proc.wait(timeout=60), chunks


def plain(data: bytes) -> str:
    """Terminal output as text, ANSI escapes removed."""
    return re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", data.decode("utf-8", "replace"))


def on_pty(cmd: list[str], env: dict, cols: int = 80, timeout_s: float = 300, **kw) -> tuple[int, str]:
    """(exit code, the text it wrote with ANSI escapes removed) of ``cmd`` on a ``cols``x24 pseudo-terminal."""
    rc, chunks = pty_chunks(cmd, env, cols, timeout_s, **kw)
    return rc, plain(b"".join(c for _, c in chunks))

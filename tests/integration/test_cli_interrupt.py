"""Ctrl-C on `talkthrough process`, as a terminal sends it (SIGINT to the whole foreground process group, on a
real pseudo-terminal): no traceback from any process of the group, whether the command is still loading or a run
is in progress, and a re-run resumes and completes."""

from __future__ import annotations

import os
import pty
import re
import select
import signal
import subprocess
import sys
import time
from pathlib import Path

from fixture_facts import SCREENCAST_PATH, unique_copy

TALKTHROUGH = str(Path(sys.executable).with_name("talkthrough"))


def _interrupted(cmd: list[str], env: dict, when, timeout_s: float = 300) -> tuple[int, str]:
    """Run ``cmd`` on a pseudo-terminal in its own process group; send SIGINT to the group once ``when(text)``
    holds for what it wrote so far; (exit code, all it wrote)."""
    master, slave = pty.openpty()
    proc = subprocess.Popen(cmd, stdin=slave, stdout=slave, stderr=slave, env=env, start_new_session=True)
    os.close(slave)
    out, sent, t0 = b"", False, time.monotonic()
    while time.monotonic() - t0 < timeout_s:
        ready, _, _ = select.select([master], [], [], 0.05)
        if ready:
            try:
                data = os.read(master, 65536)
            except OSError:
                break
            if not data:
                break
            out += data
        if not sent and when(out.decode("utf-8", "replace")):
            os.killpg(proc.pid, signal.SIGINT)
            sent = True
        if not ready and proc.poll() is not None:
            break
    os.close(master)
    rc = proc.wait(timeout=60)
    assert sent, out[-2000:]
    return rc, re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", out.decode("utf-8", "replace"))


def _env(tmp_path) -> dict:
    env = {k: v for k, v in os.environ.items() if k not in ("DAGSTER_HOME", "TALKTHROUGH_PG_URL")}
    return {**env, "TALKTHROUGH_HOME": str(tmp_path / "home"), "COLUMNS": "150"}


def test_ctrl_c_while_the_command_loads_ends_quietly(tmp_path):
    rc, text = _interrupted([TALKTHROUGH, "process", str(SCREENCAST_PATH)], _env(tmp_path),
                            when=lambda _text: True)
    assert rc == 130 and "Traceback" not in text and "KeyboardInterrupt" not in text, text


def test_ctrl_c_during_a_run_prints_no_traceback_and_a_rerun_completes(tmp_path):
    src = unique_copy(SCREENCAST_PATH, tmp_path / "demo.mp4", "ctrl-c")
    env = _env(tmp_path)
    rc, text = _interrupted([TALKTHROUGH, "process", str(src)], env, when=lambda t: re.search(r"\d/9 stages", t))
    assert rc != 0, text
    assert "Traceback" not in text and "KeyboardInterrupt" not in text, text[-3000:]
    assert "interrupted" in text, text[-3000:]
    again = subprocess.run([TALKTHROUGH, "process", str(src)], env=env, capture_output=True, text=True, timeout=600)
    assert again.returncode == 0 and "demo.mp4  processed" in again.stdout, again.stdout + again.stderr

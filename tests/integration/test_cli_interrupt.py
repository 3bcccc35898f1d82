"""Ctrl-C on `talkthrough process`, as a terminal sends it (SIGINT to the whole foreground process group, on a
real pseudo-terminal): no traceback from any process of the group, whether the command is still loading or a run
is in progress, and a re-run resumes and completes."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
from pathlib import Path

from fixture_facts import SCREENCAST_PATH, unique_copy
from pty_run import on_pty, plain

TALKTHROUGH = str(Path(sys.executable).with_name("talkthrough"))


def _interrupted(cmd: list[str], env: dict, when, timeout_s: float = 300) -> tuple[int, str]:
    """Run ``cmd`` on a pseudo-terminal in its own process group; send SIGINT to the group once ``when(text)``
    holds for what it wrote so far; (exit code, all it wrote)."""
    sent = []

    def watch(data: bytes, proc) -> None:
        if not sent and when(plain(data)):
            os.killpg(proc.pid, signal.SIGINT)
            sent.append(True)

    rc, text = on_pty(cmd, env, cols=150, timeout_s=timeout_s, on_output=watch, start_new_session=True)
    assert sent, text[-2000:]
    return rc, text


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

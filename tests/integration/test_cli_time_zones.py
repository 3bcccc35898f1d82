"""One zone everywhere on the command line: `recordings`, `at` and the `process` summary show times in the
machine's zone ($TZ here), each labelled, and `at` reads a time typed back from `recordings` in that same zone.
A narrow terminal keeps the time of day, and a line break in a file name stays inside its row. The real CLI on
a pseudo-terminal."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest
from fixture_facts import SCREENCAST_NAME, SILENT_PATH, unique_copy
from pty_run import on_pty

TALKTHROUGH = str(Path(sys.executable).with_name("talkthrough"))


@pytest.fixture(scope="module")
def tokyo(processed, tt_home, tmp_path_factory):
    env = {k: v for k, v in os.environ.items() if k not in ("TALKTHROUGH_PG_URL", "COLUMNS", "LINES")}
    env.update(TALKTHROUGH_HOME=str(tt_home), TZ="Asia/Tokyo")
    return env, processed[SCREENCAST_NAME]["recording_id"]


def test_recordings_and_at_agree_on_the_local_zone(tokyo):
    env, rid = tokyo
    rc, text = on_pty([TALKTHROUGH, "recordings"], env, cols=160)
    assert rc == 0, text
    row = next(line for line in text.splitlines() if line.startswith(rid))
    assert "2026-03-14 18:26 JST" in row, row  # recorded 09:26:53 UTC
    rc, text = on_pty([TALKTHROUGH, "at", "2026-03-14 18:27"], env, cols=160)
    assert rc == 0 and "1 recording(s) cover it" in text, text
    assert "= 2026-03-14 18:27:00 JST" in text and "+00:00" not in text, text


def test_a_narrow_terminal_keeps_the_time_of_day(tokyo):
    env, rid = tokyo
    rc, text = on_pty([TALKTHROUGH, "recordings"], env, cols=80)
    assert rc == 0, text
    row = next(line for line in text.splitlines() if line.startswith(rid))
    assert "03-14 18:26 JST" in row and len(row) <= 80, row


def test_the_process_summary_states_the_wall_clock_in_the_local_zone(tokyo, tmp_path):
    env, _rid = tokyo
    src = unique_copy(SILENT_PATH, tmp_path / "line\nbreak.mp4", "time-zones")
    rc, text = on_pty([TALKTHROUGH, "process", str(src)], env, cols=160)
    assert rc == 0, text
    assert "wall clock: 2026-03-15 20:00:00 JST (creation_time, medium)" in text, text  # 11:00:00 UTC
    rc, text = on_pty([TALKTHROUGH, "recordings"], env, cols=160)
    rows = [line for line in text.splitlines() if "break.mp4" in line]
    assert len(rows) == 1 and "line\\nbreak.mp4" in rows[0], text  # one row, the break shown as \n
    assert not any(line.strip() == "break.mp4" for line in text.splitlines()), text

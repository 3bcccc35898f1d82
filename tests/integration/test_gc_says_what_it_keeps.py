"""`talkthrough gc` says when it keeps unused results because they are too new to be sure no run is writing
them (it used to keep them silently). Real processing in a private data root."""

from __future__ import annotations

import os
import sys
from pathlib import Path

from fixture_facts import TWO_VOICES_PATH, unique_copy
from pty_run import on_pty

TALKTHROUGH = str(Path(sys.executable).with_name("talkthrough"))


def test_gc_names_the_unused_results_it_keeps_for_now(tmp_path):
    src = unique_copy(TWO_VOICES_PATH, tmp_path / "call.m4a", "gc-young")
    env = {k: v for k, v in os.environ.items() if k not in ("DAGSTER_HOME", "TALKTHROUGH_PG_URL")}
    env.update(TALKTHROUGH_HOME=str(tmp_path / "home"), COLUMNS="200")
    for extra in ([], ["--beam-size", "4"]):  # the second run's chunk results replace the first's
        rc, text = on_pty([TALKTHROUGH, "process", *extra, str(src)], env, cols=200)
        assert rc == 0, text
    rc, text = on_pty([TALKTHROUGH, "gc"], env, cols=200)
    assert rc == 0, text
    assert "removed 0 unused Whisper chunk result(s)" in text, text
    assert "unused result(s) younger than 10 min kept" in text and "run gc again later" in text, text

"""The `process` summary on an 80-column terminal: each path is one line a copy takes whole (the terminal wraps it,
no newline inside), a long transcript line continues under its text, and a number is never split in two
colours. The real CLI on a pseudo-terminal."""

from __future__ import annotations

import os
import re
import sys
from pathlib import Path

from fixture_facts import TWO_VOICES_PATH, unique_copy
from pty_run import pty_chunks

TALKTHROUGH = str(Path(sys.executable).with_name("talkthrough"))


def test_the_summary_keeps_paths_whole_continues_under_the_text_and_numbers_in_one_colour(tmp_path):
    root = tmp_path / "a folder with a rather long name so that every path is wider than the terminal"
    src = unique_copy(TWO_VOICES_PATH, tmp_path / "call.m4a", "summary-80")
    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES", "DAGSTER_HOME", "TALKTHROUGH_PG_URL")}
    env.update(TALKTHROUGH_HOME=str(root), TERM="xterm-256color")
    rc, chunks = pty_chunks([TALKTHROUGH, "process", str(src)], env, cols=80)
    raw = b"".join(c for _, c in chunks).decode("utf-8", "replace")
    assert rc == 0, raw[-3000:]
    plain = re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", raw)
    for what in ("manifest", "report"):
        (line,) = [ln for ln in plain.splitlines() if ln.startswith(f"  {what}: ")]
        assert line.split(": ", 1)[1].strip().startswith(str(root)) and line.rstrip().endswith(".json" if what ==
                                                                                               "manifest" else ".html"), line
    # the audio's duration: digits, point and unit in one run of text, no colour change inside
    assert re.search(r"audio, \d+\.\ds; wall clock", raw), raw[-3000:]
    preview = plain[plain.index("chunks:"):plain.index("  manifest: ")].splitlines()[1:]
    firsts = [ln for ln in preview if re.match(r"^ +\d+\.\ds ", ln)]
    rest = [ln for ln in preview if ln.strip() and ln not in firsts]
    assert firsts and rest, preview  # some segment is longer than one line at 80 columns
    assert all(ln.startswith(" " * 14) and not ln.startswith(" " * 15) for ln in rest), preview
    assert all(len(ln) <= 80 for ln in firsts + rest), preview

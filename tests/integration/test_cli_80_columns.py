"""Issue #38, item 6: the command line on an 80-column terminal (a real pseudo-terminal of 80x24, no COLUMNS):
`talkthrough process` draws one progress line that fits and moves at least once a second (spinner, elapsed
time, the share interpolated within a chunk), and `talkthrough recordings` keeps ids whole and cuts a long
file name in the middle. Real processing (faster-whisper, the fixture in 4-s chunks) in a private data root."""

from __future__ import annotations

import os
import re
import sys

from fixture_facts import TWO_VOICES_PATH, unique_copy
from pty_run import pty_chunks

from talkthrough_assets.core import ids

LONG_NAME = "quarterly planning session with the platform and payments teams (final cut).m4a"
COLS = 80


def _on_80_columns(cmd: list[str], env: dict, timeout_s: float = 500) -> list[tuple[float, str]]:
    """Run ``cmd`` on a pseudo-terminal of 80x24: (seconds since start, text) of every chunk it wrote."""
    rc, chunks = pty_chunks(cmd, env, cols=COLS, timeout_s=timeout_s)
    assert rc == 0, b"".join(c for _, c in chunks).decode("utf-8", "replace")[-3000:]
    return [(t, c.decode("utf-8", "replace")) for t, c in chunks]


def _lines(chunks: list[tuple[float, str]]) -> list[tuple[float, str]]:
    """Every line drawn (split at CR/LF, ANSI escapes removed), with when it was written."""
    out = []
    for t, text in chunks:
        for ln in re.split(r"[\r\n]+", re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", text)):
            if ln.strip():
                out.append((t, ln))
    return out


def test_at_80_columns_progress_moves_every_second_and_recordings_keeps_ids_whole(tmp_path):
    home = tmp_path / "home"
    src = unique_copy(TWO_VOICES_PATH, tmp_path / LONG_NAME, "80-columns")
    rid = ids.recording_id(src)
    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES")}
    env.update(TALKTHROUGH_HOME=str(home), DAGSTER_HOME=str(home / "dagster"), TERM="xterm-256color",
               TALKTHROUGH_CHUNK_S="4", TALKTHROUGH_STAGE_WORKERS="1")
    drawn = _lines(_on_80_columns([sys.executable, "-m", "talkthrough_assets.cli.main", "process", str(src)], env))
    text = "\n".join(ln for _, ln in drawn)
    assert "processed" in text, text[-3000:]

    line_re = re.compile(r"^(?P<spin>\S) (?P<name>[^:]+): .*? (?P<pct>-|\d+%|\s+-) (?P<m>\d+):(?P<s>\d\d)"
                         r"(?: ETA \d+:\d\d)?\s*$")
    frames = [(t, ln, m) for t, ln in drawn if (m := line_re.match(ln.strip()))]
    assert len(frames) >= 10, text[-3000:]
    assert all(len(ln.rstrip()) <= COLS for _, ln, _ in frames), [ln for _, ln, _ in frames if len(ln.rstrip()) > COLS]
    names = {m["name"] for _, _, m in frames}
    assert names == {LONG_NAME[:10] + "…" + LONG_NAME[-9:]}, names  # cut in the middle, extension kept
    # it moves at least once a second (redrawn 4 times a second): the elapsed time goes through every second;
    # a loaded machine may starve the drawing thread for a moment, never for long
    seconds = sorted({int(m["m"]) * 60 + int(m["s"]) for _, _, m in frames})
    every = list(range(seconds[0], seconds[-1] + 1))
    assert seconds[-1] >= 5 and len(seconds) >= 0.9 * len(every), seconds
    changes = [t for (t, ln, _), (_, prev, _) in zip(frames[1:], frames) if ln != prev]
    gaps = [b - a for a, b in zip(changes, changes[1:])]
    assert max(gaps) < 3.0 and sum(g <= 1.0 for g in gaps) >= 0.95 * len(gaps), gaps
    assert len({m["spin"] for _, _, m in frames}) >= 5  # the spinner turns
    # the share moves within a chunk: more distinct percentages than chunk reports (7 chunks of 4 s)
    shares = [int(m["pct"].strip().rstrip("%")) for _, _, m in frames if m["pct"].strip() not in ("-", "")]
    reported = set(re.findall(r"\((\d+) of (\d+) chunks", text))
    assert len(set(shares)) > len(reported) + 1, (sorted(set(shares)), reported)
    assert shares == sorted(shares) or max(a - b for a, b in zip(shares, shares[1:])) <= 1, shares

    listed = _lines(_on_80_columns([sys.executable, "-m", "talkthrough_assets.cli.main", "recordings"], env))
    rows = [ln for _, ln in listed]
    assert all(len(ln.rstrip()) <= COLS for ln in rows), rows
    (row,) = [ln for ln in rows if rid in ln]  # one line, the id whole
    assert row.startswith(rid + " ") and "…" in row and row.rstrip().endswith("cut).m4a"), rows
    assert " quarterly" in row and row.index(" quarterly") > len(rid), rows

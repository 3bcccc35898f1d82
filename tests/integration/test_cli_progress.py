"""Progress while a file is processed (issue #25 item 2), in a real subprocess: on a terminal (a real
pseudo-terminal) the display keeps moving through the stages while the Dagster step runs (it froze
when Dagster's step log capture took over stderr); in a pipe each stage prints one plain line."""

from __future__ import annotations

import os
import re
import subprocess
import sys

from fixture_facts import SILENT_PATH, run_on_terminal

STAGES = ["probe", "wall_clock", "audio", "segments", "turns", "keyframes", "dedup", "ocr", "manifest"]
CMD = [sys.executable, "-m", "talkthrough_assets.cli.main", "process", str(SILENT_PATH)]


def _env(tmp_path) -> dict:
    home = tmp_path / "home"
    return dict(os.environ, TALKTHROUGH_HOME=str(home), DAGSTER_HOME=str(home / "dagster"), COLUMNS="120",
                TERM="xterm-256color")


def test_on_a_terminal_the_display_follows_every_stage_of_the_run(tmp_path):
    text = run_on_terminal(CMD, _env(tmp_path))
    assert "silent_video.mp4  processed" in text, text[-2000:]
    # what the spinner line showed while the run's step was capturing stderr: the stages, one by one
    shown = re.findall(r"silent_video\.mp4: (\d)/9 stages, (\w+) (ok|started)", text)
    finished = {stage for n, stage, state in shown if state == "ok"}
    assert len(finished) >= 6 and {"ocr", "manifest"} & finished, shown
    assert max(int(n) for n, _, _ in shown) >= 8, shown


def test_in_a_pipe_each_stage_prints_a_line(tmp_path):
    env = _env(tmp_path)
    env.pop("COLUMNS")  # a pipe has no width: nothing may be wrapped at rich's default 80 columns
    proc = subprocess.run(CMD, capture_output=True, text=True, env=env, timeout=500)
    assert proc.returncode == 0, proc.stderr
    lines = [ln for ln in proc.stderr.splitlines() if ln.startswith("silent_video.mp4: ")]
    assert lines[0] == "silent_video.mp4: running " + ", ".join(STAGES)
    done = [re.match(r"silent_video\.mp4: (\d)/9 stages, (\w+) ok in [\d.]+ s$", ln) for ln in lines[1:]]
    assert all(done) and sorted(m.group(2) for m in done) == sorted(STAGES), lines
    assert [int(m.group(1)) for m in done] == list(range(1, 10))
    assert "\x1b[" not in proc.stderr and "silent_video.mp4  processed" in proc.stdout
    assert "% of the video scanned" not in proc.stderr + proc.stdout  # progress bars on a terminal only
    (head,) = [ln for ln in proc.stdout.splitlines() if ln.startswith("silent_video.mp4  processed")]
    assert len(head) > 80 and head.endswith("stages: " + ", ".join(STAGES)), proc.stdout  # one line, unwrapped


def test_on_a_terminal_a_video_shows_audio_transcribed_and_frames_scanned_with_an_eta(tmp_path):
    """#19 item 4: per file, the share of the audio transcribed (chunk by chunk) and of the video scanned for
    keyframes, one bar, an ETA (in a pipe nothing of it: test_in_a_pipe_each_stage_prints_a_line)."""
    from fixture_facts import SCREENCAST_NAME, SCREENCAST_PATH

    env = dict(_env(tmp_path), COLUMNS="220", TALKTHROUGH_CHUNK_S="5")
    cmd = [sys.executable, "-m", "talkthrough_assets.cli.main", "process", str(SCREENCAST_PATH)]
    text = run_on_terminal(cmd, env)
    assert f"{SCREENCAST_NAME}  processed" in text, text[-2000:]
    scanned = re.findall(r"keyframes (\d+)% of the video scanned \(frames to (\d+):(\d\d) of (\d+):(\d\d)\)", text)
    assert scanned, text[-3000:]
    assert all(0 < int(p) <= 100 for p, *_ in scanned)
    span = int(scanned[0][3]) * 60 + int(scanned[0][4])
    assert all(int(m) * 60 + int(s) <= span for _, m, s, _, _ in scanned)
    heard = re.findall(r"segments (\d+)% of the audio \((\d+) of (\d+) chunks\)", text)
    assert heard and int(heard[0][2]) >= 3, text[-3000:]
    assert re.search(r"% of the (audio|video scanned) \([^)]*\) +━*─* +\d+% \d+:\d\d ETA \d+:\d\d", text), text[-3000:]



def test_on_a_terminal_the_bar_never_goes_back_and_is_full_only_when_every_stage_is_done(tmp_path):
    """The bar counts every planned stage (OCR too), so it neither jumps to 100 % when the video branch is done
    first nor falls back when Whisper reports; a --force run of a stored recording starts from 0 the same way."""
    from fixture_facts import SCREENCAST_PATH

    env = dict(_env(tmp_path), COLUMNS="220", TALKTHROUGH_CHUNK_S="5")
    cmd = [sys.executable, "-m", "talkthrough_assets.cli.main", "process", str(SCREENCAST_PATH)]
    for extra in ([], ["--force"]):
        text = run_on_terminal(cmd[:4] + extra + cmd[4:], env)
        assert "screencast.mp4  processed" in text, text[-2000:]
        bars = [(m.start(), int(m.group(1))) for m in re.finditer(r"━*─* +(\d+)% \d+:\d\d", text)]
        shares = [p for _, p in bars]
        assert len(shares) >= 5 and shares == sorted(shares), shares
        last_stage = max(m.start() for m in re.finditer(r"8/9 stages", text))
        assert all(at > last_stage for at, p in bars if p == 100), (shares, text[-3000:])

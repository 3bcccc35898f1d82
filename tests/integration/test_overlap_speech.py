"""Two people at once: a flite voice (rms) reads a long sentence while another (slt) talks over it for ~3.6 s, then
slt speaks alone. Through the real CLI with real faster-whisper and sherpa-onnx (`process --diarize`): the rows of
rms's sentence name slt as heard at the same time, the row slt speaks alone names nobody, and the export says so.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import wave

import numpy as np
import pytest
from typer.testing import CliRunner

from talkthrough_assets import store
from talkthrough_assets.cli import main as cli
from talkthrough_assets.core import ids

RATE = 16000
OVER_S = (3.5, 7.1)  # where slt talks over rms


def _say(tmp_path, voice: str, text: str) -> np.ndarray:
    out = tmp_path / f"{voice}-{abs(hash(text))}.wav"
    subprocess.run(["flite", "-voice", voice, "-t", text, "-o", str(out)], check=True, capture_output=True)
    with wave.open(str(out)) as w:
        assert w.getframerate() == RATE
        return np.frombuffer(w.readframes(w.getnframes()), np.int16).astype(np.float32)


def _clip(tmp_path):
    a = _say(tmp_path, "rms", "The quarterly budget review is scheduled for next Thursday and we still need the final "
                              "numbers from the database migration team before then.")
    b = _say(tmp_path, "slt", "Sorry to interrupt, but the migration is already finished.")
    c = _say(tmp_path, "slt", "Then we can close the budget this week.")
    start_c = int(0.5 * RATE) + len(a) + int(0.8 * RATE)
    mix = np.zeros(start_c + len(c) + RATE, np.float32)
    mix[int(0.5 * RATE):int(0.5 * RATE) + len(a)] += a
    b = b[:int((OVER_S[1] - OVER_S[0]) * RATE)]
    mix[int(OVER_S[0] * RATE):int(OVER_S[0] * RATE) + len(b)] += 0.9 * b
    mix[start_c:start_c + len(c)] += c
    path = tmp_path / "standup overlap.wav"
    with wave.open(str(path), "wb") as w:
        w.setnchannels(1), w.setsampwidth(2), w.setframerate(RATE)
        w.writeframes(np.clip(mix, -32768, 32767).astype(np.int16).tobytes())
    return path, (int(0.5 * RATE) + len(a)) / RATE  # where rms's sentence ends: slt alone after it


def test_rows_spoken_over_name_the_other_speaker(tt_home, tmp_path):
    if not shutil.which("flite"):
        pytest.skip("flite is not installed (apt-get install flite; .ci/run installs it)")
    path, rms_end_s = _clip(tmp_path)
    rid = ids.recording_id(path)
    r = CliRunner().invoke(cli.app, ["process", str(path), "--diarize"])
    assert r.exit_code == 0, r.output
    rows = store.read_rows("speaker_segments", rid)
    assert rows, r.output
    over = [x for x in rows if x["t0_ms"] < OVER_S[1] * 1000 and x["t1_ms"] > OVER_S[0] * 1000]
    alone = [x for x in rows if x["t0_ms"] >= rms_end_s * 1000]
    assert over and alone, rows
    first = over[0]["speaker"]
    assert all(x["speaker"] == first and len(x["overlap"]) == 1 and x["overlap"][0] != first for x in over), rows
    assert all(list(x["overlap"]) == [] and x["speaker"] != first for x in alone), rows

    j = CliRunner().invoke(cli.app, ["export", rid, "--format", "json"])
    assert j.exit_code == 0, j.output
    segs = json.loads(j.output)["segments"]
    assert [s.get("overlap") for s in segs] == [list(x["overlap"]) or None for x in rows]
    srt = CliRunner().invoke(cli.app, ["export", rid, "--format", "srt"]).output
    assert f"[{first}, with {over[0]['overlap'][0]} at once]" in srt

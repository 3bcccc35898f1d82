"""Determinism under CPU load (issue #23): the same audio and settings give the same words on a quiet machine
and with every core busy. The busy run is a separate process started with ``OMP_DYNAMIC=true`` (which, when
honoured, lets libgomp shrink CTranslate2's thread team under load and changed the words or emptied the
transcript) while 2x as many CPU-burning processes as cores run beside it."""

from __future__ import annotations

import json
import multiprocessing as mp
import os
import subprocess
import sys
from pathlib import Path

import pytest

from talkthrough_assets.stages import audio
from talkthrough_assets.stages.segments import chunks

ROOT = Path(__file__).resolve().parents[2]
MEDIA = ROOT.parent / "shared" / "eval" / "media" / "asr" / "faster_whisper_multilingual.mp3"

CHILD = """
import json, sys
from talkthrough_assets.stages import audio
from talkthrough_assets.stages.segments import chunks
samples = audio.load_wav(sys.argv[1])
out = chunks.transcribe(samples).transcript
print(json.dumps([[w.t0_ms, w.word] for w in out.words]))
"""


def _burn(stop):
    x = 1
    while not stop.is_set():
        x = (x * 48271) % 2147483647


@pytest.fixture(scope="module")
def wav(tmp_path_factory):
    path = tmp_path_factory.mktemp("det") / "multilingual.wav"
    audio.extract_wav(MEDIA, path)
    return path


def test_words_are_the_same_quiet_and_with_every_core_busy(wav):
    quiet = chunks.transcribe(audio.load_wav(wav)).transcript
    quiet_words = [[w.t0_ms, w.word] for w in quiet.words]
    assert len(quiet_words) > 60  # the English half

    stop = mp.Event()
    burners = [mp.Process(target=_burn, args=(stop,), daemon=True) for _ in range(2 * (os.cpu_count() or 2))]
    for b in burners:
        b.start()
    try:
        env = {**os.environ, "OMP_DYNAMIC": "true"}
        runs = [subprocess.run([sys.executable, "-c", CHILD, str(wav)], env=env, capture_output=True, text=True,
                               timeout=300, check=True) for _ in range(2)]
    finally:
        stop.set()
        for b in burners:
            b.join()
    for r in runs:
        assert json.loads(r.stdout.strip().splitlines()[-1]) == quiet_words
    assert not [w for w in quiet_words if w[0] >= 30_000]  # nothing invented over the German half

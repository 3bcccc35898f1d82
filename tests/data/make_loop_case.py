#!/usr/bin/env python3
"""Makes tests/data/loop_context.{m4a,json}, the case of tests/integration/test_chunk_context.py: 30 s of the
30-min bench meeting (bench/make_long_media.py) from the start of its 7th chunk (1042.688 s), and the context
the 6th chunk handed to it before the fix: its last 223 tokens, ending in 27 "Okay." that Whisper wrote over
the silence at the 6th chunk's end (the VAD gate dropped them from the transcript, but not from the context).
With it, tiny.en writes "Okay." over every sentence of the 7th chunk and of every chunk after it.

    python tests/data/make_loop_case.py [MEETING] [PROMPT_JSON]

PROMPT_JSON: the tokens, as saved by the run that found the loop (default /work/scratch/s4/tail5.json)."""

import json
import shutil
import sys
from pathlib import Path

import av
import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent.parent / "fixtures"))
sys.path.insert(0, str(HERE.parent.parent / "bench"))
from bench_asr import _decode  # noqa: E402
from make_fixtures import SR, write_audio_stream  # noqa: E402

START_S, SECONDS = 1042.688, 30.0


def main() -> None:
    meeting = Path(sys.argv[1] if len(sys.argv) > 1 else "/tmp/talkthrough-bench-media/meeting_30min.m4a")
    prompt = Path(sys.argv[2] if len(sys.argv) > 2 else "/work/scratch/s4/tail5.json")
    x = _decode(meeting)[int(START_S * SR):int((START_S + SECONDS) * SR)].astype(np.float32)
    with av.open(str(HERE / "loop_context.m4a"), "w", format="ipod") as c:
        s = c.add_stream("aac", rate=SR, layout="mono")
        s.bit_rate = 24000
        write_audio_stream(c, s, x)
    tokens = json.loads(prompt.read_text())
    (HERE / "loop_context.json").write_text(json.dumps({
        "source": f"bench/make_long_media.py meeting_30min.m4a, {START_S}-{START_S + SECONDS} s",
        "prompt": tokens}) + "\n")
    print("wrote", HERE / "loop_context.m4a", HERE / "loop_context.json", len(tokens), "tokens")


if __name__ == "__main__":
    main()

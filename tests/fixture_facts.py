"""Known facts about the media fixtures in fixtures/ (made by fixtures/make_fixtures.py).

Plain data, no tests. Times are milliseconds on the decoded timeline (AAC priming
is hidden by the mp4 edit list: decoded speech onsets match these values to ~1 ms).
Speech boundaries were measured from the generated samples (|x| > 0.02 after
peak-normalising each TTS clip to 0.7, leading/trailing silence trimmed).

Verified when generated (PyAV 18.1 / FFmpeg Lavf62, rapidocr-onnxruntime,
faster-whisper tiny.en int8 with vad_filter=True, sherpa-onnx diarization with the
models in /work/shared/models/diarization, num_clusters=2).

OCR notes (RapidOCR): it may glue or split words ("DEPLOYPIPELINE", "version41")
and reads the common window title "ops-console - Talkthrough demo" in every scene.
Compare with ocr_normalize() below and look for OCR_KEYWORDS as substrings.
ASR notes (tiny.en): "rollback" comes out as "roll back", "sync" as "sink",
"backup" as "back up", "staging" as "changing"; those words are therefore not
in the keyword lists. Keywords are lowercase; compare case-insensitively after
stripping punctuation. tiny.en word timestamps are loose: a word can start up to
~0.4 s before the measured speech onset (e.g. "welcome" at 0.11 s vs onset 0.5 s).
"""
from __future__ import annotations

import re
from pathlib import Path

FIXTURES_DIR = Path(__file__).resolve().parent.parent / "fixtures"
GENERATOR = FIXTURES_DIR / "make_fixtures.py"

DURATION_TOLERANCE_S = 0.1


def ocr_normalize(text: str) -> str:
    """Uppercase and drop everything but letters/digits (OCR spacing is unreliable)."""
    return re.sub(r"[^A-Z0-9]", "", text.upper())


WINDOW_TITLE_TEXT = "ops-console - Talkthrough demo"  # title-bar text, same in every scene

# --------------------------------------------------------------- screencast.mp4
SCREENCAST_NAME = "screencast.mp4"
SCREENCAST_PATH = FIXTURES_DIR / SCREENCAST_NAME
SCREENCAST_CREATION_TIME = "2026-03-14T09:26:53.000000Z"
SCREENCAST_TITLE_TAG = "Talkthrough fixture screencast"
SCREENCAST_DURATION_S = 24.0
SCREENCAST_WIDTH, SCREENCAST_HEIGHT = 1920, 1080
SCREENCAST_FPS = 30
SCREENCAST_FRAME_COUNT = 720
SCREENCAST_KEYFRAME_INTERVAL_S = 2.0            # fixed GOP, keyframes at 0, 2, 4, ... 22 s
SCREENCAST_SCENE_STARTS_MS = [0, 6000, 12000, 18000]   # cuts at frames 180, 360, 540

SCREENCAST_SCENES = [
    {
        "start_ms": 0, "end_ms": 6000,
        "title": "DEPLOY PIPELINE",
        "subtitle": "Build 42 passed - staging ready",
        "ocr_keywords": ["DEPLOY", "PIPELINE", "BUILD", "PASSED", "STAGING"],
        "narration": "First, we start the deploy pipeline. The build passed, and staging is ready.",
        "narration_ms": (500, 5449),
        "narration_keywords": ["deploy", "pipeline", "build", "passed"],
    },
    {
        "start_ms": 6000, "end_ms": 12000,
        "title": "ERROR 503 GATEWAY TIMEOUT",
        "subtitle": "checkout service not responding",
        "ocr_keywords": ["ERROR", "GATEWAY", "TIMEOUT", "CHECKOUT", "RESPONDING"],
        "narration": ("Now the gateway returns an error. "
                      "We get a timeout from the checkout service."),
        "narration_ms": (6500, 10841),
        "narration_keywords": ["gateway", "error", "timeout", "checkout"],
    },
    {
        "start_ms": 12000, "end_ms": 18000,
        "title": "ROLLBACK COMPLETE",
        "subtitle": "version 41 restored",
        "ocr_keywords": ["ROLLBACK", "COMPLETE", "VERSION", "RESTORED"],
        "narration": "So we run a rollback, and the previous version is restored.",
        "narration_ms": (12500, 15769),
        "narration_keywords": ["previous", "version", "restored"],
    },
    {
        "start_ms": 18000, "end_ms": 24000,
        "title": "METRICS DASHBOARD",
        "subtitle": "latency back to normal",
        "ocr_keywords": ["METRICS", "DASHBOARD", "LATENCY", "NORMAL"],
        "narration": "Finally, the dashboard shows that latency is back to normal.",
        "narration_ms": (18500, 22033),
        "narration_keywords": ["dashboard", "latency", "normal"],
    },
]
SCREENCAST_KEYWORDS = [w for s in SCREENCAST_SCENES for w in s["narration_keywords"]]

# Within a scene only a small text cursor blinks (1 Hz, 0.5 s on / 0.5 s off):
# mean |diff| of consecutive grey frames (0-255 scale) <= ~0.5 inside a scene,
# ~6.7-8.1 at each cut (3-6 % of pixels change by > 25 levels).
SCENE_CUT_MEAN_ABS_DIFF_MIN = 6.0
IN_SCENE_MEAN_ABS_DIFF_MAX = 0.6

SCREENCAST = {
    "name": SCREENCAST_NAME, "path": SCREENCAST_PATH,
    "has_video": True, "has_audio": True,
    "duration_s": SCREENCAST_DURATION_S,
    "width": SCREENCAST_WIDTH, "height": SCREENCAST_HEIGHT, "fps": SCREENCAST_FPS,
    "frame_count": SCREENCAST_FRAME_COUNT, "pix_fmt": "yuv420p",
    "video_codec": "h264", "audio_codec": "aac",
    "audio_sample_rate": 16000, "audio_channels": 1,
    "creation_time": SCREENCAST_CREATION_TIME,
    "scene_starts_ms": SCREENCAST_SCENE_STARTS_MS,
    "keywords": SCREENCAST_KEYWORDS,
}

# ------------------------------------------------------------ meeting_audio.m4a
MEETING_NAME = "meeting_audio.m4a"
MEETING_PATH = FIXTURES_DIR / MEETING_NAME
MEETING_CREATION_TIME = "2026-04-02T15:00:00.000000Z"
MEETING_DURATION_S = 20.032
MEETING_LINES = [  # (start_ms, end_ms, text) -- one espeak-ng en-us voice
    (500, 4165, "Good morning everyone. Let's review the quarterly budget."),
    (4965, 7852, "The database migration is scheduled for Thursday."),
    (8652, 12464, "Marketing needs the budget numbers before the migration starts."),
    (13264, 16193, "Please send the updated forecast by Wednesday."),
    (16993, 19475, "Let's meet again on Thursday afternoon."),
]
MEETING_KEYWORDS = ["budget", "quarterly", "migration", "thursday", "database",
                    "forecast", "wednesday", "marketing"]
MEETING = {
    "name": MEETING_NAME, "path": MEETING_PATH,
    "has_video": False, "has_audio": True,
    "duration_s": MEETING_DURATION_S,
    "audio_codec": "aac", "audio_sample_rate": 16000, "audio_channels": 1,
    "creation_time": MEETING_CREATION_TIME,
    "keywords": MEETING_KEYWORDS,
}

# --------------------------------------------------------------- two_voices.m4a
TWO_VOICES_NAME = "two_voices.m4a"
TWO_VOICES_PATH = FIXTURES_DIR / TWO_VOICES_NAME
TWO_VOICES_CREATION_TIME = "2026-04-02T16:30:00.000000Z"
TWO_VOICES_DURATION_S = 28.032
# (t0_ms, t1_ms, flite voice); 800 ms silence between turns, 500 ms lead-in
TWO_VOICE_TURNS = [
    (500, 7459, "rms"),
    (8259, 14166, "slt"),
    (14966, 21212, "rms"),
    (22012, 27478, "slt"),
]
VOICE_LABELS = {"rms": "S1", "slt": "S2"}    # first voice heard = S1
EXPECTED_SPEAKER_LABELS = ["S1", "S2", "S1", "S2"]   # per turn, in order
TWO_VOICE_TURN_TEXT = [
    "Welcome to the weekly sync. The server upgrade finished on Monday, "
    "and every database backup is running again.",
    "Thanks. The customer survey results arrived this morning, "
    "and most people asked for a darker color theme.",
    "Good. Next we need to review the hardware invoices, "
    "because the new laptops cost more than we planned.",
    "I will send the survey report to the whole team on Friday, "
    "together with a short summary of the feedback.",
]
VOICE_WORDS = {  # distinctive words each voice says (tiny.en transcribes these)
    "rms": ["welcome", "server", "upgrade", "monday", "database", "hardware",
            "invoices", "laptops", "planned"],
    "slt": ["customer", "survey", "results", "morning", "darker", "theme",
            "report", "friday", "summary", "feedback"],
}
TWO_VOICES_BOUNDARY_TOLERANCE_S = 0.5
TWO_VOICES = {
    "name": TWO_VOICES_NAME, "path": TWO_VOICES_PATH,
    "has_video": False, "has_audio": True,
    "duration_s": TWO_VOICES_DURATION_S,
    "audio_codec": "aac", "audio_sample_rate": 16000, "audio_channels": 1,
    "creation_time": TWO_VOICES_CREATION_TIME,
    "turns": TWO_VOICE_TURNS, "num_speakers": 2,
}

# ------------------------------------------------------------- voices_again.m4a
# a later meeting (issue #35): slt of two_voices.m4a again (other words), with awb, a voice no fixture names
VOICES_AGAIN_NAME = "voices_again.m4a"
VOICES_AGAIN_PATH = FIXTURES_DIR / VOICES_AGAIN_NAME
VOICES_AGAIN_TURNS = [(500, 6373, "awb"), (7173, 12368, "slt"), (13168, 18048, "awb"), (18848, 24171, "slt")]

# ------------------------------------------------------------- silent_video.mp4
SILENT_NAME = "silent_video.mp4"
SILENT_PATH = FIXTURES_DIR / SILENT_NAME
SILENT_CREATION_TIME = "2026-03-15T11:00:00.000000Z"
SILENT_DURATION_S = 7.0
SILENT_WIDTH, SILENT_HEIGHT = 1280, 720
SILENT_FPS = 30
SILENT_FRAME_COUNT = 210
SILENT_SCENE_STARTS_MS = [0, 4000]                  # cut at frame 120
SILENT_SCENES = [
    {"start_ms": 0, "end_ms": 4000, "title": "WELCOME SLIDE",
     "subtitle": "quarterly planning review",
     "ocr_keywords": ["WELCOME", "SLIDE", "QUARTERLY", "PLANNING", "REVIEW"]},
    {"start_ms": 4000, "end_ms": 7000, "title": "ARCHITECTURE DIAGRAM",
     "subtitle": "api - queue - workers",
     "ocr_keywords": ["ARCHITECTURE", "DIAGRAM", "QUEUE", "WORKERS"]},
]
SILENT = {
    "name": SILENT_NAME, "path": SILENT_PATH,
    "has_video": True, "has_audio": False,
    "duration_s": SILENT_DURATION_S,
    "width": SILENT_WIDTH, "height": SILENT_HEIGHT, "fps": SILENT_FPS,
    "frame_count": SILENT_FRAME_COUNT, "pix_fmt": "yuv420p", "video_codec": "h264",
    "creation_time": SILENT_CREATION_TIME,
    "scene_starts_ms": SILENT_SCENE_STARTS_MS,
}

ALL_FIXTURES = [SCREENCAST, MEETING, TWO_VOICES, SILENT]
CREATION_TIMES = {f["name"]: f["creation_time"] for f in ALL_FIXTURES}

# How the test session processes each fixture (overrides passed to service.process).
PROCESS_OPTIONS = {
    SCREENCAST_NAME: {},
    MEETING_NAME: {},
    TWO_VOICES_NAME: {"diarize": True, "num_speakers": 2},
    SILENT_NAME: {},
}


def unique_copy(src: Path, dst: Path, salt: str) -> Path:
    """Same media, different bytes (trailing padding after the last atom): a new recording id."""
    dst.write_bytes(src.read_bytes() + b"\0" * 8 + salt.encode())
    return dst


def remux_audio(src: Path, dst: Path) -> Path:
    """The fixture's audio packets in another container (Matroska): same speech, other bytes (a recording of
    its own)."""
    return copy_audio_packets(src, dst, format="matroska")


def copy_audio_packets(src: Path, dst: Path, seconds: float | None = None, format: str | None = None) -> Path:
    """``src``'s audio packets copied into ``dst``, nothing re-encoded; with ``seconds``, only those before it
    (an export of a shorter take, like ``ffmpeg -t N -c copy``)."""
    import av

    with av.open(str(src)) as i, av.open(str(dst), "w", format=format) as o:
        s = i.streams.audio[0]
        out = o.add_stream_from_template(s)
        for p in i.demux(s):
            if p.dts is None:
                continue
            if seconds is not None and p.pts * s.time_base >= seconds:
                break
            p.stream = out
            o.mux(p)
    return dst


def run_on_terminal(cmd: list[str], env: dict, timeout_s: float = 500) -> str:
    """Run ``cmd`` on a real pseudo-terminal; its whole output with the ANSI escapes removed. Fails the
    test unless it exits 0."""
    import os
    import pty
    import re
    import select
    import subprocess
    import time

    master, slave = pty.openpty()
    proc = subprocess.Popen(cmd, stdin=slave, stdout=slave, stderr=slave, env=env, close_fds=True)
    os.close(slave)
    out, deadline = b"", time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        ready, _, _ = select.select([master], [], [], 0.5)
        if ready:
            try:
                chunk = os.read(master, 65536)
            except OSError:  # the child closed the terminal
                break
            if not chunk:
                break
            out += chunk
        elif proc.poll() is not None:
            break
    os.close(master)
    assert proc.wait(timeout=60) == 0
    return re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", out.decode("utf-8", "replace"))

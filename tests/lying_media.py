"""Media whose container misleads a reader, written with PyAV: an mp4 or Matroska file whose header claims another
length than its packets hold, and an mp4 that stores all its video before its audio, cut short. Plain helpers, no
tests."""

from __future__ import annotations

import struct
from fractions import Fraction
from pathlib import Path

SIZE, FPS, RATE = (160, 120), 10, 16000


def clip(path: Path, seconds: int, *, scene_s: int = 4, video_first: bool = False) -> Path:
    """An mp4 (moov first; Matroska when ``path`` ends in .mkv) of ``seconds``: H.264 scenes of one flat colour
    each ``scene_s`` seconds and a quiet AAC tone. ``video_first``: every video packet is stored before the first
    audio packet (the muxer is told not to wait for the audio to interleave)."""
    import av
    import numpy as np

    mkv = path.suffix == ".mkv"
    opts = {**({} if mkv else {"movflags": "+faststart"}), **({"max_interleave_delta": "1"} if video_first else {})}
    with av.open(str(path), "w", format="matroska" if mkv else "mp4", options=opts) as out:
        v = out.add_stream("libx264", rate=FPS)
        v.width, v.height, v.pix_fmt = SIZE[0], SIZE[1], "yuv420p"
        a = out.add_stream("aac", rate=RATE, layout="mono")
        packets = []
        for i in range(seconds * FPS):
            shade = (i // (scene_s * FPS) * 67) % 256
            f = av.VideoFrame.from_ndarray(np.full((SIZE[1], SIZE[0], 3), (shade, 255 - shade, 90), np.uint8),
                                           format="rgb24")
            f.pts, f.time_base = i, Fraction(1, FPS)
            packets += v.encode(f)
        packets += v.encode(None)
        tone = (0.1 * np.sin(2 * np.pi * 440 * np.arange(seconds * RATE) / RATE)).astype(np.float32)
        audio = []
        for k in range(0, len(tone), 1024):
            f = av.AudioFrame.from_ndarray(tone[None, k:k + 1024], format="fltp", layout="mono")
            f.sample_rate, f.pts, f.time_base = RATE, k, Fraction(1, RATE)
            audio += a.encode(f)
        audio += a.encode(None)
        if not video_first:
            packets = sorted(packets + audio, key=lambda p: p.dts * p.time_base)
        else:
            packets += audio
        for p in packets:
            out.mux(p)
    return path


def claim_length(path: Path, seconds: float) -> Path:
    """Rewrite the length the header claims to ``seconds``; the packets stay as they are. An mp4: mvhd, and each
    track's tkhd and mdhd (FFmpeg reads the least of them and its sample table: it can be made to claim less, not
    more). Matroska: the Segment Info Duration."""
    data = bytearray(path.read_bytes())
    if path.suffix == ".mkv":
        at = data.find(b"\x44\x89\x88")  # Duration, an 8-byte float in TimecodeScale units (1 ms by default)
        assert at > 0
        data[at + 3:at + 11] = struct.pack(">d", seconds * 1000.0)
        path.write_bytes(bytes(data))
        return path
    mvhd = data.find(b"mvhd")
    movie_scale = struct.unpack(">I", data[mvhd + 16:mvhd + 20])[0]
    for box in (b"mvhd", b"tkhd", b"mdhd"):
        at = data.find(box)
        while at > 0:
            assert data[at + 4] == 0, "a version-1 box (64-bit times): not written for a clip this short"
            if box == b"tkhd":  # its duration is in the movie's time scale
                data[at + 24:at + 28] = struct.pack(">I", int(seconds * movie_scale))
            else:
                scale = struct.unpack(">I", data[at + 16:at + 20])[0]
                data[at + 20:at + 24] = struct.pack(">I", int(seconds * scale))
            at = data.find(box, at + 1)
    path.write_bytes(bytes(data))
    return path


def cut_in_video(src: Path, dst: Path, seconds: float) -> Path:
    """``src`` (stored video first) cut where its video reaches ``seconds``: the copy holds that much video and
    no audio packet, though its header still lists every packet of both."""
    import av

    with av.open(str(src)) as c:
        v, a = c.streams.video[0], c.streams.audio[0]
        cut = next(e.pos for e in v.index_entries if e.timestamp * v.time_base >= seconds)
        first_audio = min(e.pos for e in a.index_entries)
    assert cut < first_audio, f"the audio is stored from byte {first_audio}, before the cut at {cut}"
    dst.write_bytes(src.read_bytes()[:cut])
    return dst

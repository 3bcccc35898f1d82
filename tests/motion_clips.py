"""Screencasts with small moving things (a mouse pointer, a blinking caret, a ticking clock), one with a
line typed at the same spot on every slide beside a clock (new text each time), and the measurement of
how many unique keyframes the real keyframes + dedup stages keep for them.

Each clip is a few text slides (Pillow) encoded with PyAV, 1280x720, 12 fps, no audio. ``python
tests/motion_clips.py`` prints the measurement docs/accuracy.md records."""

from __future__ import annotations

import dataclasses
from fractions import Fraction
from pathlib import Path

W, H, FPS = 1280, 720, 12
# (title, body line, seconds on screen); every title is one word OCR must find among the unique frames
SLIDES = [("DEPLOY", "build the release image", 4.0), ("ROLLBACK", "status: pending review", 5.0),
          ("METRICS", "latency p99 under target", 6.0), ("INCIDENT", "paging the on-call engineer", 4.0),
          ("SUMMARY", "ship it on Thursday", 4.0)]
POINTER_SLIDE = 2  # the pointer glides over this slide for its whole 6 s
EDIT = (1, 2.5, "status: running review")  # in the clock clip: slide 1's body line changes one word at 2.5 s
CARET_HALF_PERIOD_S = 0.53  # a typical caret blink: on 530 ms, off 530 ms
KINDS = ("pointer", "caret", "clock")
# In the "typed" clip each slide types its terminal line at the same spot over its first TYPING_S, a clock
# ticking in the corner: the line is new text on every slide, not a tick of the clock.
TYPED = ["$ make release TAG=green", "$ kubectl undo checkout", "$ promql quantile histogram",
         "$ pager acknowledge alert", "$ git push origin friday"]
TYPING_S = 0.8


def _font(size: int):
    from PIL import ImageFont

    return ImageFont.load_default(size=size)


def _slide(i: int, body: str):
    from PIL import Image, ImageDraw

    im = Image.new("RGB", (W, H), (248, 248, 246))
    d = ImageDraw.Draw(im)
    d.rectangle([0, 0, W, 56], fill=(36, 84, 160))
    d.text((60, 150), SLIDES[i][0], font=_font(72), fill=(20, 24, 32))
    d.text((60, 300), body, font=_font(40), fill=(60, 70, 90))
    return im


def _pointer(im, x: float, y: float) -> None:
    from PIL import ImageDraw

    pts = [(0, 0), (0, 26), (7, 20), (12, 31), (16, 29), (11, 18), (19, 18)]  # an arrow, tip at (x, y)
    ImageDraw.Draw(im).polygon([(x + a, y + b) for a, b in pts], fill=(0, 0, 0), outline=(255, 255, 255))


def frame_at(kind: str, t: float):
    """The picture of clip ``kind`` at time ``t`` (s)."""
    from PIL import ImageDraw

    start = 0.0
    for i, (_, body, dur) in enumerate(SLIDES):
        if t < start + dur or i == len(SLIDES) - 1:
            break
        start += dur
    local = t - start
    if kind == "clock" and i == EDIT[0] and local >= EDIT[1]:
        body = EDIT[2]
    im = _slide(i, body)
    d = ImageDraw.Draw(im)
    if kind == "pointer" and i == POINTER_SLIDE:  # glides from the title over the body line to the right
        s = local / dur
        _pointer(im, 120 + 900 * s, 200 + 220 * s)
    elif kind == "caret" and int(t / CARET_HALF_PERIOD_S) % 2 == 0:
        x = 60 + d.textlength(body, font=_font(40)) + 6
        d.rectangle([x, 296, x + 3, 344], fill=(20, 24, 32))
    if kind == "typed":
        line = TYPED[i]
        d.text((60, 420), line[:min(len(line), int(len(line) * local / TYPING_S))], font=_font(28),
               fill=(30, 41, 59))
    if kind in ("clock", "typed"):
        s = 9 * 3600 + 41 * 60 + 7 + int(t)
        d.text((W - 190, H - 50), f"{s // 3600:02d}:{s // 60 % 60:02d}:{s % 60:02d}", font=_font(28),
               fill=(90, 90, 90))
    return im


def write_clip(kind: str, path: Path) -> Path:
    import av

    total = sum(s[2] for s in SLIDES)
    with av.open(str(path), "w", format="mp4") as out:
        vs = out.add_stream("libx264", rate=FPS)
        vs.width, vs.height, vs.pix_fmt = W, H, "yuv420p"
        vs.options = {"crf": "28", "preset": "veryfast", "g": str(2 * FPS), "threads": "1"}
        for f in range(int(total * FPS)):
            frame = av.VideoFrame.from_image(frame_at(kind, f / FPS))
            frame.pts, frame.time_base = f, Fraction(1, FPS)
            out.mux(vs.encode(frame))
        out.mux(vs.encode(None))
    return path


def slide_spans_ms() -> list[tuple[int, int]]:
    out, start = [], 0.0
    for _, _, dur in SLIDES:
        out.append((int(start * 1000), int((start + dur) * 1000)))
        start += dur
    return out


def unique_frames(kind: str, folder: Path) -> tuple[list[dict], Path]:
    """The real keyframes + dedup stage functions on clip ``kind``: (the unique keyframes, their folder)."""
    from talkthrough_assets.pipeline import settings
    from talkthrough_assets.stages import dedup, keyframes, probe

    clip = write_clip(kind, folder / f"{kind}.mp4")
    info = probe.probe_file(clip)
    res = keyframes.extract(clip, folder / kind, duration_s=info.duration_ms / 1000,
                            max_frames=settings.DEFAULTS["max_frames"])
    rows = dedup.mark([f.ms for f in res.frames], [dedup.signature(folder / kind / f.file) for f in res.frames])
    keep = {r.ms for r in rows if r.duplicate_of is None}
    return [dataclasses.asdict(f) for f in res.frames if f.ms in keep], folder / kind


if __name__ == "__main__":
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        for kind in KINDS:
            frames, _ = unique_frames(kind, Path(tmp))
            states = len(SLIDES) + (kind == "clock")
            print(f"{kind}: {len(frames)} unique keyframes for {states} screens  at ms {[f['ms'] for f in frames]}")

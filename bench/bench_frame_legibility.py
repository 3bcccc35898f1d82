#!/usr/bin/env python3
"""Smallest image size at which on-screen text stays legible (issue #38, item 5).

Samples frames of a screen recording, reads each at full size with the pipeline's RapidOCR engine, then
downscaled to a longest side of 640..1568 px and re-encoded as JPEG (the way get_frames serves stored
keyframes), and prints, per size: the share of the full-size words (>= 3 letters) still read exactly,
and the base64 characters one image costs. The ratio column is the cost against 1568 px in the same run.

Usage:
    python bench/bench_frame_legibility.py /tmp/talkthrough-bench-media/screencast_10min_1080p30.mp4
    python bench/bench_frame_legibility.py VIDEO --frames 8 --quality 70 --json
    python bench/bench_frame_legibility.py --text-px 14     # a 1920x1080 screen of 14-px UI text (DejaVu Sans)
"""

from __future__ import annotations

import argparse
import base64
import io
import json
import re
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

SIDES = (640, 768, 896, 1024, 1280, 1568)


def _words(text: str) -> set[str]:
    return {w for w in re.findall(r"[A-Za-z0-9]{3,}", text.upper())}


def _frames(video: str, n: int):
    import av

    with av.open(video) as c:
        s = c.streams.video[0]
        dur = float(c.duration or 0) / 1e6
        for i in range(n):
            t = dur * (i + 0.5) / n
            c.seek(int(t * 1e6), any_frame=False, backward=True)
            for fr in c.decode(s):
                if fr.time is not None and fr.time >= t:
                    yield t, fr.to_image().convert("RGB")
                    break


WORDS = ("deploy pipeline staging build passed gateway timeout checkout service refunds payment invoice "
         "latency dashboard metrics rollback version restored settings account billing customer order "
         "status pending shipped returned search filter export report error warning").split()


def _text_frames(px: int, n: int):
    """Screens of ordinary UI text: 1920x1080, dark on white, DejaVu Sans at ``px`` pixels."""
    from PIL import Image, ImageDraw, ImageFont

    font = ImageFont.truetype("/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf", px)
    for i in range(n):
        img = Image.new("RGB", (1920, 1080), "white")
        d = ImageDraw.Draw(img)
        for row in range(8):
            words = [WORDS[(i * 7 + row * 5 + k * 3) % len(WORDS)] for k in range(6)]
            d.text((60 + (row % 3) * 500, 60 + row * 120), " ".join(words).capitalize(), fill=(30, 30, 30), font=font)
        yield float(i), img


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("video", nargs="?")
    ap.add_argument("--text-px", type=int, default=None, help="instead of a video: synthetic screens of N-px text")
    ap.add_argument("--frames", type=int, default=6)
    ap.add_argument("--quality", type=int, default=None, help="JPEG quality (default: get_frames' own)")
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args()

    from talkthrough_assets.stages import ocr
    from talkthrough_assets.stages.ocr import engine as ocr_engine
    from talkthrough_assets.read import images

    quality = a.quality or images.AGENT_JPEG_QUALITY
    engine, status = ocr_engine.engine_status(True)
    if engine is None:
        raise SystemExit(status)
    rows = {side: {"read": 0, "b64": 0} for side in SIDES}
    total = 0
    with tempfile.TemporaryDirectory() as tmp:
        source = _text_frames(a.text_px, a.frames) if a.text_px else _frames(a.video, a.frames)
        for i, (t, img) in enumerate(source):
            full = Path(tmp, f"{i}.png")
            img.save(full)
            ref = _words(ocr.read_image(engine, full).text or "")
            total += len(ref)
            for side in SIDES:
                small = img.copy()
                small.thumbnail((side, side))
                buf = io.BytesIO()
                small.save(buf, format="JPEG", quality=quality)
                p = Path(tmp, f"{i}_{side}.jpg")
                p.write_bytes(buf.getvalue())
                got = _words(ocr.read_image(engine, p).text or "")
                rows[side]["read"] += len(ref & got)
                rows[side]["b64"] += len(base64.b64encode(buf.getvalue()))
            print(f"frame at {t:.0f} s: {len(ref)} words", file=sys.stderr, flush=True)
    n = max(1, a.frames)
    a.video = a.video or f"synthetic 1920x1080 screens of {a.text_px}-px text"
    out = {str(side): {"words_read": round(r["read"] / max(1, total), 3), "b64_chars_per_image": r["b64"] // n,
                       "cost_vs_1568": round(r["b64"] / max(1, rows[1568]["b64"]), 2)} for side, r in rows.items()}
    if a.json:
        print(json.dumps({"video": a.video, "quality": quality, "words": total, "sizes": out}, indent=1))
    else:
        print(f"{a.video}: {total} words at full size, JPEG quality {quality}")
        print(f"{'longest side':>12} {'words read':>10} {'base64/img':>10} {'vs 1568':>8}")
        for side, r in out.items():
            print(f"{side:>12} {r['words_read']:>10.1%} {r['b64_chars_per_image']:>10} {r['cost_vs_1568']:>7.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())

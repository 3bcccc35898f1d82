"""A recording's contact sheet: every scene once, in time order, each with its time, in one JPEG beside the HTML
report (``reports/<id>.contact_sheet.jpg``), rewritten with it after each published manifest.

A scene is a unique keyframe of the published manifest (one the dedup stage did not mark as a duplicate). Keyframes are taken where the picture changes and again while it stays the same (every
I-frame of a quiet stretch), so sampling the keyframes evenly showed one slide several times and missed others.
Each tile is captioned as the report writes times: the time from the start (``00:01:06``) and, when the wall
clock is known, the time of day with its zone (``09:27:59 UTC``), so a person can find the moment in the report,
the transcript export or the MCP answers.
"""

from __future__ import annotations

import io
import math

from talkthrough_assets import store
from talkthrough_assets.model.wallclock import t_wall

from talkthrough_assets.read import formats
from talkthrough_assets.read import snapshot

TILE_W = 240       # a slide's title stays readable; 4 tiles make a sheet about a screen wide
TILE_MAX_H = 320   # a portrait (phone) frame is cut down to this height
CAPTION_H = 24
TITLE_H = 30       # the file name and what the times are, over the tiles: the JPEG is often opened alone
FONT_PX = 15
GAP = 8
BACKGROUND = (238, 240, 243)
QUALITY = 80


def scenes(snap: snapshot.Snapshot) -> list[tuple[str, str]]:
    """(frame file key, caption) of every unique keyframe, in time order."""
    out = []
    for f in sorted((f for f in snap.frames if f.duplicate_of is None), key=lambda f: f.ms):
        wall = t_wall(snap.wall_clock, f.ms)
        caption = formats.clock(f.ms)
        if wall:
            caption += f"  ·  {formats.time_of_day(wall)} {formats.zone(wall)}"
        out.append((f.file, caption))
    return out


def columns(n: int) -> int:
    """Columns of a sheet of ``n`` tiles: 4 (a screen-wide sheet) until the rows outgrow a screen's height."""
    return 4 if n <= 16 else 6 if n <= 36 else 8


def _font():
    from PIL import ImageFont

    try:
        return ImageFont.load_default(size=FONT_PX)
    except (ImportError, OSError, TypeError):  # a Pillow without FreeType: its small bitmap font
        return ImageFont.load_default()


def _tile(key: str):
    """The frame's image, at most TILE_W x TILE_MAX_H (None when its file is gone)."""
    from PIL import Image

    try:
        path = store.local_file(key, immutable=True)
    except (FileNotFoundError, PermissionError):
        return None
    with Image.open(path) as im:
        im.draft("RGB", (TILE_W, TILE_MAX_H))
        im = im.convert("RGB")
    im.thumbnail((TILE_W, TILE_MAX_H))
    return im


def title(snap: snapshot.Snapshot, n: int) -> str:
    """What the sheet is: the file, its scene count and what its times are."""
    wall = t_wall(snap.wall_clock, 0)
    times = f"time from the start  ·  time of day ({formats.zone(wall)})" if wall else "time from the start"
    return f"{snap.rec.filename}  ·  {n} scene{'s' if n != 1 else ''}, each once: {times}"


def render(items: list[tuple[str, str]], heading: str = "", tile=_tile) -> bytes | None:
    """The sheet of ``items`` (frame key, caption) under ``heading``, as JPEG bytes; None when there is no frame
    to show. ``tile(key)`` gives a frame's image (None: its file is gone, the tile says so)."""
    from PIL import Image, ImageDraw

    if not items:
        return None
    images = [tile(key) for key, _ in items]
    cell_h = max((im.height for im in images if im is not None), default=TILE_W * 9 // 16) + CAPTION_H
    cols = min(columns(len(items)), len(items))
    rows = math.ceil(len(items) / cols)
    top = TITLE_H if heading else 0
    sheet = Image.new("RGB", (GAP + cols * (TILE_W + GAP), top + GAP + rows * (cell_h + GAP)), BACKGROUND)
    draw, font = ImageDraw.Draw(sheet), _font()
    if heading:
        draw.text((GAP, GAP + 2), heading, fill=(20, 20, 20), font=font)
    for i, ((_key, caption), im) in enumerate(zip(items, images)):
        x, y = GAP + (i % cols) * (TILE_W + GAP), top + GAP + (i // cols) * (cell_h + GAP)
        draw.rectangle((x, y, x + TILE_W - 1, y + cell_h - 1), fill=(255, 255, 255))
        if im is None:
            draw.text((x + 8, y + 8), "frame file missing", fill=(160, 0, 0), font=font)
        else:
            sheet.paste(im, (x + (TILE_W - im.width) // 2, y))
        draw.text((x + 6, y + cell_h - CAPTION_H + 4), caption, fill=(40, 40, 40), font=font)
    buf = io.BytesIO()
    sheet.save(buf, "JPEG", quality=QUALITY, optimize=True)
    return buf.getvalue()


def publish(rid: str) -> str | None:
    """Write the contact sheet of ``rid``'s published manifest beside its report; where it is, or None when the
    recording has no frames (an audio-only recording: a sheet left from an earlier run is removed)."""
    snap = snapshot.finished(rid)
    items = scenes(snap)
    data = render(items, title(snap, len(items)))
    key = store.contact_sheet_key(rid)
    if data is None:
        if store.exists(key):
            store.delete_file(key)
        return None
    return store.put_bytes(key, data)

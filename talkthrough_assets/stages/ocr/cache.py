"""OCR results keyed by the frame's pixels: a slide shown again, in this recording or another, is
read once. Each read (a full read, or the changed bands of a frame over the previous
frame's boxes) is stored under key = sha256(engine fingerprint, the version of what a read gives (``READ_VERSION``), what a band read depends
on (its bands and the previous boxes), the decoded RGB pixels); stored like the Whisper chunks
(``chunks.encode``: checksummed, a damaged one is read again) at ``store.ocr_result_key``. The recording's
``ocr_keys`` table names the keys its rows came from (what gc keeps)."""

from __future__ import annotations

import hashlib
import json

from typing import Callable

from talkthrough_assets.core import stop
from talkthrough_assets import store
from talkthrough_assets.stages.segments import chunks as C


def _pixels_key(path, extra: dict) -> str:
    from PIL import Image

    h = hashlib.sha256(json.dumps(extra, sort_keys=True, default=str).encode())
    with Image.open(path) as im:
        im = im.convert("RGB")
        h.update(f"{im.size[0]}x{im.size[1]}\0".encode())
        h.update(im.tobytes())
    return h.hexdigest()


def _load(key: str) -> list[dict] | None:
    blob = store.get_bytes(store.ocr_result_key(key))
    if blob is None:
        return None
    try:
        # in the key order a fresh read has (the stored JSON's keys are sorted): the same boxes
        return [{"box": b["box"], "text": b["text"], "score": b["score"]} for b in C.decode_blob(blob)["boxes"]]
    except (C.CorruptChunk, KeyError, TypeError):
        return None  # read again; the good result replaces it


def read_frames(frames: list[dict], *, fingerprint: dict, read: Callable, result: Callable) -> list[dict]:
    """Read ``frames`` ({"ms", "path", "bands"}, in time order) with stored results: one row per frame as
    ``result(boxes)`` makes it, plus ``read`` ("full" or "bands"), ``ms``, ``key`` and ``reused`` (found stored).
    ``fingerprint``: the engine and read version; ``read(path, bands, previous path, previous boxes)`` -> boxes
    (bands None: the whole frame; ocr's own functions, passed in: ocr imports this module)."""
    out = []
    prev_boxes: list[dict] | None = None
    prev_path = None
    base = fingerprint
    for f in frames:
        stop.checkpoint()  # a stopped run ends here: the frames read so far are stored
        band_read = f.get("bands") is not None and prev_boxes is not None
        extra = dict(base, bands=f["bands"], previous=prev_boxes) if band_read else base
        key = _pixels_key(f["path"], extra)
        boxes = _load(key)
        stored = boxes is not None
        if not stored:
            boxes = read(f["path"], f["bands"] if band_read else None, prev_path, prev_boxes)
            store.put_bytes(store.ocr_result_key(key), C.encode({"boxes": boxes}))
        out.append(dict(result(boxes), read="bands" if band_read else "full", ms=f["ms"], key=key, reused=stored))
        prev_boxes, prev_path = boxes, f["path"]
    return out

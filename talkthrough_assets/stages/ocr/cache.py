"""OCR results keyed by the frame's pixels: a slide shown again, in this recording or another, is
read once. Each read (a full read, or the changed bands of a frame over the previous
frame's boxes) is stored under key = sha256(engine fingerprint, the version of what a read gives (``READ_VERSION``), what a band read depends
on (its bands and the previous boxes), the decoded RGB pixels); stored like the Whisper chunks
(``chunks.encode``: checksummed, a damaged one is read again) at ``store.ocr_result_key``. The recording's
``ocr_keys`` table names the keys its rows came from (what gc keeps).

The stored form is JSON (``{"boxes": [{"box", "text", "score"}, ...]}``) and the key hashes the previous boxes
in that same form: both are made here from the :class:`OcrBox` records the stage passes, so results stored
before keep their keys and are reused."""

from __future__ import annotations

import hashlib
import json
from typing import Callable, Sequence

from talkthrough_assets.core import stop
from talkthrough_assets import store
from talkthrough_assets.model.frames import OcrBox
from talkthrough_assets.stages.ocr.records import FrameRead, FrameToRead, Reading
from talkthrough_assets.stages.segments import chunks as C


def _pixels_key(path, extra: dict) -> str:
    from PIL import Image

    h = hashlib.sha256(json.dumps(extra, sort_keys=True, default=str).encode())
    with Image.open(path) as im:
        im = im.convert("RGB")
        h.update(f"{im.size[0]}x{im.size[1]}\0".encode())
        h.update(im.tobytes())
    return h.hexdigest()


def _stored_form(boxes: Sequence[OcrBox]) -> list[dict]:
    """``boxes`` as the stored JSON holds them (and as the key hashes the previous boxes)."""
    return [{"box": [list(p) for p in b.box], "text": b.text, "score": b.score} for b in boxes]


def _key(f: FrameToRead, fingerprint: dict, previous: Sequence[OcrBox] | None) -> str:
    """The key of ``f``'s stored result: a band read (``previous``: the boxes it reads over) or a full read
    (``previous`` None)."""
    extra = fingerprint if previous is None else dict(fingerprint, bands=f.band_lists(), previous=_stored_form(previous))
    return _pixels_key(f.path, extra)


def _load(key: str) -> tuple[OcrBox, ...] | None:
    blob = store.get_bytes(store.ocr_result_key(key))
    if blob is None:
        return None
    try:
        return tuple(OcrBox(box=tuple(tuple(p) for p in b["box"]), text=b["text"], score=b["score"])
                     for b in C.decode_blob(blob)["boxes"])
    except (C.CorruptChunk, KeyError, TypeError):
        return None  # read again; the good result replaces it


def read_frames(frames: Sequence[FrameToRead], *, fingerprint: dict, read: Callable,
                result: Callable[[Sequence[OcrBox]], Reading]) -> list[FrameRead]:
    """Read ``frames`` (in time order) with stored results: one :class:`FrameRead` per frame, from
    ``result(boxes)``. ``fingerprint``: the engine and read version; ``read(path, bands, previous path,
    previous boxes)`` -> boxes (bands: [x0, y0, x1, y1] lists, None: the whole frame; ocr's own functions,
    passed in: ocr imports this module)."""
    out = []
    prev_boxes: Sequence[OcrBox] | None = None
    prev_path = None
    for f in frames:
        stop.checkpoint()  # a stopped run ends here: the frames read so far are stored
        band_read = f.bands is not None and prev_boxes is not None
        key = _key(f, fingerprint, prev_boxes if band_read else None)
        boxes = _load(key)
        stored = boxes is not None
        if not stored:
            boxes = tuple(read(f.path, f.band_lists() if band_read else None, prev_path, prev_boxes))
            store.put_bytes(store.ocr_result_key(key), C.encode({"boxes": _stored_form(boxes)}))
        r = result(boxes)
        out.append(FrameRead(ms=f.ms, text=r.text, boxes=r.boxes, mean_score=r.mean_score,
                             read="bands" if band_read else "full", key=key, reused=stored))
        prev_boxes, prev_path = boxes, f.path
    return out

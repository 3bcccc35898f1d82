"""ocr: RapidOCR over unique keyframes -> newline-joined box text (+ boxes and scores), reading only the bands
that changed when little changed, each frame's result kept under its pixels (:mod:`.cache`).

The stage's ``ocr`` option off (``TALKTHROUGH_OCR=off``) or an import failure turns OCR off; that is recorded, not
a crash. The engine (loading, detection, recognition) is :mod:`.engine`.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Sequence

from talkthrough_assets import store
from talkthrough_assets.model.frames import FrameChange, Keyframe, OcrBox, OcrKey
from talkthrough_assets.stages.ocr import cache as ocr_cache
from talkthrough_assets.stages.ocr import lines as ocr_lines
from talkthrough_assets.stages.ocr.engine import (DET_MAX_SIDE, _box, _detect, _lock, _recognise, _run, _set_threads,
                                                   _stepwise, engine_name)
from talkthrough_assets.stages.ocr.records import FrameRead, FrameToRead, Reading
from talkthrough_assets.stages.runner import StageResult, digest

CODE_VERSION = "8"  # 8: boxes stored as a list of structs, not JSON; 7: lines over unchanged pixels keep their text; bands recognised in one batch
# what a read gives, part of each stored result's key: a change of how results are stored keeps the reads
READ_VERSION = "7"


@dataclass(frozen=True)
class Options:
    """What the ocr stage runs with (built by ``pipeline.options`` from its settings and the environment)."""

    ocr: bool  # the setting (its default: TALKTHROUGH_OCR)
    det_max_side: int = field(metadata={"env": "TALKTHROUGH_OCR_DET_SIDE"})  # detection cap (0: none); hashed


def engine_fingerprint(opts: Options) -> dict:
    """What, besides its settings, changes the ocr stage's output (its StageSpec.engine)."""
    return {"engine": engine_name(), "det_max_side": opts.det_max_side}


def _box_order(box) -> tuple:
    ys = [p[1] for p in box]
    xs = [p[0] for p in box]
    return (round(min(ys) / 12), min(xs))  # reading order: rows (12 px bands), then left to right

def _read(engine, img, regions: list[list[int]] | None, prev: tuple | None) -> list[OcrBox]:
    """Boxes of BGR image ``img``: text detected in ``regions`` ([x0, y0, x1, y1] px; None: the whole frame,
    else each a band, detected at :func:`band_scale`), every detected line recognised unless the previous
    frame (``prev``: (its image, its boxes)) read a line at the same place over the same pixels
    (:mod:`ocr_lines`): that text is kept. The lines left are recognised in one batch. Same filters as
    RapidOCR (empty text, score under its ``text_score``)."""
    prev_img, prev_boxes = prev if prev is not None else (None, None)
    out: list[OcrBox] = []
    todo: list[tuple[list, object]] = []
    with _lock:
        _set_threads(engine)
        for region in regions if regions is not None else [None]:
            x0, y0 = (region[0], region[1]) if region is not None else (0, 0)
            sub = img if region is None else img[region[1]:region[3], region[0]:region[2]]
            boxes, crops = _detect(engine, sub, band=region is not None)
            for pts, crop in zip(boxes, crops):
                box = _box(pts, x0, y0)
                same = ocr_lines.reusable(box, prev_boxes, prev_img, img)
                if same is not None:
                    out.append(OcrBox(box=box, text=same.text, score=same.score))
                else:
                    todo.append((box, crop))
        read = _recognise(engine, [c for _, c in todo])
    min_score = float(getattr(engine, "text_score", 0.5))
    for (box, _), (text, score) in zip(todo, read):
        if text and text.strip() and float(score) >= min_score:
            out.append(OcrBox(box=box, text=text, score=round(float(score), 4)))
    return out


def _result(boxes: Sequence[OcrBox]) -> Reading:
    boxes = sorted(boxes, key=lambda b: _box_order(b.box))
    texts = [b.text for b in boxes if b.text and b.text.strip()]
    scores = [b.score for b in boxes]
    return Reading(text="\n".join(texts), boxes=tuple(boxes),
                   mean_score=(sum(scores) / len(scores)) if scores else None)


def load(engine, path: str | os.PathLike):
    """The frame as RapidOCR reads it (BGR array), or None for an engine that reads paths itself."""
    return engine.load_img(str(path)) if _stepwise(engine) else None


def read_image(engine, path: str | os.PathLike) -> Reading:
    """One frame read whole, nothing reused (the self-check, tests)."""
    if not _stepwise(engine):
        return _result(_run(engine, str(path)))
    return _result(_read(engine, load(engine, path), None, None))


def _touches(box, band) -> bool:
    xs, ys = [p[0] for p in box], [p[1] for p in box]
    return min(xs) < band[2] and max(xs) > band[0] and min(ys) < band[3] and max(ys) > band[1]


def whole_line_bands(bands: list[list[int]], boxes: Sequence[OcrBox], size: tuple[int, int] | None = None,
                     pad: int = 4) -> list[list[int]]:
    """``bands`` ([x0, y0, x1, y1] px) grown until no box of ``boxes`` crosses their edge: a band that
    touches a box takes in all of it (+ ``pad`` px), repeated because a grown band can touch more lines;
    bands that come to overlap are merged. ``size`` (w, h) clips them to the frame. A re-read of the
    result never cuts through a line that was on screen before."""
    out = [list(map(float, b)) for b in bands]
    changed = True
    while changed:
        changed = False
        for band in out:
            for b in boxes:
                if not _touches(b.box, band):
                    continue
                xs, ys = [p[0] for p in b.box], [p[1] for p in b.box]
                grown = [min(band[0], min(xs) - pad), min(band[1], min(ys) - pad),
                         max(band[2], max(xs) + pad), max(band[3], max(ys) + pad)]
                if size:
                    grown = [max(0.0, grown[0]), max(0.0, grown[1]), min(float(size[0]), grown[2]),
                             min(float(size[1]), grown[3])]
                if grown != band:
                    band[:] = grown
                    changed = True
        merged: list[list[float]] = []
        for band in sorted(out, key=lambda b: (b[1], b[0])):
            m = next((m for m in merged if _touches([[band[0], band[1]], [band[2], band[3]]], m)), None)
            if m is None:
                merged.append(band)
            else:
                m[:] = [min(m[0], band[0]), min(m[1], band[1]), max(m[2], band[2]), max(m[3], band[3])]
                changed = True
        out = merged
    return [[int(b[0]), int(b[1]), int(-(-b[2] // 1)), int(-(-b[3] // 1))] for b in out]


def changed_boxes(engine, path: str | os.PathLike, bands: list[list[int]], previous: Sequence[OcrBox],
                  previous_img=None, img=None) -> list[OcrBox]:
    """Boxes of a frame whose pixels outside ``bands`` ([x0, y0, x1, y1] px) equal the frame
    ``previous`` (its boxes) was read from. Each band is first grown to the whole lines it touches
    (:func:`whole_line_bands`), so a line across a band's edge is re-read whole, never cut; boxes
    outside the grown bands are carried over, boxes touching them are replaced by what the bands read
    now (nothing is opened when no band changed). ``previous_img``/``img``: the two frames as
    :func:`load` gives them, when the caller has them (a line in a band over unchanged pixels keeps its text)."""
    if not bands:
        return list(previous)
    if not _stepwise(engine):
        return _changed_boxes_whole_calls(engine, path, bands, previous)
    img = load(engine, path) if img is None else img
    bands = whole_line_bands(bands, previous, (img.shape[1], img.shape[0]))
    kept = [b for b in previous if not any(_touches(b.box, band) for band in bands)]
    return kept + _read(engine, img, bands, (previous_img, previous))


def _changed_boxes_whole_calls(engine, path, bands: list[list[int]], previous: Sequence[OcrBox]) -> list[OcrBox]:
    from PIL import Image

    with Image.open(path) as im:
        im = im.convert("RGB")
        bands = whole_line_bands(bands, previous, im.size)
        boxes = [b for b in previous if not any(_touches(b.box, band) for band in bands)]
        for x0, y0, x1, y1 in bands:
            boxes.extend(OcrBox(box=_box(b.box, x0, y0), text=b.text, score=b.score)
                         for b in _run(engine, im.crop((x0, y0, x1, y1)), band=True))
    return boxes


def read_frames(engine, frames: Sequence[FrameToRead], det_max_side: int = DET_MAX_SIDE) -> list[FrameRead]:
    """OCR the unique keyframes of one recording in time order: what the ocr stage runs. A frame's ``bands``
    (from dedup) are what changed since the previous unique frame, or None (read it all). Each read is stored
    under the frame's pixels (:mod:`ocr_cache`: a slide seen before, in any recording, is not read again); a
    line at the place where the previous frame had one, over the same pixels, keeps its text
    (:mod:`ocr_lines`). Returns one :class:`FrameRead` per frame. ``det_max_side``: the detection cap
    ``engine`` was loaded with (part of each stored result's key)."""
    last: dict = {}  # the previous frame's path and image (decoded once)

    def image(path):
        if last.get("path") != str(path):
            last.update(path=str(path), img=load(engine, path))
        return last["img"]

    def read(path, bands, prev_path, prev_boxes):
        prev_img = image(prev_path) if prev_path is not None and _stepwise(engine) else None
        if bands is not None and prev_boxes is not None:
            return changed_boxes(engine, path, bands, prev_boxes, prev_img, image(path) if _stepwise(engine) else None)
        if not _stepwise(engine):
            return _run(engine, str(path))
        return _read(engine, image(path), None, (prev_img, prev_boxes) if prev_boxes is not None else None)

    return ocr_cache.read_frames(frames, fingerprint={"engine": {"engine": engine_name(), "det_max_side": det_max_side},
                                                             "code": READ_VERSION},
                                 read=read, result=_result)


def run(rid: str, opts: Options, engines) -> StageResult:
    frames = store.read_rows("keyframes", rid, record=Keyframe)
    dedup_by_ms = {d.ms: d for d in store.read_rows("dedup", rid, record=FrameChange)}
    # a frame dedup has not seen (no row) is read whole, as a new one
    unique = [(f, dedup_by_ms.get(f.ms)) for f in frames]
    unique = [(f, d) for f, d in unique if d is None or d.duplicate_of is None]
    if unique or not opts.ocr:
        engine, status = engines.ocr.status(bool(opts.ocr), opts.det_max_side)
    else:  # nothing to read (an audio file, no frames): the engine is not even loaded
        engine, status = None, "not run: no keyframes"
    rows, partial, keys, reused = [], 0, [], 0
    if engine is not None:
        unique = [FrameToRead(ms=f.ms, path=store.local_file(f.file, immutable=True),
                              bands=d.changed if d is not None else None) for f, d in unique]
        for r in read_frames(engine, unique, opts.det_max_side):
            partial += r.read == "bands"
            keys.append(OcrKey(ms=r.ms, key=r.key))
            reused += r.reused
            rows.append(r.record(status))
    store.write_table("ocr", rid, rows)
    store.write_table("ocr_keys", rid, keys)
    md = {"engine": status, "frames_read": len(rows), "frames_read_in_bands": partial,
          "frames_with_text": sum(1 for r in rows if r.text), "frames_reused": reused}
    return StageResult(md, digest(rows))

"""The frame branch's stored records: a keyframe (the keyframes stage), whether it is new and what changed
(dedup), what OCR read on it (ocr), and the probe's container tags; with the readers of the columns earlier
versions stored as JSON strings (``changed_json``, ``boxes_json``, ``tags_json``), so a data root written
before still reads."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Mapping


@dataclass(frozen=True, slots=True)
class Keyframe:
    ms: int
    file: str  # relative to the data root
    scene_score: float | None  # share of the thumbnail that changed at once (None: not scored, an interval frame)
    width: int
    height: int
    reason: str  # "scene" | "interval"


@dataclass(frozen=True, slots=True)
class Band:
    """A rectangle of a frame, in frame px: [x0, x1) x [y0, y1)."""

    x0: int
    y0: int
    x1: int
    y1: int


@dataclass(frozen=True, slots=True)
class FrameChange:
    """A keyframe against the head of its run: a duplicate points at that head's ``ms``; a new head holds the
    bands that changed since the previous head (``changed``; None: read it all)."""

    ms: int
    dhash: str
    duplicate_of: int | None
    changed: tuple[Band, ...] | None

    @classmethod
    def from_row(cls, row: Mapping) -> FrameChange:
        """A stored dedup row (``changed``, or ``changed_json`` in a row an earlier version stored)."""
        got = bands(row)
        return cls(ms=row["ms"], dhash=row.get("dhash") or "", duplicate_of=row.get("duplicate_of"),
                   changed=None if got is None else tuple(Band(*b) for b in got))


@dataclass(frozen=True, slots=True)
class OcrBox:
    box: tuple[tuple[float, float], ...]  # four corners [x, y], frame px
    text: str
    score: float


@dataclass(frozen=True, slots=True)
class OcrKey:
    """The ``ocr_keys`` row of an OCR'd frame: the key of the cached result its ``ocr`` row came from."""

    ms: int
    key: str


@dataclass(frozen=True, slots=True)
class OcrFrame:
    ms: int
    text: str  # the boxes' text in reading order, one line each
    boxes: tuple[OcrBox, ...]
    mean_score: float | None
    engine: str | None

    @classmethod
    def from_row(cls, row: Mapping) -> OcrFrame:
        """A stored ocr row (``boxes``, or ``boxes_json`` in a row an earlier version stored)."""
        return cls(ms=row["ms"], text=row.get("text") or "", mean_score=row.get("mean_score"), engine=row.get("engine"),
                   boxes=boxes(row))


@dataclass(frozen=True, slots=True)
class Tag:
    key: str
    value: str


def bands(row: Mapping) -> list[list[int]] | None:
    """A dedup row's changed bands as [x0, y0, x1, y1] lists (None: read it all), from ``changed`` or, in a
    row an earlier version stored, ``changed_json``."""
    got = row.get("changed")
    if got is None:
        old = row.get("changed_json")
        return json.loads(old) if old else None
    return [[b["x0"], b["y0"], b["x1"], b["y1"]] for b in got]


def boxes(row: Mapping) -> tuple[OcrBox, ...]:
    """An ocr row's boxes, from ``boxes`` (structs) or, stored earlier, ``boxes_json``."""
    got = row.get("boxes")
    if got is None:
        old = row.get("boxes_json")
        got = json.loads(old) if old else ()
    return tuple(OcrBox(box=tuple(tuple(p) for p in b["box"]), text=b["text"], score=b["score"]) for b in got)


def tags(row: Mapping) -> dict[str, str]:
    """A probe row's container and stream tags, from ``tags`` or, stored earlier, ``tags_json``."""
    got = row.get("tags")
    if got is None:
        old = row.get("tags_json")
        return json.loads(old) if old else {}
    return {t["key"]: t["value"] for t in got}

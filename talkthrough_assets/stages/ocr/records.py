"""The ocr stage's records between its steps: a keyframe to read (:class:`FrameToRead`), what OCR read on one
image (:class:`Reading`), and one keyframe's read as ``ocr.read_frames`` returns it (:class:`FrameRead`). The
boxes are the stored :class:`~talkthrough_assets.model.frames.OcrBox`, from RapidOCR's output on."""

from __future__ import annotations

import os
from dataclasses import dataclass

from talkthrough_assets.model.frames import Band, OcrBox, OcrFrame


@dataclass(frozen=True, slots=True)
class FrameToRead:
    ms: int
    path: str | os.PathLike  # the keyframe's local file
    bands: tuple[Band, ...] | None = None  # what changed since the previous frame read (None: read it all)

    def band_lists(self) -> list[list[int]] | None:
        """The changed bands as [x0, y0, x1, y1] lists (None: read it all)."""
        return None if self.bands is None else [[b.x0, b.y0, b.x1, b.y1] for b in self.bands]


@dataclass(frozen=True, slots=True)
class Reading:
    """The boxes read on one image in reading order, their text one line each, and their mean score."""

    text: str
    boxes: tuple[OcrBox, ...]
    mean_score: float | None


@dataclass(frozen=True, slots=True)
class FrameRead:
    """One keyframe's read: what was read, how (``read``: "full" or "bands"), the key of its stored result and
    whether that result was found stored (``reused``)."""

    ms: int
    text: str
    boxes: tuple[OcrBox, ...]
    mean_score: float | None
    read: str
    key: str
    reused: bool

    def record(self, engine: str | None) -> OcrFrame:
        """The stored record of this read, ``engine`` being the stage's engine status."""
        return OcrFrame(ms=self.ms, text=self.text, boxes=self.boxes, mean_score=self.mean_score, engine=engine)

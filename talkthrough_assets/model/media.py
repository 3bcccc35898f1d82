"""What is stored about a recording's media: the paths it was seen under, the probe row (streams, duration, caps, container tags),
the wall-clock anchor resolved from it, and the WAV the audio stage decoded."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping

from talkthrough_assets.model.frames import Tag, tags


@dataclass(frozen=True, slots=True, kw_only=True)
class Source:
    """A path a recording's bytes were seen under (the ``sources`` table: the registered file and its aliases)."""

    path: str
    filename: str
    size_bytes: int
    mtime: float
    seen_at: str  # ISO-8601 UTC


@dataclass(frozen=True, slots=True, kw_only=True)
class ProbeRow:
    """The probe stage's row: the source's container and streams (``duration_ms``: the decoded length)."""

    path: str
    filename: str
    kind: str  # "video" | "audio"
    duration_ms: int
    container: str | None = None
    size_bytes: int = 0
    width: int | None = None
    height: int | None = None
    rotation: int | None = 0
    fps: float | None = None
    video_codec: str | None = None
    audio_codec: str | None = None
    has_audio: bool = False
    has_video: bool = False
    tags: tuple[Tag, ...] = ()  # container and stream tags (``stream:<type>:<key>``), by key
    file_mtime: float | None = None
    cap_hit: bool = False  # longer than ``max_seconds``: processed up to it
    max_seconds: int | None = None
    # what the header claimed, when the readable media ends well before or after it (None: they agree)
    header_duration_ms: int | None = None

    @classmethod
    def from_row(cls, row: Mapping) -> ProbeRow:
        """A stored probe row (its tags as ``tags``, or ``tags_json`` in a row an earlier version stored)."""
        got = {k: row.get(k) for k in cls.__dataclass_fields__ if k in row and k != "tags"}
        return cls(**got, tags=tuple(Tag(k, v) for k, v in tags(row).items()))

    @property
    def tag_map(self) -> dict[str, str]:
        return {t.key: t.value for t in self.tags}

    @property
    def capped_seconds(self) -> int | None:
        """The cap the media was cut at (None: processed whole)."""
        return self.max_seconds if self.cap_hit else None


@dataclass(frozen=True, slots=True, kw_only=True)
class WallClockRow:
    """The wall_clock stage's row: when the recording started (UTC, ISO-8601 ms), the recording's own UTC offset
    when known, which rung of evidence said so and how sure it is; ``available=False`` and the rest None when no
    rung applies."""

    available: bool
    start_utc: str | None = None
    tz_offset_min: int | None = None
    source: str | None = None
    confidence: str | None = None


@dataclass(frozen=True, slots=True)
class WavInfo:
    """The WAV the audio stage decoded: samples, their length and their peak on the 16-bit scale."""

    samples: int
    duration_ms: int
    peak: int


__all__ = ["Source", "ProbeRow", "WallClockRow", "WavInfo"]

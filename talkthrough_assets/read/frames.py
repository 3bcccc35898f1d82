"""get_frames' answer: a recording's stored keyframes in a span (paged, at most :data:`FRAMES_MAX` a call), or
the one on screen at an instant and the nearest ones, each with its OCR text, as images."""

from __future__ import annotations

from pydantic import Field

from talkthrough_assets.model.manifest import FrameItem
from talkthrough_assets.model.wallclock import t_wall

from talkthrough_assets.read import images
from talkthrough_assets.read import snapshot
from talkthrough_assets.read.answers import GENERATION, WallClock
from talkthrough_assets.read.args import limit_arg, ms_arg, range_arg
from talkthrough_assets.read.errors import InvalidArgument
from talkthrough_assets.read.images import FrameInfo, ImageResult, WithImages

FRAMES_MAX = 6


class Frames(WithImages):
    """get_frames' answer (``start_ms``/``end_ms`` for a span, ``at_ms`` for an instant)."""

    recording: str
    filename: str
    generation: str = Field(description=GENERATION)
    start_ms: int | None = None
    end_ms: int | None = None
    at_ms: int | None = None
    t_wall: str | None = None
    on_screen_frame_ms: int | None = None
    include_duplicates: bool
    wall_clock: WallClock | None
    frames: list[FrameInfo]
    returned: int
    matching: int
    truncated: bool
    next_start_ms: int | None
    note: str | None = None


def frames(snap: snapshot.Snapshot, start_ms=None, end_ms=None, include_duplicates: bool = False,
           limit: int | None = None, at_ms=None) -> ImageResult[Frames]:
    images.require_video(snap)
    if not isinstance(include_duplicates, bool):
        raise InvalidArgument(f"include_duplicates must be true or false, got {type(include_duplicates).__name__}",
                              hint="pass a JSON boolean, or omit it")
    pool = [f for f in snap.frames if include_duplicates or f.duplicate_of is None]
    if at_ms is not None:
        if start_ms is not None or end_ms is not None:
            raise InvalidArgument("pass either at_ms or start_ms/end_ms, not both",
                                  hint="at_ms picks the frame on screen at one instant; start_ms/end_ms a span")
        return _at(snap, pool, at_ms, include_duplicates, limit)
    return _span(snap, pool, start_ms, end_ms, include_duplicates, limit)


def _answer(snap: snapshot.Snapshot, page: list[FrameItem], include_duplicates: bool, **fields) -> Frames:
    wc = snap.wall_clock
    spans = images.screen_spans(snap.frames, int(snap.rec.duration_ms or 0))
    out = Frames(recording=snap.rid, filename=snap.rec.filename, generation=snap.generation,
                 include_duplicates=include_duplicates, wall_clock=WallClock.of(wc),
                 frames=[images.frame_meta(f, wc, spans) for f in page], returned=len(page), **fields)
    # a run in progress: frames come with the finished generation (next_start_ms stays the frames' paging)
    return out.mark(snapshot.partial_fields(snap))


def _at(snap: snapshot.Snapshot, pool: list[FrameItem], at_ms, include_duplicates: bool,
        limit: int | None) -> ImageResult[Frames]:
    """The frame on screen at ``at_ms`` first, then the nearest ones."""
    duration = int(snap.rec.duration_ms or 0)
    at = ms_arg("at_ms", at_ms)
    if duration and at > duration:
        raise InvalidArgument(f"at_ms {at} is past the end of the recording (duration {duration} ms)",
                              hint=f"use 0 <= at_ms <= {duration}")
    limit = limit_arg("limit", 1 if limit is None else limit, 1, FRAMES_MAX)
    if include_duplicates:
        on = next((f.ms for f in reversed(snap.frames) if f.ms <= at), None)
    else:
        on = images.on_screen(snap.frames, at)
    ranked = sorted(pool, key=lambda f: (f.ms != on, abs(f.ms - at), f.ms))
    page = sorted(ranked[:limit], key=lambda f: f.ms)
    out = _answer(snap, page, include_duplicates, at_ms=at, t_wall=t_wall(snap.wall_clock, at),
                  on_screen_frame_ms=on, matching=len(pool), truncated=False, next_start_ms=None)
    if not pool:
        out.note = "this recording has no stored keyframes"
    return images.image_result(snap.rid, page, snap.wall_clock, out)


def _span(snap: snapshot.Snapshot, pool: list[FrameItem], start_ms, end_ms, include_duplicates: bool,
          limit: int | None) -> ImageResult[Frames]:
    """The frames starting in [start_ms, end_ms], a page at a time."""
    start, end = range_arg(snap.rec.duration_ms, start_ms, end_ms)
    limit = limit_arg("limit", FRAMES_MAX if limit is None else limit, 1, FRAMES_MAX)
    found = [f for f in pool if start <= f.ms <= end]
    page, rest = found[:limit], found[limit:]
    out = _answer(snap, page, include_duplicates, start_ms=start, end_ms=end, matching=len(found),
                  truncated=bool(rest), next_start_ms=rest[0].ms if rest else None)
    if not found:
        on = images.on_screen(snap.frames, start)
        out.note = "no stored keyframes start in this range" + (
            f"; the frame on screen at start_ms is {on} ms (get_frames with at_ms={start})" if on is not None
            else "" if include_duplicates else " (try include_duplicates=true)")
    return images.image_result(snap.rid, page, snap.wall_clock, out)

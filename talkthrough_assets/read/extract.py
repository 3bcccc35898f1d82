"""extract_frame's answer: one frame decoded from the recording's SOURCE file at an exact instant (optionally a
crop of it, or at full resolution), served only while that file still holds the recorded bytes."""

from __future__ import annotations

from pathlib import Path

from pydantic import Field

from talkthrough_assets import store
from talkthrough_assets.model.media import Source
from talkthrough_assets.model.wallclock import t_wall

from talkthrough_assets.read import images
from talkthrough_assets.read import media
from talkthrough_assets.read import snapshot
from talkthrough_assets.read.answers import Answer
from talkthrough_assets.read.args import crop_arg, ms_arg
from talkthrough_assets.read.errors import InvalidArgument, SourceUnavailable
from talkthrough_assets.read.images import Image, ImageResult


class Crop(Answer):
    x: int
    y: int
    width: int
    height: int


class ExtractedFrame(Answer):
    """extract_frame's answer."""

    recording: str
    filename: str
    requested_ms: int
    frame_ms: int
    t_wall: str | None
    width: int
    height: int
    source_size: list[int] = Field(min_length=2, max_length=2, description="[width, height] of the source")
    exact: bool
    crop: Crop | None
    scaled: bool
    full_resolution: bool
    note: str | None = None
    scale_note: str | None = None


def open_source(snap: snapshot.Snapshot):
    """The recording's source, opened and verified by hashing that open descriptor."""
    rid = snap.rid
    rows = sorted(store.read_rows("sources", rid, record=Source), key=lambda r: r.seen_at or "", reverse=True)
    candidates = list(dict.fromkeys([r.path for r in rows] + ([snap.source_path] if snap.source_path else [])))
    if not candidates:
        raise SourceUnavailable(f"recording {rid} has no known source path",
                                hint="process the file again with `talkthrough process <file>`")
    f, changed = media.open_verified(candidates, rid)
    if f is not None:
        return f
    if changed:
        raise SourceUnavailable(f"the source file {changed[0]!r} no longer has the bytes of recording {rid} "
                                "(sha256 changed since processing)",
                                hint="use get_frames/get_moment (stored keyframes) instead")
    raise SourceUnavailable(f"the source file {Path(candidates[0]).name!r} of recording {rid} is gone "
                            "(moved or deleted)",
                            hint="use get_frames/get_moment (stored keyframes), or reprocess the file at its "
                                 "new path with `talkthrough process`")


def _decode(snap: snapshot.Snapshot, t: int, box, full_resolution: bool) -> media.DecodedFrame:
    f = open_source(snap)
    name = Path(f.name).name
    try:
        try:
            res = media.decode_frame(f, t, crop=box, max_side=media.FULL_MAX_SIDE if full_resolution else media.MAX_SIDE)
        except media.CropOutside as e:
            raise InvalidArgument(str(e), hint="keep x+width <= source width and y+height <= source height") from None
        except Exception as e:  # av errors, damaged file
            raise SourceUnavailable(f"could not decode {name} at {t} ms: {type(e).__name__}") from None
        if not media.still_recording(f, f.name, snap.rid):
            raise SourceUnavailable(f"the source file {name!r} was written to while its frame was decoded",
                                    hint="retry; use get_frames/get_moment (stored keyframes) if it keeps changing")
    finally:
        f.close()
    return res


def extract_frame(snap: snapshot.Snapshot, t_ms, crop=None, full_resolution: bool = False
                  ) -> ImageResult[ExtractedFrame]:
    rec = snap.rec
    images.require_video(snap)
    t = ms_arg("t_ms", t_ms, required=True)
    duration = int(rec.duration_ms or 0)
    if duration and t > duration:
        raise InvalidArgument(f"t_ms {t} is past the end of the recording (duration {duration} ms)",
                              hint=f"use 0 <= t_ms <= {duration}")
    box = crop_arg(crop)
    if not isinstance(full_resolution, bool):
        raise InvalidArgument(f"full_resolution must be true or false, got {type(full_resolution).__name__}",
                              hint="pass a JSON boolean, or omit it")
    res = _decode(snap, t, box, full_resolution)
    wc = snap.wall_clock
    out = ExtractedFrame(recording=snap.rid, filename=rec.filename, requested_ms=t, frame_ms=res.frame_ms,
                         t_wall=t_wall(wc, res.frame_ms), width=res.width, height=res.height,
                         source_size=[res.source_width, res.source_height], exact=res.exact,
                         crop=Crop(x=box[0], y=box[1], width=box[2], height=box[3]) if box else None,
                         scaled=res.scaled, full_resolution=full_resolution)
    if not res.exact:
        out.note = "t_ms is after the last decodable frame; returned the last frame"
    if res.scaled and full_resolution:
        out.scale_note = f"longest side capped at {media.FULL_MAX_SIDE} px"
    cap = f"exact frame {res.frame_ms} ms" + (f" ({out.t_wall})" if wc else "") + \
        f" from {rec.filename}, {res.width}x{res.height}" + \
        (f", crop x={box[0]} y={box[1]} {box[2]}x{box[3]} of {res.source_width}x{res.source_height}" if box else "")
    return ImageResult(out, [Image(cap, res.jpeg)])

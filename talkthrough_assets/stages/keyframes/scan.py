"""The keyframes stage's scan: the keep rule (:class:`Keeper`: scene score, interval floor, paced budget spent on
distinct screens) and the decoding passes that offer it frames (every frame, or I-frames plus the GOPs whose
picture changed). :func:`talkthrough_assets.stages.keyframes.extract` drives them; the rule and the passes are
described in that module's docstring."""

from __future__ import annotations

import math
from pathlib import Path

from talkthrough_assets.core import stop
from talkthrough_assets.core.errors import BadMediaError
from talkthrough_assets.core.mediaio import alone, open_input
from talkthrough_assets.model.frames import Keyframe
from talkthrough_assets.store import frame_file_name

JPEG_QUALITY = 85
THUMB_W, THUMB_H = 128, 72
# A thumbnail cell "changed" when its grey level moved by more than this (compression noise stays
# well below; a text stroke or a colour change in a 15x15 px cell goes above).
CELL_DELTA = 24
# A GOP longer than this is always decoded in full: its I-frames are too far apart to stand for it.
MAX_GOP_S = 10.0
# A GOP is decoded in full when its I-frames differ by more than this fraction of the threshold.
REFINE_FRACTION = 0.5
# Share of the frame budget that may be spent before the clock earns it (a busy start); the rest is
# released in proportion to the time covered.
HEAD_SHARE = 0.25
# Unchanged screens (interval frames equal to the last kept one) get at most this share of the budget.
ANCHOR_SHARE = 0.5


def _thumb(frame):
    import numpy as np

    g = frame.reformat(width=THUMB_W, height=THUMB_H, format="gray", interpolation="AREA").to_ndarray()
    return np.ascontiguousarray(g[:, :THUMB_W]).astype(np.int16)


def changed_fraction(a, b) -> float:
    """Share of thumbnail cells that changed (0..1): a new slide title is 0.06-0.09, a cursor 0.0002."""
    if a is None or b is None:
        return 1.0
    return float((abs(a - b) > CELL_DELTA).mean())


def _upright(img, rotation: int):
    """Apply the display matrix: PyAV's ``frame.rotation`` is counter-clockwise degrees to undo."""
    r = int(rotation or 0) % 360
    if not r:
        return img
    from PIL import Image

    return img.transpose({90: Image.Transpose.ROTATE_90, 180: Image.Transpose.ROTATE_180,
                          270: Image.Transpose.ROTATE_270}[r]) if r in (90, 180, 270) else img.rotate(r, expand=True)


class Keeper:
    """Applies the keep rule to candidate frames in time order and writes the kept ones."""

    def __init__(self, out_dir: Path, *, floor_s: float, threshold: float, max_frames: int, max_width: int,
                 max_seconds: float | None, span_s: float):
        self.out_dir, self.floor_s, self.threshold = out_dir, floor_s, threshold
        self.max_frames, self.max_width, self.max_seconds = max_frames, max_width, max_seconds
        self.span_s = max(float(span_s), 1e-3)
        self.frames: list[Keyframe] = []  # file: relative to out_dir
        self.last_kept_t: float | None = None
        self.last_kept_thumb = None
        self.prev_thumb = None
        self.prev_change = 0.0
        self.cap_hit = False
        self.budget_skipped = 0  # screens left without a frame because the budget was spent
        self._skipped_thumb = None
        self.seconds_cap_hit = False
        self.rotation = 0
        # True while the last offered frame is the one right before the next candidate (a GOP
        # decoded in full up to the next I-frame): then that I-frame is scored as a neighbour.
        self.contiguous = False
        self.on_time = None  # called with each offered frame's time (the stage's progress: frames scanned)

    def offer(self, frame, t: float, thumb, *, adjacent: bool) -> None:
        """``adjacent``: ``prev_thumb`` is the frame right before this one (scores a cut exactly)."""
        stop.checkpoint()
        if self.on_time is not None:
            self.on_time(t)
        score = None
        if self.prev_thumb is not None and adjacent:
            change = changed_fraction(self.prev_thumb, thumb)
            score = min(change, abs(change - self.prev_change))
            self.prev_change = change
        else:
            self.prev_change = 0.0
        self.prev_thumb = thumb
        is_scene = score is not None and score > self.threshold
        due = self.last_kept_t is None or t - self.last_kept_t >= self.floor_s - 1e-6
        if not (is_scene or due):
            return
        if self.max_seconds and t > self.max_seconds:
            self.cap_hit = self.seconds_cap_hit = True
            return
        kept = len(self.frames)
        same_screen = self.last_kept_thumb is not None and changed_fraction(self.last_kept_thumb, thumb) == 0.0
        if same_screen and (is_scene or kept >= ANCHOR_SHARE * self.earned(t)):
            return  # nothing new on screen, and anchors have had their share of the budget: spend nothing
        if kept >= self.allowed(t):
            self.cap_hit = True
            # one count per screen left out: a later frame of the same screen (a blinking cursor) is not another
            if self._skipped_thumb is None or changed_fraction(self._skipped_thumb, thumb) > self.threshold:
                self.budget_skipped += 1
            self._skipped_thumb = thumb
            return
        if self._skipped_thumb is not None and changed_fraction(self._skipped_thumb, thumb) <= self.threshold:
            self.budget_skipped -= 1  # the screen left out at its change gets a frame after all, later on
        self.last_kept_t, self.last_kept_thumb, self._skipped_thumb = t, thumb, None
        self._write(frame, t, score, "scene" if is_scene else "interval")

    def earned(self, t: float) -> float:
        """Frames the clock has earned by time ``t``: the budget spread evenly over the recording."""
        return self.max_frames * min(1.0, max(0.0, t) / self.span_s)

    def allowed(self, t: float) -> int:
        """Frames that may have been kept by ``t``: the head's burst allowance plus what the clock earned."""
        share = HEAD_SHARE + (1.0 - HEAD_SHARE) * min(1.0, max(0.0, t) / self.span_s)
        return min(self.max_frames, max(1, math.ceil(self.max_frames * share - 1e-9)))

    def _write(self, frame, t: float, score: float | None, reason: str) -> None:
        ms = int(round(t * 1000))
        self.rotation = int(getattr(frame, "rotation", 0) or 0)
        w, h = frame.width, frame.height
        if w > self.max_width:
            w, h = self.max_width, max(2, int(round(h * self.max_width / w / 2)) * 2)
        img = frame.reformat(width=w, height=h, format="rgb24", interpolation="BICUBIC").to_image()
        img = _upright(img, self.rotation)
        name = frame_file_name(ms)
        img.save(self.out_dir / name, quality=JPEG_QUALITY)
        self.frames.append(Keyframe(ms=ms, file=name, width=img.width, height=img.height,
                                    scene_score=round(score, 4) if score is not None else None, reason=reason))


def _frame_time(frame, tb) -> float | None:
    if frame.pts is None:
        return None
    return float(frame.pts * (frame.time_base or tb))


def video_stream(container):
    import av

    vids = [s for s in container.streams.video if not (s.disposition & av.stream.Disposition.attached_pic)]
    if not vids:
        raise BadMediaError("no video stream")
    stream = vids[0]
    if stream.codec_context is None or not stream.codec_context.name:
        raise BadMediaError("video stream has no decoder (unknown codec)")
    stream.thread_type = "AUTO"
    alone(container, stream)  # its frames up to where its own bytes end, whatever the audio beside it holds
    return stream


def _decode_errors(decoded: int, e: Exception) -> None:
    """A damaged tail ends the pass (processed up to the damage); nothing decodable is an error."""
    if decoded == 0:
        raise BadMediaError(f"video stream could not be decoded: {e}") from None


def full_pass(container, stream, keeper: Keeper, stats: dict, max_seconds) -> None:
    import av

    tb = stream.time_base
    try:
        for frame in container.decode(stream):
            stats["decoded"] += 1
            t = _frame_time(frame, tb)
            if t is None:
                continue
            if max_seconds and t > max_seconds:
                keeper.cap_hit = keeper.seconds_cap_hit = True
                break
            keeper.offer(frame, t, _thumb(frame), adjacent=True)
    except (av.error.FFmpegError, ValueError) as e:
        _decode_errors(stats["decoded"], e)


def iframe_pass(src, container, stream, keeper: Keeper, stats: dict, max_seconds, threshold: float) -> None:
    """Decode I-frames; fully decode only GOPs that changed (or are too long to judge by their ends)."""
    import av

    tb = stream.time_base
    cc = stream.codec_context
    cc.skip_frame = "NONKEY"
    fine = _FineDecoder(src)
    prev = None  # (frame, t, thumb) of the previous I-frame, not yet offered
    try:
        try:
            for packet in container.demux(stream):
                if not packet.is_keyframe or packet.pts is None:
                    continue
                for frame in cc.decode(packet):
                    stats["decoded"] += 1
                    t = _frame_time(frame, tb)
                    if t is None:
                        continue
                    cur = (frame, t, _thumb(frame))
                    if prev is not None:
                        _gop(prev, cur, keeper, fine, stats, threshold, max_seconds)
                    prev = cur
                if max_seconds and prev is not None and prev[1] > max_seconds:
                    break
            for frame in cc.decode(None):  # flush (frame threading holds frames back)
                stats["decoded"] += 1
                t = _frame_time(frame, tb)
                if t is not None:
                    cur = (frame, t, _thumb(frame))
                    if prev is not None:
                        _gop(prev, cur, keeper, fine, stats, threshold, max_seconds)
                    prev = cur
        except (av.error.FFmpegError, ValueError) as e:
            _decode_errors(stats["decoded"], e)
        if prev is not None:  # the last GOP runs to the end of the file
            _gop(prev, None, keeper, fine, stats, threshold, max_seconds)
    finally:
        fine.close()


def _gop(a, b, keeper: Keeper, fine: "_FineDecoder", stats: dict, threshold: float, max_seconds) -> None:
    """Offer the frames of the GOP that starts at I-frame ``a`` (``b``: the next I-frame or None)."""
    frame_a, ta, thumb_a = a
    if max_seconds and ta > max_seconds:
        keeper.cap_hit = keeper.seconds_cap_hit = True
        return
    stats["gops"] += 1
    span = (b[1] - ta) if b is not None else None
    if span is not None:
        stats["max_gop_s"] = max(stats["max_gop_s"], span)
    changed = b is not None and changed_fraction(thumb_a, b[2]) > threshold * REFINE_FRACTION
    adjacent = keeper.contiguous
    keeper.contiguous = False
    # the last GOP (b is None) is always decoded: nothing after it tells whether it changed
    if not (changed or b is None or span > MAX_GOP_S):
        keeper.offer(frame_a, ta, thumb_a, adjacent=adjacent)
        return
    stats["gops_decoded"] += 1
    n = 0
    for frame, t in fine.frames(ta, b[1] if b is not None else None, stats):
        if max_seconds and t > max_seconds:
            keeper.cap_hit = keeper.seconds_cap_hit = True
            break
        keeper.offer(frame, t, _thumb(frame), adjacent=adjacent or n > 0)
        n += 1
    if n == 0:  # the GOP could not be re-read: fall back to its I-frame
        keeper.offer(frame_a, ta, thumb_a, adjacent=adjacent)
    else:
        keeper.contiguous = b is not None and fine.reached(b[1])


class _FineDecoder:
    """A second demuxer on the same file: decodes [t0, t1) in full, seeking to t0's I-frame only
    when the previous request did not end exactly there (consecutive GOPs decode as one run)."""

    def __init__(self, src):
        self.src = src
        self.container = None
        self.stream = None
        self.iter = None
        self.pending = None  # (frame, t): the first frame at/after the previous t1, already decoded

    def _open(self):
        if self.container is None:
            self.container = open_input(self.src)
            self.stream = video_stream(self.container)

    def reached(self, t: float) -> bool:
        return self.pending is not None and abs(self.pending[1] - t) < 1e-3

    def frames(self, t0: float, t1: float | None, stats: dict):
        import av

        self._open()
        tb = self.stream.time_base
        if self.iter is not None and self.reached(t0):
            first, self.pending = self.pending, None
            yield first
        else:
            self.pending = None
            self.container.seek(int(t0 / tb), stream=self.stream, backward=True, any_frame=False)
            self.iter = self.container.decode(self.stream)
        try:
            for frame in self.iter:
                stats["decoded"] += 1
                t = _frame_time(frame, tb)
                if t is None or t < t0 - 1e-6:
                    continue
                if t1 is not None and t >= t1 - 1e-6:
                    self.pending = (frame, t)
                    return
                yield frame, t
        except (av.error.FFmpegError, ValueError):
            pass
        self.iter = None

    def close(self):
        if self.container is not None:
            self.container.close()

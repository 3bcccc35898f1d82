"""keyframes: scene-change and interval keyframes without decoding every frame (PyAV, no ffmpeg).

Rule: a frame is a candidate when its scene score exceeds ``scene_threshold`` (a cut), or when at
least ``floor`` seconds passed since the last kept frame, with floor = max(1 s, duration / max_frames).
The budget covers the whole recording, the head never wins (see :class:`_Keeper`):

* paced: by time t at most ``max_frames * (HEAD_SHARE + (1 - HEAD_SHARE) * t / duration)`` frames are
  kept (a burst allowance at the start, the rest earned with the clock), so the last screen of a long
  recording still finds budget left;
* spent on distinct screens: an interval frame that shows the same screen as the last kept one (no
  thumbnail cell changed) is kept as a time anchor only while the frames kept are under
  ``ANCHOR_SHARE`` of the clock's share (``max_frames * t / duration``), so a static stretch never
  takes the budget that later changes need; a short recording, far from its budget, keeps its anchors
  (dedup marks them, OCR skips them).

Changes not kept for the budget set ``cap_hit`` and are counted in ``budget_skipped``. The scene score is the share of 128x72 thumbnail cells that
changed since the previous frame, less the previous frame's own change (as FFmpeg's scene filter
does), so steady motion (a webcam, scrolling) is not a cut but a new slide or window is: a
title change on a screencast scores 0.06-0.09, a blinking cursor 0.0002, a film cut 0.4-0.9.

How it avoids decoding every frame (``path="iframes"``):

1. Coarse: the demuxer hands over every packet, but only key (I) frames are decoded. Each gets a
   128x72 grey thumbnail; consecutive I-frames are compared by the share of cells that changed.
2. Fine: a GOP (I-frame to next I-frame) is decoded in full only when its two I-frames differ by
   more than half the threshold, or when it is longer than ``MAX_GOP_S`` (where an I-frame
   alone cannot stand for the GOP). Inside it every frame is scored against the previous one, so
   a cut is placed on the exact frame, as a full decode would place it.
3. Quiet GOPs contribute only their I-frame, which the interval rule keeps when it is due.

``path="full"`` decodes and scores every frame (same rule, same scores): the reference the
benchmarks compare against, and what ``mode="full"`` forces. Kept frames are rotated upright
(display matrix), scaled to at most ``max_width`` px and written as JPEG with their true time.
"""

from __future__ import annotations

import math
import os
from pathlib import Path

from .. import store
from ..errors import BadMediaError
from ..mediaio import open_input
from ..store import frame_file_name
from .probe import frame_floor_s
from .runner import CheckResult, StageResult, digest, probe_row

CODE_VERSION = "3"  # 3: the budget is paced over the whole recording and spent on distinct screens
MAX_WIDTH = 1568
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


class _Keeper:
    """Applies the keep rule to candidate frames in time order and writes the kept ones."""

    def __init__(self, out_dir: Path, *, floor_s: float, threshold: float, max_frames: int, max_width: int,
                 max_seconds: float | None, span_s: float):
        self.out_dir, self.floor_s, self.threshold = out_dir, floor_s, threshold
        self.max_frames, self.max_width, self.max_seconds = max_frames, max_width, max_seconds
        self.span_s = max(float(span_s), 1e-3)
        self.frames: list[dict] = []
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

    def offer(self, frame, t: float, thumb, *, adjacent: bool) -> None:
        """``adjacent``: ``prev_thumb`` is the frame right before this one (scores a cut exactly)."""
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
        self.frames.append({"ms": ms, "file": name, "width": img.width, "height": img.height,
                            "scene_score": round(score, 4) if score is not None else None, "reason": reason})


def _frame_time(frame, tb) -> float | None:
    if frame.pts is None:
        return None
    return float(frame.pts * (frame.time_base or tb))


def extract(src: str | os.PathLike, out_dir: str | os.PathLike, *, duration_s: float, max_frames: int = 120,
            scene_threshold: float = 0.04, max_width: int = MAX_WIDTH, max_seconds: float | None = None,
            mode: str = "auto") -> dict:
    """Write keyframes into ``out_dir``.

    Returns {"frames": [...], "floor_s", "cap_hit", "decoded", "path", "gops", "gops_decoded",
    "max_gop_s", "rotation", "width", "height"}. ``mode``: "auto" (I-frames + refined GOPs) or "full"."""
    import av

    if mode not in ("auto", "full"):
        raise ValueError(f"mode must be 'auto' or 'full', not {mode!r}")
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    span = min(duration_s, max_seconds) if max_seconds else duration_s
    floor_s = frame_floor_s(span, max_frames)
    keeper = _Keeper(out_dir, floor_s=floor_s, threshold=scene_threshold, max_frames=max_frames,
                     max_width=max_width, max_seconds=max_seconds, span_s=span)
    stats = {"decoded": 0, "gops": 0, "gops_decoded": 0, "max_gop_s": 0.0}
    try:
        container = open_input(src)
    except av.error.FFmpegError as e:
        raise BadMediaError(f"cannot open video: {e}") from None
    with container:
        stream = _video_stream(container)
        cc = stream.codec_context
        width, height = cc.width, cc.height
        if mode == "full":
            _full_pass(container, stream, keeper, stats, max_seconds)
        else:
            _iframe_pass(src, container, stream, keeper, stats, max_seconds, scene_threshold)
    if mode != "full" and stats["decoded"] == 0:  # no key-frame flags at all: decode everything instead
        mode = "full"
        with open_input(src) as container:
            _full_pass(container, _video_stream(container), keeper, stats, max_seconds)
    if not keeper.frames and stats["decoded"] == 0:
        raise BadMediaError("video stream has no decodable frames")
    if keeper.rotation % 180:
        width, height = height, width
    return {"frames": keeper.frames, "floor_s": floor_s, "cap_hit": keeper.cap_hit, "path": mode if mode == "full"
            else "iframes", "rotation": keeper.rotation, "width": width, "height": height,
            "budget_skipped": keeper.budget_skipped, "reason": cap_reason(keeper, span),
            **{k: (round(v, 3) if isinstance(v, float) else v) for k, v in stats.items()}}


CAP_REASON_PREFIX = "keyframe budget"


def cap_reason(keeper: "_Keeper", span_s: float) -> str | None:
    """Why frames are missing that the rule would have kept: the budget, or the max_seconds cap."""
    parts = []
    if keeper.budget_skipped:
        parts.append(f"{CAP_REASON_PREFIX} of {keeper.max_frames} frames spread over {span_s:.0f} s: "
                     f"{keeper.budget_skipped} screen change{'s' if keeper.budget_skipped != 1 else ''} not kept "
                     "(raise --max-frames to keep more)")
    if keeper.seconds_cap_hit:
        parts.append(f"frames from the first {keeper.max_seconds:g} s only (max_seconds)")
    return "; ".join(parts) or None


def _video_stream(container):
    import av

    vids = [s for s in container.streams.video if not (s.disposition & av.stream.Disposition.attached_pic)]
    if not vids:
        raise BadMediaError("no video stream")
    stream = vids[0]
    if stream.codec_context is None or not stream.codec_context.name:
        raise BadMediaError("video stream has no decoder (unknown codec)")
    stream.thread_type = "AUTO"
    return stream


def _decode_errors(decoded: int, e: Exception) -> None:
    """A damaged tail ends the pass (processed up to the damage); nothing decodable is an error."""
    if decoded == 0:
        raise BadMediaError(f"video stream could not be decoded: {e}") from None


def _full_pass(container, stream, keeper: _Keeper, stats: dict, max_seconds) -> None:
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


def _iframe_pass(src, container, stream, keeper: _Keeper, stats: dict, max_seconds, threshold: float) -> None:
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


def _gop(a, b, keeper: _Keeper, fine: "_FineDecoder", stats: dict, threshold: float, max_seconds) -> None:
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
            self.stream = _video_stream(self.container)

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


def contact_sheet(paths: list, out_path: str | os.PathLike, *, cols: int = 4, thumb_w: int = 240,
                  max_frames: int = 16) -> str:
    """A small grid of up to ``max_frames`` evenly spaced keyframes (for previews in the UI)."""
    from PIL import Image

    if len(paths) > max_frames:
        step = len(paths) / max_frames
        paths = [paths[int(i * step)] for i in range(max_frames)]
    thumbs = []
    for p in paths:
        with Image.open(p) as im:
            im.draft("RGB", (thumb_w, thumb_w))
            im.thumbnail((thumb_w, thumb_w))
            thumbs.append(im.convert("RGB"))
    th = max(t.height for t in thumbs)
    rows = (len(thumbs) + cols - 1) // cols
    sheet = Image.new("RGB", (cols * thumb_w, rows * th), (255, 255, 255))
    for i, t in enumerate(thumbs):
        sheet.paste(t, ((i % cols) * thumb_w, (i // cols) * th))
    sheet.save(out_path, quality=80)
    return str(out_path)


def frame_index_check(rid: str, rows: list[dict] | None = None) -> CheckResult:
    """Every indexed keyframe exists on disk."""
    rows = store.read_rows("keyframes", rid) if rows is None else rows
    listed: dict[str, set[str]] = {}  # one listing per generation folder, not a stat (a HEAD on S3) per frame

    def stored(key: str) -> bool:
        folder, _, name = key.rpartition("/")
        if folder not in listed:
            listed[folder] = set(store.list_names(folder))
        return name in listed[folder]

    missing = [r["file"] for r in rows if not stored(r["file"])]
    return CheckResult("frame_index_matches_disk", not missing,
                       f"{len(rows) - len(missing)}/{len(rows)} indexed keyframes on disk"
                       + (f"; missing e.g. {missing[0]}" if missing else ""))


def _live_generations(rid: str) -> set[str]:
    """Frame folders someone may still read: the keyframes table's and the published manifest's
    (MCP readers serve the manifest, which lags the table until the manifest stage runs)."""
    live = {Path(r["file"]).parent.name for r in store.read_rows("keyframes", rid)}
    published = store.get_json(store.manifest_key(rid), None) or {}
    live |= {Path(i["file"]).parent.name for i in (published.get("frames") or {}).get("items") or [] if i.get("file")}
    return live


def run(rid: str, cfg: dict) -> StageResult:
    p = probe_row(rid)
    if not p["has_video"]:
        store.write_table("keyframes", rid, [])
        return StageResult({"frames": 0, "reason": "audio-only recording: no video stream"}, digest([]),
                           [frame_index_check(rid, [])])
    gen = store.new_frames_generation(rid)
    try:
        res = extract(p["path"], gen, duration_s=p["duration_ms"] / 1000, max_frames=int(cfg["max_frames"]),
                      scene_threshold=float(cfg["scene_threshold"]),
                      max_seconds=p["max_seconds"] if p["cap_hit"] else None)
    except BadMediaError as e:
        # the video stream cannot be read (header-only, unknown codec ...): processed up to the damage,
        # i.e. no frames, a recorded reason, and the rest of the recording still goes through
        store.prune_frame_generations(rid, keep=set())
        store.write_table("keyframes", rid, [])
        reason = f"no keyframes: {e.reason}"
        return StageResult({"frames": 0, "reason": reason}, digest(["unreadable", e.reason]),
                           [frame_index_check(rid, [])], reason=reason)
    except BaseException:
        store.prune_frame_generations(rid, keep=_live_generations(rid))
        raise
    rel = store.generation_key(gen)
    rows = [dict(f, file=f"{rel}/{f['file']}") for f in res["frames"]]
    previous = _live_generations(rid)
    store.publish_frames_generation(gen)  # the JPEGs first, then the table that points at them
    store.write_table("keyframes", rid, rows)
    # keep the previous generation one more round for readers that loaded the old table
    store.prune_frame_generations(rid, keep={gen.name} | previous)
    md = {"frames": len(rows), "floor_s": round(res["floor_s"], 3), "decoded_frames": res["decoded"],
          "decode_path": res["path"], "gops": res["gops"], "gops_decoded": res["gops_decoded"],
          "max_gop_s": res["max_gop_s"], "rotation": res["rotation"], "cap_hit": res["cap_hit"],
          "budget_skipped": res["budget_skipped"], "reason": res["reason"] or "", "frames_dir": str(gen)}
    if rows:
        md["contact_sheet"] = contact_sheet([gen / f["file"] for f in res["frames"]], gen / "contact_sheet.jpg")
    return StageResult(md, digest(rows), [frame_index_check(rid, rows)], reason=res["reason"])

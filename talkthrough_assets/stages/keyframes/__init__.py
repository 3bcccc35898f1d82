"""keyframes: scene-change and interval keyframes without decoding every frame (PyAV, no ffmpeg).

Rule: a frame is a candidate when its scene score exceeds ``scene_threshold`` (a cut), or when at
least ``floor`` seconds passed since the last kept frame, with floor = max(1 s, duration / max_frames).
The budget covers the whole recording, the head never wins (see :class:`Keeper`):

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

import os
import time
from dataclasses import dataclass, replace
from pathlib import Path

from talkthrough_assets import store
from talkthrough_assets.core.errors import BadMediaError
from talkthrough_assets.core.mediaio import open_input
from talkthrough_assets.model.frames import Keyframe
from talkthrough_assets.stages.keyframes.scan import Keeper, full_pass, iframe_pass, video_stream
from talkthrough_assets.stages.probe import frame_floor_s
from talkthrough_assets.stages.runner import CheckResult, RunContext, StageResult, digest, hms, probe_row

CODE_VERSION = "3"  # 3: the budget is paced over the whole recording and spent on distinct screens
MAX_WIDTH = 1568
SCENE_THRESHOLD = 0.04  # the scene_threshold setting's default (pipeline/stagespec.py)


@dataclass(frozen=True, slots=True)
class Extraction:
    """What :func:`extract` wrote and how: the kept frames (files relative to its folder), the interval floor, whether
    a cap left frames out and why, the decoding path (``iframes`` or ``full``) and its counts, the picture's
    rotation and size as a viewer sees it."""

    frames: tuple[Keyframe, ...]
    floor_s: float
    cap_hit: bool
    path: str
    rotation: int
    width: int
    height: int
    budget_skipped: int
    reason: str | None
    decoded: int
    gops: int
    gops_decoded: int
    max_gop_s: float


def extract(src: str | os.PathLike, out_dir: str | os.PathLike, *, duration_s: float, max_frames: int,
            scene_threshold: float = SCENE_THRESHOLD, max_width: int = MAX_WIDTH, max_seconds: float | None = None,
            mode: str = "auto", on_time=None) -> Extraction:
    """Write keyframes into ``out_dir``. ``mode``: "auto" (I-frames + refined GOPs) or "full".
    ``on_time(t)``: called with the time of every frame the scan looks at, in time order (progress)."""
    import av

    if mode not in ("auto", "full"):
        raise ValueError(f"mode must be 'auto' or 'full', not {mode!r}")
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    span = min(duration_s, max_seconds) if max_seconds else duration_s
    floor_s = frame_floor_s(span, max_frames)
    keeper = Keeper(out_dir, floor_s=floor_s, threshold=scene_threshold, max_frames=max_frames,
                     max_width=max_width, max_seconds=max_seconds, span_s=span)
    keeper.on_time = on_time
    stats = {"decoded": 0, "gops": 0, "gops_decoded": 0, "max_gop_s": 0.0}
    try:
        container = open_input(src)
    except av.error.FFmpegError as e:
        raise BadMediaError(f"cannot open video: {e}") from None
    with container:
        stream = video_stream(container)
        cc = stream.codec_context
        width, height = cc.width, cc.height
        if mode == "full":
            full_pass(container, stream, keeper, stats, max_seconds)
        else:
            iframe_pass(src, container, stream, keeper, stats, max_seconds, scene_threshold)
    if mode != "full" and stats["decoded"] == 0:  # no key-frame flags at all: decode everything instead
        mode = "full"
        with open_input(src) as container:
            full_pass(container, video_stream(container), keeper, stats, max_seconds)
    if not keeper.frames and stats["decoded"] == 0:
        raise BadMediaError("video stream has no decodable frames")
    if keeper.rotation % 180:
        width, height = height, width
    return Extraction(frames=tuple(keeper.frames), floor_s=floor_s, cap_hit=keeper.cap_hit,
                      path=mode if mode == "full" else "iframes", rotation=keeper.rotation, width=width, height=height,
                      budget_skipped=keeper.budget_skipped, reason=cap_reason(keeper, span),
                      decoded=stats["decoded"], gops=stats["gops"], gops_decoded=stats["gops_decoded"],
                      max_gop_s=round(stats["max_gop_s"], 3))


CAP_REASON_PREFIX = "keyframe budget"


def cap_reason(keeper: "Keeper", span_s: float) -> str | None:
    """Why frames are missing that the rule would have kept: the budget, or the max_seconds cap."""
    parts = []
    if keeper.budget_skipped:
        parts.append(f"{CAP_REASON_PREFIX} of {keeper.max_frames} frames spread over {span_s:.0f} s: "
                     f"{keeper.budget_skipped} screen change{'s' if keeper.budget_skipped != 1 else ''} not kept "
                     "(raise --max-frames to keep more)")
    if keeper.seconds_cap_hit:
        parts.append(f"frames from the first {keeper.max_seconds:g} s only (max_seconds)")
    return "; ".join(parts) or None


def frame_index_check(rid: str, rows: list[Keyframe] | None = None) -> CheckResult:
    """Every indexed keyframe exists on disk."""
    rows = store.read_rows("keyframes", rid, record=Keyframe) if rows is None else rows
    files = [r.file for r in rows]
    listed: dict[str, set[str]] = {}  # one listing per generation folder, not a stat (a HEAD on S3) per frame

    def stored(key: str) -> bool:
        folder, _, name = key.rpartition("/")
        if folder not in listed:
            listed[folder] = set(store.list_names(folder))
        return name in listed[folder]

    missing = [f for f in files if not stored(f)]
    return CheckResult("frame_index_matches_disk", not missing,
                       f"{len(files) - len(missing)}/{len(files)} indexed keyframes on disk"
                       + (f"; missing e.g. {missing[0]}" if missing else ""))


def _live_generations(rid: str) -> set[str]:
    """Frame folders someone may still read: the keyframes table's and the published manifest's
    (MCP readers serve the manifest, which lags the table until the manifest stage runs)."""
    live = {Path(r.file).parent.name for r in store.read_rows("keyframes", rid, record=Keyframe)}
    published = store.get_json(store.manifest_key(rid), None) or {}
    live |= {Path(i["file"]).parent.name for i in (published.get("frames") or {}).get("items") or [] if i.get("file")}
    return live


PROGRESS_STEP = 0.05  # a progress report each time the scan moved on by this share of the video ...
PROGRESS_MIN_S = 0.25  # ... at most this often, and at least every PROGRESS_QUIET_S while it moves
PROGRESS_QUIET_S = 10.0


def scan_progress(rid: str, span_s: float, clock=time.monotonic, ctx: RunContext | None = None):
    """on_time -> ``ctx.progress`` (default: to nobody): the share of the video scanned (the
    time of the frame the scan is at) and an ETA from this run's pace, each PROGRESS_STEP of the video (at most
    every PROGRESS_MIN_S) or PROGRESS_QUIET_S: at most ~20 lines per scan plus one per 10 s in the Dagster run's
    log."""
    ctx = ctx or RunContext.alone(rid, "keyframes")
    t0 = clock()
    state = {"at": t0, "share": 0.0}

    def on_time(t: float) -> None:
        now = clock()
        share = min(max(t / span_s, 0.0), 1.0) if span_s > 0 else 1.0
        waited = now - state["at"]
        if share <= state["share"] or waited < PROGRESS_MIN_S or (
                share - state["share"] < PROGRESS_STEP and waited < PROGRESS_QUIET_S):
            return
        state.update(at=now, share=share)
        pace = (now - t0) / share
        ctx.progress({"share": share, "what": "the video scanned", "text": f"frames to {hms(t)} of {hms(span_s)}",
                      "eta_s": pace * (1 - share), "next_share": min(1.0, share + PROGRESS_STEP)})

    return on_time



@dataclass(frozen=True)
class Options:
    """What the keyframes stage runs with (built by ``pipeline.options`` from its settings)."""

    max_frames: int  # keyframe budget per recording
    scene_threshold: float  # share of the screen changed at once that is a cut


def run(rid: str, opts: Options, *, ctx: RunContext | None = None) -> StageResult:
    p = probe_row(rid)
    if not p.has_video:
        store.write_table("keyframes", rid, [])
        return StageResult({"frames": 0, "reason": "audio-only recording: no video stream"}, digest([]),
                           [frame_index_check(rid, [])])
    gen = store.new_frames_generation(rid)
    try:
        span_s = min(p.duration_ms / 1000, p.max_seconds) if p.cap_hit else p.duration_ms / 1000
        res = extract(p.path, gen, duration_s=p.duration_ms / 1000, max_frames=int(opts.max_frames),
                      scene_threshold=float(opts.scene_threshold), max_seconds=p.capped_seconds,
                      on_time=scan_progress(rid, span_s, ctx=ctx))
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
    rows = [replace(f, file=f"{rel}/{f.file}") for f in res.frames]
    previous = _live_generations(rid)
    store.publish_frames_generation(gen)  # the JPEGs first, then the table that points at them
    store.write_table("keyframes", rid, rows)
    # keep the previous generation one more round for readers that loaded the old table
    store.prune_frame_generations(rid, keep={gen.name} | previous)
    md = {"frames": len(rows), "floor_s": round(res.floor_s, 3), "decoded_frames": res.decoded,
          "decode_path": res.path, "gops": res.gops, "gops_decoded": res.gops_decoded,
          "max_gop_s": res.max_gop_s, "rotation": res.rotation, "cap_hit": res.cap_hit,
          "budget_skipped": res.budget_skipped, "reason": res.reason or "", "frames_dir": str(gen)}
    return StageResult(md, digest(rows), [frame_index_check(rid, rows)], reason=res.reason)

"""BASELINE (frozen copy of v1, for bench/bench_accuracy.py only). keyframes: ONE decode pass through FFmpeg's select filter (via PyAV), no system ffmpeg.

A frame is kept when its scene score exceeds ``scene_threshold`` OR at least ``floor`` seconds
passed since the last kept frame, with floor = max(1 s, duration / max_frames): the frame budget
covers the whole recording instead of being spent on its head. Kept frames are scaled to at most
``max_width`` px and written as ``t<ms:08d>.jpg`` with their true presentation time.
"""

from __future__ import annotations

import os
from pathlib import Path

from talkthrough_assets.core.errors import BadMediaError
from talkthrough_assets.core.mediaio import open_input
from talkthrough_assets.stages.probe import frame_floor_s

CODE_VERSION = "1"
MAX_WIDTH = 1568
JPEG_QUALITY = 85


def _select_expr(scene_threshold: float, floor_s: float) -> str:
    return (f"gt(scene\\,{scene_threshold:.4f})+isnan(prev_selected_t)"
            f"+gte(t-prev_selected_t\\,{floor_s:.4f})")


def extract(src: str | os.PathLike, out_dir: str | os.PathLike, *, duration_s: float, max_frames: int = 120,
            scene_threshold: float = 0.10, max_width: int = MAX_WIDTH, max_seconds: float | None = None) -> dict:
    """Write keyframes into ``out_dir``; return {"frames": [...], "floor_s", "cap_hit", "decoded"}."""
    import av
    import av.filter

    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    span = min(duration_s, max_seconds) if max_seconds else duration_s
    floor_s = frame_floor_s(span, max_frames)
    frames: list[dict] = []
    decoded = 0
    cap_hit = False
    try:
        container = open_input(src)
    except av.error.FFmpegError as e:
        raise BadMediaError(f"cannot open video: {e}") from None
    with container:
        vids = [s for s in container.streams.video if not (s.disposition & av.stream.Disposition.attached_pic)]
        if not vids:
            raise BadMediaError("no video stream")
        stream = vids[0]
        stream.thread_type = "AUTO"
        cc = stream.codec_context
        graph = av.filter.Graph()
        src_node = graph.add_buffer(template=stream)
        select = graph.add("select", _select_expr(scene_threshold, floor_s))
        # scale only what select kept: never wider than max_width, keep aspect, even height
        scale = graph.add("scale", f"w='min({max_width},iw)':h=-2:flags=bicubic")
        sink = graph.add("buffersink")
        src_node.link_to(select)
        select.link_to(scale)
        scale.link_to(sink)
        graph.configure()
        tb = stream.time_base

        def drain() -> None:
            nonlocal cap_hit
            while True:
                try:
                    f = sink.pull()
                except (av.error.BlockingIOError, av.error.EOFError):
                    return
                if f.pts is None:
                    continue
                ms = int(round(float(f.pts * (f.time_base or tb)) * 1000))
                if max_seconds and ms > max_seconds * 1000:
                    cap_hit = True
                    continue
                if len(frames) >= max_frames:
                    cap_hit = True
                    continue
                name = f"t{ms:08d}.jpg"
                score = f.metadata.get("lavfi.scene_score") if f.metadata else None
                f.to_image().save(out_dir / name, quality=JPEG_QUALITY)
                frames.append({
                    "ms": ms, "file": name, "width": f.width, "height": f.height,
                    "scene_score": float(score) if score is not None else None,
                    "reason": "scene" if score is not None and float(score) > scene_threshold else "interval",
                })

        try:
            for frame in container.decode(stream):
                decoded += 1
                if max_seconds and frame.time is not None and frame.time > max_seconds:
                    cap_hit = True
                    break
                graph.push(frame)
                drain()
        except av.error.FFmpegError as e:
            if decoded == 0:
                raise BadMediaError(f"video stream could not be decoded: {e}") from None
        try:
            graph.push(None)
        except (av.error.EOFError, ValueError):
            pass
        drain()
    if not frames and decoded == 0:
        raise BadMediaError("video stream has no decodable frames")
    return {"frames": frames, "floor_s": floor_s, "cap_hit": cap_hit, "decoded": decoded, "width": cc.width}

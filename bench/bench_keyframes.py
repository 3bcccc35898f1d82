#!/usr/bin/env python3
"""Keyframe extraction (stages.keyframes.extract, one decode pass through FFmpeg's select filter)
vs a plain decode of every frame of the same file: the physical floor.

    python bench/bench_keyframes.py [--file PATH] [--rounds 2] [--seconds N] [--profile]

Default file: the 10-minute 1080p30 screencast from bench/make_long_media.py (generated if missing).
Each round runs every variant once, in the same process, alternating; figures are medians.

  decode         av decode loop, thread_type AUTO, nothing else (the floor)
  extract        the product: talkthrough_assets.stages.keyframes.extract (select + scale + JPEG)
  proto_stride3  prototype: the same code, but only one decoded frame per 0.1 s (every 3rd at 30 fps)
                 goes through the select filter (scene score + bookkeeping); timestamps stay exact
  proto_nonref   prototype: proto_stride3's filter, plus codec skip_frame=NONREF (non-reference
                 B-frames are not decoded at all; ~half the frames of an x264 stream with b-pyramid)

speed = decode wall / variant wall (target for `extract` >= 0.85); cpu = process CPU seconds (all
threads; steadier than wall on a shared machine). "max shift" compares the i-th kept frame's time
with the product's (interval picks drift when fewer frames are decoded: proto_nonref). `--profile`
also samples `extract` with py-spy and prints where its main thread spends its time, per source line.
`--seconds N` is for quick checks only: the keyframe floor is then computed over N seconds, so the
120-frame budget (and its JPEG cost) is spent N/600 times faster than on the full file.
Prototypes live only in this script; product code is unchanged.
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

from talkthrough_assets.mediaio import open_input

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))


def _cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def plain_decode(src: str, max_seconds: float | None = None) -> dict:
    import av

    n = 0
    with av.open(str(src)) as c:
        s = c.streams.video[0]
        s.thread_type = "AUTO"
        for f in c.decode(s):
            n += 1
            if max_seconds and f.time is not None and f.time > max_seconds:
                break
    return {"decoded": n, "frames": 0}


def product_extract(src: str, out_dir: Path, duration_s: float, max_seconds: float | None) -> dict:
    from talkthrough_assets.stages import keyframes

    r = keyframes.extract(src, out_dir, duration_s=duration_s, max_seconds=max_seconds)
    return {"decoded": r["decoded"], "frames": len(r["frames"]), "ms": [f["ms"] for f in r["frames"]]}


def proto_extract(src: str, out_dir: Path, duration_s: float, max_seconds: float | None, *, scene_hz: float = 10.0,
                  skip_nonref: bool = False, max_frames: int = 120, scene_threshold: float = 0.10) -> dict:
    """A copy of keyframes.extract with two changes: the select filter sees only every
    round(fps/scene_hz)-th decoded frame, and optionally the decoder skips non-reference frames."""
    import av
    import av.filter

    from talkthrough_assets.stages import keyframes
    from talkthrough_assets.stages.probe import frame_floor_s

    out_dir.mkdir(parents=True, exist_ok=True)
    span = min(duration_s, max_seconds) if max_seconds else duration_s
    floor_s = frame_floor_s(span, max_frames)
    frames: list[dict] = []
    decoded = 0
    with open_input(src) as container:
        stream = container.streams.video[0]
        stream.thread_type = "AUTO"
        if skip_nonref:
            stream.codec_context.skip_frame = "NONREF"
        step = 1.0 / scene_hz - 1e-6
        graph = av.filter.Graph()
        src_node = graph.add_buffer(template=stream)
        select = graph.add("select", keyframes._select_expr(scene_threshold, floor_s))
        scale = graph.add("scale", f"w='min({keyframes.MAX_WIDTH},iw)':h=-2:flags=bicubic")
        sink = graph.add("buffersink")
        src_node.link_to(select)
        select.link_to(scale)
        scale.link_to(sink)
        graph.configure()
        tb = stream.time_base

        def drain() -> None:
            while True:
                try:
                    f = sink.pull()
                except (av.error.BlockingIOError, av.error.EOFError):
                    return
                ms = int(round(float(f.pts * (f.time_base or tb)) * 1000))
                if (max_seconds and ms > max_seconds * 1000) or len(frames) >= max_frames:
                    continue
                name = f"t{ms:08d}.jpg"
                score = f.metadata.get("lavfi.scene_score") if f.metadata else None
                f.to_image().save(out_dir / name, quality=keyframes.JPEG_QUALITY)
                frames.append({"ms": ms, "file": name, "scene_score": float(score) if score is not None else None})

        pushed, next_t = 0, float("-inf")
        for frame in container.decode(stream):
            decoded += 1
            t = frame.time
            if max_seconds and t is not None and t > max_seconds:
                break
            # sample the scene score at scene_hz: a frame goes in once step seconds passed since the last
            if t is not None and t < next_t:
                continue
            next_t = (t or 0.0) + step
            pushed += 1
            graph.push(frame)
            drain()
        try:
            graph.push(None)
        except (av.error.EOFError, ValueError):
            pass
        drain()
    return {"decoded": decoded, "frames": len(frames), "ms": [f["ms"] for f in frames], "pushed": pushed}


def _offset(a: list[int], b: list[int]) -> str:
    """Max |a_i - b_i| over the i-th kept frames (ms), when both kept the same number."""
    if len(a) != len(b):
        return f"{len(b)} vs {len(a)}"
    return f"{max((abs(x - y) for x, y in zip(a, b)), default=0)} ms"


def profile_extract(src: str, duration_s: float, max_seconds: float | None) -> list[tuple[float, str]]:
    """py-spy the product extract in a child; return [(share, 'file:line what')] of main-thread samples."""
    pyspy = shutil.which("py-spy") or str(Path(sys.executable).parent / "py-spy")
    raw = Path(tempfile.mkdtemp(prefix="tt-kf-prof-")) / "extract.raw"
    child = [sys.executable, __file__, "--_child-extract", src, "--_duration", str(duration_s)]
    if max_seconds:
        child += ["--seconds", str(max_seconds)]
    subprocess.run([pyspy, "record", "-r", "50", "--idle", "-f", "raw", "-o", str(raw), "--", *child],
                   check=True, capture_output=True)
    by_line: Counter = Counter()
    total = 0
    for line in raw.read_text().splitlines():
        stack, n = line.rsplit(" ", 1)
        total += int(n)
        ours = [f for f in stack.split(";") if "keyframes.py" in f]
        by_line[ours[-1] if ours else "(outside keyframes.extract: imports, startup)"] += int(n)
    shutil.rmtree(raw.parent, ignore_errors=True)
    return [(n / total, k) for k, n in by_line.most_common(6)]


LINE_NOTES = {  # what the product lines are (keyframes.py at the time of writing)
    "for frame in container.decode(stream)": "decode (waiting for FFmpeg's decoder threads)",
    "f = sink.pull()": "filter graph: select's scene score (SAD over the full-res frame) + scale",
    "f.to_image().save(": "JPEG: yuv->RGB + PIL encode, kept frames only",
    "graph.push(frame)": "push into the filter graph",
}


def _annotate(where: str) -> str:
    import linecache
    import re

    m = re.search(r"\((.*keyframes\.py):(\d+)\)", where)
    if not m:
        return where
    path = m.group(1) if os.path.isabs(m.group(1)) else str(ROOT / m.group(1))
    code = linecache.getline(path, int(m.group(2))).strip()
    note = next((v for k, v in LINE_NOTES.items() if k in code), "")
    return f"keyframes.py:{m.group(2)}  {code[:60]}" + (f"  <- {note}" if note else "")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--file", help="video to use (default: the 10-min 1080p30 bench screencast)")
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--seconds", type=float, help="only the first N seconds (quick runs)")
    ap.add_argument("--variants", default="decode,extract,proto_stride3,proto_nonref")
    ap.add_argument("--profile", action="store_true", help="also py-spy the product extract (one more run)")
    ap.add_argument("--_child-extract", dest="child", help=argparse.SUPPRESS)
    ap.add_argument("--_duration", dest="duration", type=float, help=argparse.SUPPRESS)
    a = ap.parse_args(argv)

    if a.child:  # profiled child: the product extract only
        with tempfile.TemporaryDirectory() as td:
            product_extract(a.child, Path(td), a.duration, a.seconds)
        return 0

    if a.file:
        src = a.file
    else:
        import make_long_media

        src = str(make_long_media.ensure_media()["screencast"])
    import av

    with av.open(src) as c:
        duration_s = c.duration / 1e6
        v = c.streams.video[0]
        cc = v.codec_context
        desc = f"{cc.width}x{cc.height} {float(v.average_rate):.0f} fps {cc.name}"
    span = min(duration_s, a.seconds) if a.seconds else duration_s
    print(f"file: {src}\n      {desc}, {duration_s:.0f}s (using {span:.0f}s), {os.cpu_count()} CPUs, "
          f"load average {os.getloadavg()[0]:.1f}")

    work = Path(tempfile.mkdtemp(prefix="tt-bench-kf-"))
    fns = {
        "decode": lambda d: plain_decode(src, a.seconds),
        "extract": lambda d: product_extract(src, d, duration_s, a.seconds),
        "proto_stride3": lambda d: proto_extract(src, d, duration_s, a.seconds, scene_hz=10),
        "proto_nonref": lambda d: proto_extract(src, d, duration_s, a.seconds, scene_hz=10, skip_nonref=True),
    }
    names = [n.strip() for n in a.variants.split(",") if n.strip()]
    wall: dict[str, list[float]] = {n: [] for n in names}
    cpu: dict[str, list[float]] = {n: [] for n in names}
    last: dict[str, dict] = {}
    try:
        for r in range(a.rounds):
            for n in names:
                d = work / f"{n}-{r}"
                c0, t0 = _cpu(), time.perf_counter()
                last[n] = fns[n](d)
                wall[n].append(time.perf_counter() - t0)
                cpu[n].append(_cpu() - c0)
                shutil.rmtree(d, ignore_errors=True)
                print(f"  round {r + 1} {n:<14} {wall[n][-1]:7.1f}s wall {cpu[n][-1]:7.1f}s cpu", flush=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)

    base_w = statistics.median(wall["decode"]) if "decode" in wall else None
    base_c = statistics.median(cpu["decode"]) if "decode" in cpu else None
    ref_ms = last.get("extract", {}).get("ms")
    print(f"\n{'variant':<15}{'wall s':>8}{'cpu s':>8}{'x realtime':>11}{'speed vs decode':>17}"
          f"{'cpu vs decode':>15}{'decoded':>9}{'kept':>6}{'max shift vs extract':>22}")
    for n in names:
        w, c = statistics.median(wall[n]), statistics.median(cpu[n])
        sp = f"{base_w / w:.3f}" if base_w else "-"
        cr = f"{c / base_c:.3f}" if base_c else "-"
        same = "-"
        if ref_ms and n != "extract" and last[n].get("ms") is not None:
            same = _offset(ref_ms, last[n]["ms"])
        print(f"{n:<15}{w:>8.1f}{c:>8.1f}{span / w:>11.2f}{sp:>17}{cr:>15}{last[n]['decoded']:>9}"
              f"{last[n]['frames']:>6}{same:>22}")
    if base_w and "extract" in wall:
        s = base_w / statistics.median(wall["extract"])
        print(f"\nextract speed vs plain decode: {s:.3f}  (target >= 0.85: {'met' if s >= 0.85 else 'MISSED'})")
        if base_c:
            print(f"extract cpu overhead over decode: {statistics.median(cpu['extract']) / base_c - 1:+.1%}")

    if a.profile:
        print("\npy-spy (50 Hz, main thread, incl. idle) of the product extract, by source line:")
        for share, where in profile_extract(src, duration_s, a.seconds):
            print(f"  {share:6.1%}  {_annotate(where)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

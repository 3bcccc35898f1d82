#!/usr/bin/env python3
"""Chunked Whisper (stages/segments/chunks.py) against the whole-recording decode, in one run:

    python bench/bench_chunks.py [--parts wer,kill,prefix] [--chunk-s 180] [--stress-s 20] [--only SUBSTR] [--no-eval]

* ``wer``: every eval clip (bench/evalset.py, ~/.cache/talkthrough-eval) and the 30-min bench meeting
  (bench/make_long_media.py) decoded whole (``transcribe.transcribe``, the stage before chunking) and in chunks
  (``chunks.transcribe_chunked`` with an in-memory store) at ``--chunk-s``; with ``--stress-s`` the eval clips
  also at that much smaller size (the eval clips are shorter than a real chunk, so there a chunk is the clip).
  Per clip: WER both ways and the difference (target: within 0.3 points), words whose time moved, time ratio
  (target: total within 5 %).
* ``kill``: ``talkthrough process`` of the meeting in a fresh data root (clean run, timed), then in another fresh
  root the same run killed with SIGKILL at 60 % of the clean run's time and run again: the re-run's time over
  the clean run's (target <= 0.5) and whether the transcript is identical to the clean run's.
* ``prefix`` (not in the default parts): the meeting's first ``--prefix-s`` (1200) seconds cut out of it the way an
  export of a shorter take would be (PyAV, its AAC packets copied, nothing re-encoded); first whether the decoded
  16 kHz samples of the cut are the 30-min file's first samples (and the same for a 48-kHz stereo AAC take,
  which goes through the resampler: ``--prefix-48k-s``), then ``talkthrough process`` of the cut in a data root,
  of the 30-min file in the same root, and of the 30-min file in a fresh root: chunks reused / decoded (from the
  stored keys before the run against the recording's ``chunks`` table), wall and CPU seconds of the whole run
  and of the segments stage, and whether the transcripts are identical; before that the same with the segments
  stage's work alone in this process (``chunks.transcribe_chunked``, wall and CPU; ``--no-process``: only that).
* ``ab`` (not in the default parts): the time of chunking alone, made robust against a loaded machine: the
  meeting's first ``--meeting-s`` seconds (default: all of it) decoded whole and in chunks alternately (ABAB...,
  ``--repeat`` pairs, one warm model, the in-memory store empty each time), wall and CPU seconds (this process's
  threads) of each, the medians and the median of the pairs' ratios, with the load average; the encoder passes
  each way (a chunk's last window is padded to 30 s like any window: the structural cost of a cut), and the
  planning's own cost (VAD over the search windows, the keys' sha256).
"""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))
sys.path.insert(0, str(ROOT / "tests"))

import bench_asr as BA  # noqa: E402  (the eval clips, the meeting's reference, WER)
from fixture_facts import copy_audio_packets  # noqa: E402  (a packet-copied cut: an export of a shorter take)


def _engine():
    """The segments stage's default options and the engine they name (the process's Whisper)."""
    from talkthrough_assets.stages.segments.engine import Engine
    from talkthrough_assets.stages.segments.options import Options

    opts = Options()
    return opts, Engine.of(opts)


def _wer(clip: dict, segs) -> tuple[float | None, dict]:
    r = BA.score(clip, segs)
    return (100 * r["errors"] / max(r["ref_words"], 1) if "errors" in r else None), r


def part_wer(args) -> None:
    from talkthrough_assets.store import models
    from talkthrough_assets.stages.segments import chunks as C
    from talkthrough_assets.stages.segments import transcribe as T
    from talkthrough_assets.stages.segments import engine as segments_engine

    ref, label = models.resolve_whisper()
    opts, engine = _engine()
    segments_engine.default_whisper().warm(ref)
    clips = [] if args.no_eval else BA.clips(args.only, long=False)
    if not args.only or args.only in "meeting":
        import make_long_media as ml

        paths = ml.ensure_media(quiet=True)
        clips.append({"name": ml.MEETING, "path": paths["meeting"], "kind": "asr",
                      "ref": BA.spoken_script("meeting"), "cut_s": None, "long": True})
    sizes = [("chunked", args.chunk_s)] + ([("stress", args.stress_s)] if args.stress_s else [])
    print(f"model {label}; {len(clips)} clips; chunk {args.chunk_s:.0f} s"
          + (f", stress {args.stress_s:.0f} s on the eval clips" if args.stress_s else ""))
    print(f"{'clip':40} {'whole WER':>9} " + " ".join(f"{n + ' WER':>12} {'d':>5} {'moved':>5} {'n':>3}" for n, _ in sizes)
          + f" {'whole s':>7} " + " ".join(f"{n + ' s':>10}" for n, _ in sizes))
    tot = {"whole": 0.0, **{n: 0.0 for n, _ in sizes}}
    tot_long = {"whole": 0.0, **{n: 0.0 for n, _ in sizes}}
    worst = {n: 0.0 for n, _ in sizes}
    identical = {n: 0 for n, _ in sizes}
    for clip in clips:
        samples = BA._decode(clip["path"])
        if clip.get("long") and args.meeting_s:
            samples = samples[:int(args.meeting_s * 16000)]
            clip = dict(clip, ref=_ref_until(clip["ref"], args.meeting_s))
        t = time.perf_counter()
        whole = T.finish(T.decode(samples, opts, engine))
        tw = time.perf_counter() - t
        w_wer, _ = _wer(clip, [(s.t0_ms / 1000, s.text) for s in whole.segments])
        cells, secs = [], []
        tot["whole"] += tw
        if clip.get("long"):
            tot_long["whole"] += tw
        for name, size in sizes:
            if name == "stress" and clip.get("long"):
                cells.append(f"{'':>12} {'':>5} {'':>5} {'':>3}")
                secs.append(f"{'':>10}")
                continue
            mem: dict[str, bytes] = {}
            t = time.perf_counter()
            done = C.transcribe_chunked(samples, opts, engine, fp="bench", load=mem.get, save=mem.__setitem__,
                                        bounds=C.plan(samples, size))
            out = done.transcript
            tc = time.perf_counter() - t
            tot[name] += tc
            if clip.get("long"):
                tot_long[name] += tc
            c_wer, _ = _wer(clip, [(s.t0_ms / 1000, s.text) for s in out.segments])
            same = [(s.t0_ms, s.t1_ms, s.text) for s in out.segments] == \
                   [(s.t0_ms, s.t1_ms, s.text) for s in whole.segments]
            identical[name] += same
            moved = _moved_words(whole.words, out.words)
            d = (c_wer - w_wer) if (c_wer is not None and w_wer is not None) else None
            if d is not None:
                worst[name] = max(worst[name], d)
            n_words = len(out.words)
            cells.append(f"{(f'{c_wer:.2f}%' if c_wer is not None else f'{n_words}w'):>12} "
                         f"{(f'{d:+.2f}' if d is not None else '-'):>5} {moved:>5} {done.report.total:>3}")
            secs.append(f"{tc:>10.1f}")
        whole_cell = f"{w_wer:.2f}%" if w_wer is not None else f"{len(whole.words)}w"
        print(f"{clip['name'][:40]:40} {whole_cell:>9} "
              + " ".join(cells) + f" {tw:>7.1f} " + " ".join(secs), flush=True)
    print("\n== totals")
    for name, _ in sizes:
        print(f"{name}: worst WER difference {worst[name]:+.2f} points; transcripts identical to whole on "
              f"{identical[name]} of {len(clips) - (1 if name == 'stress' and clips and clips[-1].get('long') else 0)} "
              f"clips; time {tot[name]:.1f} s vs whole {tot['whole']:.1f} s = {tot[name] / max(tot['whole'], 1e-9):.3f}x")
    if tot_long["whole"]:
        print(f"meeting alone: chunked {tot_long['chunked']:.1f} s vs whole {tot_long['whole']:.1f} s = "
              f"{tot_long['chunked'] / tot_long['whole']:.3f}x")


def _ref_until(ref: str, seconds: float) -> str:
    """The meeting's reference text up to ``seconds`` (its lines in order, timed as make_long_media placed them)."""
    import make_long_media as ml

    lines, gap_s = ml.MEETING_LINES, 0.7
    clips = ml._tts_cache([("espeak-ng", v, t, 150) for v, t in lines])
    out, t, k = [], 0.5, 0
    while True:
        v, text = lines[k % len(lines)]
        t_end = t + len(clips[("espeak-ng", v, text)]) / ml.SR
        if t_end > seconds:
            break
        out.append(text)
        t = t_end + gap_s + (0.4 if k % 3 == 2 else 0.0)
        k += 1
    return " ".join(out)


def _moved_words(a, b, tol_ms: int = 100, near_ms: int = 2000) -> int:
    """Words of ``b`` whose nearest same word in ``a`` (within ``near_ms``) starts more than ``tol_ms`` away. A
    nearest-in-time match, not a text alignment: the bench meeting repeats one script every ~72 s, and a
    text alignment could pair a word with its twin one cycle away (3 271 "moved" words where 0.3 % moved)."""
    import bisect

    by_word: dict[str, list[int]] = {}
    for w in a:
        by_word.setdefault(w.word.strip().lower(), []).append(w.t0_ms)
    for times in by_word.values():
        times.sort()
    moved = 0
    for w in b:
        times, t = by_word.get(w.word.strip().lower(), []), w.t0_ms
        i = bisect.bisect_left(times, t)
        near = min((abs(times[j] - t) for j in (i - 1, i) if 0 <= j < len(times)), default=None)
        moved += near is not None and tol_ms < near <= near_ms
    return moved


def _process(home: Path, media: Path, kill_after: float | None = None) -> tuple[float, int]:
    env = dict(os.environ, TALKTHROUGH_HOME=str(home), DAGSTER_HOME=str(home / "dagster"))
    cmd = [sys.executable, "-m", "talkthrough_assets.cli.main", "process", str(media), "--json"]
    t = time.perf_counter()
    p = subprocess.Popen(cmd, env=env, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                         start_new_session=True)
    if kill_after is None:
        rc = p.wait()
    else:
        try:
            rc = p.wait(timeout=kill_after)
        except subprocess.TimeoutExpired:
            os.killpg(p.pid, signal.SIGKILL)
            rc = p.wait()
    return time.perf_counter() - t, rc


def _transcript(home: Path) -> list[tuple]:
    import pyarrow.parquet as pq

    files = sorted((home / "tables" / "segments").rglob("*.parquet"))
    files = [f for f in files if "__schema__" not in str(f)]
    return [(r["t0_ms"], r["t1_ms"], r["text"]) for f in files for r in pq.read_table(f).to_pylist()]


def _chunk_files(home: Path) -> int:
    return len([p for p in (home / "chunks").rglob("*") if p.is_file()]) if (home / "chunks").exists() else 0


def _duration_h(media: Path) -> float:
    import av

    with av.open(str(media)) as c:
        return c.duration / 1e6 / 3600


def part_kill(args) -> None:
    import make_long_media as ml

    media = ml.ensure_media(quiet=True)["meeting"]
    work = Path(tempfile.mkdtemp(prefix="bench-chunks-"))
    try:
        clean_home, crash_home = work / "clean", work / "crash"
        clean_s, rc = _process(clean_home, media)
        assert rc == 0, f"clean run failed (exit {rc})"
        clean = _transcript(clean_home)
        chunk_bytes = sum(p.stat().st_size for p in (clean_home / "chunks" / "whisper").rglob("*.bin"))
        print(f"chunk results of the clean run: {chunk_bytes / 1024:.0f} KiB for {_duration_h(media):.2f} h of audio "
              f"= {chunk_bytes / 1024 / _duration_h(media):.0f} KiB per hour", flush=True)
        kill_at = 0.6 * clean_s
        killed_s, rc = _process(crash_home, media, kill_after=kill_at)
        stored = _chunk_files(crash_home)
        rerun_s, rc2 = _process(crash_home, media)
        assert rc2 == 0, f"re-run failed (exit {rc2})"
        again = _transcript(crash_home)
        print(f"\n== kill -9 at 60 % ({kill_at:.1f} s) of a clean run of {media.name}")
        print(f"clean run {clean_s:.1f} s ({len(clean)} segments); killed run {killed_s:.1f} s (exit {rc}), "
              f"{stored} chunk result(s) stored before the kill")
        print(f"re-run {rerun_s:.1f} s = {rerun_s / clean_s:.2f}x the clean run (target <= 0.5); "
              f"transcript identical to the clean run's: {again == clean}")
    finally:
        shutil.rmtree(work, ignore_errors=True)


def part_ab(args) -> None:
    import statistics

    from faster_whisper import WhisperModel

    import make_long_media as ml
    from talkthrough_assets.store import models
    from talkthrough_assets.stages.segments import chunks as C
    from talkthrough_assets.stages.segments import transcribe as T
    from talkthrough_assets.stages.segments import engine as segments_engine

    ref, label = models.resolve_whisper()
    opts, engine = _engine()
    segments_engine.default_whisper().warm(ref)
    samples = BA._decode(ml.ensure_media(quiet=True)["meeting"])
    if args.meeting_s:
        samples = samples[:int(args.meeting_s * 16000)]
    encodes = [0]
    real_encode = WhisperModel.encode

    def counting_encode(self, features):  # counts the encoder passes (the adapter's encode calls it)
        encodes[0] += 1
        return real_encode(self, features)

    WhisperModel.encode = counting_encode
    c0, w0 = time.process_time(), time.perf_counter()
    bounds = C.plan(samples, args.chunk_s)
    C.chain_keys(samples, bounds, "bench")
    plan_cpu, plan_wall = time.process_time() - c0, time.perf_counter() - w0
    print(f"== whole vs {len(bounds)} chunks of ~{args.chunk_s:.0f} s, {len(samples) / 16000 / 60:.1f} min of the meeting, "
          f"{args.repeat} ABAB pairs ({label}, {segments_engine.cpu_threads()} threads)")
    print(f"planning + keys: {plan_cpu:.2f} s CPU / {plan_wall:.2f} s wall")

    def whole():
        return T.finish(T.decode(samples, opts, engine))

    def chunked():
        mem: dict[str, bytes] = {}
        return C.transcribe_chunked(samples, replace(opts, chunk_s=args.chunk_s), engine, fp="bench", load=mem.get,
                                    save=mem.__setitem__).transcript

    runs: dict[str, list[tuple[float, float, int, float]]] = {"whole": [], "chunked": []}
    texts = {}
    for i in range(args.repeat):
        for name, fn in (("whole", whole), ("chunked", chunked)) if i % 2 == 0 else (("chunked", chunked), ("whole", whole)):
            load = os.getloadavg()[0]
            encodes[0] = 0
            c0, w0 = time.process_time(), time.perf_counter()
            out = fn()
            wall, cpu = time.perf_counter() - w0, time.process_time() - c0
            runs[name].append((wall, cpu, encodes[0], load))
            texts[name] = [s.text for s in out.segments]
            print(f"  {i + 1}. {name:8} {wall:7.1f} s wall {cpu:7.1f} s CPU {encodes[0]:>4} encoder passes  "
                  f"(load {load:.1f})", flush=True)
    WhisperModel.encode = real_encode
    med = {n: (statistics.median(r[0] for r in v), statistics.median(r[1] for r in v)) for n, v in runs.items()}
    pair_w = statistics.median(c[0] / w[0] for c, w in zip(runs["chunked"], runs["whole"]))
    pair_c = statistics.median(c[1] / w[1] for c, w in zip(runs["chunked"], runs["whole"]))
    print(f"median whole {med['whole'][0]:.1f} s wall / {med['whole'][1]:.1f} s CPU; chunked {med['chunked'][0]:.1f} s / "
          f"{med['chunked'][1]:.1f} s")
    print(f"chunked / whole: wall {med['chunked'][0] / med['whole'][0]:.3f}x (median of pairs {pair_w:.3f}x), "
          f"CPU {med['chunked'][1] / med['whole'][1]:.3f}x (median of pairs {pair_c:.3f}x); encoder passes "
          f"{runs['chunked'][0][2]} vs {runs['whole'][0][2]}; load {min(r[3] for v in runs.values() for r in v):.1f}-"
          f"{max(r[3] for v in runs.values() for r in v):.1f}; same words: "
          f"{' '.join(texts['chunked']).split() == ' '.join(texts['whole']).split()}")


def _same_samples(long_path: Path, short_path: Path, work: Path, label: str) -> None:
    """Print whether the short file's decoded 16-kHz samples are the long file's first ones."""
    import numpy as np

    from talkthrough_assets.stages import audio as A
    from talkthrough_assets.stages.segments import chunks as C

    A.extract_wav(long_path, work / "long.wav")
    A.extract_wav(short_path, work / "short.wav")
    a, b = A.load_wav(work / "long.wav"), A.load_wav(work / "short.wav")
    n = min(len(a), len(b))
    diff = np.nonzero(a[:n] != b[:n])[0]
    where = (f"the first {diff[0]} of {len(b)} samples identical ({len(diff)} differ, from the cut's last "
             f"{len(b) - diff[0]} on)") if len(diff) else f"all {len(b)} samples identical"
    pa, pb = C.plan(a), C.plan(b)
    ka, kb = set(C.chain_keys(a, pa, "bench")), C.chain_keys(b, pb, "bench")
    print(f"{label}: {where}; chunk keys of the cut also in the long file's plan: "
          f"{sum(k in ka for k in kb)} of {len(kb)}", flush=True)


def _run_json(home: Path, media: Path) -> tuple[dict, float, float]:
    """``talkthrough process --json`` in ``home``: (its summary, wall s, CPU s of it and its children)."""
    import json
    import resource

    env = dict(os.environ, TALKTHROUGH_HOME=str(home), DAGSTER_HOME=str(home / "dagster"))
    cmd = [sys.executable, "-m", "talkthrough_assets.cli.main", "process", str(media), "--json"]
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    t = time.perf_counter()
    p = subprocess.run(cmd, env=env, cwd=ROOT, capture_output=True, text=True)
    wall = time.perf_counter() - t
    ru2 = resource.getrusage(resource.RUSAGE_CHILDREN)
    assert p.returncode == 0, p.stderr[-2000:]
    out = json.loads(p.stdout)
    out = out[0] if isinstance(out, list) else out
    return out, wall, (ru2.ru_utime - ru.ru_utime) + (ru2.ru_stime - ru.ru_stime)


def _rows(home: Path, table: str, rid: str) -> list[dict]:
    import pyarrow.parquet as pq

    files = sorted((home / "tables" / table / f"recording={rid}").glob("*.parquet"))
    return [r for f in files for r in pq.read_table(f).to_pylist()]


def _stored_keys(home: Path) -> set[str]:
    return {p.stem for p in (home / "chunks" / "whisper").rglob("*.bin")} if (home / "chunks").exists() else set()


def part_prefix(args) -> None:
    import make_long_media as ml

    media = ml.ensure_media(quiet=True)["meeting"]
    work = Path(tempfile.mkdtemp(prefix="bench-prefix-"))
    load0 = os.getloadavg()
    try:
        short = copy_audio_packets(media, work / f"meeting_first{args.prefix_s / 60:.0f}min.m4a", args.prefix_s)
        print(f"== a longer take sharing its first {args.prefix_s / 60:.0f} min with a processed one "
              f"(chunk {args.chunk_s:.0f} s)")
        _same_samples(media, short, work, f"{media.name} (16 kHz AAC) cut at {args.prefix_s:.0f} s by packet copy")
        if args.prefix_48k_s:
            _same_samples(*_take_48k(media, work, args.prefix_48k_s), work,
                          f"a 48-kHz stereo AAC take of its first {args.prefix_48k_s * 1.3:.0f} s cut at "
                          f"{args.prefix_48k_s:.0f} s")
        _prefix_whisper(media, short, args)
        if args.no_process:
            return
        shared, fresh = work / "shared", work / "fresh"
        os.environ["TALKTHROUGH_CHUNK_S"] = str(args.chunk_s)
        runs = {}
        for name, home, path in (("cut, first root", shared, short), ("30 min, fresh root", fresh, media),
                                 ("30 min, same root", shared, media)):
            before = _stored_keys(home)
            out, wall, cpu = _run_json(home, path)
            rid = out["recording_id"]
            plan = sorted(_rows(home, "chunks", rid), key=lambda r: r["idx"])
            stage = {r["stage"]: r for r in _rows(home, "stage_runs", rid)}
            reused = sum(r["key"] in before for r in plan)
            new = [r for r in plan if r["key"] not in before]
            runs[name] = {"wall": wall, "cpu": cpu, "seg": stage["segments"]["elapsed_s"],
                          "text": [(s["t0_ms"], s["t1_ms"], s["text"]) for s in
                                   sorted(_rows(home, "segments", rid), key=lambda s: s["seq"])]}
            span = f"{new[0]['t0_ms'] / 1000:.0f}-{new[-1]['t1_ms'] / 1000:.0f} s" if new else "-"
            print(f"{name:20} {len(plan):>3} chunks: {reused:>2} reused, {len(new):>2} decoded ({span}); "
                  f"process {wall:6.1f} s wall / {cpu:6.1f} s CPU; segments stage {runs[name]['seg']:6.1f} s",
                  flush=True)
        a, b = runs["30 min, same root"], runs["30 min, fresh root"]
        print(f"30 min after the cut vs fresh: process {a['wall'] / b['wall']:.2f}x wall, {a['cpu'] / b['cpu']:.2f}x CPU; "
              f"segments stage {a['seg'] / b['seg']:.2f}x; transcripts identical: {a['text'] == b['text']}")
        print(f"load average {load0[0]:.1f} at the start, {os.getloadavg()[0]:.1f} at the end")
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _prefix_whisper(media: Path, short: Path, args) -> None:
    """The segments stage's work alone, in this process (one warm model; wall and this process's CPU seconds):
    the cut into a store, then the 30-min file with that store, then the 30-min file with an empty store."""
    from talkthrough_assets.store import models
    from talkthrough_assets.stages.segments import chunks as C
    from talkthrough_assets.stages.segments import engine as segments_engine

    ref, label = models.resolve_whisper()
    segments_engine.default_whisper().warm(ref)
    long_s, short_s = BA._decode(media), BA._decode(short)
    shared: dict[str, bytes] = {}
    res = {}
    for name, samples, mem in (("cut, empty store", short_s, shared), ("30 min, same store", long_s, shared),
                               ("30 min, empty store", long_s, {})):
        load = os.getloadavg()[0]
        c0, w0 = time.process_time(), time.perf_counter()
        opts, engine = _engine()
        out = C.transcribe_chunked(samples, replace(opts, chunk_s=args.chunk_s), engine, fp="bench", load=mem.get,
                                   save=mem.__setitem__)
        res[name] = (time.perf_counter() - w0, time.process_time() - c0, out.transcript.segments)
        ch = out.report
        print(f"Whisper alone, {name:20} {ch.total:>3} chunks: {ch.reused:>2} reused, {ch.decoded:>2} decoded; "
              f"{res[name][0]:6.1f} s wall / {res[name][1]:6.1f} s CPU (load {load:.1f})", flush=True)
    a, b = res["30 min, same store"], res["30 min, empty store"]
    print(f"Whisper alone, 30 min after the cut vs from nothing: {a[0] / b[0]:.2f}x wall, {a[1] / b[1]:.2f}x CPU; "
          f"transcripts identical: {a[2] == b[2]}", flush=True)


def _take_48k(media: Path, work: Path, cut_s: float) -> tuple[Path, Path]:
    """A 48-kHz stereo AAC file of the meeting's first 1.3 x ``cut_s`` seconds and its first ``cut_s`` by packet
    copy (a recorder's usual format: the 16-kHz samples come out of the resampler)."""
    import av

    take = work / "take48k.m4a"
    with av.open(str(media)) as i, av.open(str(take), "w") as o:
        st = o.add_stream("aac", rate=48000)
        st.layout = "stereo"
        rs = av.AudioResampler(format="fltp", layout="stereo", rate=48000)
        for fr in i.decode(audio=0):
            if fr.pts is not None and fr.pts * fr.time_base > 1.3 * cut_s:
                break
            for f in rs.resample(fr):
                for p in st.encode(f):
                    o.mux(p)
        for f in rs.resample(None):
            for p in st.encode(f):
                o.mux(p)
        for p in st.encode(None):
            o.mux(p)
    return take, copy_audio_packets(take, work / "take48k_cut.m4a", cut_s)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--parts", default="wer,kill")
    ap.add_argument("--chunk-s", type=float, default=None)
    ap.add_argument("--stress-s", type=float, default=0.0)
    ap.add_argument("--only")
    ap.add_argument("--no-eval", action="store_true", help="the meeting alone")
    ap.add_argument("--meeting-s", type=float, default=0.0, help="only the meeting's first this many seconds")
    ap.add_argument("--no-process", action="store_true", help="prefix: Whisper alone, no `process` runs")
    ap.add_argument("--repeat", type=int, default=3, help="ab: pairs of runs (whole, chunked)")
    ap.add_argument("--prefix-s", type=float, default=1200.0, help="prefix: the shorter take's length")
    ap.add_argument("--prefix-48k-s", type=float, default=370.0, help="prefix: the 48-kHz take's cut (0: none)")
    args = ap.parse_args()
    from talkthrough_assets.stages.segments import chunks as C

    args.chunk_s = args.chunk_s or C.CHUNK_S
    parts = args.parts.split(",")
    if "wer" in parts:
        part_wer(args)
    if "kill" in parts:
        part_kill(args)
    if "prefix" in parts:
        part_prefix(args)
    if "ab" in parts:
        part_ab(args)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

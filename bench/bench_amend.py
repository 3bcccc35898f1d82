#!/usr/bin/env python3
"""Amends vs the work they stand for: a diarize amend vs diarization alone, a re-anchor vs nothing
(target < 2 s), both vs a full run of the same file; all in one process, alternating rounds.

    python bench/bench_amend.py [--file PATH ...] [--rounds 3]

Default files: fixtures/two_voices.m4a (28 s) and the 3-min two-voice file from
bench/make_long_media.py. Per file, in a fresh TALKTHROUGH_HOME:

  setup          service.process(file) (plain, no diarization); one diarization call to load the engine
  diarize alone  stages.turns.run_turns(wav, segments, words, num_speakers=2): the stage function,
                 called directly (the baseline)
  diarize amend  service.process(file, overrides={"diarize": True, "num_speakers": 2}) after a plain
                 state: must run exactly turns + manifest (target <= 1.2 x diarize alone)
  re-anchor      service.process(file, overrides={"recorded_at": ...}): wall_clock + manifest (< 2 s)
  full run       service.process(file, force=True) with diarization on (warm models)

Diarization models: $TALKTHROUGH_DIARIZATION_MODELS, else ../shared/models/diarization when present
(what the tests use), else the pinned download.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))


def bench_file(path: str, rounds: int) -> dict:
    from talkthrough_assets.stages import runner
    from talkthrough_assets.app import service
    from talkthrough_assets import store
    from talkthrough_assets.model.transcript import Segment, Word
    from talkthrough_assets.stages import audio as audio_stage
    from talkthrough_assets.stages import turns as diarize_stage

    t = time.perf_counter()
    first = service.process(path, overrides={"diarize": False})
    assert first["status"] == "processed", first
    cold = time.perf_counter() - t
    rid = first["recording_id"]
    wav = store.audio_path(rid)
    segs, words = store.read_rows("segments", rid, record=Segment), store.read_rows("words", rid, record=Word)
    media_s = len(audio_stage.load_wav(wav)) / audio_stage.SAMPLE_RATE

    def diarize_alone():
        out = diarize_stage.run_turns(wav, segments=segs, words=words, num_speakers=2, threshold=0.5)
        d = out.diarization
        if not d.available:
            raise SystemExit(f"diarization unavailable: {d.reason} (set TALKTHROUGH_DIARIZATION_MODELS)")
        return len(out.speakers)

    t = time.perf_counter()
    speakers = diarize_alone()  # warm-up: engine load
    warm_up = time.perf_counter() - t
    res: dict[str, list[float]] = {"diarize alone": [], "diarize amend": [], "re-anchor": []}
    for r in range(rounds):
        t = time.perf_counter()
        diarize_alone()
        res["diarize alone"].append(time.perf_counter() - t)

        t = time.perf_counter()
        out = service.process(path, overrides={"diarize": True, "num_speakers": 2})
        res["diarize amend"].append(time.perf_counter() - t)
        assert out["status"] == "processed" and out["stages_run"] == ["turns", "manifest"], out
        assert out["diarized"], out

        t = time.perf_counter()
        out = service.process(path, overrides={"recorded_at": f"2026-05-{r + 1:02d}T10:00:00+02:00"})
        res["re-anchor"].append(time.perf_counter() - t)
        assert out["status"] == "processed" and out["stages_run"] == ["wall_clock", "manifest"], out

        service.process(path, overrides={"diarize": False})  # back to plain for the next amend (untimed)
    service.process(path, overrides={"diarize": True, "num_speakers": 2})
    t = time.perf_counter()
    out = service.process(path, force=True)
    full = time.perf_counter() - t
    assert out["status"] == "processed" and out["diarized"], out
    stages = {r.stage: r.elapsed_s for r in runner.stage_state(rid).values()}
    return {"path": path, "media_s": media_s, "speakers": speakers, "cold_first_s": cold, "warm_up_s": warm_up,
            "rounds": res, "full_s": full, "full_stages": stages}


def print_report(r: dict) -> None:
    base = statistics.median(r["rounds"]["diarize alone"])
    full = r["full_s"]
    print(f"\n== {Path(r['path']).name}: {r['media_s']:.0f} s of audio, {r['speakers']} speakers found ==")
    print(f"   first plain process (cold, incl. model loads) {r['cold_first_s']:.1f}s; "
          f"diarization engine warm-up {r['warm_up_s']:.1f}s")
    print(f"{'measurement':<16}{'median s':>9}{'min s':>8}{'x diarize alone':>17}{'x full run':>12}  target")
    targets = {"diarize amend": lambda m: ("<= 1.2 x alone: " + ("met" if m / base <= 1.2 else "MISSED")),
               "re-anchor": lambda m: ("< 2 s: " + ("met" if m < 2 else "MISSED"))}
    for k, xs in r["rounds"].items():
        m = statistics.median(xs)
        tgt = targets[k](m) if k in targets else ""
        print(f"{k:<16}{m:>9.2f}{min(xs):>8.2f}{m / base:>17.2f}{m / full:>12.3f}  {tgt}")
    print(f"{'full run (warm)':<16}{full:>9.2f}{full:>8.2f}{full / base:>17.2f}{1.0:>12.3f}")
    st = r["full_stages"]
    print("   full run stages: " + ", ".join(f"{k} {v:.1f}s" for k, v in st.items() if v >= 0.05))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--file", nargs="*", help="two-voice audio files (default: fixture + 3-min bench file)")
    ap.add_argument("--rounds", type=int, default=3)
    a = ap.parse_args(argv)
    files = a.file
    if not files:
        import make_long_media

        files = [str(ROOT / "fixtures" / "two_voices.m4a"), str(make_long_media.ensure_media()["two_voices"])]
    shared = ROOT.parent / "shared" / "models" / "diarization"
    if not os.environ.get("TALKTHROUGH_DIARIZATION_MODELS") and shared.is_dir():
        os.environ["TALKTHROUGH_DIARIZATION_MODELS"] = str(shared)
    models = os.environ.get("TALKTHROUGH_DIARIZATION_MODELS") or "pinned download"
    print(f"{os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f}; diarization models: {models}")
    for f in files:
        home = Path(tempfile.mkdtemp(prefix="tt-bench-amend-"))
        os.environ["TALKTHROUGH_HOME"] = str(home)
        os.environ.pop("DAGSTER_HOME", None)
        try:
            print_report(bench_file(f, a.rounds))
        finally:
            shutil.rmtree(home, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())

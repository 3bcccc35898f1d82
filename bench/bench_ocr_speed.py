#!/usr/bin/env python3
"""OCR CPU before/after issue #33, one run: the same unique keyframes read by the reads before #33
(bench/baseline/ocr_issue33_before.py: RapidOCR's default spinning sessions, whole-width dedup bands, every
line recognised) and by the ocr stage's own path now (``ocr.read_frames``: narrow bands, line-level reuse,
batched recognition, non-spinning sessions on ``cpu_plan``'s threads), in alternating order.

    python bench/bench_ocr_speed.py [--skip-long] [--only NAME_PART ...] [--beside-whisper]

Files: the fixtures, ../shared/eval/media/video and the 10-min bench screencast (bench/make_long_media.py).
``--beside-whisper``: the thread plan as in a run where Whisper decodes meanwhile (OCR on what Whisper
leaves); default: OCR alone. Words: 3+ letters, upper-cased, per file (as bench_ocr_engines.py). CPU: this
process's user+sys seconds of the reads (models loaded and warmed before). A fresh store: nothing reused.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import resource
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT / "bench"), str(ROOT / "bench" / "baseline"), str(ROOT / "tests")]


def cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def frames(path: str, workdir: Path) -> tuple[list[dict], list]:
    """The unique keyframes with the bands dedup gave before #33 and gives now."""
    import ocr_issue33_before as before

    from talkthrough_assets.stages import dedup
    from talkthrough_assets.model import frames as frames_model
    from talkthrough_assets.store.schemas import as_row
    from talkthrough_assets.stages import keyframes
    from talkthrough_assets.pipeline import settings as S
    from talkthrough_assets.stages import probe
    from talkthrough_assets.stages.ocr.records import FrameToRead

    d = workdir / Path(path).stem
    r = dataclasses.asdict(keyframes.extract(path, d, duration_s=probe.probe_file(path).duration_ms / 1000,
                          max_frames=S.DEFAULTS["max_frames"]))
    sigs = [dedup.signature(d / f["file"]) for f in r["frames"]]
    marks = [as_row(m) for m in dedup.mark([f["ms"] for f in r["frames"]], sigs)]
    now, old, head = [], [], None
    for f, m, s in zip(r["frames"], marks, sigs):
        if m["duplicate_of"] is not None:
            continue
        bands = frames_model.bands(m)
        now.append(FrameToRead(ms=f["ms"], path=d / f["file"], bands=frames_model.FrameChange.from_row(m).changed))
        old.append({"ms": f["ms"], "path": d / f["file"],
                    "bands": before.changed_bands(head, s) if head is not None and bands is not None else None})
        head = s
    return old, now


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--skip-long", action="store_true")
    ap.add_argument("--only", action="append", default=[])
    ap.add_argument("--beside-whisper", action="store_true")
    a = ap.parse_args()
    os.environ["TALKTHROUGH_HOME"] = tempfile.mkdtemp(prefix="tt-bench-ocrspeed-")
    import ocr_issue33_before as before
    from bench_ocr_engines import references, words

    from talkthrough_assets.stages import cpu_plan
    from talkthrough_assets.stages import ocr
    from talkthrough_assets.stages.ocr import engine as ocr_engine

    old_engine, _ = before.engine_status(True)
    new_engine, status = ocr_engine.OcrEngine().status(True)
    if new_engine is None:
        print(status)
        return 2
    files = list(references(a.skip_long))
    if a.only:
        files = [f for f in files if any(o in Path(f).name for o in a.only)]
    work = Path(tempfile.mkdtemp(prefix="tt-bench-ocrspeed-frames-"))
    with cpu_plan.running("segments") if a.beside_whisper else _nothing():
        print(f"load average {open('/proc/loadavg').read().split()[0]}; OCR threads now {cpu_plan.ocr_threads()}")
        warm_old, warm_new = frames(str(ROOT / "fixtures" / "screencast.mp4"), work / "warm")
        before.read_frames(old_engine, warm_old[:1])
        ocr.read_frames(new_engine, warm_new[:1])
        print(f"\n{'file':<34}{'frames':>7}{'words before':>13}{'after':>7}{'cpu before':>11}{'after':>7}{'ratio':>7}  lost")
        tot = [0, 0, 0.0, 0.0]
        for i, f in enumerate(files):
            old, now = frames(f, work)
            got, secs = {}, {}
            for k in (("before", "after") if i % 2 == 0 else ("after", "before")):
                c = cpu()
                res = before.read_frames(old_engine, old) if k == "before" else ocr.read_frames(new_engine, now)
                secs[k] = cpu() - c
                got[k] = set().union(*(words(r["text"] if k == "before" else r.text) for r in res)) if res else set()
            tot[0] += len(got["before"]); tot[1] += len(got["after"]); tot[2] += secs["before"]; tot[3] += secs["after"]
            print(f"{Path(f).name[:33]:<34}{len(now):>7}{len(got['before']):>13}{len(got['after']):>7}"
                  f"{secs['before']:>11.1f}{secs['after']:>7.1f}{secs['before'] / max(secs['after'], 1e-9):>6.2f}x"
                  f"  {sorted(got['before'] - got['after'])[:6]}", flush=True)
        print(f"{'total':<34}{'':>7}{tot[0]:>13}{tot[1]:>7}{tot[2]:>11.1f}{tot[3]:>7.1f}{tot[2] / max(tot[3], 1e-9):>6.2f}x")
        print(f"load average {open('/proc/loadavg').read().strip()}")
    return 0


class _nothing:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


if __name__ == "__main__":
    sys.exit(main())

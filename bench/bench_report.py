#!/usr/bin/env python3
"""Size and time to first paint of `talkthrough report` pages in headless Chromium (#22 item 1).

    python bench/bench_report.py [--hours 3] [--long [--home DIR]]

1. Real: the fixtures screencast.mp4 and two_voices.m4a (diarized) processed by the real pipeline in a
   temporary data root, then their reports built.
   With --long, also the bench media of make_long_media.py (/tmp/talkthrough-bench-media): the 10-min
   1080p30 screencast and the 30-min meeting, processed the same way (--home keeps that data root, so a
   second run only rebuilds the reports).
2. Scaled: a synthetic meeting of ``--hours`` hours shaped like a real one (a segment every 4 s, speaker
   turns among 6 speakers, 120 unique keyframes: the fixture's real frames re-used, each with 300 characters
   of screen text), rendered by the same code (report.render).
Each page is loaded from memory (no file, no network) in Chromium; first-contentful-paint and the load event
are read from the page's Performance API. Baselines measured in the same run: an empty page's first paint
(ratio = page / empty page) and the size of the same transcript as `talkthrough export --format json`.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))
CHROMIUM = "/usr/bin/chromium"
SITE = "http://bench.test/"
RUNS = 5
LONG_MEDIA = ("screencast_10min_1080p30.mp4", "meeting_30min.m4a")  # bench/make_long_media.py


def paint_ms(browser, html: str) -> tuple[float, float]:
    """(first-contentful-paint, load event end) in ms, median of RUNS fresh pages."""
    fcp, load = [], []
    for _ in range(RUNS):
        page = browser.new_page()
        page.route("**/*", lambda r: r.fulfill(body=html, content_type="text/html; charset=utf-8")
                   if r.request.url == SITE else r.abort())
        page.goto(SITE, wait_until="load")
        t = page.evaluate("""() => new Promise(ok => requestAnimationFrame(() => setTimeout(() => {
            const p = performance.getEntriesByName('first-contentful-paint')[0];
            const n = performance.getEntriesByType('navigation')[0];
            ok([p ? p.startTime : -1, n.loadEventEnd]);
        }, 50)))""")
        fcp.append(t[0])
        load.append(t[1])
        page.close()
    return statistics.median(fcp), statistics.median(load)


def synthetic(hours: float, frame_files: list[str]):
    total = int(hours * 3_600_000)
    words = ("so the deploy pipeline failed again on staging because the config map was not "
             "synced and we need to roll back before the release window closes").split()
    segs, turns = [], []
    for i, t in enumerate(range(0, total - 4000, 4000)):
        who = f"S{(i // 5) % 6 + 1}"
        segs.append({"seq": i, "t0_ms": t, "t1_ms": t + 3800, "speaker": who,
                     "text": " ".join(words[(i + k) % len(words)] for k in range(14))})
        if not turns or turns[-1][2] != who:
            turns.append([t, t + 3800, who])
        else:
            turns[-1][1] = t + 3800
    step = total // 120
    frames = [{"ms": k * step, "file": frame_files[k % len(frame_files)], "duplicate_of": None,
               "ocr_text": ("Quarterly review - Revenue by region - EMEA 41% APAC 22% Americas 37% " * 5)[:300]}
              for k in range(120)]
    import manifests  # tests/manifests.py: a typed manifest, read back through its published JSON

    return manifests.snap(segs, frames, filename=f"synthetic {hours:g} h meeting.mp4", duration_ms=total,
                          wall_clock={"start_utc": "2026-03-14T09:00:00+00:00", "tz_offset_min": 60, "source": "cli",
                                      "confidence": "high"},
                          names={"S1": "Alice", "S2": "Bob"}, turns=turns, model_name="tiny.en", has_video=True)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--hours", type=float, default=3.0)
    ap.add_argument("--long", action="store_true", help="also the 10-min screencast and the 30-min meeting")
    ap.add_argument("--media", default="/tmp/talkthrough-bench-media")
    ap.add_argument("--home", help="data root to process into and keep (default: a new temporary one)")
    args = ap.parse_args()
    home = args.home or tempfile.mkdtemp(prefix="bench-report-")
    os.environ["TALKTHROUGH_HOME"] = home
    os.environ["DAGSTER_HOME"] = str(Path(home) / "dagster")
    os.environ.setdefault("TALKTHROUGH_DIARIZATION_MODELS", str(ROOT.parent / "shared/models/diarization"))
    from fixture_facts import SCREENCAST_PATH, TWO_VOICES_PATH
    from playwright.sync_api import sync_playwright

    from talkthrough_assets.app import service
    from talkthrough_assets.read import formats
    from talkthrough_assets.read import report
    from talkthrough_assets.read import snapshot

    pages = {}
    inputs = [(SCREENCAST_PATH, {}), (TWO_VOICES_PATH, {"diarize": True})]
    if args.long:
        inputs += [(Path(args.media) / name, {}) for name in LONG_MEDIA]
    for path, opts in inputs:
        s = service.process(path, overrides=opts or None)
        assert s["status"] in ("processed", "cached"), s
        rid = s["recording_id"]
        pages[path.name] = (report.build(rid), formats.export(rid, "json"))
    frame_files = [f.file for f in snapshot.read(service.recording_id_for(SCREENCAST_PATH)).frames]
    snap = synthetic(args.hours, frame_files)
    names = snap.names
    pages[snap.rec.filename] = (report.render(snap, report._thumb),
                                   formats.render("json", snap.segments, names, snap.wall_clock))
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox", "--disable-gpu"])
        try:
            base_fcp, base_load = paint_ms(b, "<!doctype html><title>empty</title><p>empty page")
            print(f"baseline: empty page first paint {base_fcp:.0f} ms, load {base_load:.0f} ms (median of {RUNS})")
            print(f"{'page':<34} {'segments':>8} {'size KiB':>9} {'x json':>7} {'FCP ms':>7} {'x empty':>8} {'load ms':>8}")
            for name, (html, js) in pages.items():
                fcp, load = paint_ms(b, html)
                print(f"{name:<34} {html.count('class=seg '):>8} {len(html.encode()) / 1024:>9.0f} "
                      f"{len(html.encode()) / len(js.encode()):>7.2f} {fcp:>7.0f} {fcp / base_fcp:>8.2f} {load:>8.0f}")
        finally:
            b.close()


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""Read-path benchmark for the MCP reader at library scale (default: 1000 recordings).

Generates synthetic rows for N recordings straight through ``store.write_table`` into a
temporary TALKTHROUGH_HOME (recordings, wall_clock, probe, segments, keyframes, dedup, ocr,
terms -- the same Hive layout the pipeline writes, one partition per recording), then
times the reader functions the MCP tools call:

  * ``search``          ranked BM25 over the ``terms`` table (all recordings, both sources)
  * ``get_transcript``  one recording's transcript page (json)
  * ``list_recordings`` one page of the library listing

Each is reported as p50/p95 in milliseconds and as a ratio against a baseline measured
in the same run: ``SELECT count(*) FROM terms`` over the store's DuckDB views
(``store.connect()``), i.e. what any all-recordings query over the Parquet tree pays just to
glob and open every partition. Also reported: the same two-word match run directly on the
views (no BM25, no mirror), the cold start of the reader's in-memory mirror (first listing,
first search, full load), and an incremental refresh after one recording is rewritten.

Usage:
    python bench/bench_reads.py                     # 1000 recordings, temp home, removed after
    python bench/bench_reads.py --recordings 200 --runs 30
    python bench/bench_reads.py --home /tmp/ttbench --keep   # reuse/keep the generated data
    python bench/bench_reads.py --json              # machine-readable result on stdout

Nothing outside the chosen home is written.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import random
import shutil
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

# Words the synthetic speech is drawn from: a Zipf-like mix of common words and a long
# tail of "topic" words, so the BM25 IDF has both frequent and rare terms to chew on.
COMMON = ("the we and to a of is that it in for on this so now with be are you our then can "
          "will need have next there just let us see all what when from one two three").split()
TOPIC_STEMS = ("deploy build staging gateway timeout checkout rollback version metrics dashboard "
               "latency budget forecast migration database invoice survey server upgrade backup "
               "customer theme laptop hardware marketing release incident alert queue worker cache "
               "cluster region replica schema index query ledger payment refund token session").split()
OCR_WORDS = ("ERROR WARN INFO OK FAILED PASSED DEPLOY PIPELINE BUILD ROLLBACK COMPLETE METRICS "
             "DASHBOARD LATENCY GATEWAY TIMEOUT SERVICE CHECKOUT VERSION RESTORED READY").split()
RARE_MARKER = "zebracorn"  # appears in exactly one recording: the selective query


def _vocab(rng: random.Random, n_topic: int = 4000) -> list[str]:
    topic = [f"{rng.choice(TOPIC_STEMS)}{i}" if i >= len(TOPIC_STEMS) else TOPIC_STEMS[i] for i in range(n_topic)]
    return topic


def generate(home: Path, n_recordings: int = 1000, n_segments: int = 200, n_frames: int = 60,
             unique_every: int = 3, seed: int = 7) -> dict:
    """Write N synthetic recordings through store.write_table under ``home``; return facts."""
    os.environ["TALKTHROUGH_HOME"] = str(home)
    from talkthrough_assets import store
    from talkthrough_assets.stages import manifest as manifest_stage
    from talkthrough_assets.stages import terms as terms_stage

    rng = random.Random(seed)
    topic = _vocab(rng)
    cum = list(itertools.accumulate(1.0 / (i + 1) for i in range(len(topic))))
    ids = []
    t0 = time.perf_counter()
    marker_rid = None
    for r in range(n_recordings):
        rid = f"{rng.getrandbits(64):016x}"
        ids.append(rid)
        dur = n_segments * 6000
        segs = []
        for s in range(n_segments):
            words = [rng.choice(COMMON) if rng.random() < 0.55 else rng.choices(topic, cum_weights=cum)[0]
                     for _ in range(rng.randint(8, 22))]
            if r == n_recordings // 2 and s == n_segments // 2:
                words.insert(3, RARE_MARKER)
                marker_rid = rid
            segs.append({"seq": s, "t0_ms": s * 6000, "t1_ms": s * 6000 + 5500,
                         "text": " ".join(words).capitalize() + ".", "avg_logprob": -0.3, "no_speech_prob": 0.01})
        frames, dedup, ocr = [], [], []
        step = dur // n_frames
        last_unique = 0
        for f in range(n_frames):
            ms = f * step
            uniq = f % unique_every == 0
            if uniq:
                last_unique = ms
            frames.append({"ms": ms, "file": f"frames/{rid}/g0/{store.frame_file_name(ms)}", "scene_score": 0.2,
                           "width": 1568, "height": 882, "reason": "scene" if uniq else "floor"})
            dedup.append({"ms": ms, "dhash": f"{rng.getrandbits(64):016x}",
                          "duplicate_of": None if uniq else last_unique})
            if uniq:
                text = "\n".join(" ".join(rng.choice(OCR_WORDS) for _ in range(rng.randint(2, 5)))
                                 for _ in range(rng.randint(2, 6)))
                ocr.append({"ms": ms, "text": text, "boxes_json": "[]", "mean_score": 0.9, "engine": "synthetic"})
        start = f"2026-0{1 + r % 9}-{1 + r % 28:02d}T{r % 24:02d}:00:00.000+00:00"
        store.write_table("recordings", rid, [{
            "filename": f"rec_{r:04d}.mp4", "path": f"/nonexistent/rec_{r:04d}.mp4", "kind": "video",
            "duration_ms": dur, "size_bytes": 1 << 20, "recorded_at": start, "tz_offset_min": 0,
            "wall_clock_source": "creation_time", "wall_clock_confidence": "medium", "language": "en",
            "segment_count": n_segments, "frame_count": n_frames, "unique_frame_count": len(ocr),
            "diarized": False, "speaker_count": 0, "has_audio": True, "has_video": True,
            "transcript_available": True, "manifest_path": None, "processed_at": start}])
        store.write_table("wall_clock", rid, [{"start_utc": start, "tz_offset_min": 0, "source": "creation_time",
                                               "confidence": "medium", "available": True}])
        store.write_table("segments", rid, segs)
        store.write_table("keyframes", rid, frames)
        store.write_table("dedup", rid, dedup)
        store.write_table("ocr", rid, ocr)
        store.write_table("terms", rid, terms_stage.term_rows("transcript", [(s["seq"], s["t0_ms"], s["text"])
                                                                             for s in segs]), part="transcript")
        store.write_table("terms", rid, terms_stage.term_rows("ocr", [(o["ms"], o["ms"], o["text"]) for o in ocr]),
                          part="ocr")
        # the read server serves published manifests (one generation per recording): publish one, built by
        # the real manifest stage from the tables above, as the pipeline's manifest stage does last
        probe = {"path": f"/nonexistent/rec_{r:04d}.mp4", "filename": f"rec_{r:04d}.mp4", "kind": "video",
                 "duration_ms": dur, "size_bytes": 1 << 20, "width": 1568, "height": 882, "video_codec": "h264",
                 "has_audio": True, "has_video": True, "cap_hit": False}
        m = manifest_stage.build(
            recording_id=rid, probe=probe, wall_clock={"start_utc": start, "tz_offset_min": 0, "source": "creation_time",
                                                       "confidence": "medium", "available": True},
            transcript={"available": True, "reason": None, "language": "en", "model": "synthetic"}, segments=segs,
            words=[], diarization=None, turns=[], speakers=[], speaker_segments=[], keyframes=frames, dedup=dedup,
            ocr=ocr, settings={"max_frames": n_frames, "ocr": True})
        store.put_json(store.manifest_key(rid), m)
    return {"recordings": ids, "marker_recording": marker_rid, "generate_s": round(time.perf_counter() - t0, 1),
            "segments_per_recording": n_segments, "frames_per_recording": n_frames}


def _pct(xs: list[float], p: float) -> float:
    xs = sorted(xs)
    k = max(0, min(len(xs) - 1, int(round(p / 100 * (len(xs) - 1)))))
    return xs[k]


def _time(fn, runs: int) -> dict:
    fn()  # warm-up (imports, first glob, OS cache)
    xs = []
    for _ in range(runs):
        t = time.perf_counter()
        fn()
        xs.append((time.perf_counter() - t) * 1000)
    return {"p50_ms": round(statistics.median(xs), 2), "p95_ms": round(_pct(xs, 95), 2), "runs": runs}


def run(home: Path, facts: dict, runs: int) -> dict:
    os.environ["TALKTHROUGH_HOME"] = str(home)
    from talkthrough_assets import store
    from talkthrough_assets.stages import terms as terms_stage
    from talkthrough_mcp import reader

    rng = random.Random(1)
    ids = facts["recordings"]
    views = store.connect()  # the store's own read path: views globbing every partition
    results: dict = {"term_rows": views.execute("SELECT count(*) FROM terms").fetchone()[0]}
    results["baseline_count_terms"] = _time(lambda: views.execute("SELECT count(*) FROM terms").fetchone(), runs)
    base = results["baseline_count_terms"]["p50_ms"] or 1e-9

    # cold start as the server does it: warm-up thread at startup, first requests race it
    t = time.perf_counter()
    rd = reader.Reader(refresh_interval=1.0)
    warm = threading.Thread(target=rd.warm)
    warm.start()
    rd.list_recordings(limit=20)
    results["cold_first_list_recordings_s"] = round(time.perf_counter() - t, 2)
    rd.search("deploy")
    results["cold_first_search_s"] = round(time.perf_counter() - t, 2)
    warm.join()
    results["cold_mirror_load_s"] = round(time.perf_counter() - t, 2)

    queries = {
        "search_common_word": lambda: rd.search("deploy"),
        "search_two_words_and": lambda: rd.search("rollback version"),
        "search_rare_word": lambda: rd.search(RARE_MARKER),
        "search_or_fallback": lambda: rd.search(f"{RARE_MARKER} ledger7"),
        "search_one_recording": lambda: rd.search("deploy", recording_id=rng.choice(ids)),
        "search_limit_50": lambda: rd.search("gateway timeout", limit=50),
        "get_transcript": lambda: rd.get_transcript(rng.choice(ids)),
        "get_transcript_range": lambda: rd.get_transcript(rng.choice(ids), start_ms=300_000, end_ms=600_000),
        "list_recordings": lambda: rd.list_recordings(offset=rng.randrange(0, max(1, len(ids) - 20)), limit=20),
    }
    for name, fn in queries.items():
        r = _time(fn, runs)
        r["x_baseline_p50"] = round(r["p50_ms"] / base, 3)
        results[name] = r

    # the same search straight over the store's views (what a reader without the mirror pays)
    words = ["gateway", "timeout"]
    glob_sql = ("SELECT recording, source, ref, sum(tf) FROM terms WHERE term IN ('gateway', 'timeout') "
                "GROUP BY ALL HAVING count(*) = 2 ORDER BY 4 DESC LIMIT 10")
    r = _time(lambda: views.execute(glob_sql).fetchall(), max(3, runs // 8))
    r["x_baseline_p50"] = round(r["p50_ms"] / base, 3)
    results["views_two_word_match_no_bm25"] = r

    # incremental refresh: one recording re-transcribed and its manifest republished (the server indexes
    # published manifests, not the tables) -> the next search re-reads only that recording
    rid = ids[0]
    m = store.get_json(store.manifest_key(rid))
    seg0 = m["transcript"]["segments"][0]
    seg0["text"] = "freshly re-transcribed " + seg0["text"]
    store.put_json(store.manifest_key(rid), m)
    loads = rd.index.loads
    t = time.perf_counter()
    rd.index.refresh(force=True)
    hit = rd.search("freshly")
    results["refresh_one_changed_recording_ms"] = round((time.perf_counter() - t) * 1000, 1)
    results["refresh_manifests_reread"] = rd.index.loads - loads
    results["refresh_found_new_text"] = any(h["recording"] == rid for h in hit["hits"])
    hit = rd.search(RARE_MARKER)
    results["rare_marker_found"] = bool(hit["hits"]) and hit["hits"][0]["recording"] == facts["marker_recording"]
    views.close()
    return results


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--recordings", type=int, default=1000)
    ap.add_argument("--segments", type=int, default=200, help="segments per recording")
    ap.add_argument("--frames", type=int, default=60, help="keyframes per recording (1/3 unique, with OCR)")
    ap.add_argument("--runs", type=int, default=40, help="timed calls per measurement")
    ap.add_argument("--home", type=Path, help="data root to use (default: a new temp dir)")
    ap.add_argument("--keep", action="store_true", help="keep the generated data root")
    ap.add_argument("--json", action="store_true", help="print the result as JSON")
    a = ap.parse_args(argv)

    home = (a.home or Path(tempfile.mkdtemp(prefix="ttbench-"))).resolve()
    facts_file = home / "bench_facts.json"
    try:
        if facts_file.exists():
            facts = json.loads(facts_file.read_text())
            print(f"reusing {facts['recordings'].__len__()} recordings under {home}", file=sys.stderr)
        else:
            home.mkdir(parents=True, exist_ok=True)
            print(f"generating {a.recordings} recordings under {home} ...", file=sys.stderr)
            facts = generate(home, a.recordings, a.segments, a.frames)
            facts_file.write_text(json.dumps(facts))
            print(f"  generated in {facts['generate_s']} s", file=sys.stderr)
        res = run(home, facts, a.runs)
        res["recordings"] = len(facts["recordings"])
        if a.json:
            print(json.dumps(res, indent=2))
        else:
            print(f"{res['recordings']} recordings, {res['term_rows']:,} term rows, {a.runs} runs each")
            print(f"{'measurement':<30}{'p50 ms':>10}{'p95 ms':>10}{'x baseline':>12}")
            for k, v in res.items():
                if isinstance(v, dict):
                    print(f"{k:<30}{v['p50_ms']:>10.2f}{v['p95_ms']:>10.2f}{v.get('x_baseline_p50', 1.0):>12.3f}")
            for k, v in res.items():
                if not isinstance(v, dict) and k not in ("term_rows", "recordings"):
                    print(f"{k}: {v}")
    finally:
        if not a.keep and not a.home:
            shutil.rmtree(home, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())

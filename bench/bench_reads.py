#!/usr/bin/env python3
"""Read-path benchmark for the MCP reader at library scale (issue #26, item 4; default 10 000 recordings).

Generates N synthetic recordings under a temporary TALKTHROUGH_HOME the way the pipeline's manifest
stage publishes them: a manifest built by the real manifest stage, and the recording's search index part
(``search_index.write_part``, one small Parquet) written before it. The first N - P recordings are then
merged into the 16 index buckets (``search_index.compact``); the last P (``--pending``, default 5 %) stay
unmerged parts, as a library being added to has them (a bucket is re-merged when a tenth of it is new).

Each reader is measured in its own fresh process (so its peak RSS is its own):

  * ``new``: the MCP reader as shipped (:class:`talkthrough_assets.read.reader.Reader`, the persistent index);
  * ``old``: the reader before it, in the same run (``bench/baseline/search_v1.py``: every manifest
    tokenized into an in-memory DuckDB, BM25 in SQL).

Reported per reader: cold start (process start to the first search answered, and to the index fully
loaded), p50/p95 per query, peak RSS; and the ratio old/new of each. Then the incremental write of one more
recording: its part, and the re-merge of its bucket.

Usage:
    python bench/bench_reads.py                          # 10 000 recordings, temp home, removed after
    python bench/bench_reads.py --recordings 1000 --runs 20
    python bench/bench_reads.py --home /tmp/ttbench --keep   # reuse/keep the generated data
    python bench/bench_reads.py --old-runs 0             # skip the old reader (it needs ~6 GB at 10 000)
    python bench/bench_reads.py --json

Nothing outside the chosen home is written.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import random
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent

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

QUERIES = {  # name -> (query, keyword arguments); "ANY" recording_id: a random recording per call
    "search_common_word": ("the", {}),
    "search_topic_word": ("deploy", {}),          # Zipf rank 1: in about half of all segments
    "search_two_words_and": ("rollback version", {}),
    "search_three_words": ("the gateway deploy", {}),
    "search_rare_word": (RARE_MARKER, {}),
    "search_or_fallback": (f"{RARE_MARKER} ledger7", {}),
    "search_phrase": ('"rollback version"', {}),
    "search_one_recording": ("deploy", {"recording_id": "ANY"}),
    "search_limit_50": ("gateway timeout", {"limit": 50}),
}


def _vocab(rng: random.Random, n_topic: int = 4000) -> list[str]:
    return [f"{rng.choice(TOPIC_STEMS)}{i}" if i >= len(TOPIC_STEMS) else TOPIC_STEMS[i] for i in range(n_topic)]


def _recording(rng, topic, cum, r, n_recordings, n_segments, n_frames, unique_every=3, spread_min=0):
    from talkthrough_assets import store
    from talkthrough_assets.model.frames import FrameChange, Keyframe, OcrFrame
    from talkthrough_assets.model.media import ProbeRow, WallClockRow
    from talkthrough_assets.model.transcript import Segment, TranscriptMeta
    from talkthrough_assets.stages import manifest as manifest_stage

    rid = f"{rng.getrandbits(64):016x}"
    dur = n_segments * 6000
    segs, marker = [], False
    for s in range(n_segments):
        words = [rng.choice(COMMON) if rng.random() < 0.55 else rng.choices(topic, cum_weights=cum)[0]
                 for _ in range(rng.randint(8, 22))]
        if r == n_recordings // 2 and s == n_segments // 2:
            words.insert(3, RARE_MARKER)
            marker = True
        segs.append(Segment(t0_ms=s * 6000, t1_ms=s * 6000 + 5500, text=" ".join(words).capitalize() + ".",
                            avg_logprob=0.0, no_speech_prob=0.0, seq=s))
    frames, dedup, ocr = [], [], []
    step, last_unique = dur // n_frames, 0
    for f in range(n_frames):
        ms = f * step
        uniq = f % unique_every == 0
        if uniq:
            last_unique = ms
        frames.append(Keyframe(ms=ms, file=f"frames/{rid}/g0/{store.frame_file_name(ms)}", scene_score=None,
                               width=1568, height=882, reason="interval"))
        dedup.append(FrameChange(ms=ms, dhash="", duplicate_of=None if uniq else last_unique, changed=None))
        if uniq:
            text = "\n".join(" ".join(rng.choice(OCR_WORDS) for _ in range(rng.randint(2, 5)))
                             for _ in range(rng.randint(2, 6)))
            ocr.append(OcrFrame(ms=ms, text=text, boxes=(), mean_score=None, engine=None))
    start = f"2026-0{1 + r % 9}-{1 + r % 28:02d}T{r % 24:02d}:00:00.000+00:00"
    if spread_min:  # bench_bytime: recording r starts r * spread_min minutes into 2026 (a day's takes in a row)
        from datetime import datetime, timedelta, timezone
        start = (datetime(2026, 1, 1, tzinfo=timezone.utc) + timedelta(minutes=r * spread_min)).isoformat(
            timespec="milliseconds")
    probe = ProbeRow(path=f"/nonexistent/rec_{r:05d}.mp4", filename=f"rec_{r:05d}.mp4", kind="video",
                     duration_ms=dur, size_bytes=1 << 20, width=1568, height=882, video_codec="h264",
                     has_audio=True, has_video=True, cap_hit=False)
    m = manifest_stage.build(
        recording_id=rid, probe=probe, wall_clock=WallClockRow(available=True, start_utc=start, tz_offset_min=0,
                                                               source="creation_time", confidence="medium"),
        transcript=TranscriptMeta(available=True, reason=None, language="en", language_probability=None,
                                  model="synthetic"), segments=segs, keyframes=frames, dedup=dedup, ocr=ocr,
        settings={"max_frames": n_frames, "ocr": True}).to_json()
    return rid, m, marker


def publish(rid: str, m: dict) -> tuple[float, str]:
    """What the manifest stage does for the index: the part, then the manifest. Returns (seconds, part)."""
    from talkthrough_assets import store
    from talkthrough_assets.model import search_index
    from talkthrough_assets.model.manifest import Manifest

    t = time.perf_counter()
    data = store.json_bytes(m)
    part, _ = search_index.write_part(rid, Manifest.from_json(m), data)
    store.put_bytes(store.manifest_key(rid), data, fsync=False)
    return time.perf_counter() - t, part


def _make(args: tuple) -> tuple[str, bool]:
    """Publish recording ``r`` (its own random stream, so workers need no order)."""
    home, r, n_recordings, n_segments, n_frames, seed, spread_min = args
    os.environ["TALKTHROUGH_HOME"] = str(home)
    rng = random.Random(f"{seed}-{r}")
    topic = _vocab(random.Random(seed))
    cum = _CUM.setdefault(len(topic), list(itertools.accumulate(1.0 / (i + 1) for i in range(len(topic)))))
    rid, m, marker = _recording(rng, topic, cum, r, n_recordings, n_segments, n_frames, spread_min=spread_min)
    publish(rid, m)
    return rid, marker


_CUM: dict[int, list[float]] = {}


def _merge_bucket(args: tuple) -> None:
    home, b = args
    os.environ["TALKTHROUGH_HOME"] = str(home)
    from talkthrough_assets.model import search_index

    search_index.compact(b, force=True)


def cached_library(home: Path, n_recordings: int, n_segments: int, n_frames: int, pending: int, *,
                   workers: int = 3, spread_min: int = 0) -> dict:
    """The library :func:`generate` made under ``home`` (its facts in ``bench_facts.json``), reused when there."""
    facts_file = home / "bench_facts.json"
    if facts_file.exists():
        facts = json.loads(facts_file.read_text())
        print(f"reusing {len(facts['recordings'])} recordings under {home}", file=sys.stderr)
        return facts
    home.mkdir(parents=True, exist_ok=True)
    print(f"generating {n_recordings} recordings under {home} ...", file=sys.stderr)
    facts = generate(home, n_recordings, n_segments, n_frames, pending, workers=workers, spread_min=spread_min)
    facts["spread_min"] = spread_min
    facts_file.write_text(json.dumps(facts))
    print(f"  generated in {facts['generate_s']} s", file=sys.stderr)
    return facts


def generate(home: Path, n_recordings: int, n_segments: int, n_frames: int, pending: int, seed: int = 7,
             workers: int = 3, spread_min: int = 0) -> dict:
    """N recordings published in ``workers`` processes; all but the last ``pending`` merged (as the lazily
    merged buckets end up), the rest left as unmerged parts."""
    from concurrent.futures import ProcessPoolExecutor

    from talkthrough_assets.model import search_index

    t0 = time.perf_counter()
    ids: list[str] = []
    marker_rid = None
    job = [(home, r, n_recordings, n_segments, n_frames, seed, spread_min) for r in range(n_recordings)]
    with ProcessPoolExecutor(workers) as pool:
        for i, (rid, marker) in enumerate(pool.map(_make, job[:n_recordings - pending], chunksize=20)):
            ids.append(rid)
            marker_rid = rid if marker else marker_rid
            if i % 1000 == 999:
                print(f"  {i + 1} recordings ({time.perf_counter() - t0:.0f} s)", file=sys.stderr)
        t = time.perf_counter()
        list(pool.map(_merge_bucket, [(home, b) for b in search_index.BUCKETS]))
        merged_s = round(time.perf_counter() - t, 1)
        for rid, marker in pool.map(_make, job[n_recordings - pending:], chunksize=20):
            ids.append(rid)
            marker_rid = rid if marker else marker_rid
    return {"recordings": ids, "marker_recording": marker_rid, "generate_s": round(time.perf_counter() - t0, 1),
            "merge_all_buckets_s": merged_s, "merge_workers": workers, "pending_parts": pending,
            "segments_per_recording": n_segments, "frames_per_recording": n_frames, "seed": seed}


def _pct(xs: list[float], p: float) -> float:
    xs = sorted(xs)
    return xs[max(0, min(len(xs) - 1, int(round(p / 100 * (len(xs) - 1)))))]


def _time(fn, runs: int) -> dict:
    fn()  # warm-up (the OS cache, first touch of the query's postings)
    xs = []
    for _ in range(runs):
        t = time.perf_counter()
        fn()
        xs.append((time.perf_counter() - t) * 1000)
    return {"p50_ms": round(statistics.median(xs), 2), "p95_ms": round(_pct(xs, 95), 2), "runs": runs}


def measure(which: str, home: Path, runs: int, started: float) -> dict:
    """One reader in this (fresh) process: cold start, queries, peak RSS."""
    os.environ["TALKTHROUGH_HOME"] = str(home)
    facts = json.loads((home / "bench_facts.json").read_text())
    from talkthrough_assets.read import reader

    rng = random.Random(1)
    ids = facts["recordings"]
    rd = reader.Reader(refresh_interval=1e9)
    if which == "old":
        sys.path.insert(0, str(HERE / "baseline"))
        import search_v1

        rd._index = search_v1.LibraryIndex(refresh_interval=1e9)

        def search(q, **kw):
            return search_v1.search(lambda: rd.index, rd.snapshot, q, **kw)

        def list_page(offset=0, limit=20):  # the old reader listed from its DuckDB table
            return rd.index.query("SELECT * FROM m_recordings ORDER BY recording LIMIT ? OFFSET ?", [limit, offset])
    else:
        def search(q, **kw):  # the typed answer as the JSON an agent gets
            return rd.search(q, **kw).dump()

        def list_page(offset=0, limit=20):
            return rd.list_recordings(offset=offset, limit=limit)
    res: dict = {"reader": which, "import_s": round(time.perf_counter() - started, 2)}
    # cold start as the server does it: the warm-up thread at startup, the first requests racing it
    warm = threading.Thread(target=rd.warm)
    warm.start()
    list_page(limit=20)
    res["cold_first_list_s"] = round(time.perf_counter() - started, 2)
    first = search("deploy")
    res["cold_first_search_s"] = round(time.perf_counter() - started, 2)
    res["cold_first_search_partial"] = "index" in first
    warm.join()
    res["cold_index_loaded_s"] = round(time.perf_counter() - started, 2)
    res["rss_after_load_mb"] = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)
    if which == "new":
        res["manifests_tokenized"] = rd.index.manifest_loads
        res["parts_read"] = rd.index.loads - rd.index.manifest_loads
    for name, (q, kw) in QUERIES.items():
        def call(q=q, kw=kw):
            args = {k: (rng.choice(ids) if v == "ANY" else v) for k, v in kw.items()}
            return search(q, **args)
        res[name] = _time(call, runs)
    res["get_transcript"] = _time(lambda: rd.get_transcript(rng.choice(ids)), runs)
    res["list_recordings"] = _time(lambda: list_page(offset=rng.randrange(0, max(1, len(ids) - 20)), limit=20), runs)
    hit = search(RARE_MARKER)
    res["rare_marker_found"] = bool(hit["hits"]) and hit["hits"][0]["recording"] == facts["marker_recording"]
    res["common_word_matches"] = search("the")["total_matches"]
    res["peak_rss_mb"] = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)
    return res


def _child(which: str, home: Path, runs: int) -> dict:
    out = subprocess.run([sys.executable, __file__, "--measure", which, "--home", str(home), "--runs", str(runs)],
                         capture_output=True, text=True)
    if out.returncode:
        return {"reader": which, "error": out.stderr.strip().splitlines()[-1] if out.stderr.strip() else out.returncode}
    return json.loads(out.stdout)


def incremental(home: Path, facts: dict) -> dict:
    """One more recording: its part + manifest, then its bucket re-merged (forced: the lazily merged worst case)."""
    os.environ["TALKTHROUGH_HOME"] = str(home)
    from talkthrough_assets.model import search_index

    rng = random.Random("one more")
    topic = _vocab(random.Random(facts["seed"]))
    cum = list(itertools.accumulate(1.0 / (i + 1) for i in range(len(topic))))
    rid, m, _ = _recording(rng, topic, cum, 1, 3, facts["segments_per_recording"], facts["frames_per_recording"])
    s, part = publish(rid, m)
    t = time.perf_counter()
    lazy = search_index.maybe_compact(rid)
    lazy_s = time.perf_counter() - t
    t = time.perf_counter()
    forced = search_index.compact(search_index.bucket_of(rid), force=True) if lazy is None else lazy
    forced_s = time.perf_counter() - t if lazy is None else lazy_s
    part_bytes = (home / search_index.PARTS / part).stat().st_size
    return {"part_write_ms": round(s * 1000, 1), "part_kib": round(part_bytes / 1024, 1),
            "lazy_merge_check_ms": round(lazy_s * 1000, 1), "lazy_merge_ran": lazy is not None,
            "bucket_remerge_s": round(forced_s, 2), "bucket_recordings": forced["recordings"],
            "bucket_postings": forced["postings"]}


def library_arguments(ap: argparse.ArgumentParser) -> None:
    """The arguments that choose the generated library and where it lives (bench_search_engines.py takes them too)."""
    ap.add_argument("--recordings", type=int, default=10_000)
    ap.add_argument("--segments", type=int, default=200, help="segments per recording")
    ap.add_argument("--frames", type=int, default=60, help="keyframes per recording (1/3 unique, with OCR)")
    ap.add_argument("--pending", type=float, default=0.05, help="share of recordings left as unmerged parts")
    ap.add_argument("--workers", type=int, default=3, help="processes generating the library")
    ap.add_argument("--home", type=Path, help="data root to use (default: a new temp dir)")
    ap.add_argument("--keep", action="store_true", help="keep the generated data root")
    ap.add_argument("--json", action="store_true", help="print the result as JSON")


def library(a: argparse.Namespace, home: Path) -> dict:
    """The library :func:`library_arguments` chose, generated under ``home`` (or the one generated there before)."""
    return cached_library(home, a.recordings, a.segments, a.frames, int(a.recordings * a.pending), workers=a.workers)


def main(argv: list[str] | None = None) -> int:
    started = time.perf_counter()
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    library_arguments(ap)
    ap.add_argument("--runs", type=int, default=40, help="timed calls per measurement (new reader)")
    ap.add_argument("--old-runs", type=int, default=5, help="timed calls per measurement (old reader; 0: skip it)")
    ap.add_argument("--measure", choices=("new", "old"), help=argparse.SUPPRESS)
    a = ap.parse_args(argv)
    if a.measure:
        print(json.dumps(measure(a.measure, a.home, a.runs, started)))
        return 0

    home = (a.home or Path(tempfile.mkdtemp(prefix="ttbench-"))).resolve()
    try:
        facts = library(a, home)
        res = {"recordings": len(facts["recordings"]), "pending_parts": facts["pending_parts"],
               "generate_s": facts["generate_s"], "merge_all_buckets_s": facts["merge_all_buckets_s"]}
        res["new"] = _child("new", home, a.runs)
        res["old"] = _child("old", home, a.old_runs) if a.old_runs else None
        res["incremental"] = incremental(home, facts)
        if a.json:
            print(json.dumps(res, indent=2))
            return 0
        new, old = res["new"], res["old"] or {}
        print(f"{res['recordings']} recordings ({res['pending_parts']} as unmerged parts), "
              f"{a.runs} runs each (old reader: {a.old_runs})")
        if "error" in new or "error" in old:
            print(f"errors: new={new.get('error')} old={old.get('error')}")
        print(f"{'measurement':<26}{'new p50':>10}{'new p95':>10}{'old p50':>11}{'old p95':>11}{'old/new p95':>13}")
        for k, v in new.items():
            if isinstance(v, dict):
                o = old.get(k) or {}
                ratio = f"{o['p95_ms'] / max(v['p95_ms'], 1e-9):.1f}x" if o else "-"
                print(f"{k:<26}{v['p50_ms']:>10.1f}{v['p95_ms']:>10.1f}{o.get('p50_ms', float('nan')):>11.1f}"
                      f"{o.get('p95_ms', float('nan')):>11.1f}{ratio:>13}")
        for k in ("cold_first_list_s", "cold_first_search_s", "cold_index_loaded_s", "rss_after_load_mb",
                  "peak_rss_mb"):
            ov = old.get(k)
            ratio = f" ({ov / max(new[k], 1e-9):.1f}x)" if isinstance(ov, (int, float)) else ""
            print(f"{k}: new {new.get(k)}  old {ov}{ratio}")
        for k, v in new.items():
            if not isinstance(v, dict) and k not in ("cold_first_list_s", "cold_first_search_s", "cold_index_loaded_s",
                                                     "rss_after_load_mb", "peak_rss_mb", "reader"):
                print(f"new {k}: {v}")
        if res["incremental"]:
            print("one more recording:", json.dumps(res["incremental"]))
    finally:
        if not a.keep and not a.home:
            shutil.rmtree(home, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())

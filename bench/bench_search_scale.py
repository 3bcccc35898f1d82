#!/usr/bin/env python3
"""Search at library scale (issue #26, item 4): the MCP search over a LibraryIndex holding N synthetic
recordings (default 10 000), filled straight in DuckDB instead of from N manifests, so 10 000 recordings
take a minute to set up rather than the hours of bench_reads.py's Parquet-and-manifest path.

Each recording: 200 transcript segments of 8-22 words (55 % common words, the rest from a Zipf-weighted
topic vocabulary, as bench_reads.py) and 20 OCR'd frames. Rows go into the index's own tables (m_terms,
m_docs, m_recordings, m_frames) and BM25 statistics (m_df, m_sums) exactly as LibraryIndex._apply leaves
them; then the real ``search.search`` runs against it.

Reported: rows, build seconds (the SQL fill: a floor for any index build, not the manifest path), the
process's peak RSS, and p50/p95 per query kind with the ratio against a baseline measured in the same run:
``SELECT count(*) FROM m_terms WHERE term = ?`` for the common word (the bare cost of touching its
postings). Targets of item 4: p95 < 100 ms for any query, RSS < 1 GB, cold start < 10 s.

Usage:
    python bench/bench_search_scale.py                       # 10 000 recordings
    python bench/bench_search_scale.py --recordings 1000 --runs 20 --json
"""

from __future__ import annotations

import argparse
import json
import resource
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_reads import COMMON, OCR_WORDS, RARE_MARKER, TOPIC_STEMS  # noqa: E402  (one vocabulary for both)

N_TOPIC = 4000


def _pct(xs: list[float], p: float) -> float:
    xs = sorted(xs)
    return xs[max(0, min(len(xs) - 1, int(round(p / 100 * (len(xs) - 1)))))]


def build(n: int, segments: int = 200, frames: int = 20):
    """A LibraryIndex holding ``n`` synthetic recordings; returns (index, seconds)."""
    from talkthrough_assets.stages import terms as terms_stage
    from talkthrough_mcp.index import LibraryIndex

    idx = LibraryIndex(refresh_interval=1e12)
    idx._checked = time.monotonic()  # never rescans a data root: the tables are filled here
    con = idx.con
    topic = [TOPIC_STEMS[i] if i < len(TOPIC_STEMS) else f"{TOPIC_STEMS[i % len(TOPIC_STEMS)]}{i}"
             for i in range(N_TOPIC)]
    common = [terms_stage.index_terms(w)[0] for w in COMMON if terms_stage.index_terms(w)]
    topic = [terms_stage.index_terms(w)[0] for w in topic]
    ocr = [terms_stage.index_terms(w)[0] for w in OCR_WORDS]
    t0 = time.perf_counter()
    con.execute("CREATE TEMP TABLE v_common AS SELECT unnest(?::VARCHAR[]) AS term, "
                "generate_subscripts(?::VARCHAR[], 1) - 1 AS i", [common, common])
    con.execute("CREATE TEMP TABLE v_topic AS SELECT unnest(?::VARCHAR[]) AS term, "
                "generate_subscripts(?::VARCHAR[], 1) - 1 AS i", [topic, topic])
    con.execute("CREATE TEMP TABLE v_ocr AS SELECT unnest(?::VARCHAR[]) AS term, "
                "generate_subscripts(?::VARCHAR[], 1) - 1 AS i", [ocr, ocr])
    con.execute("SELECT setseed(0.7)")
    h = sum(1.0 / (i + 1) for i in range(N_TOPIC))
    # words: (rec, seg, pos) -> term; Zipf topic pick by inverting the harmonic CDF approximately
    con.execute(f"""
        CREATE TEMP TABLE w AS
        WITH docs AS (SELECT r, s, 8 + CAST(floor(random() * 15) AS BIGINT) AS len
                      FROM range({n}) t(r), range({segments}) u(s)),
             pos AS (SELECT r, s, len, unnest(range(len)) AS p FROM docs),
             pick AS (SELECT r, s, len, p, random() < 0.55 AS is_common, random() AS u FROM pos),
             idx AS (SELECT *, CASE WHEN is_common THEN CAST(floor(u * {len(common)}) AS BIGINT) END AS ci,
                            CASE WHEN NOT is_common THEN greatest(0, least({N_TOPIC - 1},
                                 CAST(floor(exp(u * {h} - 0.5772)) AS BIGINT) - 1)) END AS ti FROM pick)
        SELECT r, s, len, p, coalesce(c.term, t.term) AS term
        FROM idx LEFT JOIN v_common c ON c.i = idx.ci LEFT JOIN v_topic t ON t.i = idx.ti""")
    con.execute(f"UPDATE w SET term = '{RARE_MARKER}' WHERE r = {n // 2} AND s = {segments // 2} AND p = 3")
    con.execute(f"""
        INSERT INTO m_recordings
        SELECT printf('%016x', r * 2654435761 + 12345) AS recording, printf('rec_%05d.mp4', r), 'video',
               {segments} * 6000, '2026-03-01T09:00:00.000+00:00', 0, 'creation_time', 'medium', 'en',
               {segments}, {frames}, {frames}, false, 0, true, true, true, '2026-03-01T10:00:00.000+00:00', 'g1'
        FROM range({n}) t(r)""")
    rid = "printf('%016x', r * 2654435761 + 12345)"
    con.execute(f"""
        INSERT INTO m_terms
        SELECT {rid}, 'transcript', s, s * 6000 + min(p) * 300, term, count(*), any_value(len)
        FROM w WHERE term IS NOT NULL GROUP BY r, s, term""")
    con.execute(f"""
        INSERT INTO m_docs
        SELECT {rid}, 'transcript', s, s * 6000, s * 6000 + 5500, NULL, NULL, string_agg(term, ' ' ORDER BY p)
        FROM w WHERE term IS NOT NULL GROUP BY r, s""")
    con.execute(f"""
        CREATE TEMP TABLE o AS
        WITH x AS (SELECT r, f, unnest(range(4)) AS p FROM range({n}) t(r), range({frames}) u(f))
        SELECT r, f, p, v.term FROM (SELECT *, CAST(floor(random() * {len(ocr)}) AS BIGINT) AS oi FROM x) y
        JOIN v_ocr v ON v.i = y.oi""")
    step = segments * 6000 // frames
    con.execute(f"""
        INSERT INTO m_terms
        SELECT {rid}, 'ocr', f * {step}, f * {step}, term, count(*), 4 FROM o GROUP BY r, f, term""")
    con.execute(f"""
        INSERT INTO m_docs
        SELECT {rid}, 'ocr', f * {step}, f * {step}, f * {step}, NULL, NULL, string_agg(term, ' ')
        FROM o GROUP BY r, f""")
    con.execute(f"INSERT INTO m_frames SELECT {rid}, f * {step}, f * {step} FROM range({n}) t(r), range({frames}) u(f)")
    con.execute("INSERT INTO m_df SELECT source, term, count(*) FROM m_terms GROUP BY source, term")
    con.execute("INSERT INTO m_sums SELECT source, count(*), sum(doc_len) FROM m_docs d JOIN "
                "(SELECT recording, source, ref, any_value(doc_len) AS doc_len FROM m_terms GROUP BY ALL) t "
                "USING (recording, source, ref) GROUP BY source")
    con.execute("CREATE INDEX m_terms_term ON m_terms(term)")
    idx._indexed = True
    for t in ("w", "o", "v_common", "v_topic", "v_ocr"):
        con.execute(f"DROP TABLE {t}")
    return idx, time.perf_counter() - t0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--recordings", type=int, default=10_000)
    ap.add_argument("--segments", type=int, default=200)
    ap.add_argument("--runs", type=int, default=20)
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args()
    from talkthrough_mcp import search

    idx, build_s = build(a.recordings, a.segments)
    rows = idx.con.execute("SELECT count(*) FROM m_terms").fetchone()[0]
    common, topic = "the", "gateway"  # a common word in ~15 % of segments; a topic word (Zipf rank 4)

    def timed(fn) -> dict:
        fn()
        xs = []
        for _ in range(a.runs):
            t = time.perf_counter()
            fn()
            xs.append((time.perf_counter() - t) * 1000)
        return {"p50_ms": round(statistics.median(xs), 1), "p95_ms": round(_pct(xs, 95), 1)}

    def run(q: str, **kw):
        return lambda: search.search(lambda: idx, None, q, **kw)

    res: dict = {"recordings": a.recordings, "term_rows": rows, "build_s": round(build_s, 1)}
    res["baseline_count_postings"] = timed(lambda: idx.con.execute("SELECT count(*) FROM m_terms WHERE term = ?",
                                                                    [common]).fetchone())
    base = res["baseline_count_postings"]["p50_ms"] or 1e-9
    for name, fn in {f"common_word ({common})": run(common), f"topic_word ({topic})": run(topic),
                     "three_words": run(f"{common} {topic} deploy"), "rare_word": run(RARE_MARKER),
                     "ocr_word": run("rollback"), "limit_50": run(topic, limit=50)}.items():
        r = timed(fn)
        r["x_baseline_p50"] = round(r["p50_ms"] / base, 2)
        res[name] = r
    res["peak_rss_mb"] = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)
    if a.json:
        print(json.dumps(res, indent=2))
        return 0
    print(f"{res['recordings']} recordings, {rows:,} term rows, index filled in {res['build_s']} s, "
          f"peak RSS {res['peak_rss_mb']} MB, {a.runs} runs each")
    print(f"{'query':<34}{'p50 ms':>10}{'p95 ms':>10}{'x baseline':>12}")
    for k, v in res.items():
        if isinstance(v, dict):
            print(f"{k:<34}{v['p50_ms']:>10.1f}{v['p95_ms']:>10.1f}{v.get('x_baseline_p50', 1.0):>12.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""Search engines side by side at library scale: the shipped index vs SQLite FTS5 (default 10 000 recordings).

The library is the one ``bench_reads.py`` generates (same generator, same seed, reused from ``--home``):
N synthetic recordings, each published with its search index part, most merged into the 16 buckets.
The FTS5 candidate is built from the same parts (so from the same documents): one FTS5 table per source
(transcript segments, OCR'd frames: BM25's document frequencies and average lengths stay per source, as
today), each document's text pre-tokenized by ``terms.index_terms`` (the one tokenizer of the SQL
``terms`` table and MCP queries) and indexed with FTS5's ``unicode61`` tokenizer, whose splitting of
those already folded, space-separated terms is the identity. Every recording's documents hold one
contiguous rowid range (the ``recs`` table), so replacing a recording is a range delete and an insert.

Each engine is measured in its own fresh process (its own cold start and peak RSS), in the same run:

  * ``index``: the MCP reader as shipped (``Reader.search``: the persistent index);
  * ``fts5``: a search over the FTS5 database answering the same hits (AND of the query's words,
    OR-ranked when no document has them all, quoted phrases, OCR terms containing a word, one
    recording, ``limit``, the match counts), ranked by ``ORDER BY bm25(...) LIMIT k`` per source.

Then the FTS5 writes: the full build (tokenizing included), and the per-recording replace (delete its
rowid range, insert its documents again, one transaction) as the manifest stage would do it.

Usage:
    python bench/bench_search_engines.py --home /tmp/ttbench-fts --keep   # generate or reuse, keep it
    python bench/bench_search_engines.py --recordings 1000 --runs 20
    python bench/bench_search_engines.py --json

The FTS5 database is written under the chosen home (``fts5.sqlite``); nothing outside it is written.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import resource
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import bench_reads  # noqa: E402  (the generator and the query set)

SOURCES = ("transcript", "ocr")
PHRASE_CANDIDATES = 500  # as read/search.py: AND matches fetched before a phrase filter
SUBSTRING_MIN_CHARS = 4
DB = "fts5.sqlite"


def _connect(path: Path) -> sqlite3.Connection:
    con = sqlite3.connect(path, timeout=30.0, isolation_level=None)
    con.execute("PRAGMA journal_mode=WAL")
    con.execute("PRAGMA busy_timeout=30000")
    return con


def _schema(con: sqlite3.Connection) -> None:
    con.execute("CREATE TABLE IF NOT EXISTS recs (rid TEXT PRIMARY KEY, lo INTEGER, hi INTEGER, part TEXT, "
                "rec TEXT, frames TEXT)")
    con.execute("CREATE TABLE IF NOT EXISTS docs (id INTEGER PRIMARY KEY, rid TEXT, source INTEGER, ref INTEGER, "
                "t0_ms INTEGER, t1_ms INTEGER, speaker TEXT, speaker_name TEXT, text TEXT)")
    for s in SOURCES:
        con.execute(f"CREATE VIRTUAL TABLE IF NOT EXISTS fts_{s} USING fts5(body, "
                    "tokenize='unicode61 remove_diacritics 0')")
        con.execute(f"CREATE VIRTUAL TABLE IF NOT EXISTS vocab_{s} USING fts5vocab(fts_{s}, 'row')")


def _part_rows(name: str, table, lo: int):
    """(docs rows, {source: fts rows}) of one part, ids from ``lo``."""
    from talkthrough_assets.model import terms

    docs, fts = [], {s: [] for s in SOURCES}
    cols = table.select(["source", "ref", "t0_ms", "t1_ms", "speaker", "speaker_name", "text"]).to_pydict()
    rid = name.split(".")[0]
    for i in range(table.num_rows):
        src = SOURCES.index(cols["source"][i])
        docs.append((lo + i, rid, src, cols["ref"][i], cols["t0_ms"][i], cols["t1_ms"][i], cols["speaker"][i],
                     cols["speaker_name"][i], cols["text"][i]))
        fts[SOURCES[src]].append((lo + i, " ".join(terms.index_terms(cols["text"][i]))))
    return docs, fts


def _insert(con: sqlite3.Connection, name: str, table, lo: int) -> int:
    from talkthrough_assets.model.search_index_docs import part_meta

    meta = part_meta(table)
    docs, fts = _part_rows(name, table, lo)
    con.executemany("INSERT INTO docs VALUES (?,?,?,?,?,?,?,?,?)", docs)
    for s in SOURCES:
        con.executemany(f"INSERT INTO fts_{s}(rowid, body) VALUES (?,?)", fts[s])
    con.execute("INSERT OR REPLACE INTO recs VALUES (?,?,?,?,?,?)",
                (meta["recording"], lo, lo + len(docs), name, json.dumps(meta["rec"]), json.dumps(meta["frames"])))
    return lo + len(docs)


def _current_parts() -> list[str]:
    """The part indexing each published manifest (as the reader pairs them)."""
    from talkthrough_assets import store
    from talkthrough_assets.model import search_index as si

    parts = si.list_parts()
    out = []
    for n, st in sorted(store.file_stamps("manifests").items()):
        rid = n[:-5]
        name = si.choose_part(parts.get(rid, []), st[1])
        if name:
            out.append(name)
    return out


def build(home: Path) -> dict:
    """The FTS5 database of every published recording, from scratch."""
    os.environ["TALKTHROUGH_HOME"] = str(home)
    from talkthrough_assets.model import search_index as si

    path = home / DB
    for p in (path, Path(f"{path}-wal"), Path(f"{path}-shm")):
        p.unlink(missing_ok=True)
    t0 = time.perf_counter()
    con = _connect(path)
    _schema(con)
    names = _current_parts()
    lo = 1
    for i in range(0, len(names), 200):
        con.execute("BEGIN")
        for name in names[i:i + 200]:
            lo = _insert(con, name, si.read_part(name), lo)
        con.execute("COMMIT")
        if i % 2000 == 0:
            print(f"  fts5 build: {i + 200} recordings ({time.perf_counter() - t0:.0f} s)", file=sys.stderr)
    insert_s = time.perf_counter() - t0
    t = time.perf_counter()
    for s in SOURCES:
        con.execute(f"INSERT INTO fts_{s}(fts_{s}) VALUES ('optimize')")
    optimize_s = time.perf_counter() - t
    con.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    con.close()
    return {"recordings": len(names), "documents": lo - 1, "build_s": round(insert_s, 1),
            "optimize_s": round(optimize_s, 1), "db_mb": round(path.stat().st_size / 2**20)}


def replace(home: Path, n: int) -> dict:
    """Replace ``n`` random recordings, each in one transaction: delete its rowid range from the documents
    and both FTS5 tables, insert its part's documents again at the end."""
    os.environ["TALKTHROUGH_HOME"] = str(home)
    from talkthrough_assets.model import search_index as si

    con = _connect(home / DB)
    rng = random.Random(3)
    rids = [r for (r,) in con.execute("SELECT rid FROM recs")]
    xs = []
    for rid in rng.sample(rids, n):
        name = con.execute("SELECT part FROM recs WHERE rid = ?", (rid,)).fetchone()[0]
        table = si.read_part(name)  # read before the transaction: the writer holds the lock only to write
        t = time.perf_counter()
        con.execute("BEGIN IMMEDIATE")
        lo, hi = con.execute("SELECT lo, hi FROM recs WHERE rid = ?", (rid,)).fetchone()
        for s in SOURCES:
            con.execute(f"DELETE FROM fts_{s} WHERE rowid >= ? AND rowid < ?", (lo, hi))
        con.execute("DELETE FROM docs WHERE id >= ? AND id < ?", (lo, hi))
        start = con.execute("SELECT coalesce(max(id), 0) + 1 FROM docs").fetchone()[0]
        _insert(con, name, table, start)
        con.execute("COMMIT")
        xs.append((time.perf_counter() - t) * 1000)
    con.close()
    return {"replace_p50_ms": round(statistics.median(xs), 1), "replace_p95_ms": round(bench_reads._pct(xs, 95), 1),
            "replace_max_ms": round(max(xs), 1), "replaced": n}


# --------------------------------------------------------------------------- the FTS5 search


class Fts5Search:
    """The search tool's ranking and hit rows over the FTS5 database (what ``read/search.py`` asks of
    ``View.search``), read-only."""

    def __init__(self, path: Path):
        self.con = sqlite3.connect(f"file:{path}?mode=ro", uri=True, check_same_thread=False)
        self.con.execute("PRAGMA busy_timeout=30000")

    def _expand(self, words: list[str]) -> dict[str, list[str]]:
        """OCR terms containing a query word (glued screen text), as read/search.py's expand."""
        inside = {}
        for w in words:
            if len(w) >= SUBSTRING_MIN_CHARS:
                rows = self.con.execute("SELECT term FROM vocab_ocr WHERE length(term) >= ? AND instr(term, ?) > 0 "
                                        "AND term <> ? ORDER BY term LIMIT 20", (len(w) + 3, w, w)).fetchall()
                if rows:
                    inside[w] = [r[0] for r in rows]
        return inside

    def _df(self, words: list[str]) -> dict[str, int]:
        out = dict.fromkeys(words, 0)
        for s in SOURCES:
            for w in words:
                r = self.con.execute(f"SELECT doc FROM vocab_{s} WHERE term = ?", (w,)).fetchone()
                out[w] += r[0] if r else 0
        return out

    def _split(self, w: str) -> tuple[str, str] | None:
        if len(w) < 6 or not w.isalpha():
            return None
        cands = [(w[:i], w[i:]) for i in range(3, len(w) - 2)]
        df = {k: v for k, v in self._df(sorted({x for c in cands for x in c})).items() if v}
        ok = [c for c in cands if c[0] in df and c[1] in df]
        return max(ok, key=lambda c: min(df[c[0]], df[c[1]])) if ok else None

    @staticmethod
    def _expr(words, phrases, inside, source, mode) -> str:
        def one(w):
            alts = [w] + (inside.get(w, []) if source == "ocr" else [])
            return "(" + " OR ".join(f'"{a}"' for a in alts) + ")" if len(alts) > 1 else f'"{w}"'
        parts = [one(w) for w in words]
        if mode == "and":
            parts += ['"' + " ".join(p) + '"' for p in phrases]
        return f" {mode.upper()} ".join(parts)

    def _top(self, source, expr, fetch, rid_range):
        where, args = f"fts_{source} MATCH ?", [expr]
        if rid_range:
            where += " AND rowid >= ? AND rowid < ?"
            args += list(rid_range)
        top = self.con.execute(f"SELECT rowid, bm25(fts_{source}) FROM fts_{source} WHERE {where} "
                               f"ORDER BY bm25(fts_{source}) LIMIT ?", args + [fetch]).fetchall()
        n = self.con.execute(f"SELECT count(*) FROM fts_{source} WHERE {where}", args).fetchone()[0]
        return top, n

    def rank_only(self, query: str, recording_id: str | None = None, limit: int = 10) -> list[tuple]:
        """The engine's part alone: the AND match ranked by bm25 and counted in both tables (no OCR
        expansion, compound split, word counts or hit rows, which a product would serve from a cached
        lexicon): a lower bound of what any search over FTS5 costs."""
        from talkthrough_assets.model import terms

        words = list(dict.fromkeys(terms.index_terms(query)))
        phrases = [p for p in (terms.index_terms(q) for q in re.findall(r'"([^"]+)"', query)) if len(p) > 1]
        rid_range = None
        if recording_id is not None:
            rid_range = self.con.execute("SELECT lo, hi FROM recs WHERE rid = ?", (recording_id,)).fetchone()
        fetch = PHRASE_CANDIDATES if phrases else limit
        return [self._top(s, self._expr(words, phrases, {}, s, "and"), fetch, rid_range) for s in SOURCES]

    def search(self, query: str, recording_id: str | None = None, limit: int = 10) -> dict:
        from talkthrough_assets.model import terms
        from talkthrough_assets.model.search_index_docs import frame_on_screen
        from talkthrough_assets.read.search import snippet

        words = list(dict.fromkeys(terms.index_terms(query)))
        phrases = [p for p in (terms.index_terms(q) for q in re.findall(r'"([^"]+)"', query)) if len(p) > 1]
        split = {w: s for w in words if (s := self._split(w))}
        inside = self._expand(words)
        rid_range = None
        if recording_id is not None:
            rid_range = self.con.execute("SELECT lo, hi FROM recs WHERE rid = ?", (recording_id,)).fetchone()
        fetch = PHRASE_CANDIDATES if phrases or split else limit
        mode, hits, total = "and", [], 0
        for mode in ("and", "or") if len(words) > 1 else ("and",):
            hits, total = [], 0
            for s in SOURCES:
                top, n = self._top(s, self._expr(words, phrases, inside, s, mode), fetch, rid_range)
                hits += [(score, rowid) for rowid, score in top]
                total += n
            if total:
                break
        per_word = self._df(words)
        hits.sort()
        rows = []
        for score, rowid in hits[:limit]:
            rid, src, ref, t0, spk, name, text = self.con.execute(
                "SELECT rid, source, ref, t0_ms, speaker, speaker_name, text FROM docs WHERE id = ?", (rowid,)).fetchone()
            rec, frames = self.con.execute("SELECT rec, frames FROM recs WHERE rid = ?", (rid,)).fetchone()
            rec = json.loads(rec)
            rows.append({"recording": rid, "source": SOURCES[src], "ref": ref, "t_ms": t0, "score": -score,
                         "speaker": spk, "speaker_name": name, "filename": rec["filename"],
                         "frame_ms": frame_on_screen(json.loads(frames), t0), "snippet": snippet(text, set(words))})
        return {"terms": words, "mode": mode, "total_matches": total, "per_word": per_word, "returned": len(rows),
                "hits": rows}


def measure_fts5(home: Path, runs: int, started: float) -> dict:
    os.environ["TALKTHROUGH_HOME"] = str(home)
    facts = json.loads((home / "bench_facts.json").read_text())
    rng = random.Random(1)
    ids = facts["recordings"]
    eng = Fts5Search(home / DB)
    res: dict = {"reader": "fts5", "import_s": round(time.perf_counter() - started, 2)}
    eng.search("deploy")
    res["cold_first_search_s"] = round(time.perf_counter() - started, 2)
    res["rss_after_load_mb"] = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)
    res["rank_only"] = {}
    for name, (q, kw) in bench_reads.QUERIES.items():
        def call(q=q, kw=kw):
            args = {k: (rng.choice(ids) if v == "ANY" else v) for k, v in kw.items()}
            return eng.search(q, **args)
        res[name] = bench_reads._time(call, runs)

        def bare(q=q, kw=kw):
            args = {k: (rng.choice(ids) if v == "ANY" else v) for k, v in kw.items()}
            return eng.rank_only(q, **args)
        res["rank_only"][name] = bench_reads._time(bare, runs)
    hit = eng.search(bench_reads.RARE_MARKER)
    res["rare_marker_found"] = bool(hit["hits"]) and hit["hits"][0]["recording"] == facts["marker_recording"]
    res["common_word_matches"] = eng.search("the")["total_matches"]
    res["peak_rss_mb"] = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)
    return res


def measure_index(home: Path, runs: int, started: float) -> dict:
    res = bench_reads.measure("new", home, runs, started)
    res["reader"] = "index"
    return res


def _child(which: str, home: Path, runs: int) -> dict:
    load = os.getloadavg()[0]
    out = subprocess.run([sys.executable, __file__, "--measure", which, "--home", str(home), "--runs", str(runs)],
                         capture_output=True, text=True)
    if out.returncode:
        return {"reader": which, "error": out.stderr.strip().splitlines()[-1] if out.stderr.strip() else out.returncode}
    res = json.loads(out.stdout)
    res["load_before_after"] = [round(load, 1), round(os.getloadavg()[0], 1)]
    return res


KEYS = ("cold_first_search_s", "rss_after_load_mb", "peak_rss_mb", "common_word_matches", "rare_marker_found",
        "load_before_after")


def _print(res: dict) -> None:
    a, b = res["index"], res["fts5"]
    print(f"{res['recordings']} recordings, {res['fts5_build'].get('documents')} documents; {os.cpu_count()} cores; "
          f"load {res['load']}")
    if "error" in a or "error" in b:
        print(f"errors: index={a.get('error')} fts5={b.get('error')}")
    print(f"{'measurement':<24}{'index p50':>10}{'index p95':>10}{'fts5 p50':>10}{'fts5 p95':>10}{'fts5/index p95':>16}"
          f"{'fts5 rank-only p50/p95':>24}")
    bare = b.get("rank_only", {})
    for k, v in a.items():
        o, r = b.get(k), bare.get(k)
        if isinstance(v, dict) and isinstance(o, dict) and "p95_ms" in o:
            print(f"{k:<24}{v['p50_ms']:>10.1f}{v['p95_ms']:>10.1f}{o['p50_ms']:>10.1f}{o['p95_ms']:>10.1f}"
                  f"{o['p95_ms'] / max(v['p95_ms'], 1e-9):>15.1f}x" + (f"{r['p50_ms']:>13.1f} / {r['p95_ms']:.1f}" if r else ""))
    for k in KEYS:
        print(f"{k}: index {a.get(k)}  fts5 {b.get(k)}")
    print("index cold_index_loaded_s:", a.get("cold_index_loaded_s"))
    print("fts5 build:", json.dumps(res["fts5_build"]))
    print("fts5 replace one recording:", json.dumps(res["fts5_replace"]))


def main(argv: list[str] | None = None) -> int:
    started = time.perf_counter()
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    bench_reads.library_arguments(ap)
    ap.add_argument("--runs", type=int, default=40, help="timed calls per measurement")
    ap.add_argument("--replaces", type=int, default=20, help="recordings replaced in the FTS5 database")
    ap.add_argument("--rebuild", action="store_true", help="build the FTS5 database again when there is one")
    ap.add_argument("--measure", choices=("index", "fts5"), help=argparse.SUPPRESS)
    a = ap.parse_args(argv)
    if a.measure:
        fn = measure_fts5 if a.measure == "fts5" else measure_index
        print(json.dumps(fn(a.home, a.runs, started)))
        return 0
    home = (a.home or Path(tempfile.mkdtemp(prefix="ttbench-"))).resolve()
    try:
        facts = bench_reads.library(a, home)
        loads = [os.getloadavg()[0]]
        res: dict = {"recordings": len(facts["recordings"]), "cores": os.cpu_count()}
        built = home / "fts5_build.json"
        if a.rebuild or not built.exists() or not (home / DB).exists():
            built.write_text(json.dumps(build(home)))
        res["fts5_build"] = json.loads(built.read_text())
        res["index"] = _child("index", home, a.runs)
        res["fts5"] = _child("fts5", home, a.runs)
        res["fts5_replace"] = replace(home, a.replaces)
        loads.append(os.getloadavg()[0])
        res["load"] = f"{min(loads):.1f}-{max(loads):.1f}"
        if a.json:
            print(json.dumps(res, indent=2))
        else:
            _print(res)
    finally:
        if not a.keep and not a.home:
            shutil.rmtree(home, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""LibraryIndex: an in-memory DuckDB index over every recording's published manifest.

Why in memory: the store keeps one Hive partition per recording, so an all-recordings query over
the ``read_parquet`` views opens every partition file (~1 s per query at 1000 recordings). The
server is long-lived, so it builds the listing, the search documents and the BM25 statistics
once and afterwards re-reads only the recordings whose manifest changed.

Why from manifests: the manifest is written last by every run, atomically, and holds the whole
generation (see :mod:`.snapshot`). Indexing it means search and the per-recording tools always
agree on one generation, even while a re-run is rewriting the tables (issue #15, item 1). Each
manifest's identity is (inode, size, mtime): every publish is a new inode, so no change is missed.

Terms are :func:`terms.index_terms` (glued words split, plurals folded, one-letter fragments
dropped), and every (document, term) row carries the time of the first word that produced the
term (from the manifest's word timestamps), so a hit points at the matched word, not at the start
of its segment (item 2).

Read-only: files are only read; nothing is written under the data root (or anywhere else).
"""

from __future__ import annotations

import threading
import time
from collections import Counter
from typing import Iterable

import duckdb
import pyarrow as pa

from talkthrough_assets import config, store
from talkthrough_assets.stages import terms as terms_stage

from . import snapshot

BATCH = 200  # recordings per insert batch
WARM_WAIT_S = 5.0  # a reader's wait for the server's first index build (then: a partial answer, said so)
WARM_WAIT_ENV = "TALKTHROUGH_MCP_WARM_WAIT_S"

_S, _I, _B = pa.string(), pa.int64(), pa.bool_()
SCHEMAS: dict[str, pa.Schema] = {
    "recordings": pa.schema([
        ("recording", _S), ("filename", _S), ("kind", _S), ("duration_ms", _I), ("recorded_at", _S),
        ("tz_offset_min", _I), ("wall_clock_source", _S), ("wall_clock_confidence", _S), ("language", _S),
        ("segment_count", _I), ("frame_count", _I), ("unique_frame_count", _I), ("diarized", _B),
        ("speaker_count", _I), ("has_audio", _B), ("has_video", _B), ("transcript_available", _B),
        ("processed_at", _S), ("generation", _S)]),
    # search documents: transcript segments (speaker-attributed when diarized) and OCR'd unique frames
    "docs": pa.schema([("recording", _S), ("source", _S), ("ref", _I), ("t0_ms", _I), ("t1_ms", _I),
                       ("speaker", _S), ("speaker_name", _S), ("text", _S)]),
    "terms": pa.schema([("recording", _S), ("source", _S), ("ref", _I), ("t_ms", _I), ("term", _S),
                        ("tf", _I), ("doc_len", _I)]),
    "frames": pa.schema([("recording", _S), ("ms", _I), ("unique_ms", _I)]),
}
_DUCK = {_S: "VARCHAR", _I: "BIGINT", _B: "BOOLEAN"}


def _q(s: str) -> str:
    return "'" + s.replace("'", "''") + "'"


def _chunks(rids: list[str], size: int = 500) -> Iterable[str]:
    for i in range(0, len(rids), size):
        yield ", ".join(_q(r) for r in rids[i:i + size])


def _first_word_times(segments: list[dict], words: list[list]) -> list[dict[str, int]]:
    """Per segment: term -> t0 of the first word producing it. Each word goes to the segment that
    holds its midpoint (segments and words are both in time order)."""
    out: list[dict[str, int]] = [{} for _ in segments]
    if not segments or not words:
        return out
    i = 0
    for w in words:
        mid = (w[0] + w[1]) / 2
        while i + 1 < len(segments) and segments[i + 1]["t0_ms"] <= mid:
            i += 1
        seen = out[i]
        for term in terms_stage.index_terms(w[2]):
            seen.setdefault(term, int(w[0]))
    return out


def rows_for(snap: snapshot.Snapshot, out: dict[str, dict[str, list]] | None = None) -> dict[str, dict[str, list]]:
    """Append one recording's index rows to ``out`` (table -> column -> values, :data:`SCHEMAS` order)."""
    if out is None:
        out = {t: {c: [] for c in s.names} for t, s in SCHEMAS.items()}
    rid, r = snap.rid, snap.rec
    for c in SCHEMAS["recordings"].names:
        out["recordings"][c].append(rid if c == "recording" else snap.generation if c == "generation" else r[c])
    docs, terms, frames = out["docs"], out["terms"], out["frames"]
    d_cols = [docs[c] for c in SCHEMAS["docs"].names]
    t_cols = [terms[c] for c in SCHEMAS["terms"].names]

    def doc(source, ref, t0, t1, who, name, text):
        for col, v in zip(d_cols, (rid, source, ref, t0, t1, who, name, text)):
            col.append(v)
        toks = terms_stage.index_terms(text)
        n = len(toks)
        first = firsts.get(ref, {}) if source == "transcript" else {}
        for term, tf in Counter(toks).items():
            for col, v in zip(t_cols, (rid, source, ref, first.get(term, t0), term, tf, n)):
                col.append(v)

    firsts = {s["seq"]: f for s, f in zip(snap.segments, _first_word_times(snap.segments, snap.words))}
    for s in snap.segments:
        who = s.get("speaker")
        doc("transcript", s["seq"], s["t0_ms"], s["t1_ms"], who, snap.names.get(who) if who else None, s["text"])
    for f in snap.frames:
        frames["recording"].append(rid)
        frames["ms"].append(f["ms"])
        frames["unique_ms"].append(f["ms"] if f["duplicate_of"] is None else f["duplicate_of"])
        if f["duplicate_of"] is None and f["ocr_text"]:
            doc("ocr", f["ms"], f["ms"], f["ms"], None, None, f["ocr_text"])
    return out


class LibraryIndex:
    """Tables ``m_recordings``, ``m_docs``, ``m_terms``, ``m_frames``; BM25 statistics ``m_df`` /
    ``m_stats`` (per source, over all recordings)."""

    def __init__(self, refresh_interval: float | None = None):
        if refresh_interval is None:
            refresh_interval = config.get("TALKTHROUGH_MCP_REFRESH_S")
        self.refresh_interval = refresh_interval
        # how long a reader waits for a long (re)load before answering from what is indexed so far
        self.warm_wait_s = config.get(WARM_WAIT_ENV)
        self.con = duckdb.connect(":memory:")
        self._lock = threading.Lock()
        self._sigs: dict[str, tuple] = {}
        self._checked = float("-inf")
        self._indexed = False
        self._warming: tuple[int, int] | None = None  # (indexed, total) during a long load
        self.loads = 0  # manifests (re)indexed so far: observable by tests and the bench
        self.damaged: dict[str, str] = {}  # rid -> reason, for manifests that could not be read
        ddl = [f"CREATE TABLE m_{t} ({', '.join(f'{f.name} {_DUCK[f.type]}' for f in s)})" for t, s in SCHEMAS.items()]
        ddl += [
            # maintained incrementally: df per term, and n / total_len per source (every (doc, term)
            # row has tf and doc_len with sum(tf) = doc_len per doc, so sum(tf / doc_len) counts docs)
            "CREATE TABLE m_df (source VARCHAR, term VARCHAR, df DOUBLE)",
            "CREATE TABLE m_df_delta (source VARCHAR, term VARCHAR, df DOUBLE)",
            "CREATE TABLE m_sums (source VARCHAR, n DOUBLE, total_len DOUBLE)",
            "CREATE VIEW m_stats AS SELECT source, round(sum(n)) AS n, sum(total_len) / round(sum(n)) AS avgdl "
            "FROM m_sums GROUP BY source HAVING round(sum(n)) > 0",
        ]
        for stmt in ddl:
            self.con.execute(stmt)

    # ------------------------------------------------------------------ refresh

    def _scan(self) -> dict[str, tuple]:
        """Recording id -> signature of its published manifest (the same as ``snapshot.signature``), from
        one listing of ``manifests/`` (a LIST request on an object store)."""
        out: dict[str, tuple] = {}
        for name, sig in store.file_stamps("manifests").items():
            rid = name[:-5] if name.endswith(".json") else ""
            if store.ID_RE.fullmatch(rid):
                out[rid] = sig
        return out

    def _apply(self, w: duckdb.DuckDBPyConnection, remove: list[str], snaps: list[snapshot.Snapshot]) -> None:
        """Replace the rows of ``remove`` by those of ``snaps`` in one transaction."""
        cols: dict[str, dict[str, list]] = {t: {c: [] for c in s.names} for t, s in SCHEMAS.items()}
        for snap in snaps:
            rows_for(snap, cols)
        w.execute("BEGIN TRANSACTION")
        try:
            if remove:
                self._term_stats(w, remove, -1)
                for t in SCHEMAS:
                    for chunk in _chunks(remove):
                        w.execute(f"DELETE FROM m_{t} WHERE recording IN ({chunk})")
            for t, c in cols.items():
                if c["recording"]:
                    tbl = pa.table(c, schema=SCHEMAS[t])
                    w.register("incoming", tbl)
                    w.execute(f"INSERT INTO m_{t} SELECT * FROM incoming")
                    w.unregister("incoming")
            added = [s.rid for s in snaps]
            if added:
                self._term_stats(w, added, +1)
            w.execute("CREATE OR REPLACE TABLE m_sums AS SELECT source, sum(n) AS n, sum(total_len) AS total_len "
                      "FROM m_sums GROUP BY source")
            w.execute("CREATE OR REPLACE TABLE m_df AS SELECT source, term, sum(df) AS df FROM "
                      "(SELECT * FROM m_df UNION ALL SELECT * FROM m_df_delta) GROUP BY source, term "
                      "HAVING sum(df) > 0")
            w.execute("DELETE FROM m_df_delta")
            w.execute("COMMIT")
        except BaseException:
            w.execute("ROLLBACK")
            raise

    @staticmethod
    def _term_stats(w: duckdb.DuckDBPyConnection, rids: list[str], sign: int) -> None:
        for chunk in _chunks(rids):
            where = f"recording IN ({chunk})"
            w.execute(f"INSERT INTO m_df_delta SELECT source, term, {sign} * count(*) FROM m_terms "
                      f"WHERE {where} GROUP BY source, term")
            w.execute(f"INSERT INTO m_sums SELECT source, {sign} * sum(tf::DOUBLE / doc_len), {sign} * sum(tf) "
                      f"FROM m_terms WHERE {where} AND doc_len > 0 GROUP BY source")

    def warming(self) -> str | None:
        """``"warming (n of N recordings indexed)"`` while a long (re)load runs on another thread (the
        server's warm-up), else None. Readers wait for it at most ``warm_wait_s``, then answer from
        what is indexed so far and say so (issue #26, item 3)."""
        w = self._warming
        return f"warming ({w[0]} of {w[1]} recordings indexed)" if w else None

    def refresh(self, force: bool = False, stop: threading.Event | None = None) -> bool:
        """Re-index recordings whose manifest changed (at most every ``refresh_interval`` seconds
        unless forced). ``stop`` ends a long (re)load between batches; what is left is picked up by
        the next refresh. Returns whether anything changed. While another thread runs a long load
        (more than one batch), waits at most ``warm_wait_s`` for it."""
        deadline = time.monotonic() + self.warm_wait_s
        while not self._lock.acquire(timeout=0.05):  # a short refresh is waited for; a long load only so long
            if self._warming and time.monotonic() >= deadline:
                return False
        try:
            return self._refresh(force, stop)
        finally:
            self._warming = None
            self._lock.release()

    def _refresh(self, force: bool, stop: threading.Event | None) -> bool:
        if not force and time.monotonic() - self._checked < self.refresh_interval:
            return False
        seen = self._scan()
        gone = [rid for rid in self._sigs if rid not in seen]
        stale = sorted(rid for rid, sig in seen.items() if self._sigs.get(rid) != sig)
        if len(stale) > BATCH:
            self._warming = (len(seen) - len(stale), len(seen))
        changed = False
        w = self.con.cursor()
        try:
            if gone:
                self._apply(w, gone, [])
                for rid in gone:
                    self._sigs.pop(rid, None)
                    self.damaged.pop(rid, None)
                changed = True
            for i in range(0, len(stale), BATCH):
                if stop is not None and stop.is_set():
                    return changed
                batch, snaps = stale[i:i + BATCH], []
                for rid in batch:
                    try:
                        snap = snapshot.read(rid, seen[rid])
                    except snapshot.DamagedManifest as e:
                        self.damaged[rid] = str(e)
                        snap = None
                    if snap is not None:
                        snaps.append(snap)
                        self.damaged.pop(rid, None)
                self._apply(w, [rid for rid in batch if rid in self._sigs], snaps)
                for snap in snaps:  # the signature of the bytes actually indexed
                    self._sigs[snap.rid] = snap.sig
                for rid in batch:
                    if rid in self.damaged:
                        self._sigs.pop(rid, None)
                self.loads += len(snaps)
                changed = True
                if self._warming:
                    self._warming = (self._warming[0] + len(batch), self._warming[1])
            if changed and not self._indexed:
                w.execute("CREATE INDEX m_terms_term ON m_terms(term)")
                self._indexed = True
        finally:
            w.close()
        self._checked = time.monotonic()
        return changed

    def query(self, sql: str, params: list | tuple | dict = (), refresh: bool = True) -> list[dict]:
        """Run ``sql`` on a fresh cursor (after a refresh unless ``refresh`` is False)."""
        if refresh:
            self.refresh()
        cur = self.con.cursor()
        try:
            res = cur.execute(sql, params if isinstance(params, dict) else list(params))
            cols = [d[0] for d in res.description]
            return [dict(zip(cols, row)) for row in res.fetchall()]
        finally:
            cur.close()

    def close(self) -> None:
        self.con.close()

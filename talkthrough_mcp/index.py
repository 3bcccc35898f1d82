"""LibraryIndex: an in-memory DuckDB mirror of the cross-recording tables, kept fresh per partition.

Why: the store keeps one Hive partition per recording, so an all-recordings query over the
``read_parquet`` views opens every partition file. At 1000 recordings that is ~2000 ``terms``
files and ~1 s per query before any work is done (``bench/bench_reads.py``). The server is
long-lived, so it mirrors the few tables that ranked search and listing need into memory once
and afterwards re-reads only the partitions whose directory changed (every store write is a
temp file + ``os.replace`` inside the partition directory, which bumps that directory's mtime).

Each table refreshes under its own lock and at most every ``refresh_interval`` seconds, so a
listing does not wait for the (much larger) ``terms`` mirror to load. Partitions touched in the
last ``SETTLE_S`` seconds are re-read on the next refresh too: a write landing inside one coarse
mtime tick is never missed.

Read-only: files are only read; nothing is written under the data root (or anywhere else).
"""

from __future__ import annotations

import os
import threading
import time
from typing import Iterable

import duckdb
import pyarrow as pa

from talkthrough_assets import store

# table -> mirrored columns (None: all); every mirror also has ``recording``. Load order matters:
# small tables first, so a cold server answers listings while ``terms`` is still loading.
MIRRORED: dict[str, tuple[str, ...] | None] = {
    "recordings": None,
    "wall_clock": ("start_utc", "tz_offset_min", "available"),
    "keyframes": ("ms",),
    "dedup": ("ms", "duplicate_of"),
    "ocr": ("ms", "text"),
    "segments": ("seq", "t0_ms", "text"),
    "terms": ("source", "ref", "t_ms", "term", "tf", "doc_len"),
}
SETTLE_S = 2.0
_DUCK = {pa.string(): "VARCHAR", pa.int64(): "BIGINT", pa.float64(): "DOUBLE", pa.bool_(): "BOOLEAN"}


def _columns(table: str) -> list[tuple[str, str]]:
    schema = store.SCHEMAS[table]
    names = MIRRORED[table] or tuple(schema.names)
    return [(n, _DUCK[schema.field(n).type]) for n in names]


def _q(s: str) -> str:
    return "'" + s.replace("'", "''") + "'"


def _chunks(rids: list[str], size: int = 500) -> Iterable[str]:
    for i in range(0, len(rids), size):
        yield ", ".join(_q(r) for r in rids[i:i + size])


class LibraryIndex:
    """Mirror tables ``m_<table>``, BM25 statistics ``m_df``/``m_stats``, and the ``m_frames`` view."""

    def __init__(self, refresh_interval: float | None = None):
        if refresh_interval is None:
            refresh_interval = float(os.environ.get("TALKTHROUGH_MCP_REFRESH_S") or 1.0)
        self.refresh_interval = refresh_interval
        self.root = store.tables_dir()
        self.con = duckdb.connect(":memory:")
        self._locks = {t: threading.Lock() for t in MIRRORED}
        self._sigs: dict[str, dict[str, int | None]] = {t: {} for t in MIRRORED}
        self._checked = {t: float("-inf") for t in MIRRORED}
        self._indexed = False
        self.loads = 0  # partitions (re)read so far: observable by tests and the bench
        ddl = [f"CREATE TABLE m_{t} ({', '.join(f'{n} {ty}' for n, ty in _columns(t))}, recording VARCHAR)"
               for t in MIRRORED]
        ddl += [
            # BM25 statistics per source over all recordings, maintained incrementally: df per term,
            # and n / total_len (every (doc, term) row has tf and doc_len with sum(tf) = doc_len per
            # doc, so sum(tf / doc_len) counts documents and sum(tf) sums their lengths)
            "CREATE TABLE m_df (source VARCHAR, term VARCHAR, df DOUBLE)",
            "CREATE TABLE m_df_delta (source VARCHAR, term VARCHAR, df DOUBLE)",
            "CREATE TABLE m_sums (source VARCHAR, n DOUBLE, total_len DOUBLE)",
            "CREATE VIEW m_stats AS SELECT source, round(sum(n)) AS n, sum(total_len) / round(sum(n)) AS avgdl "
            "FROM m_sums GROUP BY source HAVING round(sum(n)) > 0",
            # the unique frame on screen from each keyframe on: duplicates point at their original
            "CREATE VIEW m_frames AS SELECT k.recording, k.ms, coalesce(d.duplicate_of, k.ms) AS unique_ms "
            "FROM m_keyframes k LEFT JOIN m_dedup d ON d.recording = k.recording AND d.ms = k.ms",
        ]
        for stmt in ddl:
            self.con.execute(stmt)

    # ------------------------------------------------------------------ refresh

    def _scan(self, table: str) -> dict[str, int]:
        out: dict[str, int] = {}
        try:
            with os.scandir(self.root / table) as it:
                for e in it:
                    if e.name.startswith("recording="):
                        rid = e.name[len("recording="):]
                        if store.ID_RE.fullmatch(rid):
                            try:
                                out[rid] = e.stat().st_mtime_ns
                            except FileNotFoundError:
                                pass
        except FileNotFoundError:
            pass
        return out

    def _refresh_table(self, table: str, w: duckdb.DuckDBPyConnection, now_ns: int) -> int:
        seen = self._scan(table)
        old = self._sigs[table]
        stale = [rid for rid, m in seen.items() if old.get(rid) is None or old[rid] != m]
        gone = [rid for rid in old if rid not in seen]
        if not stale and not gone:
            return 0
        files: list[str] = []
        for rid in stale:
            files.extend(str(p) for p in sorted((self.root / table / f"recording={rid}").glob("*.parquet")))
        cols = ", ".join(n for n, _ in _columns(table))
        bulk = not old  # first load (or a reload after an error): whole-table statistics
        w.execute("BEGIN TRANSACTION")
        try:
            if table == "terms" and not bulk:
                self._term_stats(w, stale + gone, -1)
            if bulk:
                w.execute(f"DELETE FROM m_{table}")
            for chunk in ([] if bulk else _chunks(stale + gone)):
                w.execute(f"DELETE FROM m_{table} WHERE recording IN ({chunk})")
            if files:
                w.execute(f"INSERT INTO m_{table} SELECT {cols}, recording FROM read_parquet(?, "
                          f"hive_partitioning=true, union_by_name=true, hive_types={{'recording': VARCHAR}})", [files])
            if table == "terms":
                if bulk:
                    w.execute("DELETE FROM m_df")
                    w.execute("DELETE FROM m_sums")
                self._term_stats(w, None if bulk else stale, +1)
                w.execute("CREATE OR REPLACE TABLE m_sums AS SELECT source, sum(n) AS n, sum(total_len) AS total_len "
                          "FROM m_sums GROUP BY source")
                w.execute("CREATE OR REPLACE TABLE m_df AS SELECT source, term, sum(df) AS df FROM "
                          "(SELECT * FROM m_df UNION ALL SELECT * FROM m_df_delta) GROUP BY source, term "
                          "HAVING sum(df) > 0")
                w.execute("DELETE FROM m_df_delta")
            w.execute("COMMIT")
        except Exception:
            w.execute("ROLLBACK")
            raise
        settle_ns = int(SETTLE_S * 1e9)
        self._sigs[table] = {rid: (m if now_ns - m > settle_ns else None) for rid, m in seen.items()}
        self.loads += len(stale)
        return len(stale) + len(gone)

    @staticmethod
    def _term_stats(w: duckdb.DuckDBPyConnection, rids: list[str] | None, sign: int) -> None:
        """Add (+1) or remove (-1) these recordings' terms (None: all rows) to/from the BM25 statistics."""
        for where in ([f"recording IN ({c})" for c in _chunks(rids)] if rids is not None else ["true"]):
            w.execute(f"INSERT INTO m_df_delta SELECT source, term, {sign} * count(*) FROM m_terms "
                      f"WHERE {where} GROUP BY source, term")
            w.execute(f"INSERT INTO m_sums SELECT source, {sign} * sum(tf::DOUBLE / doc_len), {sign} * sum(tf) "
                      f"FROM m_terms WHERE {where} AND doc_len > 0 GROUP BY source")

    def refresh(self, tables: Iterable[str] | None = None, force: bool = False) -> bool:
        """Re-read changed partitions of ``tables`` (default: all), each at most every
        ``refresh_interval`` seconds unless forced. Returns whether anything changed."""
        wanted = set(tables) if tables is not None else set(MIRRORED)
        changed = False
        for table in MIRRORED:  # fixed order: no lock-order inversions between threads
            if table not in wanted:
                continue
            with self._locks[table]:
                if not force and time.monotonic() - self._checked[table] < self.refresh_interval:
                    continue
                w = self.con.cursor()
                try:
                    n = self._refresh_table(table, w, time.time_ns())
                    if table == "terms" and n and not self._indexed:  # once, after the bulk load (faster)
                        w.execute("CREATE INDEX m_terms_term ON m_terms(term)")
                        self._indexed = True
                    changed |= bool(n)
                except (duckdb.IOException, OSError):
                    # a partition vanished or was replaced mid-read: keep the old mirror, reload next time
                    self._sigs[table] = {}
                finally:
                    w.close()
                self._checked[table] = time.monotonic()
        return changed

    def query(self, sql: str, params: list | tuple = (), tables: Iterable[str] | None = None) -> list[dict]:
        """Run ``sql`` on a fresh cursor after refreshing ``tables`` (default: all mirrored tables)."""
        self.refresh(tables)
        cur = self.con.cursor()
        try:
            res = cur.execute(sql, list(params))
            cols = [d[0] for d in res.description]
            return [dict(zip(cols, row)) for row in res.fetchall()]
        finally:
            cur.close()

    def close(self) -> None:
        self.con.close()

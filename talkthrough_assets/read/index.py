"""LibraryIndex: the cross-recording index the listing and search read, over the pipeline's persistent
search index (:mod:`talkthrough_assets.model.search_index`), never re-tokenizing what it already holds.

Where a recording's postings come from, for the manifest published now (one listing of
``manifests/``, one of ``index/parts/``, one of ``index/merged/``):

1. its **merged bucket**, when the bucket holds the part that indexes this manifest: memory-mapped
   Arrow files, term-sorted, so a query touches only its terms' postings and the final hits' text;
2. else its **part** (one small Parquet written with the manifest), read into an in-memory delta;
3. else the **manifest** itself (data processed before the index existed, or a part missing), indexed
   into the delta with the same code the pipeline uses, in batches with a ``warming`` marker.

A part is paired with a manifest by name (the manifest's byte size and sha256 are in it), and the
merged bucket records which part each of its recordings came from, so search and the per-recording
tools serve one generation. A superseded or forgotten recording's rows in a
merged bucket are masked until the bucket is re-merged.

Queries read a :class:`~talkthrough_assets.read.index_view.View` (exact BM25 over numpy arrays, in
:mod:`talkthrough_assets.read.index_view`), swapped whole by each publish. The listing and the lexicon
(for typo suggestions and OCR substring matches) are small DuckDB tables.

Read-only: nothing is written under the data root (or anywhere else).
"""

from __future__ import annotations

import threading
import time
from concurrent.futures import ThreadPoolExecutor
import duckdb
import numpy as np
import pyarrow as pa

from talkthrough_assets.core import config
from talkthrough_assets import store
from talkthrough_assets.model import search_index as si
from talkthrough_assets.model.manifest import FrameItem, Segment as TranscriptSegment
from talkthrough_assets.model.search_index_docs import documents, listing_row, part_table
from talkthrough_assets.model.search_index_merge import merge

from talkthrough_assets.read import snapshot
from talkthrough_assets.read.index_view import Segment, View
from talkthrough_assets.read.timeline import Timeline

BATCH = 200  # manifests indexed per step of a (re)load from manifests
MAX_CHUNKS = 8  # in-memory delta chunks before they are merged into one
PUBLISH_EVERY_S = 30.0  # during a long load from manifests: how often what is indexed so far is published
WARM_WAIT_S = 5.0  # a reader's wait for the server's first index build (then: a partial answer, said so)
WARM_WAIT_ENV = "TALKTHROUGH_MCP_WARM_WAIT_S"

_S, _I, _B = pa.string(), pa.int64(), pa.bool_()
RECORDINGS_SCHEMA = pa.schema([
    ("recording", _S), ("filename", _S), ("kind", _S), ("duration_ms", _I), ("recorded_at", _S),
    ("tz_offset_min", _I), ("wall_clock_source", _S), ("wall_clock_confidence", _S), ("language", _S),
    ("segment_count", _I), ("frame_count", _I), ("unique_frame_count", _I), ("diarized", _B),
    ("speaker_count", _I), ("has_audio", _B), ("has_video", _B), ("transcript_available", _B),
    ("processed_at", _S), ("partial_to_ms", _I), ("partial_next_ms", _I), ("generation", _S)])
_DUCK = {_S: "VARCHAR", _I: "BIGINT", _B: "BOOLEAN"}


def _read_part(name: str) -> pa.Table | None:
    try:
        return si.read_part(name)
    except (OSError, ValueError, KeyError, pa.ArrowException):
        return None  # a damaged or vanished part: the manifest says the same


class LibraryIndex:
    """The listing (``m_recordings``) and lexicon (``m_df``: source, term, df) in DuckDB, the postings in
    :class:`View` over the pipeline's search index."""

    def __init__(self, refresh_interval: float | None = None):
        if refresh_interval is None:
            refresh_interval = config.get("TALKTHROUGH_MCP_REFRESH_S")
        self.refresh_interval = refresh_interval
        # how long a reader waits for a long (re)load before answering from what is indexed so far
        self.warm_wait_s = config.get(WARM_WAIT_ENV)
        self.con = duckdb.connect(":memory:")
        self._lock = threading.Lock()
        self._checked = float("-inf")
        self._warming: tuple[int, int] | None = None  # (indexed, total) during a long load
        self.loads = 0  # recordings (re)indexed from a part or a manifest: observable by tests and the bench
        self.manifest_loads = 0  # of which from a manifest (tokenized here)
        self.damaged: dict[str, str] = {}  # rid -> reason, for manifests that could not be read
        self.view = View()
        self._buckets: dict[str, tuple[tuple, Segment]] = {}  # bucket -> (pointer stamp, segment)
        # recordings not served from a merged bucket: rid -> (source key, part table, generation)
        self._delta: dict[str, tuple[tuple, pa.Table, str]] = {}
        self._want: dict[str, tuple] = {}
        self._chunks: dict[int, Segment] = {}  # delta chunks by id
        self._home: dict[str, int] = {}  # rid -> the chunk holding its current rows
        self._next_chunk = 0
        self._dirty = False  # chunks added since the last publish
        self._bad: dict[str, tuple] = {}  # rid -> the source key of a manifest that could not be read
        cols = ", ".join(f"{f.name} {_DUCK[f.type]}" for f in RECORDINGS_SCHEMA)
        self.con.execute(f"CREATE TABLE m_recordings ({cols})")
        self.con.execute("CREATE TABLE m_df (source VARCHAR, term VARCHAR, df DOUBLE)")

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

    def warming(self) -> str | None:
        """``"warming (n of N recordings indexed)"`` while a long (re)load runs on another thread (the
        server's warm-up), else None. Readers wait for it at most ``warm_wait_s``, then answer from
        what is indexed so far and say so."""
        w = self._warming
        return f"warming ({w[0]} of {w[1]} recordings indexed)" if w else None

    def refresh(self, force: bool = False, stop: threading.Event | None = None) -> bool:
        """Follow the published manifests and the search index (at most every ``refresh_interval``
        seconds unless forced). ``stop`` ends a long load from manifests between batches; what is left
        is picked up by the next refresh. Returns whether anything changed. While another thread runs
        a long load, waits at most ``warm_wait_s`` for it."""
        deadline = time.monotonic() + self.warm_wait_s
        while not self._lock.acquire(timeout=0.05):  # a short refresh is waited for; a long load only so long
            if self._warming and time.monotonic() >= deadline:
                return False
        try:
            return self._refresh(force, stop)
        finally:
            self._warming = None
            self._lock.release()

    def _load_buckets(self) -> bool:
        stamps = {n[:-5]: st for n, st in store.file_stamps(si.MERGED).items()
                  if n.endswith(".json") and n[:-5] in si.BUCKETS}
        changed = False
        for b in sorted(set(self._buckets) | set(stamps)):
            st = stamps.get(b)
            if st is None:
                del self._buckets[b]
                changed = True
            elif b not in self._buckets or self._buckets[b][0] != st:
                try:
                    loaded = si.load_bucket(b)
                except (OSError, ValueError, KeyError, pa.ArrowException):
                    loaded = None  # replaced while read: the next refresh reads the new one
                if loaded is not None:
                    self._buckets[b] = (st, Segment(loaded[1]))
                    changed = True
        return changed

    def _refresh(self, force: bool, stop: threading.Event | None) -> bool:
        if not force and time.monotonic() - self._checked < self.refresh_interval:
            return False
        seen = self._scan()
        parts = si.list_parts()
        changed = self._load_buckets()
        want = self._wanted(seen, parts)
        changed = self._drop_gone(seen, want) or changed
        todo = sorted(rid for rid, w in want.items() if w[0] != "merged" and
                      (rid not in self._delta or self._delta[rid][0] != w) and
                      self._bad.get(rid) != w)
        changed = changed or want != self._want
        self._want = want
        if len(todo) > BATCH:
            self._warming = (len(seen) - len(todo), len(seen))
        self._load(todo, want, seen, stop, bool(todo) or changed)
        self._checked = time.monotonic()
        return changed or bool(todo)

    def _wanted(self, seen: dict[str, tuple], parts: dict[str, list]) -> dict[str, tuple]:
        """Where each published recording's postings come from: ("merged", part, sig) when its bucket holds the
        part indexing this manifest, else ("part", part, sig), else ("manifest", sig)."""
        want: dict[str, tuple] = {}
        for rid, sig in seen.items():
            part = si.choose_part(parts.get(rid, []), sig[1])
            bk = self._buckets.get(rid[0])
            i = bk[1].rid_index.get(rid) if bk else None
            if part and i is not None and bk[1].recs[i]["part"] == part:
                want[rid] = ("merged", part, sig)
            elif part:
                want[rid] = ("part", part, sig)
            else:
                want[rid] = ("manifest", sig)
        return want

    def _drop_gone(self, seen: dict[str, tuple], want: dict[str, tuple]) -> bool:
        """Forget the damage of recordings no longer published, and drop from the delta the recordings it no
        longer serves (gone, or now in their merged bucket). Returns whether any was dropped."""
        for rid in [r for r in self.damaged if r not in seen]:
            self.damaged.pop(rid, None)
            self._bad.pop(rid, None)
        changed = False
        for rid in list(self._delta):
            if want.get(rid, ("gone",))[0] not in ("part", "manifest"):
                del self._delta[rid]
                self._home.pop(rid, None)
                changed = True
        return changed

    def _load(self, todo: list[str], want: dict[str, tuple], seen: dict[str, tuple],
              stop: threading.Event | None, changed: bool) -> None:
        """Index ``todo`` into the delta and publish: parts first, all at once (read in threads: no tokenizing),
        then manifests in batches; during a long load the view is republished every ``PUBLISH_EVERY_S``."""
        parts_todo = [rid for rid in todo if want[rid][0] == "part"]
        with ThreadPoolExecutor(4) as pool:
            tables = dict(zip(parts_todo, pool.map(lambda rid: _read_part(want[rid][1]), parts_todo)))
        steps = [parts_todo] if parts_todo else []
        rest = [rid for rid in todo if want[rid][0] != "part"]
        steps += [rest[i:i + BATCH] for i in range(0, len(rest), BATCH)] or ([] if steps else [[]])
        stopped = False
        published = float("-inf")
        pending: list[str] = []
        unpublished = 0
        for i, batch in enumerate(steps):
            if i and stop is not None and stop.is_set():
                stopped = True
                break
            for rid in batch:
                if stop is not None and stop.is_set():
                    break
                self._load_one(rid, want[rid], tables.get(rid))
                time.sleep(0)  # let the transport's thread run (a client may be closing the session)
            pending += [rid for rid in batch if rid in self._delta and self._delta[rid][0] == want[rid]]
            unpublished += len(batch)
            if self._warming and i + 1 < len(steps) and time.monotonic() - published < PUBLISH_EVERY_S:
                continue
            self._publish_batch(pending, seen, changed)
            published = time.monotonic()
            pending = []
            if self._warming:
                self._warming = (self._warming[0] + unpublished, self._warming[1])
            unpublished = 0
        if pending:  # loaded before a stop: published by the next refresh
            self._add_chunk(pending)
            self._dirty = True
        if len(self._chunks) > 1 and not stopped and self._warming:  # after a long load: one chunk
            self._add_chunk(list(self._delta))
            self._publish(seen)

    def _publish_batch(self, pending: list[str], seen: dict[str, tuple], changed: bool) -> None:
        """Each publish adds one in-memory chunk (a query reads every chunk), merged into one later."""
        self._add_chunk(pending)
        if len(self._chunks) > MAX_CHUNKS and not self._warming:
            self._add_chunk(list(self._delta))
        if changed or self._dirty:
            self._publish(seen)

    def _add_chunk(self, rids: list[str]) -> None:
        """A new delta chunk holding ``rids`` (their rows in older chunks are masked); empty chunks go."""
        if rids:
            cid = self._next_chunk
            self._next_chunk += 1
            self._chunks[cid] = Segment(merge(None, set(), [(self._delta[r][0][1] if self._delta[r][0][0] == "part"
                                                              else "", self._delta[r][1]) for r in rids]))
            for r in rids:
                self._home[r] = cid
        used = set(self._home.values())
        for cid in [c for c in self._chunks if c not in used]:
            del self._chunks[cid]

    def _load_one(self, rid: str, w: tuple, part: pa.Table | None = None) -> None:
        """Index one recording into the delta, from its part (read already, or None when it could not
        be), else from its manifest."""
        if w[0] == "part" and part is not None:
            self._delta[rid] = (w, part, snapshot.generation_of(w[2]))
            self.loads += 1
            return
        try:
            snap = snapshot.read(rid, w[-1])
        except snapshot.DamagedManifest as e:
            self.damaged[rid] = str(e)
            self._bad[rid] = w  # not read again until it changes
            self._delta.pop(rid, None)
            self._home.pop(rid, None)
            return
        if snap is None:
            self._delta.pop(rid, None)
            self._home.pop(rid, None)
            return
        self.damaged.pop(rid, None)
        self._bad.pop(rid, None)
        row, segments, words, frames, names = snapshot_parts(snap)
        docs = documents(segments, words, frames, names)
        t = part_table(rid, row, docs, frames, snap.sig[1] if len(snap.sig) > 1 else 0, "")
        self._delta[rid] = (w, t, snap.generation)
        self.loads += 1
        self.manifest_loads += 1

    def _publish(self, seen: dict[str, tuple]) -> None:
        """Build the view of the current buckets and delta and swap it in, with the listing and lexicon."""
        live_merged = {rid for rid, w in self._want.items() if w[0] == "merged"}
        segments = [seg for _, (_, seg) in sorted(self._buckets.items())]
        chunk_live: dict[int, set[str]] = {}
        for rid, cid in self._home.items():
            chunk_live.setdefault(cid, set()).add(rid)
        chunks = {id(seg): chunk_live.get(cid, set()) for cid, seg in self._chunks.items()}
        segments += [seg for _, seg in sorted(self._chunks.items())]
        live = live_merged | set(self._home)
        rank = {rid: i for i, rid in enumerate(sorted(live))}
        generation = {rid: snapshot.generation_of(seen[rid]) for rid in live_merged}
        generation.update({rid: self._delta[rid][2] for rid in self._home})
        where: dict[str, tuple[int, int]] = {}
        n, total = np.zeros(2), np.zeros(2)
        rows = {c: [] for c in RECORDINGS_SCHEMA.names}
        for si_, seg in enumerate(segments):
            seg.set_live(chunks.get(id(seg), live_merged), rank)
            a, b = seg.source_totals()
            n += a
            total += b
            for ri, r in enumerate(seg.recs):
                if seg.rec_live[ri]:
                    where[r["rid"]] = (si_, ri)
                    for c in RECORDINGS_SCHEMA.names:
                        rows[c].append(generation[r["rid"]] if c == "generation" else r["rec"].get(c))
        with np.errstate(divide="ignore", invalid="ignore"):
            avgdl = np.where(n > 0, total / np.maximum(n, 1), 1.0)
        self.view = View(segments, where, generation, n, avgdl, Timeline(rows))
        self._dirty = False
        recs = pa.table(rows, schema=RECORDINGS_SCHEMA)
        lex = [seg.bundle.lex for seg in segments if seg.bundle.lex.num_rows]
        w = self.con.cursor()
        try:
            w.register("incoming", recs)
            w.execute("BEGIN TRANSACTION")
            w.execute("DELETE FROM m_recordings")
            w.execute("INSERT INTO m_recordings SELECT * FROM incoming")
            w.execute("DELETE FROM m_df")
            if lex:
                w.register("lex", pa.concat_tables(lex))
                w.execute("INSERT INTO m_df SELECT 'transcript', term, sum(df_transcript) FROM lex "
                          "WHERE df_transcript > 0 GROUP BY term UNION ALL "
                          "SELECT 'ocr', term, sum(df_ocr) FROM lex WHERE df_ocr > 0 GROUP BY term")
            w.execute("COMMIT")
        finally:
            w.close()

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


def snapshot_parts(snap: snapshot.Snapshot) -> tuple[dict, list[TranscriptSegment], list, list[FrameItem],
                                                     dict[str, str]]:
    """What a recording's index part is built from, from its typed snapshot: (listing row, segments, words,
    frames, speaker names)."""
    return (listing_row(snap.rid, snap.rec, snap.partial), list(snap.segments), list(snap.words), list(snap.frames),
            dict(snap.names))

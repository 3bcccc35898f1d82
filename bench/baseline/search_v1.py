"""The MCP search before the persistent index (issue #26, item 4): a LibraryIndex that reads every published
manifest, tokenizes it and keeps every (document, term) row in an in-memory DuckDB, with BM25 in one SQL
statement per search. Kept verbatim (commit ed66163) for bench/bench_reads.py, which runs it beside the
persistent index in the same run. Only the benchmark imports it.
"""
from __future__ import annotations

import dataclasses
import os
import threading
import time
from collections import Counter
from typing import Iterable

import re
from typing import Callable

import duckdb
import pyarrow as pa

from talkthrough_assets import store
from talkthrough_assets.model import terms as terms_stage

from talkthrough_assets.read import snapshot
from talkthrough_assets.read.index import snapshot_parts

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
    # the typed snapshot in the dict shapes this baseline was written against
    rid = snap.rid
    r, segments, words, frame_rows, names = snapshot_parts(snap)
    segments = [{k: v for k, v in dataclasses.asdict(s).items() if v is not None} for s in segments]
    words = [list(w) for w in words]
    frame_rows = [{"ms": f.ms, "file": f.file, "duplicate_of": f.duplicate_of, "ocr_text": f.ocr_text or None}
                  for f in frame_rows]
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

    firsts = {s["seq"]: f for s, f in zip(segments, _first_word_times(segments, words))}
    for s in segments:
        who = s.get("speaker")
        doc("transcript", s["seq"], s["t0_ms"], s["t1_ms"], who, names.get(who) if who else None, s["text"])
    for f in frame_rows:
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
            refresh_interval = float(os.environ.get("TALKTHROUGH_MCP_REFRESH_S") or 1.0)
        self.refresh_interval = refresh_interval
        # how long a reader waits for a long (re)load before answering from what is indexed so far
        self.warm_wait_s = float(os.environ.get(WARM_WAIT_ENV) or WARM_WAIT_S)
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


# --------------------------------------------------------------------------- the search tool of ed66163
# (its helpers -- expand, split_compound, suggest, snippet ... -- run SQL on m_df and are unchanged)

from talkthrough_assets.model.wallclock import t_wall  # noqa: E402
from talkthrough_assets.read.args import SPEAKER_MAX_CHARS, clip, dumps, limit_arg, text_arg  # noqa: E402
from talkthrough_assets.read.errors import InvalidArgument  # noqa: E402
from talkthrough_assets.read.search import (PHRASE_CANDIDATES, SEARCH_MAX_CHARS, SEARCH_MAX_HITS, SEARCH_MAX_QUERY_CHARS, SEARCH_MAX_TERMS, SPLIT_WEIGHT, expand, has_phrase, known_term, snippet, split_compound, suggest)
from talkthrough_assets.read.transcript import speaker_match  # noqa: E402

K1 = 1.2
B = 0.75


def _sql_str(s: str) -> str:
    return "'" + s.replace("'", "''") + "'"


def search(get_index: Callable[[], LibraryIndex], get_snapshot: Callable[[str], snapshot.Snapshot],
           query: str, recording_id: str | None = None, limit: int = 10, speaker: str | None = None) -> dict:
    """The search tool's answer. ``get_index`` gives the library index (asked for only once the
    arguments are checked); ``get_snapshot`` a recording's snapshot (for a scoped search)."""
    query = text_arg("query", query, SEARCH_MAX_QUERY_CHARS)
    if not query.strip():
        raise InvalidArgument("query must be a non-empty string")
    words = list(dict.fromkeys(terms_stage.index_terms(query)))
    if not words:
        shown, _ = clip(query, 60)
        raise InvalidArgument(f"query {shown!r} has no searchable words (letters or digits; one-letter words "
                              "are not indexed)")
    if len(words) > SEARCH_MAX_TERMS:
        raise InvalidArgument(f"query has {len(words)} distinct words; use at most {SEARCH_MAX_TERMS}")
    limit = limit_arg("limit", limit, 1, SEARCH_MAX_HITS)
    speaker = text_arg("speaker", speaker, SPEAKER_MAX_CHARS, required=False)
    rid = None
    if recording_id is not None:
        snap = get_snapshot(recording_id)
        rid = snap.rid
        if speaker is not None:
            if not snap.diarized:
                raise InvalidArgument(f"recording {rid} is not diarized, so it has no speaker labels",
                                      hint="drop `speaker`, or reprocess with `talkthrough process --diarize`")
            speaker_match(snap, speaker)
    index = get_index()
    index.refresh()
    # "quoted phrases": their words adjacent and in order; a glued word the library only has apart
    # ("rollback" for the spoken "roll back") searches as that phrase (issue #26, item 7)
    phrases = [p for p in (list(terms_stage.index_terms(q)) for q in re.findall(r'"([^"]+)"', query)) if len(p) > 1]
    split = {w: parts for w in words if (parts := split_compound(index, w))}
    fetch = PHRASE_CANDIDATES if phrases or split else limit
    pairs, inside = expand(index, words)
    for w, (a, b) in split.items():  # the word, or its two halves (kept below only when adjacent)
        pairs += [(w, None, a, SPLIT_WEIGHT), (w, None, b, SPLIT_WEIGHT)]
    literal = ", ".join(_sql_str(t) for t in dict.fromkeys(p[2] for p in pairs))  # [^\W_]+ terms: safe to inline
    scope = f"AND recording = '{rid}'" if rid else ""  # rid is validated hex: safe to inline
    who = " ".join(speaker.casefold().split()) if speaker is not None else None
    # a label (S1), a full name, or one word of a name ("Alice" matches "Alice Stone"): transcript.name_matches
    speaker_join = ("JOIN m_docs sd ON sd.recording = t.recording AND sd.source = t.source AND sd.ref = t.ref "
                    "AND (lower(sd.speaker) = $who OR lower(sd.speaker_name) = $who "
                    "OR list_contains(string_split(lower(sd.speaker_name), ' '), $who))") if who is not None else ""
    # one statement, so ranking and hit context come from one snapshot of the index
    rows = index.query(f"""
    WITH map AS (SELECT unnest($q::VARCHAR[]) AS qword, unnest($src::VARCHAR[]) AS msource,
                        unnest($term::VARCHAR[]) AS term, unnest($weight::DOUBLE[]) AS weight),
    hits AS MATERIALIZED (
        SELECT t.recording, t.source, t.ref, t.t_ms, m.qword, t.tf * m.weight AS tf, t.doc_len
        FROM (SELECT * FROM m_terms WHERE term IN ({literal}) {scope}) t
        JOIN map m ON m.term = t.term AND (m.msource IS NULL OR m.msource = t.source)
        {speaker_join}
    ), per_doc AS MATERIALIZED (
        SELECT recording, source, ref, qword, sum(tf) AS tf, max(doc_len) AS doc_len, min(t_ms) AS t_ms
        FROM hits GROUP BY recording, source, ref, qword
    ), qdf AS (
        SELECT m.qword, d.source, sum(d.df) AS df FROM map m
        JOIN m_df d ON d.term = m.term AND (m.msource IS NULL OR m.msource = d.source) GROUP BY m.qword, d.source
    ), scored AS MATERIALIZED (
        SELECT p.recording, p.source, p.ref, min(p.t_ms) AS t_ms, count(*) AS matched, list(p.qword) AS terms,
               sum(ln(1 + (s.n - q.df + 0.5) / (q.df + 0.5))
                   * p.tf * ({K1} + 1) / (p.tf + {K1} * (1 - {B} + {B} * p.doc_len / s.avgdl))) AS score
        FROM per_doc p
        JOIN qdf q ON q.qword = p.qword AND q.source = p.source    -- document frequency: all recordings
        JOIN m_stats s ON s.source = p.source                      -- N and avgdl: all recordings
        GROUP BY p.recording, p.source, p.ref
    ), counts AS (
        SELECT count(*) FILTER (WHERE matched = $nwords) AS n_all, count(*) AS n_any FROM scored
    ), top AS (
        SELECT s.*, c.n_all, c.n_any FROM scored s, counts c
        WHERE c.n_all = 0 OR s.matched = $nwords
        ORDER BY s.score DESC, s.recording, s.t_ms, s.source LIMIT $limit
    )
    SELECT top.*, r.filename, r.generation, r.recorded_at, r.tz_offset_min, d.text, d.speaker, d.speaker_name,
           f.unique_ms AS frame_ms,
           (SELECT list({{'term': qword, 'docs': docs}}) FROM (
                SELECT qword, count(*) AS docs FROM per_doc GROUP BY qword)) AS per_word
    FROM top
    JOIN m_recordings r ON r.recording = top.recording
    LEFT JOIN m_docs d ON d.recording = top.recording AND d.source = top.source AND d.ref = top.ref
    ASOF LEFT JOIN m_frames f ON f.recording = top.recording AND top.t_ms >= f.ms
    ORDER BY top.score DESC, top.recording, top.t_ms, top.source
    """, {"q": [p[0] for p in pairs], "src": [p[1] for p in pairs], "term": [p[2] for p in pairs],
          "weight": [p[3] for p in pairs], "nwords": len(words), "limit": fetch,
          **({"who": who} if who is not None else {})}, refresh=False)
    per_word = {w["term"]: int(w["docs"]) for w in (rows[0]["per_word"] or [])} if rows else {}
    n_all = int(rows[0]["n_all"]) if rows else 0
    n_any = int(rows[0]["n_any"]) if rows else 0
    mode = "and" if len(words) == 1 or n_all else "or"
    if phrases or split:
        def keep(r) -> bool:
            toks = terms_stage.index_terms(r["text"] or "")
            if phrases and not (mode == "and" and all(has_phrase(toks, p) for p in phrases)):
                return False  # every quoted phrase, in one document
            return all(any(w in t for t in toks) or has_phrase(toks, list(split[w]))
                       for w in r["terms"] if w in split)  # a split word: itself, or its halves adjacent
        rows = [r for r in rows if keep(r)]
        if mode == "and":
            n_all = len(rows)
        n_any = len(rows)
        rows = rows[:limit]
    shown_query, query_cut = clip(query, 200)
    out = {"query": shown_query, "terms": words, "mode": mode, "scope": rid or "all recordings",
           "total_matches": n_all if mode == "and" else n_any, "returned": 0, "hits": []}
    if query_cut:
        out["query_truncated"] = True
    if phrases:
        out["phrases"] = [" ".join(p) for p in phrases]
        if n_all >= PHRASE_CANDIDATES:
            out["note_phrases"] = f"phrase matches counted among the best {PHRASE_CANDIDATES} candidates"
    if split:
        out["split_words"] = {w: " ".join(p) for w, p in split.items()}
    warming = index.warming()
    if warming:  # answered from the recordings indexed so far (issue #26, item 3)
        out["index"] = warming
    if speaker is not None:
        out["speaker"] = speaker
    wanted = set(words)
    recs: dict[str, dict] = {}
    used = len(dumps(out)) + 900  # room for the notes added below
    for r in rows:
        wc = {"start_utc": r["recorded_at"], "tz_offset_min": r["tz_offset_min"]} if r["recorded_at"] else None
        hit = {"recording": r["recording"], "source": r["source"],
               "t_ms": int(r["t_ms"]), "t_wall": t_wall(wc, r["t_ms"]), "frame_ms": r["frame_ms"],
               "score": round(float(r["score"]), 3), "snippet": snippet(r["text"] or "", wanted)}
        if r["speaker"]:
            hit["speaker"] = r["speaker"]
            if r["speaker_name"]:
                hit["speaker_name"] = r["speaker_name"]
        if mode == "or":
            hit["matched"] = sorted(r["terms"], key=words.index)
        # filename and generation once per recording, not on every hit (issue #26, item 5)
        rec = None if r["recording"] in recs else {"filename": r["filename"], "generation": r["generation"]}
        size = len(dumps(hit)) + 1 + (len(dumps(rec)) + 22 if rec else 0)
        if out["hits"] and used + size > SEARCH_MAX_CHARS:
            break
        out["hits"].append(hit)
        if rec:
            recs[r["recording"]] = rec
        used += size
    hits = out["hits"]
    out["recordings"] = recs
    out["returned"] = len(hits)
    matched = [w for w in words if per_word.get(w)]
    missing = [w for w in words if not per_word.get(w)]
    if not rows and phrases and per_word and all(per_word.get(w) for w in words):
        out["note"] = (f"no transcript segment or OCR frame holds {', '.join(repr(' '.join(p)) for p in phrases)} "
                       "(words adjacent, in order); drop the quotes to find the words apart")
    elif not rows:
        out["note"] = f"no transcript segment or OCR frame contains {', '.join(repr(w) for w in words)}" + (
            f" said by {speaker!r}" if speaker is not None else "")
    elif mode == "or":
        counts = ", ".join(f"{w!r} ({per_word[w]} docs)" for w in matched)
        out["note"] = (f"no single segment or frame contains all of {', '.join(repr(w) for w in words)}; "
                       f"showing OR-ranked matches. Matched words: {counts}"
                       + (f"; not found {'in this recording' if rid else 'anywhere'}: "
                          f"{', '.join(repr(w) for w in missing)}" if missing else ""))
        out["matched_terms"] = matched
        out["unmatched_terms"] = missing
    if inside:
        out["ocr_substring_matches"] = {w: ts[:5] for w, ts in inside.items()}
    # a word the index has, just not here (this speaker, this recording): no spelling suggestion for it
    elsewhere = [w for w in missing if (speaker is not None or rid) and known_term(index, w)]
    if elsewhere:
        where = " and ".join(x for x in (f"said by {speaker!r}" if speaker is not None else "",
                                         "in this recording" if rid else "") if x)
        out["found_elsewhere"] = elsewhere
        out["note"] = (out.get("note", "") + f"; {', '.join(repr(w) for w in elsewhere)} occur in the library, "
                       f"but not {where}").lstrip("; ")
    missing = [w for w in missing if w not in elsewhere]
    if missing:
        sugg = {w: s for w in missing if (s := suggest(index, w))}
        if sugg:
            out["did_you_mean"] = sugg
            fixed = " ".join(sugg.get(w, [w])[0] for w in words)
            out["note"] = (out.get("note", "") + f"; did you mean: search(query={fixed!r})?").lstrip("; ")
    if len(hits) < out["total_matches"]:
        out["more"] = f"{out['total_matches'] - len(hits)} more matches; raise limit (max {SEARCH_MAX_HITS}) " \
                      "or narrow with id / speaker / more words"
    return out

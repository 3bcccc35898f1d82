"""search_index: the persistent inverted index the MCP server searches (issue #26, item 4).

Written by the pipeline, read by the MCP server, so the server never re-tokenizes manifests:

* **Parts** (``index/parts/<id>.<manifest bytes>.<sha12>.parquet``): one small Parquet per recording,
  written by the manifest stage just before it publishes the manifest, from the same manifest dict.
  One row per document (a transcript segment, speaker-attributed when diarized, or an OCR'd unique
  frame) with its postings as list columns (term, tf, time of the first word producing the term) and
  the recording's listing row and frame list in the file's metadata. The name says which manifest it
  indexes (its size and sha256), so a reader pairs a part with the published manifest from one
  listing, and a copied data root keeps its index.
* **Merged buckets** (``index/merged/<b>.json`` naming ``index/merged/<b>/<seq>-{docs,postings,lex}.arrow``):
  the parts of the recordings whose id starts with hex digit ``b``, merged into term-sorted postings
  (Arrow IPC, uncompressed: the server memory-maps them and touches only the postings of the query's
  terms and the text of the final hits) with a lexicon holding per-term document frequencies per
  source. A bucket is re-merged lazily, when its unmerged parts reach a tenth of it (at least one),
  so a recording's write stays one small Parquet and every posting is rewritten a bounded number of
  times; ``forget`` re-merges its bucket at once, so no posting of a forgotten recording stays.

Terms are :func:`terms.index_terms`, the one tokenizer of the SQL ``terms`` table and MCP queries.
The merged files are derived data: deleting ``index/`` loses nothing (the server falls back to the
parts, then to the manifests, and the next compaction rebuilds them).
"""

from __future__ import annotations

import base64
import hashlib
import json
import math
import time
import uuid
from typing import Iterable

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from talkthrough_assets import store

from talkthrough_assets.stages import terms as terms_stage

CODE_VERSION = "1"
FORMAT = 1
PARTS = "index/parts"
MERGED = "index/merged"
BUCKETS = "0123456789abcdef"
SOURCES = ("transcript", "ocr")  # source code = position
META_KEY = b"talkthrough.index"
MERGE_FRACTION = 0.1  # a bucket is re-merged when its unmerged parts reach this share of it

_S, _I, _I32 = pa.string(), pa.int64(), pa.int32()
PART_SCHEMA = pa.schema([
    ("source", _S), ("ref", _I), ("t0_ms", _I), ("t1_ms", _I), ("speaker", _S), ("speaker_name", _S),
    ("text", _S), ("doc_len", _I32), ("terms", pa.list_(_S)), ("tf", pa.list_(_I32)), ("t_ms", pa.list_(_I)),
])
DOCS_SCHEMA = pa.schema([("rec", _I32), ("source", pa.int8()), ("ref", _I), ("t0_ms", _I), ("t1_ms", _I),
                         ("doc_len", _I32), ("spk", _I32), ("text", _S)])
POSTINGS_SCHEMA = pa.schema([("doc", _I32), ("tf", _I32), ("t_ms", _I)])
LEX_SCHEMA = pa.schema([("term", _S), ("start", _I), ("end", _I), ("df_transcript", _I), ("df_ocr", _I)])


# --------------------------------------------------------------------------- one recording's documents

def recording_row(rid: str, m: dict) -> dict:
    """The listing row of a published manifest (what list_recordings shows)."""
    media, tr, fr = m["media"], m["transcript"], m["frames"]
    di = tr.get("diarization") or {}
    diarized = bool(di.get("available"))
    wc = m.get("wall_clock") if isinstance(m.get("wall_clock"), dict) and m["wall_clock"].get("start_utc") else None
    return {
        "recording": rid, "filename": media["filename"], "kind": media.get("kind"),
        "duration_ms": int(round(float(media.get("duration_s") or 0) * 1000)),
        "recorded_at": wc["start_utc"] if wc else None, "tz_offset_min": wc.get("tz_offset_min") if wc else None,
        "wall_clock_source": wc.get("source") if wc else None,
        "wall_clock_confidence": wc.get("confidence") if wc else None,
        "language": tr.get("language"), "segment_count": len(tr.get("segments") or []),
        "frame_count": int(fr.get("count") or 0), "unique_frame_count": int(fr.get("unique_count") or 0),
        "diarized": diarized, "speaker_count": len(di.get("speakers") or []) if diarized else 0,
        "has_audio": bool(media.get("has_audio")), "has_video": bool(media.get("has_video")),
        "transcript_available": bool(tr.get("available")), "processed_at": m.get("created_at"),
        # a partial generation (#19, stages/partial.py): where its transcript ends and goes on (absent when final)
        **partial_columns(m),
    }


def partial_columns(m: dict) -> dict:
    p = m.get("partial") or None
    return {"partial_to_ms": int(p["covered_ms"][1]), "partial_next_ms": p.get("next_start_ms")} if p else {}


def documents(segments: list[dict], words: list[list], frames: list[dict], names: dict[str, str]) -> list[dict]:
    """The search documents of one generation: transcript segments (in time order) then OCR'd unique
    frames, each with its index rows (:func:`terms.doc_terms`)."""
    segments = sorted(segments, key=lambda s: (s["t0_ms"], s["seq"]))
    firsts = terms_stage.first_word_times(segments, sorted(words, key=lambda w: w[0]))
    out = []
    for s, first in zip(segments, firsts):
        who = s.get("speaker")
        n, rows = terms_stage.doc_terms(s["text"], s["t0_ms"], first)
        out.append({"source": "transcript", "ref": int(s["seq"]), "t0_ms": int(s["t0_ms"]), "t1_ms": int(s["t1_ms"]),
                    "speaker": who, "speaker_name": names.get(who) if who else None, "text": s["text"],
                    "doc_len": n, "rows": rows})
    for f in sorted(frames, key=lambda f: f["ms"]):
        if f.get("duplicate_of") is None and f.get("ocr_text"):
            n, rows = terms_stage.doc_terms(f["ocr_text"], f["ms"])
            out.append({"source": "ocr", "ref": int(f["ms"]), "t0_ms": int(f["ms"]), "t1_ms": int(f["ms"]),
                        "speaker": None, "speaker_name": None, "text": f["ocr_text"], "doc_len": n, "rows": rows})
    return out


def manifest_parts(m: dict) -> tuple[list[dict], list[list], list[dict], dict[str, str]]:
    """(segments, words, frames, speaker names) of a manifest dict, as :func:`documents` takes them."""
    tr, fr = m["transcript"], m["frames"]
    di = tr.get("diarization") or {}
    names = {str(k): str(v) for k, v in (di.get("speaker_names") or {}).items() if v} if di.get("available") else {}
    frames = [{"ms": int(i["ms"]), "duplicate_of": i.get("duplicate_of"), "ocr_text": i.get("ocr_text") or None}
              for i in fr.get("items") or []]
    return list(tr.get("segments") or []), list(tr.get("words") or []), frames, names


def term_table_rows(docs: list[dict], source: str) -> list[dict]:
    """The SQL ``terms`` table's rows of one source: the same rows as the index parts' postings."""
    return [{"source": source, "ref": d["ref"], "t_ms": t, "term": term, "tf": tf, "doc_len": d["doc_len"]}
            for d in docs if d["source"] == source for term, tf, t in d["rows"]]


def part_table(rid: str, rec: dict, docs: list[dict], frames: list[dict], manifest_size: int,
               manifest_sha256: str) -> pa.Table:
    """One recording's index part: a row per document, postings as list columns, and the listing row
    and (ms, on-screen unique ms) of every frame in the file metadata."""
    cols = {c: [] for c in PART_SCHEMA.names}
    for d in docs:
        for c in ("source", "ref", "t0_ms", "t1_ms", "speaker", "speaker_name", "text", "doc_len"):
            cols[c].append(d[c])
        cols["terms"].append([r[0] for r in d["rows"]])
        cols["tf"].append([r[1] for r in d["rows"]])
        cols["t_ms"].append([r[2] for r in d["rows"]])
    meta = {"format": FORMAT, "code_version": CODE_VERSION, "recording": rid, "rec": rec,
            "frames": pack_frames(frames),
            "manifest_size": int(manifest_size), "manifest_sha256": manifest_sha256}
    return pa.table(cols, schema=PART_SCHEMA.with_metadata({META_KEY: json.dumps(meta).encode()}))


def pack_frames(frames: list[dict]) -> str:
    """Every frame's (ms, on-screen unique ms) as base64 of little-endian int64 pairs: one JSON string per
    recording instead of a list per frame (a merged bucket's metadata is parsed whole at every load)."""
    pairs = [(int(f["ms"]), int(f["ms"] if f.get("duplicate_of") is None else f["duplicate_of"]))
             for f in sorted(frames, key=lambda f: f["ms"])]
    return base64.b64encode(np.array(pairs, dtype="<i8").tobytes()).decode()


def frame_on_screen(packed: str, t_ms: int) -> int | None:
    """The unique frame on screen at ``t_ms`` (the last frame at or before it, or its duplicate's head)."""
    if isinstance(packed, list):  # [[ms, unique_ms], ...]: parts written before the packed form
        a = np.array(packed, dtype="<i8").reshape(-1, 2)
    else:
        a = np.frombuffer(base64.b64decode(packed), dtype="<i8").reshape(-1, 2) if packed else np.zeros((0, 2), "<i8")
    k = int(np.searchsorted(a[:, 0], t_ms, side="right")) - 1
    return int(a[k, 1]) if k >= 0 else None


def part_meta(t: pa.Table) -> dict:
    return json.loads(t.schema.metadata[META_KEY])


# --------------------------------------------------------------------------- part files

def part_name(rid: str, manifest_size: int, sha: str) -> str:
    return f"{rid}.{manifest_size}.{sha[:12]}.parquet"


def parse_part_name(name: str) -> tuple[str, int] | None:
    bits = name.split(".")
    if len(bits) != 4 or bits[3] != "parquet" or not store.ID_RE.fullmatch(bits[0]) or not bits[1].isdigit():
        return None
    return bits[0], int(bits[1])


def list_parts() -> dict[str, list[tuple[str, tuple]]]:
    """Recording id -> [(part file name, stamp)], from one listing of ``index/parts``."""
    out: dict[str, list[tuple[str, tuple]]] = {}
    for name, st in store.file_stamps(PARTS).items():
        p = parse_part_name(name)
        if p:
            out.setdefault(p[0], []).append((name, st))
    return out


def choose_part(parts: list[tuple[str, tuple]], manifest_size: int) -> str | None:
    """The part indexing a published manifest of ``manifest_size`` bytes (the newest if two match)."""
    fit = [(st[2], name) for name, st in parts if parse_part_name(name)[1] == manifest_size]
    return max(fit)[1] if fit else None


def distinct_size(rid: str, data: bytes) -> bytes:
    """``data`` (a manifest about to be published), padded with trailing newlines until its size differs from
    every index part of ``rid`` there is (the published generation's included): a reader pairs the published
    manifest with its part by size (:func:`choose_part`), so two generations of one recording must never have
    the same size (the manifest stage and the partial generations of #19 publish many)."""
    sizes = {parse_part_name(name)[1] for name, _ in list_parts().get(rid, [])}
    st = store.stamp(store.manifest_key(rid))
    if st is not None:
        sizes.add(st[1])
    while len(data) in sizes:
        data += b"\n"
    return data


def write_part(rid: str, m: dict, data: bytes) -> tuple[str, list[dict]]:
    """Write the index part of manifest ``m`` (whose published bytes will be ``data``); returns (part
    name, documents). Called before the manifest is published."""
    segments, words, frames, names = manifest_parts(m)
    docs = documents(segments, words, frames, names)
    sha = hashlib.sha256(data).hexdigest()
    name = part_name(rid, len(data), sha)
    t = part_table(rid, recording_row(rid, m), docs, frames, len(data), sha)
    store.write_parquet(f"{PARTS}/{name}", t)
    return name, docs


def read_part(name: str) -> pa.Table:
    path, fs = store.parquet_source(f"{PARTS}/{name}")
    if fs is None:
        return pq.ParquetFile(path).read()
    with fs.open_input_file(path) as f:
        return pq.ParquetFile(f).read()


def drop_parts(rid: str, keep: str | None = None) -> list[str]:
    """Delete the parts of ``rid`` other than ``keep``; returns the removed locations."""
    gone = []
    for name, _ in list_parts().get(rid, []):
        if name != keep:
            store.delete_file(f"{PARTS}/{name}")
            gone.append(store.data_location(f"{PARTS}/{name}"))
    return gone


# --------------------------------------------------------------------------- merging

class Bundle:
    """Documents, term-sorted postings and lexicon of some recordings (a merged bucket or the reader's
    in-memory delta). ``recs``: per recording {rid, part, manifest_size, rec, frames, docs: [lo, hi]};
    ``speakers``: [(label, name)] the docs' ``spk`` codes point into."""

    def __init__(self, docs: pa.Table, postings: pa.Table, lex: pa.Table, recs: list[dict],
                 speakers: list[list]):
        self.docs, self.postings, self.lex, self.recs, self.speakers = docs, postings, lex, recs, speakers

    def column(self, table: str, name: str) -> np.ndarray:
        col = getattr(self, table).column(name)
        if col.num_chunks == 1:
            return col.chunk(0).to_numpy(zero_copy_only=False)
        dtype = col.type.to_pandas_dtype() if col.num_chunks == 0 else None
        return col.to_numpy() if col.num_chunks else np.zeros(0, dtype=dtype)


def _concat(chunks: list[np.ndarray], dtype) -> np.ndarray:
    return np.concatenate(chunks).astype(dtype, copy=False) if chunks else np.zeros(0, dtype=dtype)


def merge(old: Bundle | None, keep: set[str], parts: Iterable[tuple[str, pa.Table]]) -> Bundle:
    """A bundle of ``old``'s recordings in ``keep`` plus the given (part name, part table)s."""
    recs: list[dict] = []
    speakers: list[list] = []
    spk_code: dict[tuple, int] = {}
    d_rec, d_src, d_ref, d_t0, d_t1, d_len, d_spk, d_text = ([] for _ in range(8))
    p_term: list[pa.Array] = []   # per chunk: term strings (old: lexicon terms, repeated via p_term_idx)
    p_term_idx: list[np.ndarray] = []
    p_doc, p_tf, p_t = [], [], []
    n_docs = 0

    def code(who, name) -> int:
        key = (who, name)
        if key not in spk_code:
            spk_code[key] = len(speakers)
            speakers.append([who, name])
        return spk_code[key]

    if old is not None and old.recs:
        rk = np.array([r["rid"] in keep for r in old.recs], dtype=bool)
        o_rec = old.column("docs", "rec")
        dmask = rk[o_rec] if len(o_rec) else np.zeros(0, dtype=bool)
        before = np.concatenate([[0], np.cumsum(dmask, dtype=np.int64)])  # kept docs before each doc
        new_id = before[1:] - 1
        rec_new = np.cumsum(rk) - 1
        for i, r in enumerate(old.recs):
            if rk[i]:
                recs.append({**r, "docs": [int(before[r["docs"][0]]), int(before[r["docs"][1]])]})
        n_docs = int(dmask.sum())
        d_rec.append(rec_new[o_rec[dmask]])
        for dst, c in ((d_src, "source"), (d_ref, "ref"), (d_t0, "t0_ms"), (d_t1, "t1_ms"), (d_len, "doc_len")):
            dst.append(old.column("docs", c)[dmask])
        spk = old.column("docs", "spk")[dmask]
        # only the speakers kept documents name: a renamed or forgotten person's name goes (issue #35)
        old_spk = np.zeros(len(old.speakers), dtype=np.int32)
        for u in (np.unique(spk) if len(spk) else ()):
            old_spk[int(u)] = code(*old.speakers[int(u)])
        d_spk.append(old_spk[spk] if len(spk) else spk)
        d_text.append(old.docs.column("text").combine_chunks().filter(pa.array(dmask)) if len(dmask) else pa.array([], _S))
        o_doc = old.column("postings", "doc")
        pmask = dmask[o_doc] if len(o_doc) else np.zeros(0, dtype=bool)
        starts, ends = old.column("lex", "start"), old.column("lex", "end")
        lex_idx = np.repeat(np.arange(len(starts)), ends - starts)
        p_term.append(old.lex.column("term").combine_chunks() if old.lex.num_rows else pa.array([], _S))
        p_term_idx.append(lex_idx[pmask])
        p_doc.append(new_id[o_doc[pmask]])
        p_tf.append(old.column("postings", "tf")[pmask])
        p_t.append(old.column("postings", "t_ms")[pmask])
    parts = list(parts)
    for name, t in parts:
        meta = part_meta(t)
        n = t.num_rows
        recs.append({"rid": meta["recording"], "part": name, "manifest_size": meta["manifest_size"],
                     "rec": meta["rec"], "frames": meta["frames"], "docs": [n_docs, n_docs + n]})
        d_rec.append(np.full(n, len(recs) - 1, dtype=np.int32))
        if t.column("speaker").null_count == n:  # not diarized: one code for every document
            d_spk.append(np.full(n, code(None, None), dtype=np.int32))
        else:
            d_spk.append(np.array([code(a, b) for a, b in zip(t.column("speaker").to_pylist(),
                                                                t.column("speaker_name").to_pylist())], dtype=np.int32))
        n_docs += n
    if parts:  # the parts' columns at once (one concatenated table)
        t = pa.concat_tables([p.replace_schema_metadata(None) for _, p in parts]).combine_chunks()
        base = n_docs - t.num_rows
        d_src.append(pc.equal(t.column("source"), SOURCES[1]).to_numpy(zero_copy_only=False).astype(np.int8))
        for dst, c in ((d_ref, "ref"), (d_t0, "t0_ms"), (d_t1, "t1_ms"), (d_len, "doc_len")):
            dst.append(t.column(c).to_numpy())
        d_text.append(t.column("text").chunk(0) if t.num_rows else pa.array([], _S))
        terms = t.column("terms").chunk(0) if t.num_rows else None
        flat = pc.list_flatten(terms) if terms is not None else pa.array([], _S)
        if len(flat):
            enc = flat.dictionary_encode()
            p_term.append(enc.dictionary)
            p_term_idx.append(enc.indices.to_numpy())
            p_doc.append(pc.list_parent_indices(terms).to_numpy() + base)
            p_tf.append(pc.list_flatten(t.column("tf").chunk(0)).to_numpy())
            p_t.append(pc.list_flatten(t.column("t_ms").chunk(0)).to_numpy())
    # one sorted vocabulary; postings ordered by term (stable: docs stay ascending within a term)
    vocab = pc.unique(pa.concat_arrays(p_term)) if p_term else pa.array([], _S)
    vocab = vocab.take(pc.sort_indices(vocab))
    ids = [pc.index_in(a, value_set=vocab).to_numpy(zero_copy_only=False)[ix] if len(ix) else ix.astype(np.int64)
           for a, ix in zip(p_term, p_term_idx)]
    term_id = _concat(ids, np.int64)
    doc = _concat(p_doc, np.int64)
    order = np.argsort(term_id, kind="stable")
    term_id, doc = term_id[order], doc[order]
    src = _concat(d_src, np.int8)
    counts = np.bincount(term_id, minlength=len(vocab)) if len(vocab) else np.zeros(0, dtype=np.int64)
    df_ocr = np.bincount(term_id, weights=(src[doc] == 1), minlength=len(vocab)).astype(np.int64) \
        if len(vocab) else counts
    present = counts > 0
    ends = np.cumsum(counts)[present]
    starts = ends - counts[present]
    lex = pa.table({"term": vocab.filter(pa.array(present)), "start": starts, "end": ends,
                    "df_transcript": (counts - df_ocr)[present], "df_ocr": df_ocr[present]}, schema=LEX_SCHEMA)
    postings = pa.table({"doc": doc.astype(np.int32), "tf": _concat(p_tf, np.int32)[order],
                         "t_ms": _concat(p_t, np.int64)[order]}, schema=POSTINGS_SCHEMA)
    docs = pa.table({"rec": _concat(d_rec, np.int32), "source": src, "ref": _concat(d_ref, np.int64),
                     "t0_ms": _concat(d_t0, np.int64), "t1_ms": _concat(d_t1, np.int64),
                     "doc_len": _concat(d_len, np.int32), "spk": _concat(d_spk, np.int32),
                     "text": pa.concat_arrays(d_text) if d_text else pa.array([], _S)}, schema=DOCS_SCHEMA)
    return Bundle(docs, postings, lex, recs, speakers)


# --------------------------------------------------------------------------- merged buckets

def bucket_of(rid: str) -> str:
    return rid[0]


def pointer_key(b: str) -> str:
    return f"{MERGED}/{b}.json"


def _ipc_bytes(t: pa.Table) -> bytes:
    sink = pa.BufferOutputStream()
    with pa.ipc.new_file(sink, t.schema) as w:
        t = t.combine_chunks()
        for batch in t.to_batches(max_chunksize=max(1, t.num_rows)):
            w.write_batch(batch)
    return sink.getvalue().to_pybytes()


def _read_ipc(key: str) -> pa.Table:
    """A merged file, memory-mapped (an object store's is cached on this machine first: the names
    are never reused, so the cached copy is the object)."""
    path = store.local_file(key, immutable=True)
    with pa.memory_map(str(path)) as mm:
        return pa.ipc.open_file(mm).read_all()


def load_bucket(b: str, pointer: dict | None = None) -> tuple[dict, Bundle] | None:
    """(pointer, bundle) of merged bucket ``b``; None when it has none."""
    pointer = pointer if pointer is not None else store.get_json(pointer_key(b))
    if not pointer or pointer.get("format") != FORMAT:
        return None
    files = {k: _read_ipc(pointer["files"][k]) for k in ("docs", "postings", "lex")}
    return pointer, Bundle(files["docs"], files["postings"], files["lex"], pointer["recordings"],
                           pointer["speakers"])


def compact(b: str, force: bool = False, lock_timeout_s: float = 60.0, keep_previous: bool = True) -> dict | None:
    """Re-merge bucket ``b`` when its unmerged or stale parts reach :data:`MERGE_FRACTION` of it (or
    ``force``): the merged recordings still published with the same part, plus every part that
    indexes its published manifest. The previous merged files stay for readers that listed the old
    pointer (``keep_previous``; forget removes them). Returns what was done, or None when nothing was due."""
    with store.named_lock(f"index-{b}", lock_timeout_s, TimeoutError(f"index bucket {b} is being merged")):
        manifests = {n[:-5]: st for n, st in store.file_stamps("manifests").items()
                     if n.endswith(".json") and n[0] == b}
        parts = {rid: ps for rid, ps in list_parts().items() if rid[0] == b}
        current = {rid: name for rid, sig in manifests.items()
                   if (name := choose_part(parts.get(rid, []), sig[1]))}
        loaded = load_bucket(b)
        pointer, old = loaded if loaded else (None, None)
        merged = {r["rid"]: r["part"] for r in (old.recs if old else [])}
        keep = {rid for rid, part in merged.items() if current.get(rid) == part}
        pending = sorted(rid for rid, part in current.items() if merged.get(rid) != part)
        dead = [rid for rid in merged if rid not in keep]
        due = len(pending) + len(dead)
        if not due or (not force and due < max(1, math.ceil(MERGE_FRACTION * len(keep)))):
            return None
        t0 = time.monotonic()
        new = merge(old, keep, ((current[rid], read_part(current[rid])) for rid in pending))
        seq = f"{time.strftime('%Y%m%dT%H%M%S')}-{uuid.uuid4().hex[:8]}"
        files = {k: f"{MERGED}/{b}/{seq}-{k}.arrow" for k in ("docs", "postings", "lex")}
        for k, key in files.items():
            store.put_bytes(key, _ipc_bytes(getattr(new, k)))
        store.put_json(pointer_key(b), {"format": FORMAT, "code_version": CODE_VERSION, "seq": seq,
                                        "files": files, "recordings": new.recs, "speakers": new.speakers,
                                        "docs": new.docs.num_rows, "postings": new.postings.num_rows})
        # the files before the previous pointer's: a reader that listed the old pointer still finds its files
        keep_files = set(files.values()) | (set((pointer or {}).get("files", {}).values()) if keep_previous else set())
        for name in store.list_names(f"{MERGED}/{b}"):
            key = f"{MERGED}/{b}/{name}"
            if key not in keep_files:
                store.delete_file(key)
        return {"bucket": b, "recordings": len(new.recs), "merged": len(pending), "dropped": len(dead),
                "postings": new.postings.num_rows, "seconds": round(time.monotonic() - t0, 2)}


def maybe_compact(rid: str) -> dict | None:
    return compact(bucket_of(rid))


def scrub(rid: str) -> None:
    """Re-merge ``rid``'s bucket now, dropping the previous merged files: nothing of its earlier generations
    (a forgotten person's name, issue #35) stays in the merged index."""
    compact(bucket_of(rid), force=True, keep_previous=False)


def forget(rid: str) -> list[str]:
    """Remove every posting of ``rid``: its parts, and its rows in the merged bucket (re-merged now, so
    none stays in the merged files). Call after its manifest is gone. Returns the removed locations."""
    gone = drop_parts(rid)
    loaded = load_bucket(bucket_of(rid))
    if gone or (loaded and any(r["rid"] == rid for r in loaded[1].recs)):
        if compact(bucket_of(rid), force=True, keep_previous=False) is not None and loaded:
            gone.append(store.data_location(pointer_key(bucket_of(rid))))
    return gone

"""search_index: the persistent inverted index the MCP server searches.

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

The documents and part tables are built in :mod:`~talkthrough_assets.model.search_index_docs`, the
merge in :mod:`~talkthrough_assets.model.search_index_merge`; this module writes, lists, compacts and
forgets them. Terms are :func:`terms.index_terms`, the one tokenizer of the SQL ``terms`` table and MCP
queries. The merged files are derived data: deleting ``index/`` loses nothing (the server falls back
to the parts, then to the manifests, and the next compaction rebuilds them).
"""

from __future__ import annotations

import hashlib
import math
import time
import uuid

import pyarrow as pa
import pyarrow.parquet as pq

from talkthrough_assets import store

from talkthrough_assets.model.manifest import Manifest, recording_row
from talkthrough_assets.model.search_index_docs import (CODE_VERSION, FORMAT, Doc, documents, listing_row,
                                                         manifest_parts, part_table)
from talkthrough_assets.model.search_index_merge import Bundle, merge

PARTS = "index/parts"
MERGED = "index/merged"
BUCKETS = "0123456789abcdef"
MERGE_FRACTION = 0.1  # a bucket is re-merged when its unmerged parts reach this share of it


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
    the same size (the manifest stage and the partial generations of a run in progress publish many)."""
    sizes = {parse_part_name(name)[1] for name, _ in list_parts().get(rid, [])}
    st = store.stamp(store.manifest_key(rid))
    if st is not None:
        sizes.add(st[1])
    while len(data) in sizes:
        data += b"\n"
    return data


def write_part(rid: str, m: Manifest, data: bytes) -> tuple[str, list[Doc]]:
    """Write the index part of manifest ``m`` (whose published bytes will be ``data``); returns (part
    name, documents). Called before the manifest is published."""
    segments, words, frames, names = manifest_parts(m)
    docs = documents(segments, words, frames, names)
    sha = hashlib.sha256(data).hexdigest()
    name = part_name(rid, len(data), sha)
    t = part_table(rid, listing_row(rid, recording_row(m), m.partial), docs, frames, len(data), sha)
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
    (a forgotten person's name) stays in the merged index."""
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

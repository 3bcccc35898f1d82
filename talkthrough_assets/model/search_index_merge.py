"""Merging index parts (:mod:`talkthrough_assets.model.search_index`) into a :class:`Bundle`: documents,
term-sorted postings and a lexicon with per-term document frequencies per source. A merged bucket is
one (written as Arrow files); the MCP reader's in-memory delta is another.
"""

from __future__ import annotations

from typing import Iterable

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from talkthrough_assets.model.search_index_docs import SOURCES, part_meta

_S, _I, _I32 = pa.string(), pa.int64(), pa.int32()
DOCS_SCHEMA = pa.schema([("rec", _I32), ("source", pa.int8()), ("ref", _I), ("t0_ms", _I), ("t1_ms", _I),
                         ("doc_len", _I32), ("spk", _I32), ("text", _S)])
POSTINGS_SCHEMA = pa.schema([("doc", _I32), ("tf", _I32), ("t_ms", _I)])
LEX_SCHEMA = pa.schema([("term", _S), ("start", _I), ("end", _I), ("df_transcript", _I), ("df_ocr", _I)])


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


class _Columns:
    """A bundle's columns being gathered, chunk by chunk: documents, postings (terms as a chunk's strings and
    indices into them), recordings and speakers (coded in order of first use)."""

    def __init__(self):
        self.recs: list[dict] = []
        self.speakers: list[list] = []
        self.spk_code: dict[tuple, int] = {}
        self.d_rec, self.d_src, self.d_ref, self.d_t0, self.d_t1, self.d_len, self.d_spk, self.d_text = (
            [] for _ in range(8))
        self.p_term: list[pa.Array] = []   # per chunk: term strings (old: lexicon terms, repeated via p_term_idx)
        self.p_term_idx: list[np.ndarray] = []
        self.p_doc, self.p_tf, self.p_t = [], [], []
        self.n_docs = 0

    def code(self, who, name) -> int:
        key = (who, name)
        if key not in self.spk_code:
            self.spk_code[key] = len(self.speakers)
            self.speakers.append([who, name])
        return self.spk_code[key]


def merge(old: Bundle | None, keep: set[str], parts: Iterable[tuple[str, pa.Table]]) -> Bundle:
    """A bundle of ``old``'s recordings in ``keep`` plus the given (part name, part table)s."""
    c = _Columns()
    if old is not None and old.recs:
        _add_old(c, old, keep)
    _add_parts(c, list(parts))
    return _bundle(c)


def _add_old(c: _Columns, old: Bundle, keep: set[str]) -> None:
    """``old``'s documents and postings of the recordings in ``keep``, renumbered."""
    rk = np.array([r["rid"] in keep for r in old.recs], dtype=bool)
    o_rec = old.column("docs", "rec")
    dmask = rk[o_rec] if len(o_rec) else np.zeros(0, dtype=bool)
    before = np.concatenate([[0], np.cumsum(dmask, dtype=np.int64)])  # kept docs before each doc
    new_id = before[1:] - 1
    rec_new = np.cumsum(rk) - 1
    for i, r in enumerate(old.recs):
        if rk[i]:
            c.recs.append({**r, "docs": [int(before[r["docs"][0]]), int(before[r["docs"][1]])]})
    c.n_docs = int(dmask.sum())
    c.d_rec.append(rec_new[o_rec[dmask]])
    for dst, col in ((c.d_src, "source"), (c.d_ref, "ref"), (c.d_t0, "t0_ms"), (c.d_t1, "t1_ms"),
                     (c.d_len, "doc_len")):
        dst.append(old.column("docs", col)[dmask])
    spk = old.column("docs", "spk")[dmask]
    # only the speakers kept documents name: a renamed or forgotten person's name goes
    old_spk = np.zeros(len(old.speakers), dtype=np.int32)
    for u in (np.unique(spk) if len(spk) else ()):
        old_spk[int(u)] = c.code(*old.speakers[int(u)])
    c.d_spk.append(old_spk[spk] if len(spk) else spk)
    c.d_text.append(old.docs.column("text").combine_chunks().filter(pa.array(dmask)) if len(dmask)
                    else pa.array([], _S))
    o_doc = old.column("postings", "doc")
    pmask = dmask[o_doc] if len(o_doc) else np.zeros(0, dtype=bool)
    starts, ends = old.column("lex", "start"), old.column("lex", "end")
    lex_idx = np.repeat(np.arange(len(starts)), ends - starts)
    c.p_term.append(old.lex.column("term").combine_chunks() if old.lex.num_rows else pa.array([], _S))
    c.p_term_idx.append(lex_idx[pmask])
    c.p_doc.append(new_id[o_doc[pmask]])
    c.p_tf.append(old.column("postings", "tf")[pmask])
    c.p_t.append(old.column("postings", "t_ms")[pmask])


def _add_parts(c: _Columns, parts: list[tuple[str, pa.Table]]) -> None:
    """The parts' recordings and speakers one by one, then their columns at once (one concatenated table)."""
    for name, t in parts:
        meta = part_meta(t)
        n = t.num_rows
        c.recs.append({"rid": meta["recording"], "part": name, "manifest_size": meta["manifest_size"],
                       "rec": meta["rec"], "frames": meta["frames"], "docs": [c.n_docs, c.n_docs + n]})
        c.d_rec.append(np.full(n, len(c.recs) - 1, dtype=np.int32))
        if t.column("speaker").null_count == n:  # not diarized: one code for every document
            c.d_spk.append(np.full(n, c.code(None, None), dtype=np.int32))
        else:
            c.d_spk.append(np.array([c.code(a, b) for a, b in zip(t.column("speaker").to_pylist(),
                                                                  t.column("speaker_name").to_pylist())],
                                    dtype=np.int32))
        c.n_docs += n
    if not parts:
        return
    t = pa.concat_tables([p.replace_schema_metadata(None) for _, p in parts]).combine_chunks()
    base = c.n_docs - t.num_rows
    c.d_src.append(pc.equal(t.column("source"), SOURCES[1]).to_numpy(zero_copy_only=False).astype(np.int8))
    for dst, col in ((c.d_ref, "ref"), (c.d_t0, "t0_ms"), (c.d_t1, "t1_ms"), (c.d_len, "doc_len")):
        dst.append(t.column(col).to_numpy())
    c.d_text.append(t.column("text").chunk(0) if t.num_rows else pa.array([], _S))
    terms = t.column("terms").chunk(0) if t.num_rows else None
    flat = pc.list_flatten(terms) if terms is not None else pa.array([], _S)
    if len(flat):
        enc = flat.dictionary_encode()
        c.p_term.append(enc.dictionary)
        c.p_term_idx.append(enc.indices.to_numpy())
        c.p_doc.append(pc.list_parent_indices(terms).to_numpy() + base)
        c.p_tf.append(pc.list_flatten(t.column("tf").chunk(0)).to_numpy())
        c.p_t.append(pc.list_flatten(t.column("t_ms").chunk(0)).to_numpy())


def _bundle(c: _Columns) -> Bundle:
    """One sorted vocabulary; postings ordered by term (stable: docs stay ascending within a term); the
    lexicon's ranges and per-source document frequencies."""
    vocab = pc.unique(pa.concat_arrays(c.p_term)) if c.p_term else pa.array([], _S)
    vocab = vocab.take(pc.sort_indices(vocab))
    ids = [pc.index_in(a, value_set=vocab).to_numpy(zero_copy_only=False)[ix] if len(ix) else ix.astype(np.int64)
           for a, ix in zip(c.p_term, c.p_term_idx)]
    term_id = _concat(ids, np.int64)
    doc = _concat(c.p_doc, np.int64)
    order = np.argsort(term_id, kind="stable")
    term_id, doc = term_id[order], doc[order]
    src = _concat(c.d_src, np.int8)
    counts = np.bincount(term_id, minlength=len(vocab)) if len(vocab) else np.zeros(0, dtype=np.int64)
    df_ocr = np.bincount(term_id, weights=(src[doc] == 1), minlength=len(vocab)).astype(np.int64) \
        if len(vocab) else counts
    present = counts > 0
    ends = np.cumsum(counts)[present]
    starts = ends - counts[present]
    lex = pa.table({"term": vocab.filter(pa.array(present)), "start": starts, "end": ends,
                    "df_transcript": (counts - df_ocr)[present], "df_ocr": df_ocr[present]}, schema=LEX_SCHEMA)
    postings = pa.table({"doc": doc.astype(np.int32), "tf": _concat(c.p_tf, np.int32)[order],
                         "t_ms": _concat(c.p_t, np.int64)[order]}, schema=POSTINGS_SCHEMA)
    docs = pa.table({"rec": _concat(c.d_rec, np.int32), "source": src, "ref": _concat(c.d_ref, np.int64),
                     "t0_ms": _concat(c.d_t0, np.int64), "t1_ms": _concat(c.d_t1, np.int64),
                     "doc_len": _concat(c.d_len, np.int32), "spk": _concat(c.d_spk, np.int32),
                     "text": pa.concat_arrays(c.d_text) if c.d_text else pa.array([], _S)}, schema=DOCS_SCHEMA)
    return Bundle(docs, postings, lex, c.recs, c.speakers)

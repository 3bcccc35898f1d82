"""The query side of the library index: :class:`Segment` (one bucket or delta chunk of the pipeline's
search index, as numpy views) and :class:`View` (one consistent state of the index, swapped whole by a
refresh of :class:`~talkthrough_assets.read.index.LibraryIndex`).

Search is exact BM25 over numpy arrays (:meth:`View.search`): per query term, the postings slice of
each bucket, library-wide document frequencies from the same slices, per-document sums in dense
arrays, then the top hits by a partial sort; the text, speaker and frame of only those hits are
read.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from talkthrough_assets.model.search_index_docs import SOURCES, frame_on_screen
from talkthrough_assets.model.search_index_merge import Bundle

from talkthrough_assets.read.timeline import Timeline

K1 = 1.2
B = 0.75
_NO_T = np.iinfo(np.int64).max


def _positions(seg: "Segment", d: np.ndarray) -> np.ndarray:
    """Document -> its index in ``d`` (-1 where absent), over the bucket's documents."""
    out = np.full(len(seg.doc_rec), -1, dtype=np.int64)
    out[d] = np.arange(len(d))
    return out


class Segment:
    """A :class:`Bundle` ready for queries: numpy views of its columns (zero-copy over the
    memory-mapped files of a merged bucket), a term -> postings-range map, and which of its
    recordings are live."""

    def __init__(self, bundle: Bundle):
        self.bundle = bundle
        col = bundle.column
        self.doc_rec, self.doc_source = col("docs", "rec"), col("docs", "source")
        self.doc_ref, self.doc_len, self.doc_spk = col("docs", "ref"), col("docs", "doc_len"), col("docs", "spk")
        self.text = bundle.docs.column("text")
        self.p_doc, self.p_tf, self.p_t = col("postings", "doc"), col("postings", "tf"), col("postings", "t_ms")
        self.starts, self.ends = col("lex", "start"), col("lex", "end")
        self.lex = {t: i for i, t in enumerate(bundle.lex.column("term").to_pylist())}
        self.df_t, self.df_o = col("lex", "df_transcript"), col("lex", "df_ocr")
        self.all_live = False
        self.recs = bundle.recs
        self.rid_index = {r["rid"]: i for i, r in enumerate(self.recs)}
        self.rec_live = np.zeros(len(self.recs), dtype=bool)
        self.live = np.zeros(len(self.doc_rec), dtype=bool)
        self.rec_rank = np.zeros(len(self.recs), dtype=np.int64)

    def set_live(self, rids: set[str], rank: dict[str, int]) -> None:
        self.rec_live = np.array([r["rid"] in rids for r in self.recs], dtype=bool)
        self.all_live = bool(self.rec_live.all())
        self.live = self.rec_live[self.doc_rec] if len(self.doc_rec) else np.zeros(0, dtype=bool)
        self.rec_rank = np.array([rank.get(r["rid"], -1) for r in self.recs], dtype=np.int64)

    def source_totals(self) -> tuple[np.ndarray, np.ndarray]:
        """(live documents, their summed length) per source code."""
        src, ln = self.doc_source[self.live], self.doc_len[self.live]
        return (np.bincount(src, minlength=2)[:2].astype(np.float64),
                np.bincount(src, weights=ln, minlength=2)[:2])


@dataclass
class View:
    """One consistent state of the index: what a query reads (swapped whole by a refresh)."""
    segments: list[Segment] = field(default_factory=list)
    where: dict[str, tuple[int, int]] = field(default_factory=dict)  # rid -> (segment, rec)
    generation: dict[str, str] = field(default_factory=dict)
    n: np.ndarray = field(default_factory=lambda: np.zeros(2))       # live documents per source
    avgdl: np.ndarray = field(default_factory=lambda: np.ones(2))
    timeline: Timeline = field(default_factory=Timeline)  # recordings by anchored wall-clock span

    def search(self, pairs: list[tuple[str, str | None, str, float]], nwords: int, rid: str | None = None,
               who: str | None = None, fetch: int = 10,
               window: dict[str, tuple[int, int]] | None = None) -> tuple[list[dict], int, int, dict[str, int]]:
        """BM25 of the (query word, source or None, index term, weight) ``pairs``: documents holding every
        query word when there are any (else any of them), best first; returns (the best ``fetch`` hits
        as rows, documents with every word, documents with any, documents per word). Document frequencies
        are library-wide (all live documents), whatever ``rid`` (one recording) or ``who`` (a speaker
        label, name or word of a name, folded) restrict the hits to; ``window``: recording id -> the (start, end)
        ms a hit's time must fall in (recordings not named: no hits)."""
        qwords = list(dict.fromkeys(p[0] for p in pairs))
        picked, qdf = self._postings(pairs, {w: i for i, w in enumerate(qwords)})
        with np.errstate(divide="ignore", invalid="ignore"):
            idf = np.log(1 + (self.n - qdf + 0.5) / (qdf + 0.5))
        # 2. per bucket: each word's documents, narrowed to one recording, speaker or time window
        per_word = np.zeros(len(qwords), dtype=np.int64)
        state = []
        for seg, got in zip(self.segments, picked):
            narrow = self._filter(seg, rid, who, window) if got else False
            if narrow is False:
                continue
            words = _word_docs(seg, got, len(qwords), narrow)
            for q, (d, _, _) in words.items():
                per_word[q] += len(d)
            if words:
                state.append((seg, words))
        inter, n_all = _intersect(state, nwords)
        n_any = n_all
        if not n_all:  # no document has them all: any of them, OR-ranked
            inter = _union(state)
            n_any = sum(len(c) for _, _, c, _ in inter)
        tops = [self._top(seg, words, cand, pos, idf, fetch) for seg, words, cand, pos in inter]
        return self._rows(tops, qwords, fetch), n_all, n_any, {w: int(c) for w, c in zip(qwords, per_word)}

    def _postings(self, pairs: list[tuple[str, str | None, str, float]],
                  qi: dict[str, int]) -> tuple[list[list[tuple]], np.ndarray]:
        """1. Per bucket and pair: (query word, weight, docs, tf, t) of the live postings (views when the whole
        bucket is live); and per query word the library-wide document frequency per source (from the lexicon
        when nothing in the bucket is masked)."""
        qdf = np.zeros((len(qi), 2))
        picked: list[list[tuple]] = []
        for seg in self.segments:
            got = []
            for w, msrc, term, weight in pairs:
                i = seg.lex.get(term)
                if i is None:
                    continue
                sl = slice(int(seg.starts[i]), int(seg.ends[i]))
                d, tf, t = seg.p_doc[sl], seg.p_tf[sl], seg.p_t[sl]
                if seg.all_live and msrc is None:
                    qdf[qi[w]] += (seg.df_t[i], seg.df_o[i])
                else:
                    keep = seg.live[d]
                    src = seg.doc_source[d]
                    if msrc is not None:
                        keep &= src == SOURCES.index(msrc)
                    d, tf, t = d[keep], tf[keep], t[keep]
                    qdf[qi[w]] += np.bincount(src[keep], minlength=2)[:2]
                if len(d):
                    got.append((qi[w], weight, d, tf, t))
            picked.append(got)
        return picked, qdf

    def _top(self, seg: Segment, words: dict, cand: np.ndarray, pos: dict, idf: np.ndarray, fetch: int) -> tuple:
        """4. BM25 of the candidate documents ``cand`` of one bucket, and its best ``fetch`` (ties at the edge
        kept) with their scores, recording ranks, first times, sources, matched-word bits and counts."""
        score = np.zeros(len(cand))
        s = seg.doc_source[cand]
        ocr = s == 1
        norm = K1 * (1 - B + B * seg.doc_len[cand] / np.where(ocr, self.avgdl[1], self.avgdl[0]))
        for q, (d, tf, t) in words.items():
            w_idf = np.where(ocr, idf[q, 1], idf[q, 0])
            p = pos[q]
            if p is None:  # every candidate, in order
                score += w_idf * tf * (K1 + 1) / (tf + norm)
            else:
                hit = p >= 0
                tfq = tf[p[hit]]
                score[hit] += w_idf[hit] * tfq * (K1 + 1) / (tfq + norm[hit])
        keep = np.arange(len(cand))
        if len(cand) > fetch:  # a partial sort: the best `fetch` scores, ties at the edge kept
            kth = -np.partition(-score, fetch - 1)[fetch - 1]
            keep = np.flatnonzero(score >= kth)
        c = cand[keep]
        bits = np.zeros(len(c), dtype=np.int64)
        matched = np.zeros(len(c), dtype=np.int64)
        tmin = np.full(len(c), _NO_T, dtype=np.int64)
        for q, (d, tf, t) in words.items():  # which words, and the first time, of the kept ones only
            p = keep if pos[q] is None else pos[q][keep]
            hit = p >= 0
            bits[hit] |= 1 << q
            matched[hit] += 1
            tmin[hit] = np.minimum(tmin[hit], t[p[hit]])
        return seg, c, score[keep], seg.rec_rank[seg.doc_rec[c]], tmin, s[keep], bits, matched

    def _rows(self, tops: list[tuple], qwords: list[str], fetch: int) -> list[dict]:
        """The best ``fetch`` of every bucket's top hits (score DESC, recording, t_ms, source: 'ocr' before
        'transcript') as rows, with their text, speaker and on-screen frame."""
        if not tops:
            return []
        sc = np.concatenate([t[2] for t in tops])
        rank = np.concatenate([t[3] for t in tops])
        tt = np.concatenate([t[4] for t in tops])
        src = np.concatenate([t[5] for t in tops])
        order = np.lexsort((src == 0, tt, rank, -sc))[:fetch]
        where = [(ti, j) for ti, t in enumerate(tops) for j in range(len(t[1]))]
        rows = []
        for o in order:
            ti, j = where[o]
            seg, cand, score, _, tmin, srcs, bits, matched = tops[ti]
            doc = int(cand[j])
            rec = seg.recs[int(seg.doc_rec[doc])]
            who_, name = seg.bundle.speakers[int(seg.doc_spk[doc])]
            t_ms = int(tmin[j])
            r = rec["rec"]
            rows.append({"recording": rec["rid"], "source": SOURCES[int(srcs[j])], "ref": int(seg.doc_ref[doc]),
                         "t_ms": t_ms, "matched": int(matched[j]), "score": float(score[j]),
                         "terms": [w for i, w in enumerate(qwords) if int(bits[j]) >> i & 1],
                         "filename": r["filename"], "generation": self.generation.get(rec["rid"]),
                         "recorded_at": r["recorded_at"], "tz_offset_min": r["tz_offset_min"],
                         "partial_to_ms": r.get("partial_to_ms"), "partial_next_ms": r.get("partial_next_ms"),
                         "text": seg.text[doc].as_py(), "speaker": who_, "speaker_name": name,
                         "frame_ms": frame_on_screen(rec["frames"], t_ms)})
        return rows

    @staticmethod
    def _filter(seg: Segment, rid: str | None, who: str | None, window: dict[str, tuple[int, int]] | None = None):
        """False (no document of this segment), else (document range or None, mask or None, per-recording
        (lo, hi) ms arrays or None): one recording's documents are a range (cut from a sorted postings list
        by binary search)."""
        allow, rng, bounds = None, None, None
        if window is not None:
            lo = np.full(len(seg.recs), _NO_T, dtype=np.int64)
            hi = np.full(len(seg.recs), -1, dtype=np.int64)
            for i, r in enumerate(seg.recs):
                w = window.get(r["rid"])
                if w is not None:
                    lo[i], hi[i] = w
            if not (lo <= hi).any():
                return False
            bounds = (lo, hi)
        if rid is not None:
            i = seg.rid_index.get(rid)
            if i is None or not seg.rec_live[i]:
                return False
            rng = tuple(seg.recs[i]["docs"])
        if who is not None:
            ok = [c for c, (label, name) in enumerate(seg.bundle.speakers)
                  if speaker_is(label, name, who)]
            if not ok:
                return False
            allow = np.isin(seg.doc_spk, np.array(ok, dtype=seg.doc_spk.dtype))
        return rng, allow, bounds


def _word_docs(seg: Segment, got: list[tuple], nq: int, narrow: tuple) -> dict[int, tuple]:
    """2. Query word -> (documents sorted, tf, first time) in one bucket: a word and its expansions
    summed (tf weighted, the earliest time), then narrowed (:meth:`View._filter`)."""
    words = {}
    rng, allow, bounds = narrow
    for q in range(nq):
        mine = [g for g in got if g[0] == q]
        if not mine:
            continue
        if len(mine) == 1:
            _, wt, d, tf, t = mine[0]
            tf = tf * wt if wt != 1 else tf
        else:
            d, tf, t = _combine(mine)
        if rng is not None:  # d is sorted: one recording's documents are one slice of it
            a, b = np.searchsorted(d, rng)
            d, tf, t = d[a:b], tf[a:b], t[a:b]
        if allow is not None:
            k = allow[d]
            d, tf, t = d[k], tf[k], t[k]
        if bounds is not None:  # a wall-clock window: the word's time within its recording's slice
            r = seg.doc_rec[d]
            k = (t >= bounds[0][r]) & (t <= bounds[1][r])
            d, tf, t = d[k], tf[k], t[k]
        if len(d):
            words[q] = (d, tf, t)
    return words


def _combine(mine: list[tuple]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """One word's postings from several index terms: documents once, weighted tf summed, earliest time."""
    d_all = np.concatenate([g[2] for g in mine])
    tf_all = np.concatenate([g[3] * g[1] for g in mine])
    t_all = np.concatenate([g[4] for g in mine])
    d = np.unique(d_all)
    pos = np.searchsorted(d, d_all)
    tf = np.bincount(pos, weights=tf_all, minlength=len(d))
    t = np.full(len(d), _NO_T, dtype=np.int64)
    np.minimum.at(t, pos, t_all)
    return d, tf, t


def _intersect(state: list[tuple], nwords: int) -> tuple[list[tuple], int]:
    """3. Per bucket, the documents with every word: the rarest word's, looked up in the others' through a
    position map over the bucket's documents (linear in the postings, no binary search). Returns
    ([(bucket, words, candidates, word -> positions in its documents or None: every candidate in order)],
    documents in all)."""
    inter = []
    n_all = 0
    for seg, words in state:
        if len(words) < nwords:
            continue
        order = sorted(words, key=lambda q: len(words[q][0]))
        cand = words[order[0]][0]
        pos = {order[0]: None}  # None: the word's own order (every candidate, in place)
        for q in order[1:]:
            p = _positions(seg, words[q][0])[cand]
            ok = p >= 0
            cand = cand[ok]
            pos = {k: (np.flatnonzero(ok) if v is None else v[ok]) for k, v in pos.items()}
            pos[q] = p[ok]
            if not len(cand):
                break
        if len(cand):
            inter.append((seg, words, cand, pos))
            n_all += len(cand)
    return inter, n_all


def _union(state: list[tuple]) -> list[tuple]:
    """3'. Per bucket, the documents with any word (as :func:`_intersect` gives them)."""
    inter = []
    for seg, words in state:
        if len(words) == 1:
            q, (d, _, _) = next(iter(words.items()))
            inter.append((seg, words, d, {q: None}))
            continue
        cand = np.unique(np.concatenate([w[0] for w in words.values()]))
        inter.append((seg, words, cand, {q: _positions(seg, d)[cand] for q, (d, _, _) in words.items()}))
    return inter

def speaker_is(label: str | None, name: str | None, who: str) -> bool:
    """A label (S1), a full name, or one word of a name ("alice" matches "Alice Stone"); ``who`` folded."""
    if label is None:
        return False
    if label.lower() == who:
        return True
    if name:
        low = name.lower()
        return low == who or who in low.split(" ")
    return False

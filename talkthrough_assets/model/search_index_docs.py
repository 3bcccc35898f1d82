"""The documents of the search index (:mod:`talkthrough_assets.model.search_index`): one recording's
listing row and search documents from its manifest, and the part table (one row per document, its
postings as list columns) the pipeline writes for it. Pure: no storage here.

Terms are :func:`terms.index_terms`, the one tokenizer of the SQL ``terms`` table and MCP queries.
"""

from __future__ import annotations

import base64
import json
from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from talkthrough_assets.model import terms as terms_stage

CODE_VERSION = "1"
FORMAT = 1
SOURCES = ("transcript", "ocr")  # source code = position
META_KEY = b"talkthrough.index"

_S, _I, _I32 = pa.string(), pa.int64(), pa.int32()
PART_SCHEMA = pa.schema([
    ("source", _S), ("ref", _I), ("t0_ms", _I), ("t1_ms", _I), ("speaker", _S), ("speaker_name", _S),
    ("text", _S), ("doc_len", _I32), ("terms", pa.list_(_S)), ("tf", pa.list_(_I32)), ("t_ms", pa.list_(_I)),
])


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
        # a partial generation: where its transcript ends and goes on (absent when final)
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


@dataclass(frozen=True, slots=True)
class TermRow:
    """A row of the SQL ``terms`` table: ``term`` in document ``ref`` of ``source``, ``tf`` times, first at ``t_ms``."""

    source: str
    ref: int
    t_ms: int
    term: str
    tf: int
    doc_len: int


def term_table_rows(docs: list[dict], source: str) -> list[TermRow]:
    """The SQL ``terms`` table's rows of one source: the same rows as the index parts' postings."""
    return [TermRow(source=source, ref=d["ref"], t_ms=t, term=term, tf=tf, doc_len=d["doc_len"])
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

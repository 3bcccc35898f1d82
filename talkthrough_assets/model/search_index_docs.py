"""The documents of the search index (:mod:`talkthrough_assets.model.search_index`): one recording's
listing row and search documents from its manifest, and the part table (one row per document, its
postings as list columns) the pipeline writes for it. Pure: no storage here.

Terms are :func:`terms.index_terms`, the one tokenizer of the SQL ``terms`` table and MCP queries.
"""

from __future__ import annotations

import base64
import json
from dataclasses import dataclass
from typing import Mapping, Sequence

import numpy as np
import pyarrow as pa

from talkthrough_assets.model import terms as terms_stage
from talkthrough_assets.model.manifest import FrameItem, Manifest, Partial, RecordingRow, Segment

CODE_VERSION = "1"
FORMAT = 1
SOURCES = ("transcript", "ocr")  # source code = position
META_KEY = b"talkthrough.index"

_S, _I, _I32 = pa.string(), pa.int64(), pa.int32()
PART_SCHEMA = pa.schema([
    ("source", _S), ("ref", _I), ("t0_ms", _I), ("t1_ms", _I), ("speaker", _S), ("speaker_name", _S),
    ("text", _S), ("doc_len", _I32), ("terms", pa.list_(_S)), ("tf", pa.list_(_I32)), ("t_ms", pa.list_(_I)),
])


def listing_row(rid: str, rec: RecordingRow, partial: Partial | None) -> dict:
    """The listing row an index part carries in its metadata (what list_recordings shows), as JSON: the recording's
    row without where its files are, and where a partial generation's transcript ends and goes on."""
    row = {"recording": rid, **{k: v for k, v in rec.to_json().items()
                                if k not in ("path", "size_bytes", "manifest_path")}}
    if partial is not None:
        row.update(partial_to_ms=partial.covered_ms[1], partial_next_ms=partial.next_start_ms)
    return row


@dataclass(frozen=True, slots=True)
class Doc:
    """A search document: a transcript segment (``ref`` its seq) or an OCR'd unique frame (``ref`` its ms), with
    its index rows (term, tf, t_ms) from :func:`terms.doc_terms`."""

    source: str
    ref: int
    t0_ms: int
    t1_ms: int
    speaker: str | None
    speaker_name: str | None
    text: str
    doc_len: int
    rows: list[tuple[str, int, int]]


def documents(segments: Sequence[Segment], words: Sequence[Sequence], frames: Sequence[FrameItem],
              names: Mapping[str, str]) -> list[Doc]:
    """The search documents of one generation: transcript segments (in time order) then OCR'd unique
    frames, each with its index rows (:func:`terms.doc_terms`)."""
    segments = sorted(segments, key=lambda s: (s.t0_ms, s.seq))
    firsts = terms_stage.first_word_times(segments, sorted(words, key=lambda w: w[0]))
    out = []
    for s, first in zip(segments, firsts):
        n, rows = terms_stage.doc_terms(s.text, s.t0_ms, first)
        out.append(Doc("transcript", int(s.seq), int(s.t0_ms), int(s.t1_ms), s.speaker,
                       names.get(s.speaker) if s.speaker else None, s.text, n, rows))
    for f in sorted(frames, key=lambda f: f.ms):
        if f.duplicate_of is None and f.ocr_text:
            n, rows = terms_stage.doc_terms(f.ocr_text, f.ms)
            out.append(Doc("ocr", int(f.ms), int(f.ms), int(f.ms), None, None, f.ocr_text, n, rows))
    return out


def manifest_parts(m: Manifest) -> tuple[list[Segment], list, list[FrameItem], dict[str, str]]:
    """(segments, words, frames, speaker names) of a manifest, as :func:`documents` takes them."""
    di = m.transcript.diarization
    names = {str(k): str(v) for k, v in (di.speaker_names or {}).items() if v} if di and di.available else {}
    return list(m.transcript.segments), list(m.transcript.words), list(m.frames.items), names


@dataclass(frozen=True, slots=True)
class TermRow:
    """A row of the SQL ``terms`` table: ``term`` in document ``ref`` of ``source``, ``tf`` times, first at ``t_ms``."""

    source: str
    ref: int
    t_ms: int
    term: str
    tf: int
    doc_len: int


def term_table_rows(docs: Sequence[Doc], source: str) -> list[TermRow]:
    """The SQL ``terms`` table's rows of one source: the same rows as the index parts' postings."""
    return [TermRow(source=source, ref=d.ref, t_ms=t, term=term, tf=tf, doc_len=d.doc_len)
            for d in docs if d.source == source for term, tf, t in d.rows]


def part_table(rid: str, rec: dict, docs: Sequence[Doc], frames: Sequence[FrameItem], manifest_size: int,
               manifest_sha256: str) -> pa.Table:
    """One recording's index part: a row per document, postings as list columns, and the listing row
    and (ms, on-screen unique ms) of every frame in the file metadata."""
    cols = {c: [] for c in PART_SCHEMA.names}
    for d in docs:
        for c in ("source", "ref", "t0_ms", "t1_ms", "speaker", "speaker_name", "text", "doc_len"):
            cols[c].append(getattr(d, c))
        cols["terms"].append([r[0] for r in d.rows])
        cols["tf"].append([r[1] for r in d.rows])
        cols["t_ms"].append([r[2] for r in d.rows])
    meta = {"format": FORMAT, "code_version": CODE_VERSION, "recording": rid, "rec": rec,
            "frames": pack_frames(frames),
            "manifest_size": int(manifest_size), "manifest_sha256": manifest_sha256}
    return pa.table(cols, schema=PART_SCHEMA.with_metadata({META_KEY: json.dumps(meta).encode()}))


def pack_frames(frames: Sequence[FrameItem]) -> str:
    """Every frame's (ms, on-screen unique ms) as base64 of little-endian int64 pairs: one JSON string per
    recording instead of a list per frame (a merged bucket's metadata is parsed whole at every load)."""
    pairs = [(int(f.ms), int(f.ms if f.duplicate_of is None else f.duplicate_of))
             for f in sorted(frames, key=lambda f: f.ms)]
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

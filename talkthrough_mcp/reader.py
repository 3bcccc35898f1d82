"""What the MCP tools answer, as plain functions over the store (no MCP types in here).

Every response is small by construction (see the token-budget rules in the design notes):
transcripts are capped at ~30k characters with ``truncated`` + ``next_start_ms`` for the next
page, frame calls return at most 6 images, a moment at most 3 frames, search at most 50
pointers (recording, source, t_ms, t_wall, on-screen frame, ≤160-char snippet), never payloads.

Per-recording reads go straight to that recording's partition files (``store.read_rows``); the
cross-recording reads (listing, ranked search) run DuckDB SQL over :class:`LibraryIndex`, an
in-memory mirror of the tables they need. Nothing here writes anything.
"""

from __future__ import annotations

import json
import re
import threading
from dataclasses import dataclass, field
from pathlib import Path

from talkthrough_assets import store
from talkthrough_assets.stages import terms as terms_stage
from talkthrough_assets.stages.wallclock import t_wall

from . import media
from .errors import AudioOnly, InvalidArgument, NotProcessed, ReadError, SourceUnavailable, UnknownRecording
from .index import LibraryIndex

# BM25 parameters (Robertson/Lucene defaults); IDF per source over all recordings.
K1 = 1.2
B = 0.75

TRANSCRIPT_MAX_CHARS = 30_000
TRANSCRIPT_MIN_CHARS = 1000
FRAMES_MAX = 6
MOMENT_FRAMES = 3
MOMENT_WINDOW_MS = 10_000
MOMENT_MAX_WINDOW_MS = 60_000
MOMENT_TRANSCRIPT_CHARS = 8_000
SEARCH_MAX_HITS = 50
SEARCH_MAX_TERMS = 16
SNIPPET_CHARS = 160
LIST_MAX = 100

_WORD = re.compile(r"[^\W_]+", re.UNICODE)


def dumps(obj) -> str:
    """The one serializer for responses (compact; sizes are measured with it)."""
    return json.dumps(obj, ensure_ascii=False, separators=(",", ":"), default=str)


@dataclass
class Image:
    caption: str
    data: bytes
    mime_type: str = "image/jpeg"


@dataclass
class ImageResult:
    """A JSON-able ``meta`` dict plus images; surfaces render captions next to image blocks."""

    meta: dict
    images: list[Image] = field(default_factory=list)


# --------------------------------------------------------------------------- small helpers

def _check_id(recording_id) -> str:
    try:
        return store.check_id(recording_id)
    except store.InvalidRecordingId as e:
        raise InvalidArgument(str(e), hint="ids come from list_recordings or search hits") from None


def _ms(name: str, value, *, required: bool = False) -> int | None:
    if value is None:
        if required:
            raise InvalidArgument(f"{name} is required (milliseconds from the recording start)")
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        raise InvalidArgument(f"{name} must be an integer number of milliseconds, got {value!r}")
    if value < 0:
        raise InvalidArgument(f"{name} must be >= 0 (milliseconds from the recording start), got {value}")
    return value


def _range(rec: dict, start_ms, end_ms) -> tuple[int, int]:
    s = _ms("start_ms", start_ms)
    e = _ms("end_ms", end_ms)
    duration = int(rec["duration_ms"] or 0)
    if s is not None and e is not None and s > e:
        raise InvalidArgument(f"start_ms ({s}) is after end_ms ({e})", hint="pass start_ms <= end_ms")
    if s is not None and duration and s > duration:
        raise InvalidArgument(f"start_ms {s} is past the end of the recording (duration {duration} ms)",
                              hint=f"use 0 <= start_ms <= {duration}")
    return (s or 0), (e if e is not None else max(duration, s or 0))


def _limit(name: str, value, lo: int, hi: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not lo <= value <= hi:
        raise InvalidArgument(f"{name} must be an integer from {lo} to {hi}, got {value!r}")
    return value


def _wall(wc: dict | None) -> dict | None:
    if not wc or not wc.get("available") or not wc.get("start_utc"):
        return None
    return {k: wc.get(k) for k in ("start_utc", "tz_offset_min", "source", "confidence")}



def snippet(text: str, terms: set[str], width: int = SNIPPET_CHARS) -> str:
    """At most ``width`` characters of ``text`` around its first word matching ``terms``."""
    flat = " ".join((text or "").replace("\n", " | ").split())
    if len(flat) <= width:
        return flat
    pos = end = 0
    for m in _WORD.finditer(flat):
        if terms.intersection(terms_stage.tokens(m.group())):
            pos, end = m.start(), m.end()
            break
    budget = width - 2  # room for the two ellipses
    start = max(0, min(pos - (budget - (end - pos)) // 3, len(flat) - budget))
    if start > 0:  # begin on a word boundary when one is near
        sp = flat.find(" ", start, pos)
        if sp != -1 and sp - start < 20:
            start = sp + 1
    cut = flat[start:start + budget]
    if start + budget < len(flat):
        sp = cut.rfind(" ")
        if sp > len(cut) - 20 and sp > end - start:
            cut = cut[:sp]
    out = ("…" if start > 0 else "") + cut + ("…" if start + len(cut) < len(flat) else "")
    return out[:width]


def _srt_time(ms: int) -> str:
    ms = max(0, int(ms))
    h, rem = divmod(ms, 3_600_000)
    m, rem = divmod(rem, 60_000)
    s, ms = divmod(rem, 1000)
    return f"{h:02d}:{m:02d}:{s:02d},{ms:03d}"


# --------------------------------------------------------------------------- reader

class Reader:
    """All read tools over the data root current at construction (``$TALKTHROUGH_HOME``)."""

    def __init__(self, refresh_interval: float | None = None):
        self.home = store.home()
        self._refresh_interval = refresh_interval
        self._index: LibraryIndex | None = None
        self._index_lock = threading.Lock()
        self._hashes = media.SourceHashes()

    # ---------------------------------------------------------------- plumbing

    @property
    def index(self) -> LibraryIndex:
        with self._index_lock:
            if self._index is None:
                self._index = LibraryIndex(self._refresh_interval)
            return self._index

    def warm(self) -> None:
        """Load the cross-recording mirror now (the server calls this at startup, off the request path)."""
        self.index.refresh(force=True)

    def _recording(self, recording_id) -> dict:
        rid = _check_id(recording_id)
        rec = store.read_one("recordings", rid)
        if rec is None:
            if store.has_partition("sources", rid):
                raise NotProcessed(f"recording {rid} is registered but has no finished outputs yet",
                                   hint="run `talkthrough process <file>` (or wait for the running job), then retry")
            raise UnknownRecording(f"no recording with id {rid} under {self.home}",
                                   hint="call list_recordings (or search) for valid ids")
        rec["recording"] = rid
        return rec

    def _wall_clock(self, rid: str) -> dict | None:
        return _wall(store.read_one("wall_clock", rid))

    def _speaker_names(self, rid: str, diarized: bool) -> dict[str, str]:
        names = (store.read_json(store.settings_path(rid), {}) or {}).get("speaker_names") or {}
        if not names and diarized:
            m = store.read_json(store.manifest_path(rid), {}) or {}
            names = ((m.get("transcript") or {}).get("diarization") or {}).get("speaker_names") or {}
        return {str(k): str(v) for k, v in names.items() if v}

    def _frames(self, rid: str) -> list[dict]:
        """Keyframes with duplicate_of and OCR text, in time order."""
        dups = {d["ms"]: d["duplicate_of"] for d in store.read_rows("dedup", rid)}
        ocr = {o["ms"]: o["text"] for o in store.read_rows("ocr", rid)}
        out = []
        for k in sorted(store.read_rows("keyframes", rid), key=lambda r: r["ms"]):
            out.append({"ms": k["ms"], "file": k["file"], "width": k["width"], "height": k["height"],
                        "duplicate_of": dups.get(k["ms"]), "ocr_text": ocr.get(k["ms"]) or None})
        return out

    def _frame_bytes(self, rid: str, rel: str) -> bytes | None:
        try:
            p = store.resolve_under_home(rel)
        except PermissionError:
            return None
        frames_root = store.frames_root(rid).resolve()
        if frames_root not in p.parents or p.suffix.lower() not in (".jpg", ".jpeg") or not p.is_file():
            return None
        data = p.read_bytes()
        return data if media.is_jpeg(data) else None

    # ---------------------------------------------------------------- list_recordings

    def list_recordings(self, offset: int = 0, limit: int = 20) -> dict:
        if isinstance(offset, bool) or not isinstance(offset, int) or offset < 0:
            raise InvalidArgument(f"offset must be an integer >= 0, got {offset!r}")
        limit = _limit("limit", limit, 1, LIST_MAX)
        total = self.index.query("SELECT count(*) AS n FROM m_recordings", tables=["recordings"])[0]["n"]
        rows = self.index.query(
            "SELECT * FROM m_recordings ORDER BY recorded_at NULLS LAST, filename, recording LIMIT ? OFFSET ?",
            [limit, offset], tables=["recordings"])
        items = []
        for r in rows:
            wc = {"start_utc": r["recorded_at"], "tz_offset_min": r["tz_offset_min"]} if r["recorded_at"] else None
            items.append({
                "id": r["recording"], "filename": r["filename"], "kind": r["kind"], "duration_ms": r["duration_ms"],
                "recorded_at": t_wall(wc, 0) if wc else None,
                "wall_clock": ({"source": r["wall_clock_source"], "confidence": r["wall_clock_confidence"]}
                               if wc else None),
                "language": r["language"],
                "counts": {"segments": r["segment_count"], "frames": r["frame_count"],
                           "unique_frames": r["unique_frame_count"], "speakers": r["speaker_count"]},
                "diarized": bool(r["diarized"]), "has_audio": bool(r["has_audio"]), "has_video": bool(r["has_video"]),
                "transcript_available": bool(r["transcript_available"]),
            })
        nxt = offset + len(items)
        return {"total": total, "offset": offset, "limit": limit, "recordings": items,
                "next_offset": nxt if nxt < total else None}

    # ---------------------------------------------------------------- get_transcript

    def _segments(self, rec: dict) -> tuple[list[dict], bool]:
        rid = rec["recording"]
        if rec["diarized"]:
            rows = store.read_rows("speaker_segments", rid)
            if rows:
                return sorted(rows, key=lambda r: (r["t0_ms"], r["seq"])), True
        return sorted(store.read_rows("segments", rid), key=lambda r: (r["t0_ms"], r["seq"])), False

    def get_transcript(self, recording_id, start_ms=None, end_ms=None, speaker: str | None = None,
                       format: str = "json", max_chars: int = TRANSCRIPT_MAX_CHARS) -> dict:
        rec = self._recording(recording_id)
        rid = rec["recording"]
        start, end = _range(rec, start_ms, end_ms)
        if format not in ("json", "srt"):
            raise InvalidArgument(f"format must be 'json' or 'srt', got {format!r}")
        max_chars = _limit("max_chars", max_chars, TRANSCRIPT_MIN_CHARS, TRANSCRIPT_MAX_CHARS)
        wc = self._wall_clock(rid)
        segs, attributed = self._segments(rec)
        names = self._speaker_names(rid, attributed) if attributed else {}
        if speaker is not None:
            if not attributed:
                raise InvalidArgument(f"recording {rid} is not diarized, so it has no speaker labels",
                                      hint="drop `speaker`, or reprocess with `talkthrough process --diarize`")
            want = speaker.strip().casefold()
            labels = sorted({s["speaker"] for s in segs if s.get("speaker")})
            match = {lab for lab in labels if lab.casefold() == want or names.get(lab, "").casefold() == want}
            if not match:
                known = ", ".join(f"{lab} ({names[lab]})" if lab in names else lab for lab in labels) or "none"
                raise InvalidArgument(f"no speaker {speaker!r} in recording {rid}; speakers: {known}")
            segs = [s for s in segs if s.get("speaker") in match]
        window = [s for s in segs if s["t1_ms"] > start and s["t0_ms"] <= end] if (start_ms or end_ms is not None) \
            else segs
        out: dict = {"recording": rid, "filename": rec["filename"], "format": format, "diarized": attributed,
                     "wall_clock": wc, "start_ms": start, "end_ms": end}
        if not rec["transcript_available"]:
            tr = store.read_one("transcripts", rid) or {}
            out["transcript_available"] = False
            out["reason"] = tr.get("reason") or "no transcript"
        if wc is None:
            out["note"] = "wall_clock unknown: t_wall is null; t_ms counts from the recording start"
        if names:
            out["speaker_names"] = names
        items: list = []
        next_start = None
        base = len(dumps(dict(out, segments=[], srt="", returned=10 ** 6, truncated=True, next_start_ms=10 ** 12,
                               continue_with={"id": rid, "start_ms": 10 ** 12, "end_ms": 10 ** 12,
                                              "speaker": speaker or "", "format": "json", "max_chars": 30000})))
        used = base
        for i, s in enumerate(window):
            if format == "srt":
                who = s.get("speaker")
                label = f"[{who}{' ' + names[who] if who in names else ''}] " if who else ""
                item = f"{s['seq'] + 1}\n{_srt_time(s['t0_ms'])} --> {_srt_time(s['t1_ms'])}\n{label}{s['text']}\n\n"
                size = len(dumps(item)) - 2
            else:
                item = {"seq": s["seq"], "t_ms": s["t0_ms"], "t1_ms": s["t1_ms"], "t_wall": t_wall(wc, s["t0_ms"])}
                if s.get("speaker"):
                    item["speaker"] = s["speaker"]
                    if s["speaker"] in names:
                        item["speaker_name"] = names[s["speaker"]]
                item["text"] = s["text"]
                size = len(dumps(item)) + 1
            if items and used + size > max_chars:
                next_start = s["t0_ms"]
                break
            items.append(item)
            used += size
        if format == "srt":
            out["srt"] = "".join(items)
        else:
            out["segments"] = items
        out["returned"] = len(items)
        out["truncated"] = next_start is not None
        out["next_start_ms"] = next_start
        if next_start is not None:
            same = {"end_ms": end_ms, "speaker": speaker, "format": format if format != "json" else None,
                    "max_chars": max_chars if max_chars != TRANSCRIPT_MAX_CHARS else None}
            out["continue_with"] = {"id": rid, "start_ms": next_start, **{k: v for k, v in same.items() if v is not None}}
        return out

    # ---------------------------------------------------------------- frames

    def _require_video(self, rec: dict) -> None:
        if not rec["has_video"]:
            raise AudioOnly(f"recording {rec['recording']} ({rec['filename']}) is audio-only: it has no frames",
                            hint="use get_transcript or search for audio-only recordings")

    def _frame_meta(self, f: dict, wc: dict | None) -> dict:
        m = {"ms": f["ms"], "t_wall": t_wall(wc, f["ms"]), "ocr_text": f["ocr_text"]}
        if f["duplicate_of"] is not None:
            m["duplicate_of"] = f["duplicate_of"]
        return m

    def _images(self, rid: str, frames: list[dict], wc: dict | None, meta: dict) -> ImageResult:
        images, missing = [], []
        for f in frames:
            data = self._frame_bytes(rid, f["file"])
            if data is None:
                missing.append(f["ms"])
                continue
            ocr = " | ".join(line for line in (f["ocr_text"] or "").splitlines() if line.strip())
            cap = f"frame {f['ms']} ms" + (f" ({t_wall(wc, f['ms'])})" if wc else "")
            if f["duplicate_of"] is not None:
                cap += f", duplicate of {f['duplicate_of']} ms"
            cap += f"; OCR: {ocr}" if ocr else "; OCR: (none)"
            images.append(Image(cap, data))
        if missing:
            meta["missing_frame_ms"] = missing
            meta["integrity_note"] = (f"{len(missing)} frame file(s) listed in the keyframes table are missing or "
                                      "unreadable on disk; reprocess the recording to restore them")
        return ImageResult(meta, images)

    def get_frames(self, recording_id, start_ms=None, end_ms=None, include_duplicates: bool = False,
                   limit: int = FRAMES_MAX) -> ImageResult:
        rec = self._recording(recording_id)
        rid = rec["recording"]
        self._require_video(rec)
        start, end = _range(rec, start_ms, end_ms)
        limit = _limit("limit", limit, 1, FRAMES_MAX)
        wc = self._wall_clock(rid)
        frames = [f for f in self._frames(rid) if start <= f["ms"] <= end
                  and (include_duplicates or f["duplicate_of"] is None)]
        page, rest = frames[:limit], frames[limit:]
        meta = {"recording": rid, "filename": rec["filename"], "start_ms": start, "end_ms": end,
                "include_duplicates": bool(include_duplicates), "wall_clock": wc,
                "frames": [self._frame_meta(f, wc) for f in page], "returned": len(page),
                "matching": len(frames), "truncated": bool(rest), "next_start_ms": rest[0]["ms"] if rest else None}
        if not frames:
            meta["note"] = "no stored keyframes in this range" + ("" if include_duplicates else
                                                                  " (try include_duplicates=true)")
        return self._images(rid, page, wc, meta)

    # ---------------------------------------------------------------- get_moment

    def get_moment(self, recording_id, t_ms, window_ms: int = MOMENT_WINDOW_MS) -> ImageResult:
        rec = self._recording(recording_id)
        rid = rec["recording"]
        t = _ms("t_ms", t_ms, required=True)
        duration = int(rec["duration_ms"] or 0)
        if duration and t > duration:
            raise InvalidArgument(f"t_ms {t} is past the end of the recording (duration {duration} ms)")
        window_ms = _limit("window_ms", window_ms, 0, MOMENT_MAX_WINDOW_MS)
        wc = self._wall_clock(rid)
        frames: list[dict] = []
        meta: dict = {"recording": rid, "filename": rec["filename"], "t_ms": t, "t_wall": t_wall(wc, t),
                      "wall_clock": wc}
        if rec["has_video"]:
            allf = self._frames(rid)
            unique = [f for f in allf if f["duplicate_of"] is None]
            on_screen = None
            for f in allf:  # the keyframe at/before t; a duplicate stands for its original
                if f["ms"] <= t:
                    on_screen = f["duplicate_of"] if f["duplicate_of"] is not None else f["ms"]
            ranked = sorted(unique, key=lambda f: (f["ms"] != on_screen, abs(f["ms"] - t), f["ms"]))
            frames = sorted(ranked[:MOMENT_FRAMES], key=lambda f: f["ms"])
            meta["on_screen_frame_ms"] = on_screen
            meta["frames"] = [self._frame_meta(f, wc) for f in frames]
        else:
            meta["frames"] = []
            meta["note"] = "audio-only recording: no frames; transcript only"
        lo, hi = max(0, t - window_ms), t + window_ms
        if duration:
            hi = min(hi, duration)
        tr = self.get_transcript(rid, start_ms=lo, end_ms=max(lo, hi), max_chars=MOMENT_TRANSCRIPT_CHARS)
        meta["transcript"] = {"start_ms": lo, "end_ms": hi, "segments": tr["segments"],
                              "truncated": tr["truncated"], "next_start_ms": tr["next_start_ms"]}
        at = [s["seq"] for s in tr["segments"] if s["t_ms"] <= t < s["t1_ms"]]
        meta["transcript"]["segment_at_t"] = at[0] if at else None
        if tr.get("reason"):
            meta["transcript"]["reason"] = tr["reason"]
        return self._images(rid, frames, wc, meta)

    # ---------------------------------------------------------------- search

    def search(self, query: str, recording_id: str | None = None, limit: int = 10) -> dict:
        if not isinstance(query, str) or not query.strip():
            raise InvalidArgument("query must be a non-empty string")
        words = list(dict.fromkeys(terms_stage.tokens(query)))
        if not words:
            raise InvalidArgument(f"query {query!r} has no searchable words (letters or digits)")
        if len(words) > SEARCH_MAX_TERMS:
            raise InvalidArgument(f"query has {len(words)} distinct words; use at most {SEARCH_MAX_TERMS}")
        limit = _limit("limit", limit, 1, SEARCH_MAX_HITS)
        rid = None
        if recording_id is not None:
            rid = self._recording(recording_id)["recording"]
        marks = ", ".join("?" for _ in words)
        scope = f"AND recording = '{rid}'" if rid else ""  # rid is validated hex: safe to inline
        # (window functions over the scored set are pathologically slow in DuckDB here: counts are a
        # separate one-row aggregate instead)
        rows = self.index.query(f"""
        WITH hits AS MATERIALIZED (
            SELECT recording, source, ref, t_ms, term, tf, doc_len FROM m_terms WHERE term IN ({marks}) {scope}
        ), scored AS MATERIALIZED (
            SELECT h.recording, h.source, h.ref, min(h.t_ms) AS t_ms, count(*) AS matched,
                   list(h.term) AS terms,
                   sum(ln(1 + (s.n - d.df + 0.5) / (d.df + 0.5))
                       * h.tf * ({K1} + 1) / (h.tf + {K1} * (1 - {B} + {B} * h.doc_len / s.avgdl))) AS score
            FROM hits h
            JOIN m_df d ON d.source = h.source AND d.term = h.term   -- document frequency: all recordings
            JOIN m_stats s ON s.source = h.source                    -- N and avgdl: all recordings
            WHERE h.recording IN (SELECT recording FROM m_recordings)  -- finished recordings only
            GROUP BY h.recording, h.source, h.ref
        ), counts AS (
            SELECT count(*) FILTER (WHERE matched = ?) AS n_all, count(*) AS n_any FROM scored
        )
        SELECT s.*, c.n_all, c.n_any,
               (SELECT list({{'term': term, 'docs': docs}}) FROM (
                    SELECT term, count(*) AS docs FROM hits WHERE recording IN (SELECT recording FROM m_recordings)
                    GROUP BY term)) AS per_word
        FROM scored s, counts c
        WHERE c.n_all = 0 OR s.matched = ?
        ORDER BY s.score DESC, s.recording, s.t_ms, s.source LIMIT ?
        """, [*words, len(words), len(words), limit])
        per_word = {w["term"]: int(w["docs"]) for w in (rows[0]["per_word"] or [])} if rows else {}
        extra = self._hit_context(rows)
        n_all = int(rows[0]["n_all"]) if rows else 0
        n_any = int(rows[0]["n_any"]) if rows else 0
        mode = "and" if len(words) == 1 or n_all else "or"
        hits = []
        wanted = set(words)
        for i, r in enumerate(rows):
            x = extra[i]
            wc = {"start_utc": x["start_utc"], "tz_offset_min": x["tz_offset_min"]} if x["start_utc"] else None
            hit = {"recording": r["recording"], "filename": x["filename"], "source": r["source"],
                   "t_ms": int(r["t_ms"]), "t_wall": t_wall(wc, r["t_ms"]), "frame_ms": x["frame_ms"],
                   "score": round(float(r["score"]), 3), "snippet": snippet(x["text"] or "", wanted)}
            if mode == "or":
                hit["matched"] = sorted(r["terms"], key=words.index)
            hits.append(hit)
        out = {"query": query, "terms": words, "mode": mode, "scope": rid or "all recordings",
               "total_matches": n_all if mode == "and" else n_any, "returned": len(hits), "hits": hits}
        matched = [w for w in words if per_word.get(w)]
        missing = [w for w in words if not per_word.get(w)]
        if not rows:
            out["note"] = f"no transcript segment or OCR frame contains {', '.join(repr(w) for w in words)}"
        elif mode == "or":
            counts = ", ".join(f"{w!r} ({per_word[w]} docs)" for w in matched)
            out["note"] = (f"no single segment or frame contains all of {', '.join(repr(w) for w in words)}; "
                           f"showing OR-ranked matches. Matched words: {counts}"
                           + (f"; not found {'in this recording' if rid else 'anywhere'}: "
                              f"{', '.join(repr(w) for w in missing)}" if missing else ""))
            out["matched_terms"] = matched
            out["unmatched_terms"] = missing
        if len(hits) < out["total_matches"]:
            out["more"] = f"{out['total_matches'] - len(hits)} more matches; raise limit (max {SEARCH_MAX_HITS}) " \
                          "or narrow with id / more words"
        return out

    def _hit_context(self, rows: list[dict]) -> list[dict]:
        """filename, wall clock, document text and on-screen unique frame for each ranked hit."""
        if not rows:
            return []
        ids = ", ".join(f"'{r}'" for r in sorted({r["recording"] for r in rows}))  # ids come from the index
        found = self.index.query(f"""
        WITH top AS (SELECT unnest(?::VARCHAR[]) AS recording, unnest(?::VARCHAR[]) AS source,
                            unnest(?::BIGINT[]) AS ref, unnest(?::BIGINT[]) AS t_ms, unnest(?::BIGINT[]) AS rank),
             fr AS (SELECT k.recording, k.ms, coalesce(d.duplicate_of, k.ms) AS unique_ms
                    FROM (SELECT * FROM m_keyframes WHERE recording IN ({ids})) k
                    LEFT JOIN (SELECT * FROM m_dedup WHERE recording IN ({ids})) d
                           ON d.recording = k.recording AND d.ms = k.ms)
        SELECT top.rank, r.filename, w.start_utc, w.tz_offset_min,
               CASE WHEN top.source = 'ocr' THEN o.text ELSE g.text END AS text, f.unique_ms AS frame_ms
        FROM top
        LEFT JOIN (SELECT recording, filename FROM m_recordings WHERE recording IN ({ids})) r
               ON r.recording = top.recording
        LEFT JOIN (SELECT * FROM m_wall_clock WHERE recording IN ({ids}) AND available) w
               ON w.recording = top.recording
        LEFT JOIN (SELECT * FROM m_segments WHERE recording IN ({ids})) g
               ON top.source = 'transcript' AND g.recording = top.recording AND g.seq = top.ref
        LEFT JOIN (SELECT * FROM m_ocr WHERE recording IN ({ids})) o
               ON top.source = 'ocr' AND o.recording = top.recording AND o.ms = top.ref
        ASOF LEFT JOIN fr f ON f.recording = top.recording AND top.t_ms >= f.ms
        """, [[r["recording"] for r in rows], [r["source"] for r in rows], [r["ref"] for r in rows],
              [r["t_ms"] for r in rows], list(range(len(rows)))], tables=())  # same snapshot as the ranking
        by_rank = {x["rank"]: x for x in found}
        empty = {"filename": None, "start_utc": None, "tz_offset_min": None, "text": None, "frame_ms": None}
        return [by_rank.get(i, empty) for i in range(len(rows))]

    # ---------------------------------------------------------------- extract_frame

    def _source_path(self, rec: dict) -> Path:
        rid = rec["recording"]
        rows = sorted(store.read_rows("sources", rid), key=lambda r: r["seen_at"] or "", reverse=True)
        probe = store.read_one("probe", rid)
        candidates = list(dict.fromkeys([r["path"] for r in rows] + ([probe["path"]] if probe else [])))
        if not candidates:
            raise SourceUnavailable(f"recording {rid} has no known source path",
                                    hint="process the file again with `talkthrough process <file>`")
        changed = []
        for c in candidates:
            p = Path(c)
            if not p.is_file():
                continue
            if self._hashes.prefix(p) == rid:
                return p
            changed.append(c)
        if changed:
            raise SourceUnavailable(f"the file at {changed[0]} no longer has the bytes of recording {rid} "
                                    "(sha256 changed since processing)",
                                    hint="use get_frames/get_moment (stored keyframes) instead")
        raise SourceUnavailable(f"source file of recording {rid} is gone: {candidates[0]} (moved or deleted)",
                                hint="use get_frames/get_moment (stored keyframes), or reprocess the file at its "
                                     "new path with `talkthrough process`")

    def extract_frame(self, recording_id, t_ms) -> ImageResult:
        rec = self._recording(recording_id)
        rid = rec["recording"]
        self._require_video(rec)
        t = _ms("t_ms", t_ms, required=True)
        duration = int(rec["duration_ms"] or 0)
        if duration and t > duration:
            raise InvalidArgument(f"t_ms {t} is past the end of the recording (duration {duration} ms)")
        path = self._source_path(rec)
        try:
            res = media.decode_frame(path, t)
        except Exception as e:  # av errors, damaged file
            raise SourceUnavailable(f"could not decode {path.name} at {t} ms: {type(e).__name__}: {e}") from None
        wc = self._wall_clock(rid)
        meta = {"recording": rid, "filename": rec["filename"], "requested_ms": t, "frame_ms": res["frame_ms"],
                "t_wall": t_wall(wc, res["frame_ms"]), "width": res["width"], "height": res["height"],
                "source_size": [res["source_width"], res["source_height"]], "exact": res["exact"]}
        if not res["exact"]:
            meta["note"] = "t_ms is after the last decodable frame; returned the last frame"
        cap = f"exact frame {res['frame_ms']} ms" + (f" ({meta['t_wall']})" if wc else "") + \
            f" from {rec['filename']}, {res['width']}x{res['height']}"
        return ImageResult(meta, [Image(cap, res["jpeg"])])


# --------------------------------------------------------------------------- default instance

_default: Reader | None = None
_default_lock = threading.Lock()


def default_reader() -> Reader:
    """The process-wide reader for the current ``$TALKTHROUGH_HOME`` (rebuilt if it changed)."""
    global _default
    with _default_lock:
        if _default is None or _default.home != store.home():
            _default = Reader()
        return _default


__all__ = ["Reader", "ReadError", "Image", "ImageResult", "default_reader", "dumps", "snippet"]

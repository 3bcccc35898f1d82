"""What the MCP tools answer, as plain functions over the store (no MCP types in here).

Every response is small by construction (see the token-budget rules in the design notes):
transcripts are capped at ~30k characters with ``truncated`` + ``next_start_ms`` for the next
page, frame calls return at most 6 images, a moment at most 3 frames, search at most 50
pointers (recording, source, t_ms, t_wall, on-screen frame, ≤160-char snippet), never payloads;
listings and search hits are also trimmed to a character budget, OCR text per frame is capped,
and every free-text argument has a length limit.

One generation per recording: every per-recording read comes from that recording's published
manifest (:mod:`.snapshot`), and the cross-recording reads (listing, ranked search) from
:class:`LibraryIndex`, which indexes the same manifests. A re-run rewriting the tables is
invisible until its manifest is published, and then visible to every tool at once. Nothing
here writes anything.
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

from . import media, snapshot
from .errors import AudioOnly, InvalidArgument, NotProcessed, ReadError, SourceUnavailable, UnknownRecording
from .index import LibraryIndex

# BM25 parameters (Robertson/Lucene defaults); IDF per source over all recordings.
K1 = 1.2
B = 0.75
SUBSTRING_WEIGHT = 0.5   # an OCR term that merely contains the query word counts half

TRANSCRIPT_MAX_CHARS = 30_000
TRANSCRIPT_MIN_CHARS = 1000
FRAMES_MAX = 6
MOMENT_FRAMES = 3
MOMENT_WINDOW_MS = 10_000
MOMENT_MAX_WINDOW_MS = 60_000
MOMENT_TRANSCRIPT_CHARS = 8_000
SEARCH_MAX_HITS = 50
SEARCH_MAX_TERMS = 16
SEARCH_MAX_QUERY_CHARS = 500
SEARCH_MAX_CHARS = 24_000      # the whole search response
SUBSTRING_MIN_CHARS = 4
SNIPPET_CHARS = 160
LIST_MAX = 100
LIST_MAX_CHARS = 30_000        # the whole listing response
OCR_MAX_CHARS = 1_500          # per frame, in meta and captions
SPEAKER_MAX_CHARS = 200
CROP_MIN_PX = 8

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
    except store.InvalidRecordingId:
        shown = repr(recording_id)[:40] + ("…" if len(repr(recording_id)) > 40 else "")
        raise InvalidArgument(f"invalid recording id {shown}: expected 16 lowercase hex characters",
                              hint="ids come from list_recordings or search hits") from None


def _int(name: str, value) -> None:
    if isinstance(value, bool) or not isinstance(value, int):
        raise InvalidArgument(f"{name} must be an integer, got {type(value).__name__}")


def _ms(name: str, value, *, required: bool = False) -> int | None:
    if value is None:
        if required:
            raise InvalidArgument(f"{name} is required (milliseconds from the recording start)")
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        raise InvalidArgument(f"{name} must be an integer number of milliseconds, got {type(value).__name__}")
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
        got = value if isinstance(value, int) and not isinstance(value, bool) else type(value).__name__
        raise InvalidArgument(f"{name} must be an integer from {lo} to {hi}, got {got}")
    return value


def _text_arg(name: str, value, max_chars: int, *, required: bool = True) -> str | None:
    if value is None and not required:
        return None
    if not isinstance(value, str):
        raise InvalidArgument(f"{name} must be a string, got {type(value).__name__}")
    if len(value) > max_chars:
        raise InvalidArgument(f"{name} is {len(value)} characters; at most {max_chars} are accepted",
                              hint=f"shorten {name}")
    return value


def _clip(text: str | None, n: int) -> tuple[str | None, bool]:
    if text is None or len(text) <= n:
        return text, False
    return text[:n - 1] + "…", True


def _matches(tok: str, terms: set[str]) -> bool:
    if tok in terms:
        return True
    return any(len(t) >= SUBSTRING_MIN_CHARS and t in tok for t in terms)


def snippet(text: str, terms: set[str], width: int = SNIPPET_CHARS) -> str:
    """At most ``width`` characters of ``text`` around its first word matching ``terms``
    (search terms as :func:`terms.index_terms` makes them)."""
    flat = " ".join((text or "").replace("\n", " | ").split())
    if len(flat) <= width:
        return flat
    pos = end = 0
    for m in re.finditer(r"\S+", flat):
        if any(_matches(t, terms) for t in terms_stage.index_terms(m.group())):
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


def _sql_str(s: str) -> str:
    return "'" + s.replace("'", "''") + "'"


def screen_spans(frames: list[dict], duration_ms: int) -> dict[int, tuple[int, int]]:
    """keyframe ms -> (valid_from_ms, valid_to_ms): from the frame until the screen next changes
    (the next keyframe that is not a duplicate of the same original), else the recording's end."""
    out: dict[int, tuple[int, int]] = {}
    uniq = [f["ms"] if f["duplicate_of"] is None else f["duplicate_of"] for f in frames]
    nxt = None  # ms of the next keyframe showing a different screen, scanning backwards
    for i in range(len(frames) - 1, -1, -1):
        if i + 1 < len(frames) and uniq[i + 1] != uniq[i]:
            nxt = frames[i + 1]["ms"]
        end = nxt if nxt is not None else max(duration_ms, frames[i]["ms"])
        out[frames[i]["ms"]] = (frames[i]["ms"], end)
    return out


# --------------------------------------------------------------------------- reader

class Reader:
    """All read tools over the data root current at construction (``$TALKTHROUGH_HOME``)."""

    def __init__(self, refresh_interval: float | None = None):
        self.home = store.data_location()  # the data root this reader serves (a folder or s3:// URL)
        self._refresh_interval = refresh_interval
        self._index: LibraryIndex | None = None
        self._index_lock = threading.Lock()
        self._hashes = media.SourceHashes()
        self._snaps = snapshot.SnapshotCache()

    # ---------------------------------------------------------------- plumbing

    @property
    def index(self) -> LibraryIndex:
        with self._index_lock:
            if self._index is None:
                self._index = LibraryIndex(self._refresh_interval)
            return self._index

    def warm(self, stop: threading.Event | None = None) -> None:
        """Build the cross-recording index now (the server calls this at startup, off the request
        path); ``stop`` ends it early between batches."""
        self.index.refresh(force=True, stop=stop)

    def _snapshot(self, recording_id) -> snapshot.Snapshot:
        rid = _check_id(recording_id)
        try:
            snap = self._snaps.get(rid)
        except snapshot.DamagedManifest as e:
            raise NotProcessed(str(e), hint="reprocess the recording with `talkthrough process <file>`") from None
        if snap is None:
            if store.has_partition("sources", rid):
                raise NotProcessed(f"recording {rid} is registered but has no finished outputs yet",
                                   hint="run `talkthrough process <file>` (or wait for the running job), then retry")
            raise UnknownRecording(f"no recording with id {rid}",
                                   hint="call list_recordings (or search) for valid ids")
        return snap

    def _frame_bytes(self, rid: str, rel: str) -> bytes | None:
        try:
            key = store.check_key(rel)
        except PermissionError:
            return None
        if not key.startswith(store.frames_key(rid) + "/") or not key.lower().endswith((".jpg", ".jpeg")):
            return None
        try:
            data = store.get_bytes(key)  # None when pruned between the index and the read
        except OSError:
            return None
        return data if data is not None and media.is_jpeg(data) else None

    # ---------------------------------------------------------------- list_recordings

    def list_recordings(self, offset: int = 0, limit: int = 20) -> dict:
        if isinstance(offset, bool) or not isinstance(offset, int) or offset < 0:
            raise InvalidArgument(f"offset must be an integer >= 0, got {offset if isinstance(offset, int) else type(offset).__name__}")
        limit = _limit("limit", limit, 1, LIST_MAX)
        self.index.refresh()
        total = self.index.query("SELECT count(*) AS n FROM m_recordings", refresh=False)[0]["n"]
        rows = self.index.query(
            "SELECT * FROM m_recordings ORDER BY recorded_at NULLS LAST, filename, recording LIMIT ? OFFSET ?",
            [limit, offset], refresh=False)
        items = []
        used = 200
        for r in rows:
            wc = {"start_utc": r["recorded_at"], "tz_offset_min": r["tz_offset_min"]} if r["recorded_at"] else None
            item = {
                "id": r["recording"], "filename": r["filename"], "kind": r["kind"], "duration_ms": r["duration_ms"],
                "recorded_at": t_wall(wc, 0) if wc else None,
                "wall_clock": ({"source": r["wall_clock_source"], "confidence": r["wall_clock_confidence"]}
                               if wc else None),
                "language": r["language"],
                "counts": {"segments": r["segment_count"], "frames": r["frame_count"],
                           "unique_frames": r["unique_frame_count"], "speakers": r["speaker_count"]},
                "diarized": bool(r["diarized"]), "has_audio": bool(r["has_audio"]), "has_video": bool(r["has_video"]),
                "transcript_available": bool(r["transcript_available"]), "generation": r["generation"],
            }
            size = len(dumps(item)) + 1
            if items and used + size > LIST_MAX_CHARS:
                break
            items.append(item)
            used += size
        nxt = offset + len(items)
        return {"total": total, "offset": offset, "limit": limit, "returned": len(items), "recordings": items,
                "next_offset": nxt if nxt < total else None}

    # ---------------------------------------------------------------- get_transcript

    @staticmethod
    def _speaker_match(snap: snapshot.Snapshot, speaker: str) -> set[str]:
        want = speaker.strip().casefold()
        labels = sorted({s["speaker"] for s in snap.segments if s.get("speaker")})
        match = {lab for lab in labels if lab.casefold() == want or snap.names.get(lab, "").casefold() == want}
        if not match:
            known = ", ".join(f"{lab} ({snap.names[lab]})" if lab in snap.names else lab for lab in labels) or "none"
            shown, _ = _clip(speaker, 60)
            raise InvalidArgument(f"no speaker {shown!r} in recording {snap.rid}; speakers: {known}")
        return match

    def get_transcript(self, recording_id, start_ms=None, end_ms=None, speaker: str | None = None,
                       format: str = "json", max_chars: int = TRANSCRIPT_MAX_CHARS) -> dict:
        snap = self._snapshot(recording_id)
        return self._transcript(snap, start_ms, end_ms, speaker, format, max_chars)

    def _transcript(self, snap: snapshot.Snapshot, start_ms=None, end_ms=None, speaker: str | None = None,
                    format: str = "json", max_chars: int = TRANSCRIPT_MAX_CHARS) -> dict:
        rec, rid = snap.rec, snap.rid
        start, end = _range(rec, start_ms, end_ms)
        if format not in ("json", "srt"):
            shown = format[:20] if isinstance(format, str) else type(format).__name__
            raise InvalidArgument(f"format must be 'json' or 'srt', got {shown!r}")
        max_chars = _limit("max_chars", max_chars, TRANSCRIPT_MIN_CHARS, TRANSCRIPT_MAX_CHARS)
        speaker = _text_arg("speaker", speaker, SPEAKER_MAX_CHARS, required=False)
        wc = snap.wall_clock
        segs = snap.segments
        attributed = any(s.get("speaker") for s in segs)
        names = snap.names if attributed else {}
        if speaker is not None:
            if not attributed:
                raise InvalidArgument(f"recording {rid} is not diarized, so it has no speaker labels",
                                      hint="drop `speaker`, or reprocess with `talkthrough process --diarize`")
            match = self._speaker_match(snap, speaker)
            segs = [s for s in segs if s.get("speaker") in match]
        # SRT cue numbers count the cues of this (possibly speaker-filtered) transcript: 1, 2, 3 …
        cue = {id(s): i + 1 for i, s in enumerate(segs)}
        window = [s for s in segs if s["t1_ms"] > start and s["t0_ms"] <= end] if (start_ms or end_ms is not None) \
            else segs
        out: dict = {"recording": rid, "filename": rec["filename"], "generation": snap.generation, "format": format,
                     "diarized": attributed, "wall_clock": wc, "start_ms": start, "end_ms": end}
        if not rec["transcript_available"]:
            out["transcript_available"] = False
            out["reason"] = snap.transcript_reason or "no transcript"
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
        for s in window:
            if format == "srt":
                who = s.get("speaker")
                label = f"[{who}{' ' + names[who] if who in names else ''}] " if who else ""
                item = f"{cue[id(s)]}\n{_srt_time(s['t0_ms'])} --> {_srt_time(s['t1_ms'])}\n{label}{s['text']}\n\n"
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

    def _require_video(self, snap: snapshot.Snapshot) -> None:
        if not snap.rec["has_video"]:
            raise AudioOnly(f"recording {snap.rid} ({snap.rec['filename']}) is audio-only: it has no frames",
                            hint="use get_transcript or search for audio-only recordings")

    def _frame_meta(self, f: dict, wc: dict | None, spans: dict[int, tuple[int, int]]) -> dict:
        text, cut = _clip(f["ocr_text"], OCR_MAX_CHARS)
        lo, hi = spans.get(f["ms"], (f["ms"], f["ms"]))
        m = {"ms": f["ms"], "t_wall": t_wall(wc, f["ms"]), "valid_from_ms": lo, "valid_to_ms": hi, "ocr_text": text}
        if cut:
            m["ocr_truncated"] = True
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
            ocr, _ = _clip(ocr, OCR_MAX_CHARS)
            cap = f"frame {f['ms']} ms" + (f" ({t_wall(wc, f['ms'])})" if wc else "")
            if f["duplicate_of"] is not None:
                cap += f", duplicate of {f['duplicate_of']} ms"
            cap += f"; OCR: {ocr}" if ocr else "; OCR: (none)"
            images.append(Image(cap, data))
        if missing:
            meta["missing_frame_ms"] = missing
            meta["integrity_note"] = (f"{len(missing)} frame file(s) of this recording are missing or "
                                      "unreadable on disk; reprocess the recording to restore them")
        return ImageResult(meta, images)

    @staticmethod
    def _on_screen(frames: list[dict], t: int) -> int | None:
        """ms of the unique frame on screen at ``t`` (the keyframe at/before t; a duplicate stands
        for its original)."""
        on = None
        for f in frames:
            if f["ms"] > t:
                break
            on = f["duplicate_of"] if f["duplicate_of"] is not None else f["ms"]
        return on

    def get_frames(self, recording_id, start_ms=None, end_ms=None, include_duplicates: bool = False,
                   limit: int | None = None, at_ms=None) -> ImageResult:
        snap = self._snapshot(recording_id)
        rec, rid = snap.rec, snap.rid
        self._require_video(snap)
        if not isinstance(include_duplicates, bool):
            raise InvalidArgument(f"include_duplicates must be true or false, got {type(include_duplicates).__name__}")
        wc = snap.wall_clock
        duration = int(rec["duration_ms"] or 0)
        spans = screen_spans(snap.frames, duration)
        pool = [f for f in snap.frames if include_duplicates or f["duplicate_of"] is None]
        if at_ms is not None:
            if start_ms is not None or end_ms is not None:
                raise InvalidArgument("pass either at_ms or start_ms/end_ms, not both",
                                      hint="at_ms picks the frame on screen at one instant; start_ms/end_ms a span")
            at = _ms("at_ms", at_ms)
            if duration and at > duration:
                raise InvalidArgument(f"at_ms {at} is past the end of the recording (duration {duration} ms)")
            limit = _limit("limit", 1 if limit is None else limit, 1, FRAMES_MAX)
            if include_duplicates:
                on = next((f["ms"] for f in reversed(snap.frames) if f["ms"] <= at), None)
            else:
                on = self._on_screen(snap.frames, at)
            ranked = sorted(pool, key=lambda f: (f["ms"] != on, abs(f["ms"] - at), f["ms"]))
            page = sorted(ranked[:limit], key=lambda f: f["ms"])
            meta = {"recording": rid, "filename": rec["filename"], "generation": snap.generation, "at_ms": at, "t_wall": t_wall(wc, at),
                    "on_screen_frame_ms": on, "include_duplicates": include_duplicates, "wall_clock": wc,
                    "frames": [self._frame_meta(f, wc, spans) for f in page], "returned": len(page),
                    "matching": len(pool), "truncated": False, "next_start_ms": None}
            if not pool:
                meta["note"] = "this recording has no stored keyframes"
            return self._images(rid, page, wc, meta)
        start, end = _range(rec, start_ms, end_ms)
        limit = _limit("limit", FRAMES_MAX if limit is None else limit, 1, FRAMES_MAX)
        frames = [f for f in pool if start <= f["ms"] <= end]
        page, rest = frames[:limit], frames[limit:]
        meta = {"recording": rid, "filename": rec["filename"], "generation": snap.generation, "start_ms": start,
                "end_ms": end, "include_duplicates": include_duplicates, "wall_clock": wc,
                "frames": [self._frame_meta(f, wc, spans) for f in page], "returned": len(page),
                "matching": len(frames), "truncated": bool(rest), "next_start_ms": rest[0]["ms"] if rest else None}
        if not frames:
            on = self._on_screen(snap.frames, start)
            meta["note"] = "no stored keyframes start in this range" + (
                f"; the frame on screen at start_ms is {on} ms (get_frames with at_ms={start})" if on is not None
                else "" if include_duplicates else " (try include_duplicates=true)")
        return self._images(rid, page, wc, meta)

    # ---------------------------------------------------------------- get_moment

    @staticmethod
    def _speakers_in_range(snap: snapshot.Snapshot, lo: int, hi: int, t: int) -> tuple[list[dict], str | None]:
        talk: dict[str, int] = {}
        first: dict[str, int] = {}
        at = None
        for t0, t1, who in snap.turns:
            ov = min(t1, hi) - max(t0, lo)
            if ov > 0 or (lo == hi and t0 <= lo < t1):
                talk[who] = talk.get(who, 0) + max(ov, 0)
                first.setdefault(who, max(t0, lo))
            if t0 <= t < t1:
                at = who
        out = []
        for who in sorted(talk, key=lambda w: (-talk[w], first[w], w)):
            item = {"speaker": who, "talk_ms": talk[who], "first_ms": first[who]}
            if who in snap.names:
                item["speaker_name"] = snap.names[who]
            out.append(item)
        return out, at

    def get_moment(self, recording_id, t_ms, window_ms: int = MOMENT_WINDOW_MS) -> ImageResult:
        snap = self._snapshot(recording_id)
        rec, rid = snap.rec, snap.rid
        t = _ms("t_ms", t_ms, required=True)
        duration = int(rec["duration_ms"] or 0)
        if duration and t > duration:
            raise InvalidArgument(f"t_ms {t} is past the end of the recording (duration {duration} ms)")
        window_ms = _limit("window_ms", window_ms, 0, MOMENT_MAX_WINDOW_MS)
        wc = snap.wall_clock
        frames: list[dict] = []
        meta: dict = {"recording": rid, "filename": rec["filename"], "generation": snap.generation, "t_ms": t,
                      "t_wall": t_wall(wc, t), "wall_clock": wc}
        if rec["has_video"]:
            spans = screen_spans(snap.frames, duration)
            unique = [f for f in snap.frames if f["duplicate_of"] is None]
            on_screen = self._on_screen(snap.frames, t)
            ranked = sorted(unique, key=lambda f: (f["ms"] != on_screen, abs(f["ms"] - t), f["ms"]))
            frames = sorted(ranked[:MOMENT_FRAMES], key=lambda f: f["ms"])
            meta["on_screen_frame_ms"] = on_screen
            meta["frames"] = [self._frame_meta(f, wc, spans) for f in frames]
        else:
            meta["frames"] = []
            meta["note"] = "audio-only recording: no frames; transcript only"
        lo, hi = max(0, t - window_ms), t + window_ms
        if duration:
            hi = min(hi, duration)
        hi = max(lo, hi)
        tr = self._transcript(snap, start_ms=lo, end_ms=hi, max_chars=MOMENT_TRANSCRIPT_CHARS)
        meta["transcript"] = {"start_ms": lo, "end_ms": hi, "segments": tr["segments"],
                              "truncated": tr["truncated"], "next_start_ms": tr["next_start_ms"]}
        at = [s["seq"] for s in tr["segments"] if s["t_ms"] <= t < s["t1_ms"]]
        meta["transcript"]["segment_at_t"] = at[0] if at else None
        if tr.get("reason"):
            meta["transcript"]["reason"] = tr["reason"]
        if snap.diarized:
            speakers, speaker_at = self._speakers_in_range(snap, lo, hi, t)
            meta["speakers_in_range"] = speakers
            meta["speaker_at_t"] = speaker_at
        else:
            meta["speakers_in_range"] = None
            meta["speaker_at_t"] = None
        return self._images(rid, frames, wc, meta)

    # ---------------------------------------------------------------- search

    def _expand(self, words: list[str]) -> tuple[list[tuple[str, str | None, str, float]], dict[str, list[str]]]:
        """(query word, source or None, index term, weight) pairs: every word matches itself in any
        source, and OCR terms that contain it (glued screen text like ERROR503GATEWAYTIMEOUT) at half weight."""
        pairs: list[tuple[str, str | None, str, float]] = [(w, None, w, 1.0) for w in words]
        inside: dict[str, list[str]] = {}
        for w in words:
            if len(w) < SUBSTRING_MIN_CHARS:
                continue
            rows = self.index.query(
                "SELECT DISTINCT term FROM m_df WHERE source = 'ocr' AND length(term) >= ? AND contains(term, ?) "
                "AND term <> ? ORDER BY term LIMIT 20", [len(w) + 3, w, w], refresh=False)
            for r in rows:
                pairs.append((w, "ocr", r["term"], SUBSTRING_WEIGHT))
                inside.setdefault(w, []).append(r["term"])
        return pairs, inside

    def _suggest(self, word: str) -> list[str]:
        k = 1 if len(word) <= 5 else 2
        rows = self.index.query(
            "SELECT term FROM (SELECT term, sum(df) AS df, damerau_levenshtein(term, ?) AS dist FROM m_df "
            "WHERE length(term) BETWEEN ? AND ? GROUP BY term) WHERE dist <= ? AND dist > 0 "
            "ORDER BY dist, df DESC, term LIMIT 3", [word, len(word) - k, len(word) + k, k], refresh=False)
        return [r["term"] for r in rows]

    def search(self, query: str, recording_id: str | None = None, limit: int = 10, speaker: str | None = None) -> dict:
        query = _text_arg("query", query, SEARCH_MAX_QUERY_CHARS)
        if not query.strip():
            raise InvalidArgument("query must be a non-empty string")
        words = list(dict.fromkeys(terms_stage.index_terms(query)))
        if not words:
            shown, _ = _clip(query, 60)
            raise InvalidArgument(f"query {shown!r} has no searchable words (letters or digits; one-letter words "
                                  "are not indexed)")
        if len(words) > SEARCH_MAX_TERMS:
            raise InvalidArgument(f"query has {len(words)} distinct words; use at most {SEARCH_MAX_TERMS}")
        limit = _limit("limit", limit, 1, SEARCH_MAX_HITS)
        speaker = _text_arg("speaker", speaker, SPEAKER_MAX_CHARS, required=False)
        rid = None
        if recording_id is not None:
            snap = self._snapshot(recording_id)
            rid = snap.rid
            if speaker is not None:
                if not snap.diarized:
                    raise InvalidArgument(f"recording {rid} is not diarized, so it has no speaker labels",
                                          hint="drop `speaker`, or reprocess with `talkthrough process --diarize`")
                self._speaker_match(snap, speaker)
        self.index.refresh()
        pairs, inside = self._expand(words)
        literal = ", ".join(_sql_str(t) for t in dict.fromkeys(p[2] for p in pairs))  # [^\W_]+ terms: safe to inline
        scope = f"AND recording = '{rid}'" if rid else ""  # rid is validated hex: safe to inline
        who = speaker.strip().casefold() if speaker is not None else None
        speaker_join = ("JOIN m_docs sd ON sd.recording = t.recording AND sd.source = t.source AND sd.ref = t.ref "
                        "AND (lower(sd.speaker) = $who OR lower(sd.speaker_name) = $who)") if who is not None else ""
        # one statement, so ranking and hit context come from one snapshot of the index
        rows = self.index.query(f"""
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
              "weight": [p[3] for p in pairs], "nwords": len(words), "limit": limit,
              **({"who": who} if who is not None else {})}, refresh=False)
        per_word = {w["term"]: int(w["docs"]) for w in (rows[0]["per_word"] or [])} if rows else {}
        n_all = int(rows[0]["n_all"]) if rows else 0
        n_any = int(rows[0]["n_any"]) if rows else 0
        mode = "and" if len(words) == 1 or n_all else "or"
        shown_query, query_cut = _clip(query, 200)
        out = {"query": shown_query, "terms": words, "mode": mode, "scope": rid or "all recordings",
               "total_matches": n_all if mode == "and" else n_any, "returned": 0, "hits": []}
        if query_cut:
            out["query_truncated"] = True
        if speaker is not None:
            out["speaker"] = speaker
        wanted = set(words)
        used = len(dumps(out)) + 900  # room for the notes added below
        for r in rows:
            wc = {"start_utc": r["recorded_at"], "tz_offset_min": r["tz_offset_min"]} if r["recorded_at"] else None
            hit = {"recording": r["recording"], "filename": r["filename"], "generation": r["generation"],
                   "source": r["source"],
                   "t_ms": int(r["t_ms"]), "t_wall": t_wall(wc, r["t_ms"]), "frame_ms": r["frame_ms"],
                   "score": round(float(r["score"]), 3), "snippet": snippet(r["text"] or "", wanted)}
            if r["speaker"]:
                hit["speaker"] = r["speaker"]
                if r["speaker_name"]:
                    hit["speaker_name"] = r["speaker_name"]
            if mode == "or":
                hit["matched"] = sorted(r["terms"], key=words.index)
            size = len(dumps(hit)) + 1
            if out["hits"] and used + size > SEARCH_MAX_CHARS:
                break
            out["hits"].append(hit)
            used += size
        hits = out["hits"]
        out["returned"] = len(hits)
        matched = [w for w in words if per_word.get(w)]
        missing = [w for w in words if not per_word.get(w)]
        if not rows:
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
        if missing:
            sugg = {w: s for w in missing if (s := self._suggest(w))}
            if sugg:
                out["did_you_mean"] = sugg
                fixed = " ".join(sugg.get(w, [w])[0] for w in words)
                out["note"] = (out.get("note", "") + f"; did you mean: search(query={fixed!r})?").lstrip("; ")
        if len(hits) < out["total_matches"]:
            out["more"] = f"{out['total_matches'] - len(hits)} more matches; raise limit (max {SEARCH_MAX_HITS}) " \
                          "or narrow with id / speaker / more words"
        return out

    # ---------------------------------------------------------------- extract_frame

    def _source_path(self, snap: snapshot.Snapshot) -> Path:
        rid = snap.rid
        rows = sorted(store.read_rows("sources", rid), key=lambda r: r["seen_at"] or "", reverse=True)
        candidates = list(dict.fromkeys([r["path"] for r in rows] + ([snap.source_path] if snap.source_path else [])))
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
            changed.append(p.name)
        if changed:
            raise SourceUnavailable(f"the source file {changed[0]!r} no longer has the bytes of recording {rid} "
                                    "(sha256 changed since processing)",
                                    hint="use get_frames/get_moment (stored keyframes) instead")
        raise SourceUnavailable(f"the source file {Path(candidates[0]).name!r} of recording {rid} is gone "
                                "(moved or deleted)",
                                hint="use get_frames/get_moment (stored keyframes), or reprocess the file at its "
                                     "new path with `talkthrough process`")

    @staticmethod
    def _crop(crop) -> tuple[int, int, int, int] | None:
        if crop is None:
            return None
        keys = ("x", "y", "width", "height")
        if not isinstance(crop, dict) or set(crop) != set(keys):
            raise InvalidArgument("crop must be an object {x, y, width, height} in source pixels",
                                  hint="source_size of an earlier extract_frame/get_frames call gives the bounds")
        vals = []
        for k in keys:
            v = crop[k]
            if isinstance(v, bool) or not isinstance(v, int) or v < 0:
                raise InvalidArgument(f"crop.{k} must be an integer >= 0 (source pixels)")
            vals.append(v)
        if vals[2] < CROP_MIN_PX or vals[3] < CROP_MIN_PX:
            raise InvalidArgument(f"crop width and height must be at least {CROP_MIN_PX} px")
        return tuple(vals)  # type: ignore[return-value]

    def extract_frame(self, recording_id, t_ms, crop=None, full_resolution: bool = False) -> ImageResult:
        snap = self._snapshot(recording_id)
        rec, rid = snap.rec, snap.rid
        self._require_video(snap)
        t = _ms("t_ms", t_ms, required=True)
        duration = int(rec["duration_ms"] or 0)
        if duration and t > duration:
            raise InvalidArgument(f"t_ms {t} is past the end of the recording (duration {duration} ms)")
        box = self._crop(crop)
        if not isinstance(full_resolution, bool):
            raise InvalidArgument(f"full_resolution must be true or false, got {type(full_resolution).__name__}")
        path = self._source_path(snap)
        try:
            res = media.decode_frame(path, t, crop=box,
                                     max_side=media.FULL_MAX_SIDE if full_resolution else media.MAX_SIDE)
        except media.CropOutside as e:
            raise InvalidArgument(str(e), hint="keep x+width <= source width and y+height <= source height") from None
        except Exception as e:  # av errors, damaged file
            raise SourceUnavailable(f"could not decode {path.name} at {t} ms: {type(e).__name__}") from None
        wc = snap.wall_clock
        meta = {"recording": rid, "filename": rec["filename"], "requested_ms": t, "frame_ms": res["frame_ms"],
                "t_wall": t_wall(wc, res["frame_ms"]), "width": res["width"], "height": res["height"],
                "source_size": [res["source_width"], res["source_height"]], "exact": res["exact"],
                "crop": dict(zip(("x", "y", "width", "height"), box)) if box else None,
                "scaled": res["scaled"], "full_resolution": full_resolution}
        if not res["exact"]:
            meta["note"] = "t_ms is after the last decodable frame; returned the last frame"
        if res["scaled"] and full_resolution:
            meta["scale_note"] = f"longest side capped at {media.FULL_MAX_SIDE} px"
        cap = f"exact frame {res['frame_ms']} ms" + (f" ({meta['t_wall']})" if wc else "") + \
            f" from {rec['filename']}, {res['width']}x{res['height']}" + \
            (f", crop x={box[0]} y={box[1]} {box[2]}x{box[3]} of {res['source_width']}x{res['source_height']}"
             if box else "")
        return ImageResult(meta, [Image(cap, res["jpeg"])])


# --------------------------------------------------------------------------- default instance

_default: Reader | None = None
_default_lock = threading.Lock()


def default_reader() -> Reader:
    """The process-wide reader for the current ``$TALKTHROUGH_HOME`` (rebuilt if it changed)."""
    global _default
    with _default_lock:
        if _default is None or _default.home != store.data_location():
            _default = Reader()
        return _default


__all__ = ["Reader", "ReadError", "Image", "ImageResult", "default_reader", "dumps", "snippet", "screen_spans"]

"""What the MCP tools answer, as plain functions over the store (no MCP types in here).

Every response is small by construction (see the token-budget rules in the design notes):
transcripts are capped at ~30k characters with ``truncated`` + ``next_start_ms`` for the next
page, frame calls return at most 6 images, a moment at most 3 frames, search at most 50
pointers (recording, source, t_ms, t_wall, on-screen frame, ≤160-char snippet), never payloads;
listings and search hits are also trimmed to a character budget, OCR text per frame is capped,
and every free-text argument has a length limit.

The tools' parts live beside this module, one concern each: :mod:`.args` (argument checks, the
response serializer), :mod:`.transcript` (transcript pages, SRT), :mod:`.images` (frames as images)
and :mod:`.search` (BM25 over :mod:`.index`); :class:`Reader` ties them to one data root.

One generation per recording: every per-recording read comes from that recording's published
manifest (:mod:`.snapshot`), and the cross-recording reads (listing, ranked search) from
:class:`LibraryIndex`, which indexes the same manifests. A re-run rewriting the tables is
invisible until its manifest is published, and then visible to every tool at once. Nothing
here writes anything.
"""

from __future__ import annotations

import threading
from pathlib import Path

from talkthrough_assets import store
from talkthrough_assets.model.wallclock import t_wall

from talkthrough_assets.read import bytime
from talkthrough_assets.read import images
from talkthrough_assets.read import media
from talkthrough_assets.read import people
from talkthrough_assets.read import search
from talkthrough_assets.read import snapshot
from talkthrough_assets.read import transcript
from talkthrough_assets.read.args import check_id, crop_arg, dumps, limit_arg, ms_arg, range_arg
from talkthrough_assets.read.errors import InvalidArgument, NotProcessed, ReadError, SourceUnavailable, UnknownRecording
from talkthrough_assets.read.images import OCR_MAX_CHARS, Image, ImageResult, screen_spans
from talkthrough_assets.read.index import LibraryIndex
from talkthrough_assets.read.search import SEARCH_MAX_CHARS, SEARCH_MAX_HITS, SEARCH_MAX_QUERY_CHARS, snippet
from talkthrough_assets.read.transcript import TRANSCRIPT_MAX_CHARS, TRANSCRIPT_MIN_CHARS

FRAMES_MAX = 6
MOMENT_FRAMES = 3
MOMENT_WINDOW_MS = 10_000
MOMENT_MAX_WINDOW_MS = 60_000
MOMENT_TRANSCRIPT_CHARS = 8_000
LIST_MAX = 100
LIST_MAX_OFFSET = 1_000_000_000  # DuckDB's OFFSET is a BIGINT: 2**63 is a bad argument, not an internal error
LIST_MAX_CHARS = 30_000        # the whole listing response


# --------------------------------------------------------------------------- reader

class Reader:
    """All read tools over the data root current at construction (``$TALKTHROUGH_HOME``)."""

    def __init__(self, refresh_interval: float | None = None):
        self.home = store.data_location()  # the data root this reader serves (a folder or s3:// URL)
        self._refresh_interval = refresh_interval
        self._index: LibraryIndex | None = None
        self._index_lock = threading.Lock()
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
        rid = check_id(recording_id)
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

    # ---------------------------------------------------------------- list_recordings

    def list_recordings(self, offset: int = 0, limit: int = 20, since: str | None = None, until: str | None = None,
                        tz: str | None = None, person: str | None = None) -> dict:
        if person is not None:
            return people.list_by_person(self, person, offset, limit, since=since, until=until, tz=tz)
        if isinstance(offset, bool) or not isinstance(offset, int) or not 0 <= offset <= LIST_MAX_OFFSET:
            got = offset if isinstance(offset, int) and not isinstance(offset, bool) else type(offset).__name__
            raise InvalidArgument(f"offset must be an integer from 0 to {LIST_MAX_OFFSET}, got {got}",
                                  hint="pass next_offset from the previous page")
        limit = limit_arg("limit", limit, 1, LIST_MAX)
        win = bytime.window_arg(since, until, tz)
        self.index.refresh()
        timeline = self.index.view.timeline
        where, params = "", []
        if win is not None:  # recordings whose anchored span meets the window
            where, params = "WHERE recording IN (SELECT unnest(?::VARCHAR[]))", [bytime.listed_ids(timeline, win)]
        total = self.index.query(f"SELECT count(*) AS n FROM m_recordings {where}", params, refresh=False)[0]["n"]
        rows = self.index.query(
            f"SELECT * FROM m_recordings {where} ORDER BY recorded_at NULLS LAST, filename, recording LIMIT ? OFFSET ?",
            params + [limit, offset], refresh=False)
        items = []
        used = 200
        for r in rows:
            wc = {"start_utc": r["recorded_at"], "tz_offset_min": r["tz_offset_min"]} if r["recorded_at"] else None
            item = {
                "id": r["recording"], "filename": r["filename"], "kind": r["kind"], "duration_ms": r["duration_ms"],
                "recorded_at": t_wall(wc, 0) if wc else None,
                # the same four fields as every other tool's wall_clock
                "wall_clock": ({**wc, "source": r["wall_clock_source"], "confidence": r["wall_clock_confidence"]}
                               if wc else None),
                "language": r["language"],
                "counts": {"segments": r["segment_count"], "frames": r["frame_count"],
                           "unique_frames": r["unique_frame_count"], "speakers": r["speaker_count"]},
                "diarized": bool(r["diarized"]), "has_audio": bool(r["has_audio"]), "has_video": bool(r["has_video"]),
                "transcript_available": bool(r["transcript_available"]), "generation": r["generation"],
            }
            if r["partial_to_ms"] is not None:  # a run in progress published the transcript so far
                item.update(snapshot.marking(r["partial_to_ms"], r["partial_next_ms"]))
                item.pop("partial_note")
            size = len(dumps(item)) + 1
            if items and used + size > LIST_MAX_CHARS:
                break
            items.append(item)
            used += size
        nxt = offset + len(items)
        out = {"total": total, "offset": offset, "limit": limit, "returned": len(items), "recordings": items,
               "next_offset": nxt if nxt < total else None}
        if any(i.get("partial") for i in items):
            out["partial_note"] = ("recordings marked partial are still being processed: their transcript so far "
                                   "covers covered_ms and goes on at next_start_ms; list again later")
        warming = self.index.warming()
        if warming:  # the server's first index build is still running: a partial listing, said so
            out["index"] = warming
        return bytime.mark_listing(out, win, timeline) if win is not None else out

    # ---------------------------------------------------------------- get_transcript

    def get_transcript(self, recording_id, start_ms=None, end_ms=None, speaker: str | None = None,
                       format: str = "json", max_chars: int = TRANSCRIPT_MAX_CHARS, with_t_wall: bool = False) -> dict:
        snap = self._snapshot(recording_id)
        return transcript.page(snap, start_ms, end_ms, speaker, format, max_chars, with_t_wall)

    # ---------------------------------------------------------------- frames

    def get_frames(self, recording_id, start_ms=None, end_ms=None, include_duplicates: bool = False,
                   limit: int | None = None, at_ms=None) -> images.ImageResult:
        snap = self._snapshot(recording_id)
        rec, rid = snap.rec, snap.rid
        images.require_video(snap)
        if not isinstance(include_duplicates, bool):
            raise InvalidArgument(f"include_duplicates must be true or false, got {type(include_duplicates).__name__}",
                                  hint="pass a JSON boolean, or omit it")
        wc = snap.wall_clock
        duration = int(rec["duration_ms"] or 0)
        spans = images.screen_spans(snap.frames, duration)
        pool = [f for f in snap.frames if include_duplicates or f["duplicate_of"] is None]
        if at_ms is not None:
            if start_ms is not None or end_ms is not None:
                raise InvalidArgument("pass either at_ms or start_ms/end_ms, not both",
                                      hint="at_ms picks the frame on screen at one instant; start_ms/end_ms a span")
            at = ms_arg("at_ms", at_ms)
            if duration and at > duration:
                raise InvalidArgument(f"at_ms {at} is past the end of the recording (duration {duration} ms)",
                                      hint=f"use 0 <= at_ms <= {duration}")
            limit = limit_arg("limit", 1 if limit is None else limit, 1, FRAMES_MAX)
            if include_duplicates:
                on = next((f["ms"] for f in reversed(snap.frames) if f["ms"] <= at), None)
            else:
                on = images.on_screen(snap.frames, at)
            ranked = sorted(pool, key=lambda f: (f["ms"] != on, abs(f["ms"] - at), f["ms"]))
            page = sorted(ranked[:limit], key=lambda f: f["ms"])
            meta = {"recording": rid, "filename": rec["filename"], "generation": snap.generation, "at_ms": at, "t_wall": t_wall(wc, at),
                    "on_screen_frame_ms": on, "include_duplicates": include_duplicates, "wall_clock": wc,
                    "frames": [images.frame_meta(f, wc, spans) for f in page], "returned": len(page),
                    "matching": len(pool), "truncated": False, "next_start_ms": None}
            if not pool:
                meta["note"] = "this recording has no stored keyframes"
            meta.update({k: v for k, v in snapshot.partial_fields(snap).items() if k != "next_start_ms"})
            return images.image_result(rid, page, wc, meta)
        start, end = range_arg(rec, start_ms, end_ms)
        limit = limit_arg("limit", FRAMES_MAX if limit is None else limit, 1, FRAMES_MAX)
        frames = [f for f in pool if start <= f["ms"] <= end]
        page, rest = frames[:limit], frames[limit:]
        meta = {"recording": rid, "filename": rec["filename"], "generation": snap.generation, "start_ms": start,
                "end_ms": end, "include_duplicates": include_duplicates, "wall_clock": wc,
                "frames": [images.frame_meta(f, wc, spans) for f in page], "returned": len(page),
                "matching": len(frames), "truncated": bool(rest), "next_start_ms": rest[0]["ms"] if rest else None}
        if not frames:
            on = images.on_screen(snap.frames, start)
            meta["note"] = "no stored keyframes start in this range" + (
                f"; the frame on screen at start_ms is {on} ms (get_frames with at_ms={start})" if on is not None
                else "" if include_duplicates else " (try include_duplicates=true)")
        # a run in progress: frames come with the finished generation (next_start_ms stays the frames' paging)
        meta.update({k: v for k, v in snapshot.partial_fields(snap).items() if k != "next_start_ms"})
        return images.image_result(rid, page, wc, meta)

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

    def get_moment(self, recording_id, t_ms, window_ms: int = MOMENT_WINDOW_MS, max_frames: int = MOMENT_FRAMES,
                   transcript_chars: int = MOMENT_TRANSCRIPT_CHARS) -> images.ImageResult:
        snap = self._snapshot(recording_id)
        rec, rid = snap.rec, snap.rid
        t = ms_arg("t_ms", t_ms, required=True)
        duration = int(rec["duration_ms"] or 0)
        if duration and t > duration:
            raise InvalidArgument(f"t_ms {t} is past the end of the recording (duration {duration} ms)",
                                  hint=f"use 0 <= t_ms <= {duration}")
        window_ms = limit_arg("window_ms", window_ms, 0, MOMENT_MAX_WINDOW_MS)
        wc = snap.wall_clock
        frames: list[dict] = []
        meta: dict = {"recording": rid, "filename": rec["filename"], "generation": snap.generation, "t_ms": t,
                      "t_wall": t_wall(wc, t), "wall_clock": wc}
        if rec["has_video"]:
            spans = images.screen_spans(snap.frames, duration)
            unique = [f for f in snap.frames if f["duplicate_of"] is None]
            on_screen = images.on_screen(snap.frames, t)
            ranked = sorted(unique, key=lambda f: (f["ms"] != on_screen, abs(f["ms"] - t), f["ms"]))
            frames = sorted(ranked[:max_frames], key=lambda f: f["ms"])
            meta["on_screen_frame_ms"] = on_screen
            meta["frames"] = [images.frame_meta(f, wc, spans) for f in frames]
        else:
            meta["frames"] = []
            meta["note"] = "audio-only recording: no frames; transcript only"
        lo, hi = max(0, t - window_ms), t + window_ms
        if duration:
            hi = min(hi, duration)
        hi = max(lo, hi)
        tr = transcript.page(snap, start_ms=lo, end_ms=hi, max_chars=transcript_chars)
        meta["transcript"] = {"start_ms": lo, "end_ms": hi, "segments": tr["segments"],
                              "truncated": tr["truncated"], "next_start_ms": tr["next_start_ms"]}
        at = [s["seq"] for s in tr["segments"] if s["t_ms"] <= t < s["t1_ms"]]
        meta["transcript"]["segment_at_t"] = at[0] if at else None
        if tr.get("reason"):
            meta["transcript"]["reason"] = tr["reason"]
        if snap.partial:  # a run in progress: the window's transcript may not be covered yet
            mark = snapshot.partial_fields(snap)
            meta.update({k: v for k, v in mark.items() if k != "next_start_ms"})
            if not tr["truncated"] and mark["next_start_ms"] is not None and hi > mark["covered_ms"][1]:
                meta["transcript"]["next_start_ms"] = max(lo, mark["next_start_ms"])
        if snap.diarized:
            speakers, speaker_at = self._speakers_in_range(snap, lo, hi, t)
            meta["speakers_in_range"] = speakers
            meta["speaker_at_t"] = speaker_at
            if speaker_at in snap.names:  # label and name, as on segments
                meta["speaker_name_at_t"] = snap.names[speaker_at]
        else:
            meta["speakers_in_range"] = None
            meta["speaker_at_t"] = None
        return images.image_result(rid, frames, wc, meta)

    # ---------------------------------------------------------------- search

    def get_moment_at(self, at, tz: str | None = None, window_ms: int = MOMENT_WINDOW_MS) -> images.ImageResult:
        """The moment at a wall-clock instant in every recording covering it."""
        window_ms = limit_arg("window_ms", window_ms, 0, MOMENT_MAX_WINDOW_MS)
        self.index.refresh()
        return bytime.moment_at(self.index.view.timeline, self.get_moment, at, tz, window_ms)

    def search(self, query: str, recording_id: str | None = None, limit: int = 10, speaker: str | None = None,
               since: str | None = None, until: str | None = None, tz: str | None = None) -> dict:
        win = bytime.window_arg(since, until, tz)
        if win is None:
            return search.search(lambda: self.index, self._snapshot, query, recording_id, limit, speaker)
        out = search.search(lambda: self.index, self._snapshot, query, recording_id, limit, speaker,
                            window=lambda: self.index.view.timeline.offset_window(*win.ms()))
        return bytime.mark_search(out, win, self.index.view.timeline)

    # ---------------------------------------------------------------- extract_frame

    def _open_source(self, snap: snapshot.Snapshot):
        """(open file, path) of the recording's source, verified by hashing that open descriptor."""
        rid = snap.rid
        rows = sorted(store.read_rows("sources", rid), key=lambda r: r["seen_at"] or "", reverse=True)
        candidates = list(dict.fromkeys([r["path"] for r in rows] + ([snap.source_path] if snap.source_path else [])))
        if not candidates:
            raise SourceUnavailable(f"recording {rid} has no known source path",
                                    hint="process the file again with `talkthrough process <file>`")
        f, changed = media.open_verified(candidates, rid)
        if f is not None:
            return f
        if changed:
            raise SourceUnavailable(f"the source file {changed[0]!r} no longer has the bytes of recording {rid} "
                                    "(sha256 changed since processing)",
                                    hint="use get_frames/get_moment (stored keyframes) instead")
        raise SourceUnavailable(f"the source file {Path(candidates[0]).name!r} of recording {rid} is gone "
                                "(moved or deleted)",
                                hint="use get_frames/get_moment (stored keyframes), or reprocess the file at its "
                                     "new path with `talkthrough process`")

    def extract_frame(self, recording_id, t_ms, crop=None, full_resolution: bool = False) -> images.ImageResult:
        snap = self._snapshot(recording_id)
        rec, rid = snap.rec, snap.rid
        images.require_video(snap)
        t = ms_arg("t_ms", t_ms, required=True)
        duration = int(rec["duration_ms"] or 0)
        if duration and t > duration:
            raise InvalidArgument(f"t_ms {t} is past the end of the recording (duration {duration} ms)",
                                  hint=f"use 0 <= t_ms <= {duration}")
        box = crop_arg(crop)
        if not isinstance(full_resolution, bool):
            raise InvalidArgument(f"full_resolution must be true or false, got {type(full_resolution).__name__}",
                                  hint="pass a JSON boolean, or omit it")
        f = self._open_source(snap)
        name = Path(f.name).name
        try:
            try:
                res = media.decode_frame(f, t, crop=box,
                                         max_side=media.FULL_MAX_SIDE if full_resolution else media.MAX_SIDE)
            except media.CropOutside as e:
                raise InvalidArgument(str(e), hint="keep x+width <= source width and y+height <= source height") \
                    from None
            except Exception as e:  # av errors, damaged file
                raise SourceUnavailable(f"could not decode {name} at {t} ms: {type(e).__name__}") from None
            if not media.still_recording(f, f.name, rid):
                raise SourceUnavailable(f"the source file {name!r} was written to while its frame was decoded",
                                        hint="retry; use get_frames/get_moment (stored keyframes) if it keeps changing")
        finally:
            f.close()
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
        return images.ImageResult(meta, [images.Image(cap, res["jpeg"])])


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


__all__ = ["Reader", "ReadError", "Image", "ImageResult", "default_reader", "dumps", "snippet", "screen_spans",
           # the limits the tools advertise, from the modules that enforce them
           "TRANSCRIPT_MAX_CHARS", "TRANSCRIPT_MIN_CHARS", "OCR_MAX_CHARS", "SEARCH_MAX_HITS", "SEARCH_MAX_CHARS",
           "SEARCH_MAX_QUERY_CHARS", "LIST_MAX", "LIST_MAX_CHARS", "FRAMES_MAX", "MOMENT_FRAMES", "MOMENT_WINDOW_MS",
           "MOMENT_MAX_WINDOW_MS"]

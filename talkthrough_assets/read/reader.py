"""What the MCP tools answer, as plain functions over the store (no MCP types in here).

Every response is small by construction (see the token-budget rules in the design notes):
transcripts are capped at ~30k characters with ``truncated`` + ``next_start_ms`` for the next
page, frame calls return at most 6 images, a moment at most 3 frames, search at most 50
pointers (recording, source, t_ms, t_wall, on-screen frame, ≤160-char snippet), never payloads;
listings and search hits are also trimmed to a character budget, OCR text per frame is capped,
and every free-text argument has a length limit.

Each answer is a typed record (:mod:`.answers`) declared beside the function that builds it, one module a
tool: :mod:`.listing`, :mod:`.transcript` (pages, SRT), :mod:`.frames`, :mod:`.moment`, :mod:`.extract`,
:mod:`.search` (over :mod:`.index`; typed by :mod:`.search_answer`) and :mod:`.bytime` (questions in wall
time); :mod:`.args` checks arguments. :class:`Reader` ties them to one data root.

One generation per recording: every per-recording read comes from that recording's published
manifest (:mod:`.snapshot`), and the cross-recording reads (listing, ranked search) from
:class:`LibraryIndex`, which indexes the same manifests. A re-run rewriting the tables is
invisible until its manifest is published, and then visible to every tool at once. Nothing
here writes anything.
"""

from __future__ import annotations

import threading

from talkthrough_assets import store

from talkthrough_assets.read import bytime
from talkthrough_assets.read import extract
from talkthrough_assets.read import frames
from talkthrough_assets.read import listing
from talkthrough_assets.read import moment
from talkthrough_assets.read import people
from talkthrough_assets.read import search
from talkthrough_assets.read import search_answer
from talkthrough_assets.read import snapshot
from talkthrough_assets.read import transcript
from talkthrough_assets.read.args import check_id, limit_arg
from talkthrough_assets.read.bytime import MomentsAt
from talkthrough_assets.read.errors import NotProcessed, UnknownRecording
from talkthrough_assets.read.extract import ExtractedFrame
from talkthrough_assets.read.frames import Frames
from talkthrough_assets.read.images import ImageResult
from talkthrough_assets.read.index import LibraryIndex
from talkthrough_assets.read.listing import RecordingList
from talkthrough_assets.read.moment import (MOMENT_FRAMES, MOMENT_MAX_WINDOW_MS, MOMENT_TRANSCRIPT_CHARS,
                                            MOMENT_WINDOW_MS, Moment)
from talkthrough_assets.read.search_answer import SearchAnswer
from talkthrough_assets.read.transcript import TRANSCRIPT_MAX_CHARS, TranscriptPage


# --------------------------------------------------------------------------- reader

class Reader:
    """All read tools over the data root current at construction (``$TALKTHROUGH_HOME``)."""

    def __init__(self, refresh_interval: float | None = None):
        self.home = store.data_location()  # the data root this reader serves (a folder or s3:// URL)
        self._refresh_interval = refresh_interval
        self._index: LibraryIndex | None = None
        self._index_lock = threading.Lock()
        self._snaps = snapshot.SnapshotCache()

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

    def snapshot(self, recording_id) -> snapshot.Snapshot:
        """The published generation of a recording (what every per-recording answer is built from)."""
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

    def list_recordings(self, offset: int = 0, limit: int = 20, since: str | None = None, until: str | None = None,
                        tz: str | None = None, person: str | None = None) -> RecordingList:
        if person is not None:
            return people.list_by_person(self, person, offset, limit, since=since, until=until, tz=tz)
        return listing.list_recordings(self.index, offset, limit, since, until, tz)

    def get_transcript(self, recording_id, start_ms=None, end_ms=None, speaker: str | None = None,
                       format: str = "json", max_chars: int = TRANSCRIPT_MAX_CHARS,
                       with_t_wall: bool = False) -> TranscriptPage:
        return transcript.page(self.snapshot(recording_id), start_ms, end_ms, speaker, format, max_chars, with_t_wall)

    def get_frames(self, recording_id, start_ms=None, end_ms=None, include_duplicates: bool = False,
                   limit: int | None = None, at_ms=None) -> ImageResult[Frames]:
        return frames.frames(self.snapshot(recording_id), start_ms, end_ms, include_duplicates, limit, at_ms)

    def get_moment(self, recording_id, t_ms, window_ms: int = MOMENT_WINDOW_MS, max_frames: int = MOMENT_FRAMES,
                   transcript_chars: int = MOMENT_TRANSCRIPT_CHARS) -> ImageResult[Moment]:
        return moment.moment(self.snapshot(recording_id), t_ms, window_ms, max_frames, transcript_chars)

    def get_moment_at(self, at, tz: str | None = None, window_ms: int = MOMENT_WINDOW_MS) -> ImageResult[MomentsAt]:
        """The moment at a wall-clock instant in every recording covering it."""
        window_ms = limit_arg("window_ms", window_ms, 0, MOMENT_MAX_WINDOW_MS)
        self.index.refresh()
        return bytime.moment_at(self.index.view.timeline, self.get_moment, at, tz, window_ms)

    def search(self, query: str, recording_id: str | None = None, limit: int = 10, speaker: str | None = None,
               since: str | None = None, until: str | None = None, tz: str | None = None) -> SearchAnswer:
        win = bytime.window_arg(since, until, tz)
        if win is None:
            return search_answer.of(search.search(lambda: self.index, self.snapshot, query, recording_id, limit,
                                                  speaker))
        out = search.search(lambda: self.index, self.snapshot, query, recording_id, limit, speaker,
                            window=lambda: self.index.view.timeline.offset_window(*win.ms()))
        return search_answer.in_time(search_answer.of(out), win, self.index.view.timeline)

    def extract_frame(self, recording_id, t_ms, crop=None, full_resolution: bool = False
                      ) -> ImageResult[ExtractedFrame]:
        return extract.extract_frame(self.snapshot(recording_id), t_ms, crop, full_resolution)


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


__all__ = ["Reader", "default_reader"]

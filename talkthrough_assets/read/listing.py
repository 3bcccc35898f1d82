"""list_recordings' answer: the library's recordings from the library index, oldest first, a page at a time
within a character budget; narrowed to a wall-clock window when ``since``/``until`` are given."""

from __future__ import annotations

from pydantic import Field

from talkthrough_assets.model.wallclock import t_wall

from talkthrough_assets.read import bytime
from talkthrough_assets.read import snapshot
from talkthrough_assets.read.answers import GENERATION, Answer, Partial, WallClock
from talkthrough_assets.read.args import limit_arg
from talkthrough_assets.read.errors import InvalidArgument
from talkthrough_assets.read.index import LibraryIndex
from talkthrough_assets.read.timeline import LOW, Timeline

LIST_MAX = 100
LIST_MAX_OFFSET = 1_000_000_000  # DuckDB's OFFSET is a BIGINT: 2**63 is a bad argument, not an internal error
LIST_MAX_CHARS = 30_000        # the whole listing response
INDEX_WARMING = ("present while the server's first index build runs: 'warming (n of N recordings indexed)'; "
                 "the answer is from those only")


class Counts(Answer):
    segments: int
    frames: int
    unique_frames: int
    speakers: int


class PersonLabel(Answer):
    """A label that is the person asked for, and how that is known (confirmed, voice, or a voice match)."""

    speaker: str
    by: str


class RecordingItem(Partial):
    """One recording of the listing (``next_start_ms``, with partial: where its transcript goes on)."""

    id: str
    filename: str
    kind: str | None = None
    duration_ms: int
    recorded_at: str | None
    wall_clock: WallClock | None = None
    language: str | None = None
    counts: Counts
    diarized: bool
    has_audio: bool
    has_video: bool
    transcript_available: bool
    generation: str = Field(description=GENERATION)
    next_start_ms: int | None = None
    person: list[PersonLabel] | None = Field(None, description="with person=: the labels that are that person, "
                                                               "and how it is known")
    low_confidence: bool | None = None


class RecordingList(Answer):
    """list_recordings' answer (``time`` and the low-confidence and unanchored notes when asked in wall time)."""

    total: int
    offset: int
    limit: int
    returned: int
    recordings: list[RecordingItem]
    next_offset: int | None
    partial_note: str | None = None
    index: str | None = Field(None, description=INDEX_WARMING)
    time: bytime.TimeWindow | None = None
    low_confidence_note: str | None = None
    unanchored: int | None = None
    unanchored_note: str | None = None


def item(r: dict) -> RecordingItem:
    """A listing row of the index as the listing shows it."""
    wc = {"start_utc": r["recorded_at"], "tz_offset_min": r["tz_offset_min"]} if r["recorded_at"] else None
    out = RecordingItem(
        id=r["recording"], filename=r["filename"], kind=r["kind"], duration_ms=r["duration_ms"],
        recorded_at=t_wall(wc, 0) if wc else None,
        # the same four fields as every other tool's wall_clock
        wall_clock=WallClock(**wc, source=r["wall_clock_source"], confidence=r["wall_clock_confidence"])
        if wc else None,
        language=r["language"],
        counts=Counts(segments=r["segment_count"], frames=r["frame_count"], unique_frames=r["unique_frame_count"],
                      speakers=r["speaker_count"]),
        diarized=bool(r["diarized"]), has_audio=bool(r["has_audio"]), has_video=bool(r["has_video"]),
        transcript_available=bool(r["transcript_available"]), generation=r["generation"])
    if r["partial_to_ms"] is not None:  # a run in progress published the transcript so far
        out.mark(snapshot.marking(r["partial_to_ms"], r["partial_next_ms"]), note=False, goes_on=True)
    return out


def offset_arg(offset) -> int:
    if isinstance(offset, bool) or not isinstance(offset, int) or not 0 <= offset <= LIST_MAX_OFFSET:
        got = offset if isinstance(offset, int) and not isinstance(offset, bool) else type(offset).__name__
        raise InvalidArgument(f"offset must be an integer from 0 to {LIST_MAX_OFFSET}, got {got}",
                              hint="pass next_offset from the previous page")
    return offset


def list_recordings(index: LibraryIndex, offset: int = 0, limit: int = 20, since: str | None = None,
                    until: str | None = None, tz: str | None = None) -> RecordingList:
    offset = offset_arg(offset)
    limit = limit_arg("limit", limit, 1, LIST_MAX)
    win = bytime.window_arg(since, until, tz)
    index.refresh()
    timeline = index.view.timeline
    where, params = "", []
    if win is not None:  # recordings whose anchored span meets the window
        where, params = "WHERE recording IN (SELECT unnest(?::VARCHAR[]))", [bytime.listed_ids(timeline, win)]
    total = index.query(f"SELECT count(*) AS n FROM m_recordings {where}", params, refresh=False)[0]["n"]
    rows = index.query(
        f"SELECT * FROM m_recordings {where} ORDER BY recorded_at NULLS LAST, filename, recording LIMIT ? OFFSET ?",
        params + [limit, offset], refresh=False)
    items: list[RecordingItem] = []
    used = 200
    for r in rows:
        it = item(r)
        size = it.size() + 1
        if items and used + size > LIST_MAX_CHARS:
            break
        items.append(it)
        used += size
    nxt = offset + len(items)
    out = RecordingList(total=total, offset=offset, limit=limit, returned=len(items), recordings=items,
                        next_offset=nxt if nxt < total else None)
    if any(i.partial for i in items):
        out.partial_note = ("recordings marked partial are still being processed: their transcript so far "
                            "covers covered_ms and goes on at next_start_ms; list again later")
    warming = index.warming()
    if warming:  # the server's first index build is still running: a partial listing, said so
        out.index = warming
    return in_time(out, win, timeline) if win is not None else out


def in_time(out: RecordingList, win: bytime.Window, timeline: Timeline) -> RecordingList:
    """A time-filtered listing's answer: the window stated, low-confidence anchors marked, the unplaced counted."""
    out.time = win.stated()
    for it in out.recordings:
        if it.wall_clock is not None and it.wall_clock.confidence == LOW:
            it.low_confidence = True
    if any(i.low_confidence for i in out.recordings):
        out.low_confidence_note = bytime.LOW_NOTE
    if timeline.unanchored:
        out.unanchored = timeline.unanchored
        out.unanchored_note = (f"{timeline.unanchored} recording(s) have no wall clock and cannot be placed in "
                               "time: list_recordings without since/until shows them")
    return out

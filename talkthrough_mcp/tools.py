"""The MCP tools, one decorated function each, and the server that serves them (:func:`build_server`).

A tool is ``@tool def name(reader, arguments...) -> Answer``: one call into
:class:`talkthrough_assets.read.reader.Reader` (or a module of ``talkthrough_assets.read`` given
``reader.snapshot(id)``), its docstring the description an agent reads (a summary, then 10-15 one-line
examples), its annotated parameters the ``inputSchema``, and its return annotation, the typed answer, the
``outputSchema`` (:mod:`talkthrough_mcp.protocol` registers it). What every tool shares (times, paging, errors)
is said once in the server instructions (:mod:`talkthrough_mcp.guidance`). Serving (stdio, HTTP) is
:mod:`talkthrough_mcp.server`.
"""

from __future__ import annotations

from typing import Annotated, Callable

from pydantic import Field, StrictBool, StrictInt, StrictStr

import talkthrough_assets
from talkthrough_assets.read.bytime import MomentsAt
from talkthrough_assets.read.extract import ExtractedFrame
from talkthrough_assets.read.frames import Frames
from talkthrough_assets.read.images import ImageResult
from talkthrough_assets.read.listing import RecordingList
from talkthrough_assets.read.moment import Moment
from talkthrough_assets.read.reader import Reader, default_reader
from talkthrough_assets.read.search_answer import SearchAnswer
from talkthrough_assets.read.transcript import TranscriptPage

from talkthrough_mcp import guidance
from talkthrough_mcp.protocol import TalkthroughMCP

TOOLS: list[Callable] = []


def tool(fn: Callable) -> Callable:
    """Serve ``fn`` as a tool (in the order declared)."""
    TOOLS.append(fn)
    return fn


def bounds(lo: int, hi: int | None = None) -> dict:
    """An integer argument's range, advertised in its inputSchema (the reader checks it, with a hint)."""
    return {"json_schema_extra": {"minimum": lo, **({"maximum": hi} if hi is not None else {})}}


# Strict types: JSON true is not the integer 1, "5" is not 5.
# (what an id and a *_ms field are is said once, in the server instructions)
RecordingId = Annotated[StrictStr, Field(max_length=64)]
StartMs = Annotated[StrictInt | None, Field(description="from; omitted: 0", **bounds(0))]
EndMs = Annotated[StrictInt | None, Field(description="to (>= start_ms); omitted: the end", **bounds(0))]
InstantMs = Annotated[StrictInt, Field(description="the instant, ms", **bounds(0))]
WindowMs = Annotated[StrictInt, Field(description="transcript +- ms around the instant", **bounds(0, 60000))]
Speaker = Annotated[StrictStr | None, Field(description="speaker label (S1) or name", max_length=200)]
# wall-clock questions: read by talkthrough_assets.read.timeq
# (their grammar is said once, in the server instructions)
Since = Annotated[StrictStr | None, Field(max_length=80)]
Until = Annotated[StrictStr | None, Field(max_length=80)]
Tz = Annotated[StrictStr | None, Field(max_length=64)]


@tool
def list_recordings(
    reader: Reader,
    offset: Annotated[StrictInt, Field(description="recordings to skip", **bounds(0))] = 0,
    limit: Annotated[StrictInt, Field(description="page size", **bounds(1, 100))] = 20,
    since: Since = None, until: Until = None, tz: Tz = None,
    person: Annotated[StrictStr | None, Field(description="a person", max_length=200)] = None,
) -> RecordingList:
    """Processed recordings (id, filename, duration, recorded_at, counts), oldest first, paged.
    Examples:
    - list_recordings() -> first 20
    - offset=next_offset -> next page
    - person="Alice Chen" -> where she speaks
    - recorded_at null -> wall clock unknown: t_wall null
    - has_video=false -> audio-only: no get_frames
    - diarized=true -> speaker= filters work
    - transcript_available=false -> nothing said
    - counts.unique_frames -> distinct screens
    - wall_clock.source -> recorded_at's origin
    - since="yesterday", until="12:00" -> by wall time
    """
    return reader.list_recordings(offset=offset, limit=limit, since=since, until=until, tz=tz, person=person)


@tool
def get_transcript(
    reader: Reader,
    id: RecordingId,
    start_ms: StartMs = None,
    end_ms: EndMs = None,
    speaker: Speaker = None,
    format: Annotated[StrictStr, Field(description="json or srt", json_schema_extra={"enum": ["json", "srt"]})] = "json",
    max_chars: Annotated[StrictInt, Field(description="size cap, chars", **bounds(1000, 30000))] = 30000,
    with_t_wall: Annotated[StrictBool, Field(description="t_wall on each segment")] = False,
) -> TranscriptPage:
    """Transcript segments (t_ms, t1_ms, speaker) of one recording, <= 30k chars a call.
    Examples:
    - get_transcript(id="75f6552f8117ddf5") -> the start
    - start_ms=60000, end_ms=120000 -> minute 1-2
    - truncated -> again, start_ms=next_start_ms
    - speaker="S1" or "Alice" -> one speaker (diarized)
    - format="srt" -> SubRip text in "srt"
    - with_t_wall=true -> t_wall on each segment
    - wall_clock null -> use t_ms
    - name_sources -> confirmed, or voice match
    - One phrase? -> search(query, id)
    - The screen then? -> get_moment
    """
    return reader.get_transcript(recording_id=id, start_ms=start_ms, end_ms=end_ms, speaker=speaker, format=format,
                                 max_chars=max_chars, with_t_wall=with_t_wall)


@tool
def get_frames(
    reader: Reader,
    id: RecordingId,
    start_ms: StartMs = None,
    end_ms: EndMs = None,
    at_ms: Annotated[StrictInt | None, Field(description="the frame on screen at this ms (not with start_ms/end_ms)",
                                             **bounds(0))] = None,
    include_duplicates: Annotated[StrictBool, Field(description="also repeated frames")] = False,
    limit: Annotated[StrictInt | None, Field(description="images; omitted: 6 (1 with at_ms)", **bounds(1, 6))] = None,
) -> ImageResult[Frames]:
    """Keyframes of one recording as JPEGs (text legible, <= 1024 px) with time and OCR text; <= 6 a call.
    Examples:
    - get_frames(id="75f6552f8117ddf5") -> first 6 frames
    - start_ms=60000, end_ms=90000 -> that span
    - at_ms=95000 -> the screen at 95 s
    - at_ms=95000, limit=3 -> also the nearest ones
    - truncated -> again, start_ms=next_start_ms
    - include_duplicates=true -> repeats too
    - valid_from_ms/valid_to_ms -> span on screen
    - Audio-only -> error audio_only
    - Exact instant, small text? -> extract_frame
    - A word on screen? -> search
    """
    return reader.get_frames(recording_id=id, start_ms=start_ms, end_ms=end_ms, at_ms=at_ms,
                             include_duplicates=include_duplicates, limit=limit)


@tool
def get_moment(reader: Reader, id: RecordingId, t_ms: InstantMs, window_ms: WindowMs = 10000) -> ImageResult[Moment]:
    """One moment: <= 3 nearest frames (on screen first) and the transcript +-window_ms around t_ms.
    Examples:
    - get_moment(id="75f6552f8117ddf5", t_ms=13000) -> screen + speech
    - t_ms=hit.t_ms -> open a search hit
    - window_ms=30000 -> wider transcript (max 60000)
    - window_ms=0 -> frame + segment at t_ms
    - Audio-only -> frames=[], transcript still comes
    - segment_at_t -> seq at t_ms
    - speakers_in_range -> who talked (talk_ms)
    - transcript.truncated -> get_transcript
    - More than 3 frames? -> get_frames
    - Don't know when? -> search first
    """
    return reader.get_moment(recording_id=id, t_ms=t_ms, window_ms=window_ms)


@tool
def get_moment_at(
    reader: Reader,
    at: Annotated[StrictStr, Field(description="wall time", max_length=80)],
    tz: Tz = None,
    window_ms: WindowMs = 10000,
) -> ImageResult[MomentsAt]:
    """Moment at a wall-clock instant in every recording covering it: frame, transcript, speaker, anchor.
    Examples:
    - at="yesterday 14:30" -> shown and said then
    - at="2026-03-14 14:32" -> that minute, in tz
    - tz="Europe/Paris" -> read at in that zone
    - at="2h ago" / "9:05" / "monday 16:00"
    - covering=0 -> see nearest.before/after
    - two moments -> e.g. screen + call audio
    - low_confidence=true -> anchor is file mtime
    - at="yesterday" -> error: use since/until
    - wall_clock null -> never placed in time
    - Then get_transcript(id, start_ms=t_ms)
    """
    return reader.get_moment_at(at=at, tz=tz, window_ms=window_ms)


@tool
def search(
    reader: Reader,
    query: Annotated[StrictStr, Field(description="words to find", max_length=500)],
    id: Annotated[StrictStr | None, Field(description="only this recording id", max_length=64)] = None,
    speaker: Annotated[StrictStr | None, Field(description="only this speaker (S1 or name)", max_length=200)] = None,
    limit: Annotated[StrictInt, Field(description="hits to return", **bounds(1, 50))] = 10,
    since: Since = None, until: Until = None, tz: Tz = None,
) -> SearchAnswer:
    """Ranked search of transcripts AND on-screen OCR text of all recordings; hits are pointers (recording, source,
    t_ms, snippet).
    Examples:
    - search(query="rollback") -> across all recordings
    - search(query="gateway timeout") -> both words first
    - id="6c2c7b8c166f29ce" -> one recording
    - speaker="S2" -> what S2 said
    - Case, accents, plurals are folded
    - '"roll back"' -> adjacent words in order
    - since="14:00", until="15:00" -> in that wall time
    - No hits -> see did_you_mean
    - source=ocr -> get_frames(at_ms=t_ms)
    - Open a hit -> get_moment at hit.t_ms
    """
    return reader.search(query=query, recording_id=id, speaker=speaker, limit=limit, since=since, until=until, tz=tz)


@tool
def extract_frame(
    reader: Reader,
    id: RecordingId,
    t_ms: InstantMs,
    crop: Annotated[dict[str, StrictInt] | None, Field(
        description="region in source pixels",
        json_schema_extra={"properties": {k: {"type": "integer", "minimum": 0} for k in ("x", "y", "width", "height")},
                           "required": ["x", "y", "width", "height"]})] = None,
    full_resolution: Annotated[StrictBool, Field(description="native size, <= 4096 px")] = False,
) -> ImageResult[ExtractedFrame]:
    """Decode the SOURCE video at one instant (<= 1568 px), while the file is unchanged at its path.
    Examples:
    - extract_frame(id="75f6552f8117ddf5", t_ms=12345)
    - crop={x:0, y:0, width:800, height:400} -> a region
    - full_resolution=true -> native size (<= 4096 px)
    - Small text? -> crop at full_resolution=true
    - source_size -> the bounds for crop
    - exact=false -> past the last frame: last one
    - error source_unavailable -> use get_frames
    - Audio-only -> error audio_only
    - Prefer stored get_frames/get_moment
    - Many instants? -> get_frames is cheaper
    """
    return reader.extract_frame(recording_id=id, t_ms=t_ms, crop=crop, full_resolution=full_resolution)


def build_server(reader: Reader | None = None) -> TalkthroughMCP:
    """The server: every tool above, the workflow prompts, the instructions; ``reader``: the one to serve
    (default: the process-wide reader of the current data root)."""
    mcp = TalkthroughMCP((lambda: reader) if reader is not None else default_reader, name="talkthrough",
                         title="Talkthrough recordings (read-only)", instructions=guidance.INSTRUCTIONS,
                         version=talkthrough_assets.__version__, log_level="WARNING")
    for fn in TOOLS:
        mcp.add_read_tool(fn)
    mcp.add_prompts()
    return mcp

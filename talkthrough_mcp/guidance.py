"""Usage guidance shipped on the wire: server instructions, tool descriptions, workflow prompts.

Descriptions are budgeted: a short summary, then one-line examples (each <= 120 characters)
covering canonical calls, edge cases (audio-only, wall_clock=null, continuation after
truncation) and anti-examples that point at the better tool. ``tests/test_mcp.py`` gates this.
"""

from __future__ import annotations

EXAMPLE_MAX_CHARS = 120

INSTRUCTIONS = """\
Talkthrough serves processed screen and meeting recordings (transcript, speakers, keyframes, OCR,
wall clock) read-only. Ids are 16 hex chars. Times: every *_ms field (t_ms, t1_ms, a frame's ms,
frame_ms, start_ms, at_ms) = ms from the recording start; t_wall = the same instant as a real timestamp
(wall_clock.start_utc + t_ms; null when the recording's wall clock is unknown; in UTC when its
tz_offset_min is null). Speakers: a label (S1) plus speaker_name when one was confirmed.
Start with list_recordings or search; then zoom in with get_transcript / get_moment / get_frames.
Responses are capped: follow next_start_ms / next_offset to continue instead of asking for more."""

_TOOLS: dict[str, tuple[str, list[str]]] = {
    "list_recordings": (
        "List processed recordings (id, filename, kind, duration, recorded_at, counts, diarized), "
        "oldest first, paginated.",
        [
            "list_recordings() -> first 20 recordings; total + next_offset tell you if there are more",
            "list_recordings(offset=20, limit=20) -> next page (stop when next_offset is null)",
            "recorded_at null -> wall clock unknown for that file; t_wall will be null in every tool",
            "has_video=false -> audio-only: use get_transcript/search, not get_frames",
            "Looking for a topic across files? -> search(query=...) instead of paging through everything",
            "list_recordings(limit=100) -> the largest page; next_offset is null on the last page",
            "counts.unique_frames -> how many distinct screens get_frames can show",
            "diarized=true -> get_transcript(speaker=...) and search(speaker=...) work for it",
            'list_recordings(person="Alice Chen") -> where that person speaks (by name or voice match)',
            "transcript_available=false -> nothing was said (e.g. silent video): use get_frames",
            "wall_clock.source/confidence -> where recorded_at came from (container tag, file mtime)",
            "index present -> the server is still building its index at startup: the listing is partial",
            "error invalid_argument for offset -> pass next_offset from the previous page (0..1e9)",
        ],
    ),
    "get_transcript": (
        "Transcript segments of one recording with t_ms/t1_ms (speaker labels/names when diarized); a segment's "
        "wall time is wall_clock.start_utc + t_ms (with_t_wall=true: t_wall on each). "
        "Hard cap ~30k chars per response; truncated=true comes with next_start_ms to continue.",
        [
            'get_transcript(id="75f6552f8117ddf5") -> whole transcript (first ~30k chars)',
            'get_transcript(id=..., start_ms=60000, end_ms=120000) -> only minute 1-2',
            "truncated=true -> call again with start_ms=next_start_ms (same end_ms) for the next page",
            'get_transcript(id=..., speaker="S1") or speaker="Alice" -> one speaker (diarized recordings only)',
            'get_transcript(id=..., format="srt") -> SubRip text in the "srt" field',
            "wall_clock null -> t_wall is null; use t_ms (ms from the start) for positions",
            "get_transcript(id=..., with_t_wall=true) -> t_wall on every segment (for log correlation)",
            "transcript_available=false (e.g. silent video) -> reason says why; use get_frames instead",
            "max_chars=5000 -> smaller pages (1000..30000); a single segment is never split",
            "Need the words on screen at a remark? -> get_moment(id, t_ms) instead",
            "Looking for one phrase? -> search(query=..., id=...) instead of reading the whole transcript",
            "speaker_names -> label -> name (name_sources: confirmed, or voice); name_hints/voice_hints: unconfirmed",
            "error unknown_recording -> the id is not in the library: list_recordings for valid ids",
            "error not_processed -> the file is registered but its outputs are not ready yet; retry later",
        ],
    ),
    "get_frames": (
        "Stored keyframes of one recording as image blocks (JPEG, <=1568 px), each with its time and OCR text. "
        "Unique frames only unless include_duplicates=true; at most 6 per call.",
        [
            'get_frames(id="75f6552f8117ddf5") -> first 6 unique frames with OCR text',
            "get_frames(id=..., start_ms=60000, end_ms=90000) -> frames shown in that span",
            "truncated=true -> call again with start_ms=next_start_ms",
            "get_frames(id=..., include_duplicates=true, limit=3) -> every stored keyframe, 3 at a time",
            "Audio-only recording -> error audio_only; use get_transcript or search instead",
            "Need one exact instant between keyframes? -> extract_frame(id, t_ms)",
            "Need the screen plus what was said? -> get_moment(id, t_ms)",
            "get_frames(id=..., at_ms=95000) -> the frame on screen at 95 s (limit=3: also the nearest ones)",
            "valid_from_ms/valid_to_ms -> the span each frame stays on screen (until the screen changes)",
            "ocr_text -> the words read on that frame (capped; ocr_truncated=true when cut)",
            "Looking for a word that was on screen? -> search(query=...) (source=ocr hits) first",
            "duplicate_of -> with include_duplicates=true, the ms of the identical earlier frame",
            "error unknown_recording -> wrong id: list_recordings or search give valid ids",
        ],
    ),
    "get_moment": (
        "One moment: up to 3 nearest unique frames (the one on screen first) plus the transcript within "
        "+-window_ms (default 10 s) around t_ms.",
        [
            'get_moment(id="75f6552f8117ddf5", t_ms=13000) -> frame on screen at 13 s + what was said around it',
            "get_moment(id=..., t_ms=hit.t_ms) -> open a search hit",
            "get_moment(id=..., t_ms=..., window_ms=30000) -> wider transcript slice (max 60000)",
            "Audio-only recording -> frames=[] with a note; the transcript slice still comes back",
            "segment_at_t -> seq of the segment spoken at t_ms (null during silence)",
            "speakers_in_range -> who talked in the window (talk_ms); speaker_at_t; null when not diarized",
            "get_moment(id=..., t_ms=..., window_ms=0) -> only the frame on screen and the segment at t_ms",
            "transcript.truncated=true -> get_transcript(id, start_ms=transcript.next_start_ms) for more",
            "wall_clock null -> t_wall null; t_ms still places the moment in the recording",
            "Need more than 3 frames? -> get_frames(id, start_ms, end_ms)",
            "Need finer detail than a keyframe? -> extract_frame(id, t_ms, crop=...)",
            "error invalid_argument (t_ms past the end) -> duration_ms from list_recordings bounds t_ms",
            "Don't know when? -> search(query=...) first, then get_moment at a hit's t_ms",
        ],
    ),
    "search": (
        "Ranked BM25 search over transcripts AND on-screen OCR text of every recording. Returns pointers "
        "(recording, source, t_ms, t_wall, frame_ms, <=160-char snippet), not payloads; max 50 hits; "
        "filename and generation once per recording in `recordings`.",
        [
            'search(query="rollback") -> best segments/frames mentioning it, across all recordings',
            'search(query="gateway timeout") -> both words in one segment/frame (AND) ranked first',
            "mode=or + note -> no document has all words; note lists which words matched where",
            'search(query="budget", id="6c2c7b8c166f29ce") -> one recording only',
            'search(query="Café") == search(query="cafe") -> case and accents are folded',
            "source=ocr -> the word was on screen: get_frames(id, start_ms=t_ms, limit=1) shows it",
            "Open a hit -> get_moment(id=hit.recording, t_ms=hit.t_ms)",
            "t_wall null -> that recording's wall clock is unknown; correlate by t_ms only",
            "hit.t_ms -> the first matched word (not the start of its segment)",
            'search(query="budget", speaker="S2") or speaker="Alice" -> only what that speaker said',
            '"dashboards" finds "dashboard"; no hits -> did_you_mean lists close spellings',
            "Glued screen text (ERROR503GATEWAYTIMEOUT) matches gateway / timeout: ocr_substring_matches",
            "found_elsewhere -> the word exists in the library, just not for this speaker/recording",
            "index present -> the server is still indexing at startup: hits come from the part indexed so far",
            'search(query=\'"roll back"\') -> words adjacent, in order; "rollback" also finds a spoken "roll back"',
        ],
    ),
    "extract_frame": (
        "Re-decode the SOURCE video at one exact instant (frame at/after t_ms), scaled <=1568 px. Only when the "
        "original file is still at its recorded path with the same bytes; slower than stored keyframes.",
        [
            'extract_frame(id="75f6552f8117ddf5", t_ms=12345) -> the exact frame at 12.345 s',
            "Prefer get_frames/get_moment: they serve stored keyframes without touching the source",
            "error source_unavailable -> file moved/changed; use get_frames/get_moment instead",
            "Audio-only recording -> error audio_only",
            "extract_frame(id=..., t_ms=..., crop={x:0, y:0, width:800, height:400}) -> a region, source pixels",
            "extract_frame(id=..., t_ms=..., full_resolution=true) -> native size (up to 4096 px)",
            "exact=false -> t_ms was after the last decodable frame; the last frame came back",
            "source_size -> [width, height] of the source: the bounds for crop",
            "Small text unreadable in a keyframe? -> crop the region at full_resolution=true",
            "error invalid_argument (crop) -> keep x+width <= source width, y+height <= source height",
            "Many instants to look at? -> get_frames (stored keyframes) is cheaper than repeated extract_frame",
        ],
    ),
}

_RID = "recording id: 16 lowercase hex characters (from list_recordings or a search hit)"

PROMPTS: dict[str, dict] = {
    "triage_recording": {
        "description": "Triage one recording: what happened, when, what went wrong, what was on screen.",
        "arguments": {"recording_id": _RID},
        "template": """\
Triage recording {recording_id} with the Talkthrough tools.
1. list_recordings: find it; note kind, duration, recorded_at (null = unknown wall clock), has_video.
2. get_transcript(id="{recording_id}"): read it; if truncated, continue with start_ms=next_start_ms.
3. search(query="error failed exception timeout", id="{recording_id}") for trouble spots.
4. For each key moment: get_moment(id="{recording_id}", t_ms=...) (skip frames if audio-only).
Report: a 3-line summary, a timeline (t_ms and t_wall when known), errors with evidence
(quote the snippet or OCR text), and open questions. Cite every claim with t_ms.""",
    },
    "meeting_actions": {
        "description": "Extract decisions and action items (owner, due date, evidence) from a meeting.",
        "arguments": {"recording_id": _RID},
        "template": """\
Extract the decisions and action items of meeting recording {recording_id}.
1. get_transcript(id="{recording_id}") (continue with next_start_ms while truncated=true).
   When diarized, use speaker_name if present, else the S1/S2 labels; never guess real names
   (name_hints are unconfirmed on-screen names: write "S2 (possibly Bob Stone)" at most).
2. search(query="send review deadline by friday", id="{recording_id}") to find commitments you missed.
Output a table: action | owner | due | t_ms | quote (<= 20 words). Then decisions, then open questions.
Mark anything uncertain (e.g. unclear owner) instead of inventing it.""",
    },
    "correlate_with_logs": {
        "description": "Line up a recording with log lines by wall-clock time (t_wall).",
        "arguments": {"recording_id": _RID,
                      "log_excerpt": "log lines with timestamps (at most 20000 characters)"},
        "template": """\
Correlate recording {recording_id} with these log lines:
{log_excerpt}
1. list_recordings: get recorded_at and wall_clock confidence. If recorded_at is null, say so: only
   relative times (t_ms) are known, so ask for one anchor (e.g. "the error appeared at 10:31:07").
2. For each log timestamp T: t_ms = T - recorded_at (mind the offset); get_moment(id="{recording_id}", t_ms=...).
3. search(query=<distinctive words from the logs>, id="{recording_id}") to find on-screen (OCR) matches.
Report each log line next to what was said/shown at that instant, with t_ms and t_wall, and flag gaps
larger than the wall clock's confidence allows (low = file mtime, medium = container tag).""",
    },
    "find_discussion": {
        "description": "Find when a topic was discussed or shown, across every recording.",
        "arguments": {"topic": "the topic in a few words, e.g. 'database migration' (at most 500 characters)"},
        "template": """\
Find when this was discussed or shown: {topic}
1. search(query="<the topic's 1-3 most distinctive words>"): hits are pointers (recording, t_ms, snippet).
   mode=or means no single segment has every word: try fewer or other words (synonyms, the product name).
2. Open the best 2-3 hits with get_moment(id=hit.recording, t_ms=hit.t_ms) to read the context.
3. Narrow a noisy result with id=<recording> or speaker=<label or name>.
Answer with recording filename, t_ms and t_wall (when known) and a short quote for each place.""",
    },
    "screen_at_remark": {
        "description": "Show what was on screen when something was said in one recording.",
        "arguments": {"recording_id": _RID,
                      "remark": "words from the remark, e.g. 'the checkout page is broken' (at most 500 characters)"},
        "template": """\
Show what was on screen in recording {recording_id} when this was said: {remark}
1. search(query="<2-3 distinctive words of the remark>", id="{recording_id}") -> hit.t_ms.
2. get_moment(id="{recording_id}", t_ms=hit.t_ms): the frame on screen then (on_screen_frame_ms first),
   its OCR text and the transcript around it. Audio-only recordings have no frames: say so.
3. Small text unreadable? extract_frame(id="{recording_id}", t_ms=..., crop={{x, y, width, height}}).
Describe the screen (quote the OCR text) and cite t_ms / t_wall.""",
    },
    "speaker_summary": {
        "description": "Summarize what one speaker said in a diarized recording.",
        "arguments": {"recording_id": _RID,
                      "speaker": "a speaker label (S1) or name (at most 200 characters)"},
        "template": """\
Summarize what speaker {speaker} said in recording {recording_id}.
1. get_transcript(id="{recording_id}", speaker="{speaker}") (continue with next_start_ms while truncated).
   An error that the recording is not diarized: say so, and summarize the whole transcript instead.
2. Use speaker_name when present; name_hints are unconfirmed: never present them as fact.
Output: their main points, questions they asked, commitments they made (t_ms + a short quote each).""",
    },
}

PROMPT_ARG_MAX_CHARS = {"recording_id": 64, "log_excerpt": 20_000, "topic": 500, "remark": 500, "speaker": 200}


def description(tool: str) -> str:
    summary, examples = _TOOLS[tool]
    return summary + "\nExamples:\n" + "\n".join(f"- {e}" for e in examples)


def examples(tool: str) -> list[str]:
    return list(_TOOLS[tool][1])


TOOL_NAMES = tuple(_TOOLS)


def render(prompt: str, **arguments: str) -> str:
    spec = PROMPTS[prompt]
    missing = [a for a in spec["arguments"] if not str(arguments.get(a) or "").strip()]
    if missing:
        raise ValueError(f"prompt {prompt!r} needs: {', '.join(missing)}")
    return spec["template"].format(**{a: str(arguments[a]).strip() for a in spec["arguments"]})

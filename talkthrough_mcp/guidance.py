"""Usage guidance shipped on the wire: server instructions, tool descriptions, workflow prompts.

Descriptions are budgeted: a short summary, then one-line examples (each <= 120 characters)
covering canonical calls, edge cases (audio-only, wall_clock=null, continuation after
truncation) and anti-examples that point at the better tool. ``tests/test_mcp.py`` gates this.
"""

from __future__ import annotations

EXAMPLE_MAX_CHARS = 120

INSTRUCTIONS = """\
Talkthrough serves processed screen and meeting recordings (transcript, speakers, keyframes, OCR,
wall clock) read-only. Ids are 16 hex chars. Times: t_ms = ms from the recording start; t_wall =
the same instant as a real timestamp (null when the recording's wall clock is unknown).
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
        ],
    ),
    "get_transcript": (
        "Transcript segments of one recording with t_ms and t_wall (speaker labels/names when diarized). "
        "Hard cap ~30k chars per response; truncated=true comes with next_start_ms to continue.",
        [
            'get_transcript(id="75f6552f8117ddf5") -> whole transcript (first ~30k chars)',
            'get_transcript(id=..., start_ms=60000, end_ms=120000) -> only minute 1-2',
            "truncated=true -> call again with start_ms=next_start_ms (same end_ms) for the next page",
            'get_transcript(id=..., speaker="S1") or speaker="Alice" -> one speaker (diarized recordings only)',
            'get_transcript(id=..., format="srt") -> SubRip text in the "srt" field',
            "wall_clock null -> t_wall is null; use t_ms (ms from the start) for positions",
            "transcript_available=false (e.g. silent video) -> reason says why; use get_frames instead",
            "max_chars=5000 -> smaller pages (1000..30000); a single segment is never split",
            "Need the words on screen at a remark? -> get_moment(id, t_ms) instead",
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
        ],
    ),
    "search": (
        "Ranked BM25 search over transcripts AND on-screen OCR text of every recording. Returns pointers "
        "(recording, source, t_ms, t_wall, frame_ms, <=160-char snippet), not payloads; max 50 hits.",
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
        ],
    ),
}

PROMPTS: dict[str, dict] = {
    "triage_recording": {
        "description": "Triage one recording: what happened, when, what went wrong, what was on screen.",
        "arguments": ["recording_id"],
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
        "arguments": ["recording_id"],
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
        "arguments": ["recording_id", "log_excerpt"],
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
}


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

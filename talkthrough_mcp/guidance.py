"""Usage guidance shipped on the wire: server instructions, tool descriptions, workflow prompts.

Descriptions are budgeted: a short summary, then one-line examples (each <= 120 characters)
covering canonical calls, edge cases (audio-only, wall_clock=null, continuation after
truncation) and anti-examples that point at the better tool. ``tests/unit/test_guidance.py`` gates this.
"""

from __future__ import annotations

EXAMPLE_MAX_CHARS = 120

INSTRUCTIONS = """\
Talkthrough serves processed screen and meeting recordings (transcript, speakers, keyframes, OCR,
wall clock) read-only. Ids are 16 hex chars (from list_recordings or a search hit). Times: every *_ms
field (t_ms, t1_ms, a frame's ms, frame_ms, start_ms, at_ms) = ms from the recording start; t_wall = the
same instant as a real timestamp (wall_clock.start_utc + t_ms; null when the wall clock is unknown; in
UTC when tz_offset_min is null). Speakers: a label (S1) plus speaker_name when one was confirmed;
name_hints are unconfirmed on-screen names only.
Start with list_recordings or search; then zoom in with get_transcript / get_moment / get_frames.
Responses are capped: follow next_start_ms / next_offset to continue instead of asking for more.
generation changes when a recording is reprocessed: restart paging then. partial=true: a run is still
in progress; covered_ms is what its transcript covers so far. An `index` field: the server is still
indexing at startup, so listings/hits are partial. Errors are JSON {error, message, hint}:
unknown_recording (wrong id: list_recordings), not_processed (retry later), audio_only (no frames:
use get_transcript/search), invalid_argument (the hint names the accepted range).
Wall time (since, until, at): ISO 8601, today, yesterday, monday, last week, 14:30, 14:30-15:00, 2h ago;
read in tz (IANA zone, default the server's; every answer states it). until=a day keeps the whole day."""

_TOOLS: dict[str, tuple[str, list[str]]] = {
    "list_recordings": (
        "Processed recordings (id, filename, duration, recorded_at, counts), oldest first, paged.",
        [
            "list_recordings() -> first 20",
            "offset=next_offset -> next page",
            'person="Alice Chen" -> where she speaks',
            "recorded_at null -> wall clock unknown: t_wall null",
            "has_video=false -> audio-only: no get_frames",
            "diarized=true -> speaker= filters work",
            "transcript_available=false -> nothing said",
            "counts.unique_frames -> distinct screens",
            "wall_clock.source -> recorded_at's origin",
            'since="yesterday", until="12:00" -> by wall time',
        ],
    ),
    "get_transcript": (
        "Transcript segments (t_ms, t1_ms, speaker) of one recording, <= 30k chars a call.",
        [
            'get_transcript(id="75f6552f8117ddf5") -> the start',
            "start_ms=60000, end_ms=120000 -> minute 1-2",
            "truncated -> again, start_ms=next_start_ms",
            'speaker="S1" or "Alice" -> one speaker (diarized)',
            'format="srt" -> SubRip text in "srt"',
            "with_t_wall=true -> t_wall on each segment",
            "wall_clock null -> use t_ms",
            "name_sources -> confirmed, or voice match",
            "One phrase? -> search(query, id)",
            "The screen then? -> get_moment",
        ],
    ),
    "get_frames": (
        "Keyframes of one recording as JPEGs (text legible, <= 1024 px) with time and OCR text; "
        "<= 6 a call.",
        [
            'get_frames(id="75f6552f8117ddf5") -> first 6 frames',
            "start_ms=60000, end_ms=90000 -> that span",
            "at_ms=95000 -> the screen at 95 s",
            "at_ms=95000, limit=3 -> also the nearest ones",
            "truncated -> again, start_ms=next_start_ms",
            "include_duplicates=true -> repeats too",
            "valid_from_ms/valid_to_ms -> span on screen",
            "Audio-only -> error audio_only",
            "Exact instant, small text? -> extract_frame",
            "A word on screen? -> search",
        ],
    ),
    "get_moment": (
        "One moment: <= 3 nearest frames (on screen first) and the transcript +-window_ms around t_ms.",
        [
            'get_moment(id="75f6552f8117ddf5", t_ms=13000) -> screen + speech',
            "t_ms=hit.t_ms -> open a search hit",
            "window_ms=30000 -> wider transcript (max 60000)",
            "window_ms=0 -> frame + segment at t_ms",
            "Audio-only -> frames=[], transcript still comes",
            "segment_at_t -> seq at t_ms",
            "speakers_in_range -> who talked (talk_ms)",
            "transcript.truncated -> get_transcript",
            "More than 3 frames? -> get_frames",
            "Don't know when? -> search first",
        ],
    ),
    "search": (
        "Ranked search of transcripts AND on-screen OCR text of all recordings; hits are pointers "
        "(recording, source, t_ms, snippet).",
        [
            'search(query="rollback") -> across all recordings',
            'search(query="gateway timeout") -> both words first',
            'id="6c2c7b8c166f29ce" -> one recording',
            'speaker="S2" -> what S2 said',
            "Case, accents, plurals are folded",
            '\'"roll back"\' -> adjacent words in order',
            'since="14:00", until="15:00" -> in that wall time',
            "No hits -> see did_you_mean",
            "source=ocr -> get_frames(at_ms=t_ms)",
            "Open a hit -> get_moment at hit.t_ms",
        ],
    ),
    "get_moment_at": (
        "Moment at a wall-clock instant in every recording covering it: frame, transcript, speaker, anchor.",
        [
            'at="yesterday 14:30" -> shown and said then',
            'at="2026-03-14 14:32" -> that minute, in tz',
            'tz="Europe/Paris" -> read at in that zone',
            'at="2h ago" / "9:05" / "monday 16:00"',
            "covering=0 -> see nearest.before/after",
            "two moments -> e.g. screen + call audio",
            "low_confidence=true -> anchor is file mtime",
            'at="yesterday" -> error: use since/until',
            "wall_clock null -> never placed in time",
            "Then get_transcript(id, start_ms=t_ms)",
        ],
    ),
    "extract_frame": (
        "Decode the SOURCE video at one instant (<= 1568 px), while the file is unchanged at its path.",
        [
            'extract_frame(id="75f6552f8117ddf5", t_ms=12345)',
            "crop={x:0, y:0, width:800, height:400} -> a region",
            "full_resolution=true -> native size (<= 4096 px)",
            "Small text? -> crop at full_resolution=true",
            "source_size -> the bounds for crop",
            "exact=false -> past the last frame: last one",
            "error source_unavailable -> use get_frames",
            "Audio-only -> error audio_only",
            "Prefer stored get_frames/get_moment",
            "Many instants? -> get_frames is cheaper",
        ],
    ),
}

_RID = "recording id: 16 lowercase hex characters (from list_recordings or a search hit)"

PROMPTS: dict[str, dict] = {
    "triage_recording": {
        "description": "Triage one recording: what happened, when, what went wrong, what was on screen.",
        "arguments": {"id": _RID},
        "template": """\
Triage recording {id} with the Talkthrough tools.
1. list_recordings: find it; note kind, duration, recorded_at (null = unknown wall clock), has_video.
2. get_transcript(id="{id}"): read it; if truncated, continue with start_ms=next_start_ms.
3. search(query="error failed exception timeout", id="{id}") for trouble spots.
4. For each key moment: get_moment(id="{id}", t_ms=...) (skip frames if audio-only).
Report: a 3-line summary, a timeline (t_ms and t_wall when known), errors with evidence
(quote the snippet or OCR text), and open questions. Cite every claim with t_ms.""",
    },
    "meeting_actions": {
        "description": "Extract decisions and action items (owner, due date, evidence) from a meeting.",
        "arguments": {"id": _RID},
        "template": """\
Extract the decisions and action items of meeting recording {id}.
1. get_transcript(id="{id}") (continue with next_start_ms while truncated=true).
   When diarized, use speaker_name if present, else the S1/S2 labels; never guess real names
   (name_hints are unconfirmed on-screen names: write "S2 (possibly Bob Stone)" at most).
2. search(query="send review deadline by friday", id="{id}") to find commitments you missed.
Output a table: action | owner | due | t_ms | quote (<= 20 words). Then decisions, then open questions.
Mark anything uncertain (e.g. unclear owner) instead of inventing it.""",
    },
    "correlate_with_logs": {
        "description": "Line up a recording with log lines by wall-clock time (t_wall).",
        "arguments": {"id": _RID,
                      "log_excerpt": "log lines with timestamps (at most 20000 characters)"},
        "template": """\
Correlate recording {id} with these log lines:
{log_excerpt}
1. list_recordings: get recorded_at and wall_clock confidence. If recorded_at is null, say so: only
   relative times (t_ms) are known, so ask for one anchor (e.g. "the error appeared at 10:31:07").
2. For each log timestamp T: t_ms = T - recorded_at (mind the offset); get_moment(id="{id}", t_ms=...).
3. search(query=<distinctive words from the logs>, id="{id}") to find on-screen (OCR) matches.
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
        "arguments": {"id": _RID,
                      "remark": "words from the remark, e.g. 'the checkout page is broken' (at most 500 characters)"},
        "template": """\
Show what was on screen in recording {id} when this was said: {remark}
1. search(query="<2-3 distinctive words of the remark>", id="{id}") -> hit.t_ms.
2. get_moment(id="{id}", t_ms=hit.t_ms): the frame on screen then (on_screen_frame_ms first),
   its OCR text and the transcript around it. Audio-only recordings have no frames: say so.
3. Small text unreadable? extract_frame(id="{id}", t_ms=..., crop={{x, y, width, height}}).
Describe the screen (quote the OCR text) and cite t_ms / t_wall.""",
    },
    "speaker_summary": {
        "description": "Summarize what one speaker said in a diarized recording.",
        "arguments": {"id": _RID,
                      "speaker": "a speaker label (S1) or name (at most 200 characters)"},
        "template": """\
Summarize what speaker {speaker} said in recording {id}.
1. get_transcript(id="{id}", speaker="{speaker}") (continue with next_start_ms while truncated).
   An error that the recording is not diarized: say so, and summarize the whole transcript instead.
2. Use speaker_name when present; name_hints are unconfirmed: never present them as fact.
Output: their main points, questions they asked, commitments they made (t_ms + a short quote each).""",
    },
}

PROMPTS["what_happened_at"] = {
    "description": "What was on screen and said at a wall-clock time, across every recording.",
    "arguments": {"when": "a time, e.g. 'yesterday 14:30', '2026-03-14 14:32', '2h ago' (at most 80 characters)"},
    "template": """\
Find what happened at {when}, across every recording.
1. get_moment_at(at="{when}") (a span such as 'yesterday' or '14:00-15:00': list_recordings(since=..., until=...)
   first). Times without an offset are read in the answer's tz; pass tz="Europe/Paris" if the user means another.
2. Each moment is one recording covering that instant, at its own t_ms: quote the on-screen OCR text and what was
   said around it (speaker when diarized). low_confidence: say its times may be off by minutes.
3. covering=0: say so and name nearest.before / nearest.after; search(query=..., since=..., until=...) finds topics
   in a span.
Answer with t_wall and filename for each claim.""",
}

PROMPT_ARG_MAX_CHARS = {"id": 64, "log_excerpt": 20_000, "topic": 500, "remark": 500, "speaker": 200,
                        "when": 80}


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

"""Usage guidance shipped on the wire: the server instructions and the workflow prompts.

Each tool's description is its docstring in :mod:`talkthrough_mcp.tools`, budgeted: a short summary, then
one-line examples (each <= :data:`EXAMPLE_MAX_CHARS` characters) covering canonical calls, edge cases
(audio-only, wall_clock=null, continuation after truncation) and anti-examples that point at the better
tool. ``tests/unit/test_guidance.py`` gates both.
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


def render(prompt: str, **arguments: str) -> str:
    spec = PROMPTS[prompt]
    missing = [a for a in spec["arguments"] if not str(arguments.get(a) or "").strip()]
    if missing:
        raise ValueError(f"prompt {prompt!r} needs: {', '.join(missing)}")
    return spec["template"].format(**{a: str(arguments[a]).strip() for a in spec["arguments"]})

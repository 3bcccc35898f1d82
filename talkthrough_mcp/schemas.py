"""JSON Schemas of every tool's ``structuredContent`` (published as the tools' ``outputSchema``).

The structured content of a successful call is exactly the JSON text block's object; image tools
(get_frames, get_moment, extract_frame) put their metadata there and the images in content blocks.
Schemas pin the fields agents rely on and allow additional ones (notes, hints) to appear.
"""

from __future__ import annotations

_INT = {"type": "integer"}
_STR = {"type": "string"}
_BOOL = {"type": "boolean"}
_NINT = {"type": ["integer", "null"]}
_NSTR = {"type": ["string", "null"]}
_GEN = {"type": "string", "description": "label of the recording's published generation; it changes when the "
                                         "recording is reprocessed (restart paging when it does)"}

_PARTIAL = {"type": "boolean", "description": "true: a provisional generation of a run still in progress (the "
                                             "transcript of the chunks finished so far, no frames or speakers yet); "
                                             "absent once the finished generation is published"}
_COVERED = {"type": "array", "items": _INT, "minItems": 2, "maxItems": 2,
            "description": "with partial: the [start, end] ms the transcript so far covers"}
_GOES_ON = {"type": ["integer", "null"], "description": "with partial: where the covered transcript ends and goes on "
                                                        "(null: the whole audio is transcribed, frames/speakers follow)"}
PARTIAL = {"partial": _PARTIAL, "covered_ms": _COVERED, "partial_note": _STR,
           "partial_stopped": {"type": "string", "description": "with partial: the run that published it ended "
                                                                "without its final generation, and why"}}

WALL_CLOCK = {
    "type": ["object", "null"],
    "description": "the recording's wall-clock anchor: t_wall = start_utc + t_ms; null when unknown (every t_wall "
                   "is then null). tz_offset_min null: the recording's zone is unknown and t_wall is rendered "
                   "in UTC (+00:00)",
    "properties": {"start_utc": _STR, "tz_offset_min": _NINT, "source": _NSTR, "confidence": _NSTR},
}


def _obj(props: dict, required: list[str]) -> dict:
    return {"type": "object", "properties": props, "required": required}


SEGMENT = _obj({"seq": _INT, "t_ms": _INT, "t1_ms": _INT, "t_wall": _NSTR, "speaker": _STR,
                "speaker_name": _STR, "overlap": {"type": "array", "items": _STR}, "text": _STR},
               ["seq", "t_ms", "t1_ms", "text"])

FRAME = _obj({"ms": _INT, "t_wall": _NSTR, "valid_from_ms": _INT, "valid_to_ms": _INT, "ocr_text": _NSTR,
              "ocr_truncated": _BOOL, "duplicate_of": _INT},
             ["ms", "t_wall", "valid_from_ms", "valid_to_ms", "ocr_text"])

SPEAKER_IN_RANGE = _obj({"speaker": _STR, "speaker_name": _STR, "talk_ms": _INT, "first_ms": _INT},
                        ["speaker", "talk_ms", "first_ms"])

LIST_RECORDINGS = _obj({
    "total": _INT, "offset": _INT, "limit": _INT, "returned": _INT, "next_offset": _NINT,
    "recordings": {"type": "array", "items": _obj({
        "id": _STR, "filename": _STR, "kind": _NSTR, "duration_ms": _INT, "recorded_at": _NSTR,
        "wall_clock": WALL_CLOCK, "language": _NSTR,
        "counts": _obj({"segments": _INT, "frames": _INT, "unique_frames": _INT, "speakers": _INT},
                       ["segments", "frames", "unique_frames", "speakers"]),
        "diarized": _BOOL, "has_audio": _BOOL, "has_video": _BOOL, "transcript_available": _BOOL, "generation": _GEN,
        "partial": _PARTIAL, "covered_ms": _COVERED, "next_start_ms": _GOES_ON,
        "person": {"type": "array", "items": _obj({"speaker": _STR, "by": _STR}, ["speaker", "by"]),
                   "description": "with person=: the labels that are that person, and how it is known"},
    }, ["id", "generation", "filename", "duration_ms", "recorded_at", "counts", "diarized", "has_audio", "has_video",
        "transcript_available"])},
    "index": {"type": "string", "description": "present while the server's first index build runs: "
                                               "'warming (n of N recordings indexed)'; the listing is partial"},
    "partial_note": _STR,
}, ["total", "offset", "limit", "returned", "recordings", "next_offset"])

GET_TRANSCRIPT = _obj({
    "recording": _STR, "filename": _STR, "generation": _GEN, "format": {"enum": ["json", "srt"]}, "diarized": _BOOL,
    "wall_clock": WALL_CLOCK, "start_ms": _INT, "end_ms": _INT, "segments": {"type": "array", "items": SEGMENT},
    "srt": _STR, "returned": _INT, "truncated": _BOOL, "next_start_ms": _NINT,
    "continue_with": {"type": "object"}, "speaker_names": {"type": "object", "additionalProperties": _STR},
    "name_hints": {"type": "object", "additionalProperties": {"type": "array", "items": _STR}},
    "name_hints_note": _STR,
    "name_sources": {"type": "object", "additionalProperties": {"enum": ["confirmed", "voice"]},
                     "description": "label -> confirmed (by a person) or voice (applied from a voice match)"},
    "voice_hints": {"type": "object", "additionalProperties": _STR,
                    "description": "label -> unconfirmed voice match with an enrolled person"},
    "transcript_available": _BOOL, "reason": _STR, "note": _STR, **PARTIAL,
}, ["recording", "filename", "generation", "format", "diarized", "wall_clock", "start_ms", "end_ms", "returned", "truncated",
    "next_start_ms"])

GET_FRAMES = _obj({
    "recording": _STR, "filename": _STR, "generation": _GEN, "start_ms": _INT, "end_ms": _INT, "at_ms": _INT, "t_wall": _NSTR,
    "on_screen_frame_ms": _NINT, "include_duplicates": _BOOL, "wall_clock": WALL_CLOCK,
    "frames": {"type": "array", "items": FRAME}, "returned": _INT, "matching": _INT, "truncated": _BOOL,
    "next_start_ms": _NINT, "note": _STR, "missing_frame_ms": {"type": "array", "items": _INT}, **PARTIAL,
}, ["recording", "filename", "generation", "include_duplicates", "wall_clock", "frames", "returned", "matching", "truncated",
    "next_start_ms"])

GET_MOMENT = _obj({
    "recording": _STR, "filename": _STR, "generation": _GEN, "t_ms": _INT, "t_wall": _NSTR, "wall_clock": WALL_CLOCK,
    "on_screen_frame_ms": _NINT, "frames": {"type": "array", "items": FRAME},
    "transcript": _obj({"start_ms": _INT, "end_ms": _INT, "segments": {"type": "array", "items": SEGMENT},
                        "truncated": _BOOL, "next_start_ms": _NINT, "segment_at_t": _NINT, "reason": _STR},
                       ["start_ms", "end_ms", "segments", "truncated", "next_start_ms", "segment_at_t"]),
    "speakers_in_range": {"type": ["array", "null"], "items": SPEAKER_IN_RANGE,
                          "description": "who spoke within the transcript window (null: not diarized)"},
    "speaker_at_t": _NSTR, "speaker_name_at_t": _STR, "note": _STR, **PARTIAL,
}, ["recording", "filename", "generation", "t_ms", "t_wall", "wall_clock", "frames", "transcript", "speakers_in_range",
    "speaker_at_t"])

SEARCH = _obj({
    "query": _STR, "terms": {"type": "array", "items": _STR}, "mode": {"enum": ["and", "or"]}, "scope": _STR,
    "speaker": _STR, "total_matches": _INT, "returned": _INT,
    "hits": {"type": "array", "items": _obj({
        "recording": _STR, "source": {"enum": ["transcript", "ocr"]}, "t_ms": _INT,
        "t_wall": _NSTR, "frame_ms": _NINT, "score": {"type": "number"}, "snippet": _STR, "speaker": _STR,
        "speaker_name": _STR, "speaker_name_by": {"enum": ["confirmed", "voice"]}, "matched": {"type": "array", "items": _STR},
    }, ["recording", "source", "t_ms", "t_wall", "frame_ms", "score", "snippet"])},
    "recordings": {"type": "object", "description": "recording id -> {filename, generation} of every hit's recording",
                   "additionalProperties": _obj({"filename": _STR, "generation": _GEN, "partial": _PARTIAL,
                                                 "covered_ms": _COVERED, "next_start_ms": _GOES_ON},
                                                ["filename", "generation"])},
    "partial_note": _STR,
    "note": _STR, "more": _STR, "matched_terms": {"type": "array", "items": _STR},
    "unmatched_terms": {"type": "array", "items": _STR},
    "did_you_mean": {"type": "object", "additionalProperties": {"type": "array", "items": _STR}},
    "ocr_substring_matches": {"type": "object", "additionalProperties": {"type": "array", "items": _STR}},
    "found_elsewhere": {"type": "array", "items": _STR},
    "phrases": {"type": "array", "items": _STR}, "note_phrases": _STR,
    "split_words": {"type": "object", "additionalProperties": _STR},
    "index": {"type": "string", "description": "present while the server's first index build runs: "
                                               "'warming (n of N recordings indexed)'; hits are from those only"},
}, ["query", "terms", "mode", "scope", "total_matches", "returned", "hits", "recordings"])

EXTRACT_FRAME = _obj({
    "recording": _STR, "filename": _STR, "requested_ms": _INT, "frame_ms": _INT, "t_wall": _NSTR,
    "width": _INT, "height": _INT, "source_size": {"type": "array", "items": _INT, "minItems": 2, "maxItems": 2},
    "exact": _BOOL, "crop": {"type": ["object", "null"]}, "scaled": _BOOL, "full_resolution": _BOOL, "note": _STR,
}, ["recording", "filename", "requested_ms", "frame_ms", "t_wall", "width", "height", "source_size", "exact",
    "crop", "scaled", "full_resolution"])

GET_MOMENT_AT = _obj({"at": _STR, "tz": _STR, "covering": _INT,
                      "moments": {"type": "array", "items": {"type": "object"},
                                  "description": "get_moment's answer per covering recording"}},
                     ["at", "tz", "covering", "moments"])

OUTPUT_SCHEMAS: dict[str, dict] = {
    "list_recordings": LIST_RECORDINGS, "get_transcript": GET_TRANSCRIPT, "get_frames": GET_FRAMES,
    "get_moment": GET_MOMENT, "search": SEARCH, "extract_frame": EXTRACT_FRAME, "get_moment_at": GET_MOMENT_AT,
}

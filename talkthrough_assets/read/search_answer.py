"""search's answer as a typed record: :func:`.search.search` builds it as JSON-ready data, :func:`of` reads that
into :class:`SearchAnswer` (a key the search adds that is not declared here still travels), and :func:`in_time`
marks an answer asked in wall time."""

from __future__ import annotations

from typing import Literal

from pydantic import ConfigDict, Field

from talkthrough_assets.read import bytime
from talkthrough_assets.read.answers import GENERATION, Answer
from talkthrough_assets.read.listing import INDEX_WARMING
from talkthrough_assets.read.timeline import Timeline


class Found(Answer):
    model_config = ConfigDict(extra="allow")


class Hit(Found):
    """A pointer to where the words are: a transcript segment or an on-screen (OCR) frame."""

    recording: str
    source: Literal["transcript", "ocr"]
    t_ms: int
    t_wall: str | None
    frame_ms: int | None
    score: float
    snippet: str
    speaker: str | None = None
    speaker_name: str | None = None
    speaker_name_by: Literal["confirmed", "voice"] | None = None
    matched: list[str] | None = None


class HitRecording(Found):
    """A hit's recording, named once per answer (``next_start_ms``, with partial: where its transcript goes on)."""

    filename: str
    generation: str = Field(description=GENERATION)
    partial: bool | None = None
    covered_ms: list[int] | None = None
    next_start_ms: int | None = None
    low_confidence: bool | None = None


class SearchAnswer(Found):
    """search's answer."""

    query: str
    query_truncated: bool | None = None
    terms: list[str]
    mode: Literal["and", "or"]
    scope: str
    speaker: str | None = None
    total_matches: int
    returned: int
    hits: list[Hit]
    recordings: dict[str, HitRecording] = Field(description="recording id -> {filename, generation} of every "
                                                            "hit's recording")
    partial_note: str | None = None
    note: str | None = None
    more: str | None = None
    matched_terms: list[str] | None = None
    unmatched_terms: list[str] | None = None
    did_you_mean: dict[str, list[str]] | None = None
    ocr_substring_matches: dict[str, list[str]] | None = None
    found_elsewhere: list[str] | None = None
    phrases: list[str] | None = None
    note_phrases: str | None = None
    split_words: dict[str, str] | None = None
    index: str | None = Field(None, description=INDEX_WARMING)
    time: bytime.TimeWindow | None = None
    low_confidence_note: str | None = None


def of(answer: dict) -> SearchAnswer:
    """The search's answer, typed (the keys it gave, and only those, are set)."""
    return SearchAnswer.model_validate(answer)


def in_time(out: SearchAnswer, win: bytime.Window, timeline: Timeline) -> SearchAnswer:
    """A search asked in wall time: the window stated, the hits' recordings of low-confidence anchors marked."""
    out.time = win.stated()
    for rid, rec in out.recordings.items():
        j = timeline.index.get(rid)
        if j is not None and timeline.recs[j].low:
            rec.low_confidence = True
    if any(r.low_confidence for r in out.recordings.values()):
        out.low_confidence_note = bytime.LOW_NOTE
    return out

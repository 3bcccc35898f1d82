"""What the read tools answer, as typed records: the base every answer is built on and the pieces several
answers share (the wall clock, a transcript segment, the partial marking). Each tool's own answer is declared
beside the function that builds it (:mod:`.listing`, :mod:`.transcript`, :mod:`.frames`, :mod:`.moment`, …).

An answer's JSON (:meth:`Answer.dump`) is its fields that were given: a field left unset is left out (``note``,
``partial`` …), one given as None is sent as null (``next_start_ms``, ``t_wall``). The MCP server publishes each answer's JSON
Schema as the tool's ``outputSchema`` and sends :meth:`Answer.dump` as its ``structuredContent``.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from talkthrough_assets.model import manifest as model
from talkthrough_assets.model.wallclock import t_wall

from talkthrough_assets.read.args import dumps

GENERATION = ("label of the recording's published generation; it changes when the recording is reprocessed "
              "(restart paging when it does)")


class Answer(BaseModel):
    """A typed answer (or part of one) whose JSON leaves out the fields never set."""

    model_config = ConfigDict(extra="forbid")

    def dump(self) -> dict[str, Any]:
        """The answer as JSON-ready data (what a client receives): the fields set, at every level."""
        return self.model_dump(mode="json", exclude_unset=True)

    def size(self) -> int:
        """Characters of its compact JSON, as every response budget is measured."""
        return len(dumps(self.dump()))


class ErrorBody(Answer):
    """A request the reader cannot serve: a stable code, one actionable sentence, a hint."""

    error: str
    message: str
    hint: str | None = None


class WallClock(Answer):
    """The recording's wall-clock anchor: t_wall = start_utc + t_ms. tz_offset_min null: the recording's zone
    is unknown and t_wall is rendered in UTC (+00:00)."""

    start_utc: str
    tz_offset_min: int | None
    source: str | None
    confidence: str | None

    @classmethod
    def of(cls, wc: model.WallClock | None) -> WallClock | None:
        """From the manifest's wall clock (None: no anchor)."""
        return None if wc is None else cls(start_utc=wc.start_utc, tz_offset_min=wc.tz_offset_min, source=wc.source,
                                           confidence=wc.confidence)


class Segment(Answer):
    """A transcript segment as get_transcript, get_moment and `export --format json` give it."""

    seq: int
    t_ms: int
    t1_ms: int
    t_wall: str | None = None
    speaker: str | None = None
    speaker_name: str | None = None
    overlap: list[str] | None = Field(None, description="others talking at the same time")
    text: str

    @classmethod
    def of(cls, seg: model.Segment, names: dict[str, str], wc: model.WallClock | None,
           with_t_wall: bool = True) -> Segment:
        """A stored segment; ``t_wall`` only with ``with_t_wall`` (it is ``wall_clock.start_utc`` + ``t_ms``)."""
        given = {"t_wall": t_wall(wc, seg.t0_ms)} if with_t_wall else {}
        who = seg.speaker
        if who:
            given["speaker"] = who
            if who in names:
                given["speaker_name"] = names[who]
            if seg.overlap:
                given["overlap"] = list(seg.overlap)
        return cls(seq=seg.seq, t_ms=seg.t0_ms, t1_ms=seg.t1_ms, text=seg.text, **given)


class PartialMark(Answer):
    """What marks an answer from a partial generation (a run still in progress)."""

    partial: bool = Field(description="true: a provisional generation of a run still in progress (the transcript "
                                      "of the chunks finished so far, no frames or speakers yet); absent once the "
                                      "finished generation is published")
    covered_ms: list[int] = Field(min_length=2, max_length=2,
                                  description="the [start, end] ms the transcript so far covers")
    next_start_ms: int | None = Field(description="where the covered transcript ends and goes on (null: the whole "
                                                  "audio is transcribed, frames/speakers follow)")
    partial_note: str
    partial_stopped: str | None = Field(None, description="the run that published it ended without its final "
                                                          "generation, and why")


class Partial(Answer):
    """The partial marking's fields on an answer (all absent from a finished generation's answer)."""

    partial: bool | None = None
    covered_ms: list[int] | None = None
    partial_note: str | None = None
    partial_stopped: str | None = None

    def mark(self, mark: PartialMark | None, *, note: bool = True, goes_on: bool = False):
        """``self`` with ``mark``'s fields set (none when None); ``note``: with its ``partial_note``;
        ``goes_on``: also its ``next_start_ms`` (the answer has no paging of its own)."""
        if mark is None:
            return self
        for k in mark.model_fields_set:
            if (k != "partial_note" or note) and (k != "next_start_ms" or goes_on):
                setattr(self, k, getattr(mark, k))
        return self

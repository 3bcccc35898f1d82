"""The turns stage's stored records: the diarization row (what ran, and why not), speaker turns, the roster,
attributed transcript rows and one voiceprint per label."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True, kw_only=True)
class DiarizationRow:
    available: bool
    requested: bool
    reason: str | None
    engine: str | None = None
    engine_version: str | None = None
    segmentation_model: str | None = None
    embedding_model: str | None = None
    requested_num_speakers: int | None = None
    detected_num_speakers: int | None = None
    threshold: float | None = None
    elapsed_s: float | None = None
    speaker_count: str | None = None  # which count was used, and why
    # Whisper words no turn covered: given a speaker by their voice / left without one (under the floor)
    words_by_voice: int | None = None
    words_unassigned: int | None = None


@dataclass(frozen=True, slots=True)
class Turn:
    t0_ms: int
    t1_ms: int
    speaker: str


@dataclass(frozen=True, slots=True)
class SpeakerStats:
    label: str
    talk_time_ms: int
    turn_count: int
    first_ms: int
    last_ms: int


@dataclass(frozen=True, slots=True)
class SpeakerSegment:
    """A transcript segment (or the part of one) attributed to a speaker; Whisper's own rows stay untouched."""

    seq: int
    source_seq: int
    t0_ms: int
    t1_ms: int
    speaker: str | None
    text: str
    overlap: tuple[str, ...] | None  # the other speakers heard at the same time


@dataclass(frozen=True, slots=True)
class Voiceprint:
    label: str
    embedding: tuple[float, ...]  # unit-norm centroid of the label's clean windows
    windows: int
    speech_ms: int
    model: str | None


@dataclass(frozen=True, slots=True, kw_only=True)
class Enrolment:
    """A ``people`` row: a label of this recording a person was named as (`talkthrough name`), when, and a copy of
    its voiceprint then (so a later re-diarization cannot change whose voice it is)."""

    person: str
    label: str
    named_at: str | None
    speech_ms: int | None
    embedding: tuple[float, ...] | None


@dataclass(frozen=True, slots=True, kw_only=True)
class Recognition:
    """A label's voice is ``score`` (cosine) like an enrolled person's, heard in ``recordings`` recordings;
    ``applicable``: like enough to apply as the name when the setting says so."""

    person: str
    score: float
    recordings: int
    applicable: bool


@dataclass(frozen=True, slots=True)
class TurnsOutput:
    """What the turns stage stores: its diarization row and the rows of its four other tables."""

    diarization: DiarizationRow
    turns: tuple[Turn, ...]
    speakers: tuple[SpeakerStats, ...]
    speaker_segments: tuple[SpeakerSegment, ...]
    voiceprints: tuple[Voiceprint, ...]

    @classmethod
    def empty(cls, diarization: DiarizationRow) -> "TurnsOutput":
        """A diarization that found no speaker (or did not run): its row, and no rows in the other tables."""
        return cls(diarization=diarization, turns=(), speakers=(), speaker_segments=(), voiceprints=())

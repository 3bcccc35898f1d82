"""What the segments stage writes and the readers read: a transcript's segments, words, the spans the drop rules
removed, kept in doubt or left without words, and its ``transcripts`` row. Frozen records, stored whole
(``store.to_arrow``: a nested record becomes an Arrow struct, a tuple of records a list of structs).

A ``transcripts`` row written before these columns were structs holds them as JSON strings: :func:`spans` reads
either form."""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass
from typing import Any, Iterable, Mapping


@dataclass(frozen=True, slots=True)
class Segment:
    """One kept Whisper segment (ms from the recording's start; ``seq``: its place in the transcript)."""

    t0_ms: int
    t1_ms: int
    text: str
    avg_logprob: float
    no_speech_prob: float
    seq: int = 0

    def shifted(self, off: int, **kw) -> Segment:
        return dataclasses.replace(self, t0_ms=self.t0_ms + off, t1_ms=self.t1_ms + off, **kw)


@dataclass(frozen=True, slots=True)
class Word:
    """One word of segment ``seq`` (``idx``: its place in the segment; ``prob``: Whisper's probability)."""

    idx: int
    t0_ms: int
    t1_ms: int
    word: str
    prob: float
    seq: int = 0

    def shifted(self, off: int, **kw) -> Word:
        return dataclasses.replace(self, t0_ms=self.t0_ms + off, t1_ms=self.t1_ms + off, **kw)


@dataclass(frozen=True, slots=True)
class Evidence:
    """What a language verdict rested on: a segment's check (``p``, ``p_en``, ``speech_s``, ``word_p``) or the
    whole recording's (``language``, ``p``, ``p_en``, ``how``, ``rejected``)."""

    p: float | None = None
    p_en: float | None = None
    speech_s: float | None = None
    word_p: float | None = None
    language: str | None = None
    how: str | None = None
    rejected: float | None = None


@dataclass(frozen=True, slots=True)
class Span:
    """A stretch of the recording and why: a segment the drop rules removed (``text``, ``lang``: the language it was
    heard as, ``words``: how many), one kept in doubt, or speech left without words (``reason`` only)."""

    t0_ms: int
    t1_ms: int
    reason: str
    text: str | None = None
    lang: str | None = None
    words: int | None = None
    evidence: Evidence | None = None

    def shifted(self, off: int, **kw) -> Span:
        return dataclasses.replace(self, t0_ms=self.t0_ms + off, t1_ms=self.t1_ms + off, **kw)

    @property
    def word_count(self) -> int:
        return self.words if self.words is not None else len((self.text or "").split())

    @classmethod
    def of(cls, d: Mapping[str, Any]) -> Span:
        """A span from its stored or cached form (a mapping; unknown keys ignored)."""
        ev = d.get("evidence")
        if isinstance(ev, Mapping):
            ev = Evidence(**{f.name: ev.get(f.name) for f in dataclasses.fields(Evidence)})
        return cls(t0_ms=int(d["t0_ms"]), t1_ms=int(d["t1_ms"]), reason=d.get("reason") or "", text=d.get("text"),
                   lang=d.get("lang"), words=d.get("words"), evidence=ev)


def spans(value: str | Iterable | None) -> tuple[Span, ...]:
    """A ``transcripts`` row's ``dropped``, ``doubtful`` or ``uncovered``: a list of structs, or the JSON string an
    older row holds."""
    if value is None or value == "":
        return ()
    if isinstance(value, str):
        value = json.loads(value)
    return tuple(v if isinstance(v, Span) else Span.of(v) for v in value)


@dataclass(frozen=True, slots=True)
class TranscriptMeta:
    """A recording's ``transcripts`` row: whether and how it was transcribed, and what the drop rules did."""

    available: bool
    reason: str | None
    language: str | None
    language_probability: float | None
    model: str | None
    segment_count: int = 0
    word_count: int = 0
    audio_ms: int = 0
    elapsed_s: float = 0.0
    dropped_count: int = 0
    dropped: tuple[Span, ...] = ()
    dropped_words: int = 0
    doubtful_count: int = 0
    doubtful: tuple[Span, ...] = ()
    speech_ms: int = 0
    uncovered_ms: int = 0
    uncovered: tuple[Span, ...] = ()


@dataclass(frozen=True, slots=True)
class Transcript:
    """The segments stage's tables for one recording: its ``transcripts`` row, segments and words."""

    meta: TranscriptMeta
    segments: tuple[Segment, ...] = ()
    words: tuple[Word, ...] = ()


@dataclass(frozen=True, slots=True)
class Chunk:
    """One chunk of the segments stage's plan (the ``chunks`` table): its place, its span of the audio and the key
    of its stored Whisper result (content-addressed: what is covered is derived from these keys)."""

    idx: int
    t0_ms: int
    t1_ms: int
    key: str = ""


@dataclass(frozen=True, slots=True)
class Coverage:
    """What of a recording's chunk plan has a stored Whisper result (derived from the ``chunks`` keys): how many
    chunks, how many covered, the spans of those not (``missing_ms``) and it in words (``text``: "41 of 52 chunks,
    0:00-81:00")."""

    chunks: int
    covered: int
    missing_ms: tuple[tuple[int, int], ...]
    text: str


@dataclass(frozen=True, slots=True)
class Decoded:
    """One decode of some audio through the drop rules (times from its first sample), before it is a transcript:
    what was kept, dropped, doubted and left uncovered, the language heard, and the text tokens that are the next
    audio's context (``tokens``: of the kept segments, in order; ``seg_tokens``: per segment; ``tail``: the
    context handed on by a chunk, its prompt and tokens; ``recontext``: decoded again without its prompt)."""

    model: str | None
    audio_ms: int
    reason: str | None = None
    language: str | None = None
    language_probability: float | None = None
    elapsed_s: float = 0.0
    segments: tuple[Segment, ...] = ()
    words: tuple[Word, ...] = ()
    dropped: tuple[Span, ...] = ()
    doubtful: tuple[Span, ...] = ()
    uncovered: tuple[Span, ...] = ()
    english_only: bool = False
    speech_ms: int = 0
    core_ms: tuple[tuple[int, int], ...] = ()
    tokens: tuple[int, ...] = ()
    seg_tokens: tuple[tuple[int, ...], ...] = ()
    tail: tuple[int, ...] = ()
    recontext: bool = False


__all__ = ["Segment", "Word", "Evidence", "Span", "spans", "TranscriptMeta", "Transcript", "Chunk", "Coverage",
           "Decoded"]

"""get_speakers' answer: who speaks in one recording, each speaker's talk time, turns and share of the speech,
most first (from the diarization turns of its published generation)."""

from __future__ import annotations

from pydantic import Field

from talkthrough_assets.read import snapshot
from talkthrough_assets.read.answers import GENERATION, Answer


class SpeakerTime(Answer):
    speaker: str
    speaker_name: str | None = None
    talk_ms: int
    turns: int
    first_ms: int
    share: float = Field(description="of all speech in the recording, 0-1")


class Speakers(Answer):
    """get_speakers' answer."""

    recording: str
    filename: str
    generation: str = Field(description=GENERATION)
    diarized: bool
    duration_ms: int
    speakers: list[SpeakerTime]
    note: str | None = None


def speakers(snap: snapshot.Snapshot) -> Speakers:
    talk: dict[str, int] = {}
    turns: dict[str, int] = {}
    first: dict[str, int] = {}
    for t0, t1, who in snap.turns:
        talk[who] = talk.get(who, 0) + max(0, int(t1) - int(t0))
        turns[who] = turns.get(who, 0) + 1
        first[who] = min(first.get(who, int(t0)), int(t0))
    total = sum(talk.values()) or 1
    out = Speakers(recording=snap.rid, filename=snap.rec["filename"], generation=snap.generation,
                   diarized=snap.diarized, duration_ms=int(snap.rec["duration_ms"] or 0), speakers=[])
    for who in sorted(talk, key=lambda w: (-talk[w], first[w], w)):
        item = SpeakerTime(speaker=who, talk_ms=talk[who], turns=turns[who], first_ms=first[who],
                           share=round(talk[who] / total, 3))
        if who in snap.names:
            item.speaker_name = snap.names[who]
        out.speakers.append(item)
    if not snap.diarized:
        out.note = "not diarized: no speakers; reprocess with `talkthrough process --diarize`"
    return out

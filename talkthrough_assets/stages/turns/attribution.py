"""Attribution of the transcript to speakers, pure: each Whisper word gets the speaker whose turns
overlap it most, and a segment whose words change speaker is split (``speaker_segments`` rows). A row
names the other speakers heard at the same time (``overlap``: their turns cover at least
:data:`OVERLAP_MIN_MS` of its span), so a reader knows two people talked at once there.
Whisper's own segments and words are never modified."""

from __future__ import annotations

import bisect
from typing import Sequence

from talkthrough_assets.model.transcript import Segment, Word
from talkthrough_assets.model.turns import SpeakerSegment, Turn
from talkthrough_assets.stages.turns.labels import label_num, overlap_ms

SMOOTH_MAX_MS = 400          # a lone word this short between two runs of another speaker is that speaker's
# another speaker's turns covering this much of a row: both talk at once there (shorter is a turn's edge
# meeting the next one, which the diarizer's boundaries blur by a few hundred ms)
OVERLAP_MIN_MS = 500


class TurnIndex:
    """Max-overlap speaker lookups over turns (bisect on start times; turns may overlap)."""

    def __init__(self, turns: Sequence[Turn]):
        self.turns = sorted(turns, key=lambda t: (t.t0_ms, t.t1_ms))
        self.starts = [t.t0_ms for t in self.turns]
        self.max_len = max((t.t1_ms - t.t0_ms for t in self.turns), default=0)

    def _candidates(self, t0: int, t1: int) -> list[Turn]:
        lo = bisect.bisect_left(self.starts, t0 - self.max_len)
        hi = bisect.bisect_left(self.starts, t1)
        return self.turns[lo:hi]

    def speaker(self, t0: int, t1: int) -> str | None:
        """Label with the largest total overlap with [t0, t1] (ties: lower label); None if none."""
        per: dict[str, int] = {}
        for t in self._candidates(t0, t1):
            ov = overlap_ms(t0, t1, t.t0_ms, t.t1_ms)
            if ov > 0:
                per[t.speaker] = per.get(t.speaker, 0) + ov
        if not per and t1 <= t0:  # zero-length item: the turn containing the instant
            for t in self._candidates(t0, t0 + 1):
                if t.t0_ms <= t0 < t.t1_ms:
                    per[t.speaker] = per.get(t.speaker, 0) + 1
        if not per:
            return None
        return min(per, key=lambda s: (-per[s], label_num(s)))

    def others(self, t0: int, t1: int, speaker: str | None, min_ms: int = OVERLAP_MIN_MS) -> list[str]:
        """Labels other than ``speaker`` whose turns cover at least ``min_ms`` of [t0, t1], in label order."""
        per: dict[str, int] = {}
        for t in self._candidates(t0, t1):
            if t.speaker != speaker:
                per[t.speaker] = per.get(t.speaker, 0) + overlap_ms(t0, t1, t.t0_ms, t.t1_ms)
        return sorted((s for s, ms in per.items() if ms >= min_ms), key=label_num)

    def nearest(self, t0: int, t1: int, max_gap_ms: int) -> str | None:
        best, best_gap = None, None
        for t in self.turns:
            gap = max(t.t0_ms - t1, t0 - t.t1_ms, 0)
            if gap <= max_gap_ms and (best_gap is None or gap < best_gap):
                best, best_gap = t.speaker, gap
        return best


def attribute_words(words: Sequence[Word], turns: Sequence[Turn]) -> list[str | None]:
    """Speaker of each word: the turn label with maximum time overlap (None when no turn overlaps)."""
    idx = TurnIndex(turns)
    return [idx.speaker(w.t0_ms, w.t1_ms) for w in words]


def _smooth(runs: list[list]) -> list[list]:
    """Absorb a lone short word between two runs of the same other speaker (boundary jitter)."""
    changed = True
    while changed and len(runs) >= 3:
        changed = False
        for i in range(1, len(runs) - 1):
            spk, ws = runs[i]
            if (len(ws) == 1 and ws[0].t1_ms - ws[0].t0_ms < SMOOTH_MAX_MS
                    and runs[i - 1][0] == runs[i + 1][0] != spk):
                runs[i - 1][1].extend(ws + runs[i + 1][1])
                del runs[i:i + 2]
                changed = True
                break
    return runs


def _word_runs(ws: Sequence[Word], idx: TurnIndex, seg_spk: str | None) -> list[list]:
    """[speaker, [words]] runs of one segment's words (in order), by each word's speaker: max overlap, else the
    previous word's, else the segment's; smoothed."""
    runs: list[list] = []
    prev = None
    for w in ws:
        spk = idx.speaker(w.t0_ms, w.t1_ms) or prev or seg_spk
        prev = spk
        if runs and runs[-1][0] == spk:
            runs[-1][1].append(w)
        else:
            runs.append([spk, [w]])
    return _smooth(runs)


def attribute_segments(segments: Sequence[Segment], words: Sequence[Word], turns: Sequence[Turn], *,
                       nearest_gap_ms: int = 1000) -> list[SpeakerSegment]:
    """speaker_segments rows: each Whisper segment, split where its words change speaker.

    Word speaker = max overlap; ``overlap``: the other speakers talking at the same time (:meth:`TurnIndex.others`); a word overlapping no turn takes the previous word's speaker in
    the segment (else the segment's). A segment without words takes the speaker with maximum
    overlap over the whole segment (else the nearest turn within ``nearest_gap_ms``). Split
    pieces keep ``source_seq`` = the Whisper segment's seq; ``seq`` is renumbered."""
    idx = TurnIndex(turns)
    by_seq: dict[int, list[Word]] = {}
    for w in words:
        by_seq.setdefault(w.seq, []).append(w)
    out: list[tuple[int, int, int, str | None, str]] = []  # (source_seq, t0_ms, t1_ms, speaker, text)
    for seg in sorted(segments, key=lambda s: s.seq):
        s0, s1 = seg.t0_ms, seg.t1_ms
        seg_spk = idx.speaker(s0, s1) or idx.nearest(s0, s1, nearest_gap_ms)
        runs = _word_runs(sorted(by_seq.get(seg.seq, []), key=lambda w: (w.idx, w.t0_ms)), idx, seg_spk)
        if len(runs) <= 1:
            out.append((seg.seq, s0, s1, runs[0][0] if runs else seg_spk, seg.text))
            continue
        for i, (spk, rws) in enumerate(runs):
            t0 = s0 if i == 0 else rws[0].t0_ms
            t1 = s1 if i == len(runs) - 1 else rws[-1].t1_ms
            out.append((seg.seq, min(t0, t1), t1, spk, "".join(w.word for w in rws).strip()))
    return [SpeakerSegment(seq=i, source_seq=src, t0_ms=t0, t1_ms=t1, speaker=spk, text=text,
                           overlap=tuple(idx.others(t0, t1, spk)))
            for i, (src, t0, t1, spk, text) in enumerate(out)]


__all__ = ["TurnIndex", "attribute_words", "attribute_segments"]

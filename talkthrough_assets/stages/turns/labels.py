"""Speaker labels and turns, pure: S1, S2 ... by first appearance, merging labels that are one voice,
per-label talk time and the roster, on :class:`~talkthrough_assets.model.turns.Turn` records. No I/O."""

from __future__ import annotations

import dataclasses
import re
from typing import Any, Iterable, Sequence

from talkthrough_assets.core.errors import UsageError
from talkthrough_assets.model.turns import SpeakerStats, Turn

SAME_VOICE_SIMILARITY = 0.75  # centroid cosine >= this: two labels are one voice (measured: same flite voice
#                              across turns 0.91, two different voices 0.53-0.56)
# a given --num-speakers is overridden only by voices this alike: the same speaker beyond doubt (measured on
# the eval set: distinct real speakers <= 0.70 even on one phone line, one speaker's halves 0.75-0.95)
SAME_VOICE_CERTAIN = 0.85
MIN_SPEAKER_MS = 1000        # a label with less talk time than this in the whole recording is absorbed
MERGE_GAP_MS = 500           # same-speaker turns closer than this are one turn (= min_duration_off)
AUTO = "auto"                # num_speakers: find the count from the audio
MAX_SPEAKERS = 50


def parse_num_speakers(value: Any) -> int | str:
    """The ``num_speakers`` setting: ``"auto"`` or a count 1..MAX_SPEAKERS. ``None``, ``""`` and ``0`` (what
    older versions stored for automatic) read as ``"auto"``; anything else raises ValueError."""
    if value is None or (isinstance(value, str) and value.strip().lower() in ("", AUTO)):
        return AUTO
    if isinstance(value, bool):
        raise UsageError(f"speaker count must be a number or '{AUTO}', not {value!r}")
    text = str(value).strip()
    if not text.isdigit():
        raise UsageError(f"speaker count must be a number (1, 2, ...) or '{AUTO}', not {text!r}")
    n = int(text)
    if n == 0:
        return AUTO
    if n > MAX_SPEAKERS:
        raise UsageError(f"speaker count {n} is over {MAX_SPEAKERS}")
    return n


def overlap_ms(a0: int, a1: int, b0: int, b1: int) -> int:
    return max(0, min(a1, b1) - max(a0, b0))


def label_num(label: str) -> int:
    m = re.fullmatch(r"S(\d+)", label or "")
    return int(m.group(1)) if m else 1 << 30


def labels_in_order(turns: Iterable[Turn]) -> list[str]:
    return sorted({t.speaker for t in turns}, key=label_num)


def talk_ms(turns: Iterable[Turn], label: str) -> int:
    """``label``'s talk time: the union of its turns."""
    return union_ms((t.t0_ms, t.t1_ms) for t in turns if t.speaker == label)


def relabel(raw: Iterable[tuple]) -> list[Turn]:
    """Engine output [(t0_ms, t1_ms, speaker_key)] -> turns labelled S1, S2 ... by first appearance."""
    raw = sorted(raw, key=lambda r: (r[0], r[1]))
    names: dict[Any, str] = {}
    turns = []
    for t0, t1, key in raw:
        if t1 <= t0:
            continue
        if key not in names:
            names[key] = f"S{len(names) + 1}"
        turns.append(Turn(int(t0), int(t1), names[key]))
    return turns


def merge_labels(turns: Sequence[Turn], mapping: dict[str, str], *, gap_ms: int = MERGE_GAP_MS) -> list[Turn]:
    """Rename labels by ``mapping``, join same-speaker turns closer than ``gap_ms``, relabel S1.. by
    first appearance again."""
    renamed = sorted((dataclasses.replace(t, speaker=mapping.get(t.speaker, t.speaker)) for t in turns),
                     key=lambda t: (t.t0_ms, t.t1_ms))
    out: list[Turn] = []
    last: dict[str, int] = {}  # speaker -> index in ``out`` of its latest turn
    for t in renamed:
        i = last.get(t.speaker)
        if i is not None and t.t0_ms - out[i].t1_ms <= gap_ms and _is_latest(out, i, t):
            out[i] = dataclasses.replace(out[i], t1_ms=max(out[i].t1_ms, t.t1_ms))
            continue
        out.append(t)
        last[t.speaker] = len(out) - 1
    return relabel((t.t0_ms, t.t1_ms, t.speaker) for t in out)


def _is_latest(out: list[Turn], i: int, t: Turn) -> bool:
    """Join only when no other speaker's turn starts between ``out[i]`` and ``t``."""
    return not any(o.speaker != t.speaker and o.t0_ms >= out[i].t0_ms for o in out[i + 1:])


def exclusive_spans(turns: Sequence[Turn], label: str) -> list[tuple[int, int]]:
    """Parts of ``label``'s turns where no other label's turn overlaps."""
    others = sorted((t.t0_ms, t.t1_ms) for t in turns if t.speaker != label)
    spans = []
    for t in turns:
        if t.speaker != label:
            continue
        pieces = [(t.t0_ms, t.t1_ms)]
        for a, b in others:
            nxt = []
            for x, y in pieces:
                if b <= x or a >= y:
                    nxt.append((x, y))
                else:
                    if a > x:
                        nxt.append((x, a))
                    if b < y:
                        nxt.append((b, y))
            pieces = nxt
        spans.extend(p for p in pieces if p[1] > p[0])
    return sorted(spans)


def union_ms(spans: Iterable[tuple[int, int]]) -> int:
    total, end = 0, None
    for a, b in sorted(spans):
        if end is None or a > end:
            total += b - a
            end = b
        elif b > end:
            total += b - end
            end = b
    return total


def roster(turns: Sequence[Turn]) -> list[SpeakerStats]:
    """One row per label (S1, S2 ... order): talk time (union of its turns), turn count, first/last ms."""
    out = []
    for label in labels_in_order(turns):
        mine = [t for t in turns if t.speaker == label]
        out.append(SpeakerStats(label=label, talk_time_ms=talk_ms(mine, label), turn_count=len(mine),
                                first_ms=min(t.t0_ms for t in mine), last_ms=max(t.t1_ms for t in mine)))
    return out


def plan_merges(turns: Sequence[Turn], similarity: dict[tuple[str, str], float], *,
                same_voice: float = SAME_VOICE_SIMILARITY, min_speaker_ms: int = MIN_SPEAKER_MS
                ) -> tuple[dict[str, str], list[str]]:
    """Which labels are really another label's voice: (mapping later->earlier label, notes).

    * two labels whose centroid cosine similarity is >= ``same_voice`` are one speaker;
    * a label with under ``min_speaker_ms`` of talk in the whole recording is absorbed into the
      most similar remaining label (too little audio to call it a separate speaker).
    ``similarity`` maps (a, b) label pairs (either order) to cosine similarity; pairs without a
    value (no usable audio) never merge by voice."""
    labels = labels_in_order(turns)

    def sim(a: str, b: str) -> float | None:
        return similarity.get((a, b), similarity.get((b, a)))

    parent = {lab: lab for lab in labels}

    def root(x: str) -> str:
        while parent[x] != x:
            x = parent[x]
        return x

    notes = []
    pairs = sorted(((s, a, b) for i, a in enumerate(labels) for b in labels[i + 1:]
                    if (s := sim(a, b)) is not None and s >= same_voice), reverse=True)
    for s, a, b in pairs:
        ra, rb = root(a), root(b)
        if ra != rb:
            keep, drop = sorted((ra, rb), key=label_num)
            parent[drop] = keep
            notes.append(f"{drop} merged into {keep} (same voice, similarity {s:.2f})")
    talk = {lab: talk_ms(turns, lab) for lab in labels}
    for lab in labels:
        groups = {root(x) for x in labels}
        if len(groups) < 2 or root(lab) != lab:
            continue
        group_talk = sum(talk[x] for x in labels if root(x) == lab)
        if group_talk >= min_speaker_ms:
            continue
        others = [g for g in groups if g != lab]
        best = max(others, key=lambda g: (sim(lab, g) if sim(lab, g) is not None else -2.0,
                                          talk.get(g, 0), -label_num(g)))
        parent[lab] = best
        notes.append(f"{lab} absorbed into {best} (only {group_talk / 1000:.1f} s of speech)")
    mapping = {lab: root(lab) for lab in labels if root(lab) != lab}
    return mapping, notes



def merge_to_count(turns: Sequence[Turn], vectors: dict[str, Any], n: int) -> dict[str, str]:
    """Mapping (label -> label it joins) that leaves ``n`` speakers: repeatedly join the two groups whose
    talk-time-weighted mean voice vectors are most alike (centroid linkage). ``vectors`` maps labels to
    unit embeddings; a label without one (too little clean audio) is left as it is. Used when a given
    count must be met from a finer clustering."""
    import numpy as np

    labels = labels_in_order(turns)
    talk = {lab: talk_ms(turns, lab) for lab in labels}
    groups = {lab: [lab] for lab in labels}
    acc = {lab: np.asarray(vectors[lab], dtype=np.float64) * max(talk[lab], 1) for lab in labels if lab in vectors}
    while len(groups) > n:
        best = None
        keys = sorted(acc, key=label_num)
        for i, a in enumerate(keys):
            for b in keys[i + 1:]:
                va, vb = acc[a], acc[b]
                sim = float(va @ vb / (np.linalg.norm(va) * np.linalg.norm(vb) or 1.0))
                if best is None or sim > best[0]:
                    best = (sim, a, b)
        if best is None:
            break
        _, a, b = best
        groups[a] += groups.pop(b)
        acc[a] = acc[a] + acc.pop(b)
    return {x: g for g, xs in groups.items() for x in xs if x != g}


__all__ = ["merge_to_count", "AUTO", "SAME_VOICE_CERTAIN", "parse_num_speakers", "overlap_ms", "label_num", "labels_in_order", "relabel", "merge_labels", "exclusive_spans", "union_ms",
           "talk_ms", "roster", "plan_merges"]

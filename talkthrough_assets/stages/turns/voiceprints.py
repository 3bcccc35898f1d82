"""Voiceprints: one voice embedding per diarized label, made by the ``turns`` stage from the
embeddings it already has.

A label's voiceprint is the unit-norm centroid of its clean windows' CAM++ embeddings: the 1.5-s,
half-overlapping windows where that label alone talks (:func:`refine.windows_of` on the final turns),
the same windows the refinement embedded, so most come from its cache and no second diarization pass
runs (at most MAX_WINDOWS per label, the cached ones first). ``speech_ms`` is the label's non-overlapped speech (what the voiceprint stands for). A label with
no clean window (under ~1.5 s alone) gets none. Vectors are stored as float32 lists in the
``voiceprints`` table (per recording); they never leave the data root.
"""

from __future__ import annotations

from typing import Any, Callable, Sequence

from talkthrough_assets.model.turns import Turn, Voiceprint
from talkthrough_assets.stages.turns.labels import exclusive_spans, labels_in_order, union_ms

MIN_WINDOWS = 1
# at most this many windows per label: those the refinement embedded first, then evenly spread new ones. Bounds
# the extra embedding work where the refinement embedded none (a one-speaker recording): <= 48 s of audio per label
MAX_WINDOWS = 32
# ... of which at most this many are embedded for the voiceprint alone (the refinement had not): a one-speaker
# recording's label. 8 windows (12 s of speech) hold its voice: labels with 3-10 s were recognised as well as
# longer ones (bench/bench_voices.py), and 32 added ~25 % to a one-speaker turns stage
MAX_NEW_WINDOWS = 8


def centroid(vectors) -> Any:
    """Unit-norm mean of unit vectors (rows); None when there are none."""
    import numpy as np

    v = np.asarray(vectors, dtype=np.float64)
    if v.ndim != 2 or not len(v):
        return None
    m = v.mean(axis=0)
    n = float(np.linalg.norm(m))
    return m / n if n > 0 else None


def voiceprint_rows(turns: Sequence[Turn], windows: Sequence[tuple[int, str]], vectors, model: str | None
                    ) -> list[Voiceprint]:
    """Rows of the ``voiceprints`` table: per label with >= MIN_WINDOWS clean windows, its centroid
    (``embedding``), the number of windows and its non-overlapped speech in ms. Pure."""
    import numpy as np

    vectors = np.asarray(vectors, dtype=np.float64)
    out = []
    for lab in labels_in_order(turns):
        idx = [i for i, (_, wl) in enumerate(windows) if wl == lab]
        if len(idx) < MIN_WINDOWS:
            continue
        c = centroid(vectors[idx])
        if c is None:
            continue
        out.append(Voiceprint(label=lab, embedding=tuple(float(x) for x in c.astype(np.float32)), windows=len(idx),
                              speech_ms=union_ms(exclusive_spans(turns, lab)), model=model))
    return out


def pick(windows: Sequence[tuple[int, str]], known, limit: int = MAX_WINDOWS) -> list[tuple[int, str]]:
    """At most ``limit`` windows per label: the ones already embedded (``known``: start -> vector) first, each
    group evenly spread over the recording. Pure."""
    out = []
    for lab in sorted({w[1] for w in windows}):
        mine = [w for w in windows if w[1] == lab]
        have = [w for w in mine if w[0] in known]
        new = [w for w in mine if w[0] not in known]
        chosen = _spread(have, limit)
        chosen += _spread(new, min(limit - len(chosen), MAX_NEW_WINDOWS))
        out += chosen
    return sorted(out)


def _spread(xs: list, n: int) -> list:
    if n <= 0:
        return []
    if len(xs) <= n:
        return list(xs)
    return [xs[int(i * len(xs) / n)] for i in range(n)]


def compute(samples, turns: Sequence[Turn], vectors_of: Callable[[list], Any], model: str | None,
            known=None) -> list[Voiceprint]:
    """Voiceprints of the final ``turns``; ``vectors_of(windows)`` embeds windows, ``known`` the windows the
    refinement embedded already (start -> vector)."""
    from talkthrough_assets.stages.turns.refine import SAMPLE_RATE, windows_of

    if not turns:
        return []
    wins = pick(windows_of(turns, int(len(samples) * 1000 // SAMPLE_RATE)), known or {})
    if not wins:
        return []
    return voiceprint_rows(turns, wins, vectors_of(wins), model)


__all__ = ["MAX_WINDOWS", "centroid", "voiceprint_rows", "pick", "compute"]

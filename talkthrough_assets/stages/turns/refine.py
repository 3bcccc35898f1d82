"""Refining the engine's turns where the pyannote segmentation falls short on meeting audio.

Two measured failures of sherpa-onnx's pipeline on the AMI meeting excerpts of the evaluation set
(``python bench/bench_der.py``), and their repair:

* **Two voices in one label.** The segmentation model gives one local speaker for two people who take
  turns (AMI dev00/dev01: one label for MEE009 and MEE012 in every 10-s window), so no clustering of its
  per-window embeddings, not even ``num_clusters=2``, can separate them. :func:`split_labels` embeds
  short windows (WINDOW_MS, half-overlapping) inside each label's own speech, splits the label's windows
  in two (2-means on the unit embeddings) and keeps the split when the two halves' mean voices are
  clearly apart (cosine under SPLIT_SIMILARITY) and each half has at least SPLIT_MIN_WINDOWS windows.
  CAM++ on 1.5-s windows: one real speaker's halves 0.74-0.93 on the set, two speakers in one label
  0.43-0.71.
* **Speech the segmentation does not mark.** Far-field and quiet speech the segmentation leaves out is
  often still heard by the Silero VAD faster-whisper ships (already used by the transcript stage).
  :func:`fill_gaps` gives such VAD speech (speech probability >= FILL_VAD_THRESHOLD, in a gap between
  turns) to the speaker whose turn is nearest in time, up to FILL_MAX_GAP_MS away.

* **Short turns in the wrong label.** sherpa-onnx clusters 10-s window embeddings, so a short turn can
  take the label of the voice around it. :func:`reassign_windows` compares every 1.5-s window (the same
  windows as the split) with each label's mean window voice (its own label's without the window itself)
  and gives the middle of the window to the nearest voice's label. Measured on the tuning half: pooled
  DER 13.0 -> 12.2 % (auto), 12.1 -> 11.7 % (count given); held out 8.7 -> 7.8 %, 7.9 -> 6.0 %.

* **Overlap the reconstruction drops.** sherpa-onnx rounds the windows' mean speaker count per frame,
  so a second voice the segmentation hears in only some of the overlapping windows is lost. Where the
  segmentation's expected speaker count (its powerset probabilities, averaged over the 10-s windows) is
  >= OVERLAP_COUNT and one speaker is marked, :func:`add_overlap` adds another speaker talking within
  OVERLAP_MAX_GAP_MS: the one whose voice (centroid) is most like OVERLAP_VOICE_MS of audio around the
  overlapped stretch (nearest in time before: AMI tuning half 27.6 -> 27.1 %, held out unchanged).

Thresholds were chosen on half of the evaluation set and checked on the other half (README, bench).
The grid and 2-means are pure numpy (here, unit-tested); embeddings and VAD use the stage's models
(:mod:`~talkthrough_assets.stages.turns.refine_models`, which runs the whole refinement: :func:`refine_turns`).
"""

from __future__ import annotations

from typing import Any, Callable, Sequence

from talkthrough_assets.model.turns import Turn
from talkthrough_assets.stages.turns.labels import labels_in_order, merge_labels, relabel

SAMPLE_RATE = 16000
STEP_MS = 10                 # working grid
WINDOW_MS = 1500             # embedding window for the split test, half-overlapping
SPLIT_SIMILARITY = 0.72      # cosine of the two halves' mean window embeddings under this: two voices
SPLIT_MIN_WINDOWS = 3        # each half at least this many windows (~3 s of speech)
SPLIT_COVER = 0.6            # a window belongs to a label when that label alone talks in >= 60 % of it
FILL_VAD_THRESHOLD = 0.1     # Silero speech probability (per 32-ms frame) that counts as speech
FILL_MAX_GAP_MS = 2000       # VAD speech further than this from every turn stays unassigned
VAD_FRAME = 512              # Silero's frame, samples
OVERLAP_COUNT = 1.3          # expected speakers per frame from which a one-speaker frame gets a second
OVERLAP_MAX_GAP_MS = 2000    # the second speaker's own turn at most this far away
OVERLAP_BY_VOICE = True      # the second speaker: the label whose voice is most like the overlapped stretch
OVERLAP_VOICE_MS = 4000      # audio embedded around an overlapped stretch (tuning half: 1500-6000 all help, 4000 best)
SEG_HOP = 0.1                # segmentation windows: 10 s, hop 1 s (sherpa-onnx's window_shift_ratio)


# --------------------------------------------------------------------------- grid helpers (pure)

def _grid(turns: Sequence[Turn], n: int):
    import numpy as np

    labs = labels_in_order(turns)
    g = np.zeros((len(labs), n), dtype=bool)
    for t in turns:
        g[labs.index(t.speaker), t.t0_ms // STEP_MS: -(-t.t1_ms // STEP_MS)] = True
    return labs, g


def _frames(turns: Sequence[Turn], duration_ms: int) -> int:
    """Grid length covering the audio and every turn (the engine's last turn may end a frame past it)."""
    return max(-(-duration_ms // STEP_MS), max((-(-t.t1_ms // STEP_MS) for t in turns), default=0))


def _turns(labs: Sequence[str], g) -> list[tuple[int, int, str]]:
    import numpy as np

    out = []
    for i, lab in enumerate(labs):
        d = np.diff(np.concatenate([[0], g[i].astype(np.int8), [0]]))
        out += [(int(a) * STEP_MS, int(b) * STEP_MS, lab) for a, b in zip(np.flatnonzero(d == 1), np.flatnonzero(d == -1))]
    return out


def _unit(v):
    import numpy as np

    n = float(np.linalg.norm(v))
    return v / n if n > 0 else v


def two_means(x, iters: int = 10):
    """Split unit vectors ``x`` (k, d) in two by cosine 2-means, started from the least similar pair.
    Returns (assignment 0/1 per row, the two unit mean vectors) or None when it collapses to one group."""
    import numpy as np

    if len(x) < 2:
        return None
    s = x @ x.T
    i, j = np.unravel_index(int(np.argmin(s)), s.shape)
    c = np.stack([x[i], x[j]])
    a = None
    for _ in range(iters):
        new = (x @ c.T).argmax(axis=1)
        if new.min() == new.max():
            return None
        if a is not None and (new == a).all():
            break
        a = new
        c = np.stack([_unit(x[a == k].mean(axis=0)) for k in (0, 1)])
    return a, c


def windows_of(turns: Sequence[Turn], duration_ms: int, win_ms: int = WINDOW_MS) -> list[tuple[int, str]]:
    """(start_ms, label) of every half-overlapping window where one label alone talks >= SPLIT_COVER of it."""
    import numpy as np

    n = _frames(turns, duration_ms)
    labs, g = _grid(turns, n)
    if not labs:
        return []
    alone = g & (g.sum(axis=0) == 1)
    w = win_ms // STEP_MS
    out = []
    for a in range(0, n - w + 1, w // 2):
        frac = alone[:, a: a + w].mean(axis=1)
        k = int(np.argmax(frac))
        if frac[k] >= SPLIT_COVER:
            out.append((a * STEP_MS, labs[k]))
    return out


def split_labels(turns: list[Turn], windows: Sequence[tuple[int, str]], vectors, duration_ms: int, *,
                 win_ms: int = WINDOW_MS, max_similarity: float = SPLIT_SIMILARITY,
                 min_windows: int = SPLIT_MIN_WINDOWS, limit: int | None = None) -> tuple[list[Turn], list[str]]:
    """Split labels that hold two voices. ``windows`` from :func:`windows_of`, ``vectors`` their unit
    embeddings (one row each). A label splits when 2-means of its windows gives halves whose mean voices
    have cosine < ``max_similarity``, each of >= ``min_windows`` windows; its speech goes to the half of
    the nearest window. The clearest splits first, at most ``limit`` (None: all). Returns (turns
    relabelled S1.. by first appearance, notes)."""
    import numpy as np

    if not turns or not len(windows):
        return turns, []
    vectors = np.asarray(vectors, dtype=np.float64)
    cands = []
    for lab in labels_in_order(turns):
        idx = [i for i, (_, wl) in enumerate(windows) if wl == lab]
        if len(idx) < 2 * min_windows:
            continue
        r = two_means(vectors[idx])
        if r is None:
            continue
        a, c = r
        sim = float(c[0] @ c[1])
        if min(int((a == 0).sum()), int((a == 1).sum())) < min_windows or sim >= max_similarity:
            continue
        cands.append((sim, lab, np.asarray(idx), a))
    cands.sort(key=lambda x: x[0])
    if limit is not None:
        cands = cands[:max(0, limit)]
    if not cands:
        return turns, []
    n = _frames(turns, duration_ms)
    labs, g = _grid(turns, n)
    labs = list(labs)
    notes = []
    for sim, lab, idx, a in cands:
        s = labs.index(lab)
        later = 1 if idx[a == 1][0] > idx[a == 0][0] else 0  # the half heard later is the new label
        centers = np.array([windows[i][0] + win_ms / 2 for i in idx]) / STEP_MS
        frames = np.flatnonzero(g[s])
        nearest = np.abs(frames[:, None] - centers[None, :]).argmin(axis=1)
        move = frames[a[nearest] == later]
        new = f"{lab}+"
        labs.append(new)
        g = np.vstack([g, np.zeros((1, n), dtype=bool)])
        g[s, move] = False
        g[-1, move] = True
        notes.append((lab, new, sim))
    raw = _turns(labs, g)
    first: dict[str, int] = {}
    for t0, _, key in sorted(raw):
        first.setdefault(key, len(first) + 1)
    name = {key: f"S{i}" for key, i in first.items()}  # what relabel() will call them
    return (merge_labels(relabel(raw), {}),
            [f"{name.get(new, new)} split from {name.get(lab, lab)} (two voices in one label, similarity {sim:.2f})"
             for lab, new, sim in notes])


def reassign_windows(turns: list[Turn], windows: Sequence[tuple[int, str]], vectors, duration_ms: int, *,
                     win_ms: int = WINDOW_MS) -> tuple[list[Turn], int]:
    """Nearest-voice reassignment: a window (from :func:`windows_of`, ``vectors`` its unit embeddings) whose
    voice is closer to another label's mean window voice than to its own label's (leave-one-out: the mean
    of the label's other windows) gives that label the middle half of the window (the speech of its own
    label there). Labels are compared on the same short windows, so clips where the clustering of 10-s
    windows mislabels a short turn are repaired. Returns (turns relabelled S1.., windows moved)."""
    import numpy as np

    labs = labels_in_order(turns)
    if len(labs) < 2 or len(windows) < 2:
        return turns, 0
    v = np.asarray(vectors, dtype=np.float64)
    own = np.array([labs.index(lab) for _, lab in windows])
    sums = np.stack([v[own == k].sum(axis=0) for k in range(len(labs))])
    counts = np.bincount(own, minlength=len(labs))

    def cos(x, c):
        n = float(np.linalg.norm(c))
        return float(x @ c / n) if n > 0 else -1.0

    n = _frames(turns, duration_ms)
    _, g = _grid(turns, n)
    w = win_ms // STEP_MS
    moved = 0
    for i, (start, _) in enumerate(windows):
        k = own[i]
        if counts[k] < 2:  # a label's only window: nothing to compare it with
            continue
        sims = [cos(v[i], sums[j] - v[i]) if j == k else cos(v[i], sums[j]) for j in range(len(labs))]
        best = int(np.argmax(sims))
        if best == k or counts[best] == 0:
            continue
        a, b = start // STEP_MS + w // 4, start // STEP_MS + 3 * w // 4
        mine = g[k, a:b].copy()
        g[k, a:b] &= ~mine
        g[best, a:b] |= mine
        moved += 1
    if not moved:
        return turns, 0
    return merge_labels(relabel(_turns(labs, g)), {}), moved


def speech_spans(probs, threshold: float = FILL_VAD_THRESHOLD, frame: int = VAD_FRAME) -> list[tuple[int, int]]:
    """[(t0_ms, t1_ms)] runs of VAD frames with speech probability >= ``threshold``."""
    import numpy as np

    on = np.asarray(probs, dtype=np.float64).ravel() >= threshold
    d = np.diff(np.concatenate([[0], on.astype(np.int8), [0]]))
    ms = frame * 1000 / SAMPLE_RATE
    return [(int(round(a * ms)), int(round(b * ms))) for a, b in zip(np.flatnonzero(d == 1), np.flatnonzero(d == -1))]


def fill_gaps(turns: list[Turn], spans: Sequence[tuple[int, int]], duration_ms: int, *,
              max_gap_ms: int = FILL_MAX_GAP_MS) -> tuple[list[Turn], int]:
    """Give speech ``spans`` no turn covers to the speaker whose turn is nearest in time (at most
    ``max_gap_ms`` away). Returns (turns relabelled S1.., ms of speech added)."""
    import numpy as np

    if not turns or not spans:
        return turns, 0
    n = _frames(turns, duration_ms)
    labs, g = _grid(turns, n)
    speech = np.zeros(n, dtype=bool)
    for a, b in spans:
        speech[a // STEP_MS: -(-b // STEP_MS)] = True
    todo = speech & ~g.any(axis=0)
    if not todo.any():
        return turns, 0
    pos = np.arange(n)
    dist = np.full((len(labs), n), np.iinfo(np.int64).max // 4, dtype=np.int64)
    for k in range(len(labs)):
        on = np.flatnonzero(g[k])
        if not len(on):
            continue
        j = np.searchsorted(on, pos)
        left, right = on[np.clip(j - 1, 0, len(on) - 1)], on[np.clip(j, 0, len(on) - 1)]
        dist[k] = np.minimum(np.abs(pos - left), np.abs(right - pos))
    best, bd = dist.argmin(axis=0), dist.min(axis=0)
    todo &= bd <= max_gap_ms // STEP_MS
    g[best[todo], np.flatnonzero(todo)] = True
    return merge_labels(relabel(_turns(labs, g)), {}), int(todo.sum()) * STEP_MS


def _nearest(g):
    """Distance (grid frames) from every frame to each label's nearest marked frame."""
    import numpy as np

    k, n = g.shape
    pos = np.arange(n)
    dist = np.full((k, n), np.iinfo(np.int64).max // 4, dtype=np.int64)
    for i in range(k):
        on = np.flatnonzero(g[i])
        if len(on):
            j = np.searchsorted(on, pos)
            left, right = on[np.clip(j - 1, 0, len(on) - 1)], on[np.clip(j, 0, len(on) - 1)]
            dist[i] = np.minimum(np.abs(pos - left), np.abs(right - pos))
    return dist


def add_overlap(turns: list[Turn], counts, *, threshold: float = OVERLAP_COUNT,
                max_gap_ms: int = OVERLAP_MAX_GAP_MS, voices: dict | None = None,
                voice_of: Callable[[int, int], Any] | None = None) -> tuple[list[Turn], int]:
    """Where ``counts`` (expected speakers per STEP_MS frame) is >= ``threshold`` and only one label is
    marked, also mark another label whose own speech is at most ``max_gap_ms`` away: the nearest in time,
    or, given ``voices`` (label -> unit embedding) and ``voice_of`` ((t0_ms, t1_ms) -> unit embedding of
    the audio around that stretch), the one whose voice is most like that stretch's (one choice per run
    of such frames). Returns (turns relabelled S1.., ms of overlap added)."""
    import numpy as np

    if len(labels_in_order(turns)) < 2:
        return turns, 0
    n = max(len(counts), max(-(-t.t1_ms // STEP_MS) for t in turns))
    labs, g = _grid(turns, n)
    c = np.zeros(n)
    c[: len(counts)] = counts
    todo = (g.sum(axis=0) == 1) & (c >= threshold)
    if not todo.any():
        return turns, 0
    dist = _nearest(g)
    dist[g] = np.iinfo(np.int64).max // 4  # not the label already talking
    best, bd = dist.argmin(axis=0), dist.min(axis=0)
    todo &= bd <= max_gap_ms // STEP_MS
    if voices and voice_of is not None:
        d = np.diff(np.concatenate([[0], todo.astype(np.int8), [0]]))
        for a, b in zip(np.flatnonzero(d == 1), np.flatnonzero(d == -1)):
            near = [k for k in range(len(labs)) if labs[k] in voices and dist[k, a:b].min() <= max_gap_ms // STEP_MS]
            if len(near) > 1:
                v = voice_of(int(a) * STEP_MS, int(b) * STEP_MS)
                if v is not None:
                    best[a:b] = max(near, key=lambda k: float(voices[labs[k]] @ v))
        todo &= ~g[best, np.arange(n)]
    g[best[todo], np.flatnonzero(todo)] = True
    return merge_labels(relabel(_turns(labs, g)), {}), int(todo.sum()) * STEP_MS


def expected_count(probs):
    """Expected number of speakers per frame from :func:`segmentation_probs` (powerset: 0, 1, 1, 1, 2, 2, 2)."""
    import numpy as np

    per_class = np.array([0, 1, 1, 1, 2, 2, 2], dtype=np.float64)
    return np.asarray(probs) @ per_class[: np.asarray(probs).shape[1]]


__all__ = ["split_labels", "reassign_windows", "expected_count", "windows_of", "two_means", "fill_gaps", "speech_spans",
           "add_overlap", "OVERLAP_COUNT", "SPLIT_SIMILARITY", "SPLIT_MIN_WINDOWS", "FILL_VAD_THRESHOLD", "FILL_MAX_GAP_MS"]

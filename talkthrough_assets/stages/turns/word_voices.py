"""Speech the diarizer did not mark but Whisper transcribed: its words get a speaker by their voice.

Far-field meeting speech is often too faint for the segmentation model and the VAD, yet Whisper writes its
words. A word with (almost) no turn under it is speech without a speaker. Such words, joined into stretches
(words closer than RUN_GAP_MS, in one Whisper segment), are embedded with CAM++ (with the audio around them
when shorter than MIN_EMBED_MS: the embedding is unreliable on a few hundred ms) and compared with every
label's voice. The stretch becomes a turn of the most alike label when the similarity reaches VOICE_FLOOR;
under it the words stay without a speaker and are counted, never guessed.

Only the turns change: Whisper's segments and words are read, never written (the ``segments`` stage owns
them; a diarize amend re-materializes only ``turns`` and ``manifest``).
"""

from __future__ import annotations

from typing import Any, Callable, Sequence

from talkthrough_assets.model.transcript import Word
from talkthrough_assets.model.turns import Turn
from talkthrough_assets.stages.turns.labels import merge_labels, overlap_ms

WORD_COVER = 0.5      # a word with less than this share of its span under some turn has no turn
RUN_GAP_MS = 300      # words of one segment closer than this are one stretch of one voice
MIN_EMBED_MS = 1500   # a shorter stretch is embedded with the audio around it, up to this long
# cosine to the most alike label's voice under which the words stay unassigned: on the AMI excerpts 0.5 and lower
# added more false alarm than speech (Whisper writes words where their references mark no one talking)
VOICE_FLOOR = 0.6
MAX_WORD_MS = 1500    # a longer word's times are Whisper's guess over silence: only its last part is used


def _covered(t0: int, t1: int, turns: Sequence[Turn]) -> int:
    spans = sorted((max(t0, t.t0_ms), min(t1, t.t1_ms)) for t in turns if overlap_ms(t0, t1, t.t0_ms, t.t1_ms))
    total, end = 0, t0
    for a, b in spans:
        a = max(a, end)
        if b > a:
            total, end = total + b - a, b
    return total


def uncovered_runs(words: Sequence[Word], turns: Sequence[Turn], *, cover: float = WORD_COVER,
                   gap_ms: int = RUN_GAP_MS) -> list[tuple[int, int, int]]:
    """(t0_ms, t1_ms, words) stretches of words (one segment, gaps under ``gap_ms``) that turns cover less
    than ``cover`` of. A word longer than MAX_WORD_MS counts as its last MAX_WORD_MS."""
    runs: list[list[int]] = []
    last_seq = None
    for w in sorted(words, key=lambda w: (w.t0_ms, w.t1_ms)):
        t1 = w.t1_ms
        t0 = max(w.t0_ms, t1 - MAX_WORD_MS)
        if t1 <= t0 or _covered(t0, t1, turns) >= cover * (t1 - t0):
            last_seq = None
            continue
        seq = w.seq
        if runs and seq == last_seq and t0 - runs[-1][1] < gap_ms:
            runs[-1][1] = max(runs[-1][1], t1)
            runs[-1][2] += 1
        else:
            runs.append([t0, t1, 1])
        last_seq = seq
    return [(a, b, n) for a, b, n in runs]


def give_runs(turns: list[Turn], runs: Sequence[tuple[int, int, int]], voices: dict[str, Any],
              voice_of: Callable[[int, int], Any], *, floor: float = VOICE_FLOOR) -> tuple[list[Turn], int, int]:
    """Each run becomes a turn of the label whose voice (``voices``: label -> unit embedding) is most like
    ``voice_of(t0, t1)``, when that similarity is >= ``floor``. Returns (turns, words given, words left)."""
    given = left = 0
    added = []
    for t0, t1, n in runs:
        v = voice_of(t0, t1) if voices else None
        sims = {lab: float(c @ v) for lab, c in voices.items()} if v is not None else {}
        best = max(sims, key=sims.get) if sims else None
        if best is None or sims[best] < floor:
            left += n
            continue
        added.append(Turn(t0, t1, best))
        given += n
    if not added:
        return turns, 0, left
    return merge_labels(list(turns) + added, {}), given, left


def fill_from_words(samples, turns: list[Turn], words: Sequence[Word], models, *, cache=None,
                    floor: float = VOICE_FLOOR) -> tuple[list[Turn], int, int]:
    """:func:`uncovered_runs` of ``words`` given to labels by voice (:func:`give_runs`) with the stage's
    CAM++ model. Returns (turns, words given a speaker, words left without one)."""
    runs = uncovered_runs(words, turns)
    if not runs or not turns:
        return turns, 0, sum(n for _, _, n in runs)
    from talkthrough_assets.stages.turns.engine import SAMPLE_RATE, centroids
    from talkthrough_assets.stages.turns.refine_models import window_vectors

    dur = int(len(samples) * 1000 // SAMPLE_RATE)

    def voice_of(t0: int, t1: int):
        mid, half = (t0 + t1) // 2, max(t1 - t0, MIN_EMBED_MS) // 2
        a, b = max(0, mid - half), min(dur, mid + half)
        return window_vectors(samples, [(a, "")], models, cache=cache, win_ms=b - a)[0] if b - a >= 100 else None

    return give_runs(turns, runs, centroids(samples, turns, models, cache=cache), voice_of, floor=floor)


__all__ = ["uncovered_runs", "give_runs", "fill_from_words", "VOICE_FLOOR"]

"""segments' coverage pass: voice activity that no kept segment covers is decoded again on its own (its own window,
the text kept before it as prompt), and what stays uncovered is listed with why (``transcripts.uncovered``). A
segment with a stretched word covers nothing until that decode has settled it (:func:`_settle_stretched`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np

from talkthrough_assets.model.transcript import Decoded, Segment, Span, Word
from talkthrough_assets.stages.segments.engine import PROMPT_TOKENS
from talkthrough_assets.stages.segments.rules import _key, dropped_text, heard

# Coverage: voice activity that no kept segment covers for at least this long is decoded again on its own (its
# own window, the text before it as prompt): Whisper's long-form decoding jumps over speech now and then (27 s of
# a narrated scene), and a segment whose text was given a wrong time span or was cut as a loop leaves its speech
# uncovered.
COVERAGE_MIN_S = 1.0
COVERAGE_MARGIN_S = 0.5  # audio heard on either side of an uncovered span when it is decoded again
# A span decoded again with the text before it as prompt can come back with a passage of it skipped again (on a
# generated screencast, the first 11 s of a 15.6-s span, a scene's introduction that bare faster-whisper heard):
# what stays uncovered of it for at least this long is decoded once more without a prompt. Shorter leftovers
# were breaths and word ends, not worth a decode each.
RETRY_MIN_S = 3.0
RECOVER_MAX_NO_SPEECH_P = 0.6  # a segment the coverage pass finds is not kept when Whisper's no-speech
RECOVER_MIN_WORD_P = 0.5  # probability is at least this and its words' mean probability under this, when it
RECOVER_UNSURE_MAX_WORDS = 2  # has at most this many words
COVER_SLACK_MS = 250  # a kept segment covers its aligned span widened by this much
# A word aligned over more than this is not a word's sound: Whisper skipped speech there and the alignment
# stretched a neighbouring word over it (on the 10-min bench screencast "look" ran 6.9 s over a whole scene
# introduction the segment's text left out). Such a segment does not count as covering its span: its speech is
# decoded again, and the segment gives way to what that decode finds (see :func:`_settle_stretched`). The
# longest real words there were under 2.1 s (a slow "scene" after a pause).
STRETCHED_WORD_S = 3.0
STRETCH_MIN_SHARE = 0.5  # the decode must find at least this share of the stretched segment's word count
# A span decoded again holds at most MAX_WORDS_PER_S words a second (~1.5 tokens a word): its decode stops there.
# Whisper pads it to a 30-s window and, over a breath or a filler, loops until its 448-token limit (on the 10-min
# screencast the coverage pass took 48 % of the stage's CPU, mostly such loops, later cut as repetitions)
COVER_TOKENS_PER_S = 12
COVER_TOKENS_MIN = 16
COVER_TOKENS_MAX = 200  # + a prompt of <= 228 tokens (no vocabulary) stays under Whisper's 448


@dataclass(frozen=True, slots=True)
class Entry:
    """A kept segment while a decode is assembled: the segment, its words and its text tokens (the context of the
    audio after it)."""

    seg: Segment
    words: tuple[Word, ...]
    tokens: tuple[int, ...]

    def shifted(self, off: int) -> Entry:
        return Entry(self.seg.shifted(off), tuple(w.shifted(off) for w in self.words), self.tokens)


def recover(samples: np.ndarray, core: list[tuple[int, int]], entries: list[Entry], dropped: list[Span],
            doubtful: list[Span], *, again: bool, vocabulary: str | None,
            redecode: Callable[..., Decoded]) -> list[Span]:
    """Decode again (``again``) the ``core`` speech that no kept entry covers for at least :data:`COVERAGE_MIN_S`:
    ``redecode(samples, prompt=, max_new_tokens=, check_context=)`` is the decode of such a span
    (``transcribe.decode`` without a coverage pass of its own). What it finds is added to ``entries``, ``dropped``
    and ``doubtful`` (in place).
    Returns the speech still uncovered, each span with why."""
    stretched = [e for e in entries if _stretched(e)] if again else []
    found: list[Entry] = []  # entries this pass adds

    def covered(skip: list[Entry] = ()) -> list[tuple[int, int]]:
        slack = COVER_SLACK_MS * 16
        spans = [(e.seg.t0_ms * 16 - slack, e.seg.t1_ms * 16 + slack) for e in entries
                 if not any(e is x for x in skip)]
        return spans + [(d.t0_ms * 16, d.t1_ms * 16) for d in dropped if d.lang]

    def decode_span(a: int, b: int, prompt: list[int] | None) -> None:
        m = int(COVERAGE_MARGIN_S * 16000)
        w0, w1 = max(0, a - m), min(len(samples), b + m)
        # its language is checked on the chunk's audio around it (rules._context: 8-10 s, mostly enough speech
        # for the cheap check), not on the span alone padded to Whisper's 30 s (~0.5 s CPU a span)
        sub = redecode(samples[w0:w1], prompt=prompt, max_new_tokens=_cover_tokens(w1 - w0, vocabulary),
                       check_context=(samples, core, w0))
        off = w0 * 1000 // 16000
        for e in _entries_of(sub):
            t0, t1 = e.seg.t0_ms + off, e.seg.t1_ms + off
            inside = min(t1, b // 16) - max(t0, a // 16)
            if inside * 2 < max(1, t1 - t0) or any(_key(x.seg.text) == _key(e.seg.text)
                                                   for x in entries if abs(x.seg.t0_ms - t0) < 5000):
                continue
            if (unsure := _unsure_recovery(e)) is not None:  # Whisper itself thinks nothing was said
                dropped.append(dropped_text(t0, t1, unsure, e.seg.text))
                continue
            found.append(e.shifted(off))
            entries.append(found[-1])
        dropped.extend(d.shifted(off, reason=d.reason + " (speech decoded again)") for d in sub.dropped)
        doubtful.extend(d.shifted(off) for d in sub.doubtful)

    unheard: list[tuple[int, int]] = []  # spans not decoded again: no window of them reaches the VAD's threshold
    for a, b in (uncovered(core, covered(stretched), int(COVERAGE_MIN_S * 16000)) if again else []):
        if not heard(samples, a, b):
            unheard.append((a, b))
            continue
        # the text kept before it is its context (not the prompt this audio came with: a prompt that sent
        # Whisper into a loop would do it again)
        before = [t for e in entries if e.seg.t1_ms * 16 <= a for t in e.tokens]
        decode_span(a, b, before[-PROMPT_TOKENS:] or None)
        if before:  # prompted, Whisper can jump over a passage here too (RETRY_MIN_S)
            for a2, b2 in uncovered([(a, b)], covered(stretched), int(RETRY_MIN_S * 16000)):
                decode_span(a2, b2, None)
    _settle_stretched(entries, dropped, stretched, found)
    still = uncovered(core, covered(), int(COVERAGE_MIN_S * 16000))
    return [Span(a // 16, b // 16, _gap_reason(a, b, dropped, again, unheard)) for a, b in still]


def _stretched(e: Entry) -> bool:
    """A kept segment with a word aligned over more than :data:`STRETCHED_WORD_S`."""
    return any(w.t1_ms - w.t0_ms > STRETCHED_WORD_S * 1000 for w in e.words)


def _settle_stretched(entries: list[Entry], dropped: list[Span], stretched: list[Entry],
                      found: list[Entry]) -> None:
    """Each segment with a stretched word (:func:`_stretched`) against what decoding its speech again found
    (``found``, already in ``entries``): where that decode has at least :data:`STRETCH_MIN_SHARE` of its word
    count within its span, the segment is dropped as text (its speech is transcribed by the new segments);
    else the new segments within its span are dropped and it stays as it was. Either way no speech is left with
    two transcripts, and none loses its only one. In place."""
    for s in stretched:
        t0, t1 = s.seg.t0_ms, s.seg.t1_ms
        inside = [e for e in found if e.seg.t0_ms < t1 and e.seg.t1_ms > t0]
        longest = max(w.t1_ms - w.t0_ms for w in s.words) / 1000
        loser, why = ([s], f"a word aligned over {longest:.1f} s: its speech decoded again, replaced")
        if sum(len(e.words) for e in inside) < STRETCH_MIN_SHARE * max(1, len(s.words)):
            loser, why = inside, f"decoded again inside a segment with a word aligned over {longest:.1f} s, " \
                                 "which is kept"
        for e in loser:
            entries[:] = [x for x in entries if x is not e]
            dropped.append(dropped_text(e.seg.t0_ms, e.seg.t1_ms, why, e.seg.text))


def uncovered(core: list[tuple[int, int]], covered: list[tuple[int, int]], min_len: int) -> list[tuple[int, int]]:
    """Parts of the ``core`` speech (samples) that no ``covered`` span overlaps, at least ``min_len`` long."""
    out = []
    spans = sorted(covered)
    for s, e in core:
        pos = s
        for a, b in spans:
            if b <= pos or a >= e:
                continue
            if a > pos:
                out.append((pos, a))
            pos = max(pos, b)
        if pos < e:
            out.append((pos, e))
    return [(a, b) for a, b in out if b - a >= min_len]


def _cover_tokens(n_samples: int, vocabulary: str | None) -> int | None:
    """The token cap of a span decoded again (:data:`COVER_TOKENS_PER_S`), or None where the prompt could leave it
    no room: Whisper's 448 tokens hold the prompt (its previous text, <= 223 tokens, and the vocabulary as
    hotwords, <= 223) and what it writes."""
    if vocabulary:
        return None
    return min(COVER_TOKENS_MAX, int(COVER_TOKENS_PER_S * n_samples / 16000) + COVER_TOKENS_MIN)


def unsure(n_words: int, no_speech_prob: float, mean_p: float) -> bool:
    """A segment the coverage pass finds that is not kept (:func:`_unsure_recovery`): its language is not checked."""
    return (n_words <= RECOVER_UNSURE_MAX_WORDS and no_speech_prob >= RECOVER_MAX_NO_SPEECH_P
            and mean_p < RECOVER_MIN_WORD_P)


def _unsure_recovery(e: Entry) -> str | None:
    """Why a segment the coverage pass found is not kept, or None: at most :data:`RECOVER_UNSURE_MAX_WORDS` words,
    Whisper's own no-speech probability at least :data:`RECOVER_MAX_NO_SPEECH_P` and its words' mean probability
    under :data:`RECOVER_MIN_WORD_P` (a "Yeah." written over a filler or a breath). A sentence is kept however
    unsure: on generated narrations the recovered scene introductions had no-speech probabilities of 0.78-0.88."""
    probs = [w.prob for w in e.words]
    mean_p = sum(probs) / len(probs) if probs else 0.0
    nsp = e.seg.no_speech_prob
    if unsure(len(e.words), nsp, mean_p):
        return (f"decoded again, not kept: no-speech probability {nsp:.2f}, word probability {mean_p:.2f} "
                "(speech decoded again)")
    return None


def _gap_reason(a: int, b: int, dropped: list[Span], decoded_again: bool, unheard: list[tuple[int, int]]) -> str:
    """Why speech [a, b) (samples) has no transcript: what was dropped over it, else Whisper wrote nothing (or it
    was not decoded again: ``unheard``, the tail of a voice-activity region with no speech heard in it)."""
    over = [d for d in dropped if d.t0_ms * 16 < b and d.t1_ms * 16 > a]
    if over:
        return "dropped: " + over[0].reason
    if any(x < b and y > a for x, y in unheard):
        return "no words: the tail of a voice-activity region, no speech heard in it (not decoded again)"
    return "decoded again: no words" if decoded_again else "no words"


def _entries_of(out: Decoded) -> list[Entry]:
    """A decode's kept segments as entries (segment, its words, its tokens), for merging."""
    by_seq: dict[int, list[Word]] = {}
    for w in out.words:
        by_seq.setdefault(w.seq, []).append(w)
    toks = out.seg_tokens or tuple(() for _ in out.segments)
    return [Entry(s, tuple(by_seq.get(s.seq, [])), t) for s, t in zip(out.segments, toks)]

"""The recording's language, decided on its whole speech beside the per-segment check (``rules.py``).

An English-only model writes fluent English over speech it cannot understand ("We are going to see what we are
going to see.", word probability up to 0.9): per segment, such text is not always doubtful enough to be checked,
and what is checked may be too short to tell. So the multilingual model also hears the recording's speech itself
(its voice activity, the silences left out, in Whisper's 30-s windows, as it was trained), and where it hears no
English in any of them, nothing the English-only model wrote is kept: every segment is dropped with the language
as its reason, the transcript's language is the one heard, and its reason says to use ``--model base``.

Two ways a recording is called not English (:func:`decide`):

* confidently: every window's language is another one with P(en) < ``rules.LANGUAGE_CHECK_MIN_P`` (the rule of the
  per-segment check);
* unsurely: no window's P(en) reaches :data:`ENGLISH_P` and the drop rules already rejected most of what the
  English model wrote over the speech (loops, impossible timing, language; at least :data:`REJECTED_SHARE` of its
  words), or the English model is unsure of the words it kept
  (mean probability under :data:`UNSURE_WORD_P`). Synthetic Portuguese and Mandarin voices (espeak-ng) were
  heard as English with P(en) 0.21 and 0.53-0.62, while tiny.en looped over them (105 of 135 and 106 of 112
  words dropped) or wrote number salad at a mean word probability of 0.52; English speech of the evaluation
  clips had P(en) >= 0.82 on its windows and no such drops (the narrations: word probability 0.91-0.94).

A window with P(en) >= ENGLISH_P ends the check: a recording with English in it (English, then German) keeps the
per-segment rules alone, so its English stays. On English speech that costs one check (~0.5 s CPU on the
multilingual base model over one padded window).
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from talkthrough_assets.model.transcript import Decoded, Evidence
from talkthrough_assets.stages.segments import rules
from talkthrough_assets.stages.segments.rules import dropped_text

SR = 16000
WINDOW_S = 30.0  # Whisper's window: the language is detected on it as the model was trained
MAX_WINDOWS = 5  # windows checked at most, spread over the speech (the first one always)
MIN_SPEECH_S = 1.0  # less speech than this is not judged as a whole
ENGLISH_P = 0.7  # a window whose P(en) reaches this has English in it
REJECTED_SHARE = 0.6  # the unsure way: the share of the English model's words over speech the drop rules rejected
UNSURE_WORD_P = 0.6  # ... or the English model's kept words have a mean probability under this
NO_SPEECH_DROP = "no speech"  # drops over silence (the VAD gate) say nothing about the language


def speech_windows(samples: np.ndarray, core: list[tuple[int, int]]) -> list[np.ndarray]:
    """The speech of ``core`` (sample ranges), silences left out, cut into WINDOW_S pieces: up to MAX_WINDOWS of
    them, evenly spread, the first one first. A last piece shorter than a quarter window is left out when
    there are others."""
    if not core:
        return []
    speech = np.concatenate([samples[a:b] for a, b in core])
    size = int(WINDOW_S * SR)
    pieces = [speech[i:i + size] for i in range(0, len(speech), size)]
    if len(pieces) > 1 and len(pieces[-1]) < size // 4:
        pieces.pop()
    if len(pieces) <= MAX_WINDOWS:
        return pieces
    picks = np.linspace(0, len(pieces) - 1, MAX_WINDOWS).round().astype(int)
    return [pieces[i] for i in dict.fromkeys(picks.tolist())]


def hear(samples: np.ndarray, core: list[tuple[int, int]], check) -> list[dict]:
    """{"lang", "p", "p_en", "other", "p_other"} of each of :func:`speech_windows` (the language leading, P(en),
    and the best language that is not English), by ``check`` (``engine.language_checker``) on the padded window;
    stops after the first window with English in it (P(en) >= ENGLISH_P)."""
    if sum(b - a for a, b in core) < MIN_SPEECH_S * SR:
        return []
    out = []
    for piece in speech_windows(samples, core):
        ranked = check(piece, padded=True, ranked=True)
        other = next(((k, p) for k, p in ranked if k != "en"), ("", 0.0))
        out.append({"lang": ranked[0][0], "p": ranked[0][1], "p_en": dict(ranked).get("en", 0.0),
                    "other": other[0], "p_other": other[1]})
        if out[-1]["p_en"] >= ENGLISH_P:
            break
    return out


def rejected_share(out: Decoded) -> float:
    """The share of the words the English model wrote over speech that were rejected: dropped by the drop rules
    (over silence aside), or kept as a segment that only says again what a kept segment before it said (a loop
    spread over segments: "One day I told you" six times over a Portuguese voice)."""
    rejected = sum(d.word_count for d in out.dropped if not d.reason.startswith(NO_SPEECH_DROP))
    said: set[str] = set()
    total = rejected + len(out.words)
    for s in out.segments:
        key = rules._norm_text(s.text)
        if key in said:
            rejected += len(s.text.split())
        said.add(key)
    return min(1.0, rejected / total) if total else 0.0


def decide(heard: list[dict], rejected: float, word_p: float = 1.0) -> dict | None:
    """{"language", "p", "p_en", "how", "rejected"} when the recording is not English (see the module's doc), else
    None. ``rejected``: :func:`rejected_share`; ``word_p``: the mean probability of the English model's kept words.
    The language is the non-English one that leads most windows, p its mean probability there."""
    if not heard or any(h["p_en"] >= ENGLISH_P for h in heard):
        return None
    confident = all(h["lang"] != "en" and h["p_en"] < rules.LANGUAGE_CHECK_MIN_P for h in heard)
    unsure_words = word_p < UNSURE_WORD_P
    if not confident and rejected < REJECTED_SHARE and not unsure_words:
        return None
    names = [h["other"] for h in heard]
    lang = max(dict.fromkeys(names), key=names.count)
    p = float(np.mean([h["p_other"] for h in heard if h["other"] == lang]))
    return {"language": lang, "p": round(p, 3), "p_en": round(max(h["p_en"] for h in heard), 4),
            "how": "confident" if confident else "unsure", "rejected": round(rejected, 3)}


def drop_all(out: Decoded, verdict: dict, model_label: str | None) -> Decoded:
    """``out`` (``chunks.assemble``'s parts, before ``transcribe.finish``) with every kept segment dropped, the
    recording's language as the reason; the transcript's language becomes the one heard, and its reason says
    so in one line."""
    lang = verdict["language"]
    why = (f"the recording's spoken language is {lang} (p={verdict['p']:.2f}, P(en)={verdict['p_en']:.3f}); "
           f"the English-only model {model_label} cannot transcribe it")
    evidence = Evidence(**{k: verdict[k] for k in ("language", "p", "p_en", "how", "rejected")})
    dropped = list(out.dropped) + [
        dropped_text(s.t0_ms, s.t1_ms, why, s.text, lang=lang, words=sum(1 for w in out.words if w.seq == s.seq),
                     evidence=evidence) for s in out.segments]
    dropped.sort(key=lambda d: d.t0_ms)
    reason = (f"no English speech: spoken language {lang} (p={verdict['p']:.2f}) in the whole recording; "
              "use --model base" if verdict["p"] >= 0.5 else
              f"no English speech: spoken language not English in the whole recording (perhaps {lang}, "
              f"p={verdict['p']:.2f}); use --model base")
    return replace(out, segments=(), words=(), doubtful=(), dropped=tuple(dropped), language=lang,
                   language_probability=verdict["p"], reason=reason)


def judge(out: Decoded, samples: np.ndarray, core: list[tuple[int, int]], check,
          model_label: str | None) -> Decoded:
    """Decide the recording's language (:func:`hear`, :func:`decide`) and, when it is not English, drop what
    the English-only model wrote (:func:`drop_all`). Returns ``out``, or what is left of it."""
    rejected = rejected_share(out)
    probs = [w.prob for w in out.words]
    word_p = float(np.mean(probs)) if probs else 0.0
    verdict = decide(hear(samples, core, check), rejected, word_p) if out.words or rejected else None
    return drop_all(out, verdict, model_label) if verdict is not None else out

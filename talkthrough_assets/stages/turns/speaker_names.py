"""Speaker names, pure: OCR-derived name candidates (hints, never applied on their own) and the
``LABEL=NAME`` assignments of ``talkthrough name``.

Candidates need both the speaker turns and the OCR text, so they are computed by the manifest stage
(the one stage downstream of both ``turns`` and ``ocr``): a re-OCR or a diarize amend re-runs only
what it must, and neither re-runs the other.
"""

from __future__ import annotations

import re
from typing import Any, Iterable, Mapping, Sequence

from talkthrough_assets.core.errors import UsageError
from talkthrough_assets.model.speakers import MAX_CANDIDATES
from talkthrough_assets.model.turns import Turn
from talkthrough_assets.stages.turns.labels import label_num, labels_in_order, overlap_ms, talk_ms

# --------------------------------------------------------------------------- OCR name candidates

MAX_CANDIDATE_CHARS = 80
MAX_NAME_WORDS = 4

# Words that make a line UI chrome (meeting apps, players, browsers, editors), compared lowercased.
UI_CHROME = frozenset("""
file edit view window help tools insert format history bookmarks go run terminal selection debug
mute unmute muted microphone mic camera video audio share sharing screen stop start record recording
rec chat participants participant people leave end join meeting meetings call settings options
more reactions react raise hand hands breakout rooms captions transcript live host co-host cohost
you me guest presenter presenting speaker speaking admit waiting lobby security polls apps whiteboard
notes search home back forward reload close minimize maximize new open save cancel ok yes no apply
send reply copy paste cut undo redo delete menu tab tabs sign login logout log in out account
profile status online offline away busy available connected connecting reconnecting dashboard
loading error warning success done next previous page slide slides untitled document sheet
everyone all private public team teams channel channels activity calendar files zoom meet webex
google microsoft slack discord skype facetime gallery speaker view fullscreen full pin unpin
spotlight layout background blur filters effects noise suppression level volume
""".split())
_URL_RE = re.compile(r"(https?://|www\.|\.(com|org|net|io|dev|app|ai|co|edu|gov)\b|@|/|\\)", re.I)
_NAME_WORD_RE = re.compile(r"^[^\W\d_][^\W\d_'’.\-]*(?:['’.\-][^\W\d_]+)*\.?$")
_PAREN_SUFFIX_RE = re.compile(r"\s*[\(\[][^)\]]{0,20}[\)\]]\s*$")


def clean_name_candidate(line: str) -> str | None:
    """A plausible person name from one OCR line, or None (UI chrome, digits, URLs, long copy)."""
    s = " ".join((line or "").split())
    s = _PAREN_SUFFIX_RE.sub("", s).strip(" -–—:|•·,;")  # "Alice Chen (Host)" -> "Alice Chen"
    if not s or len(s) > MAX_CANDIDATE_CHARS or len(s) < 2:
        return None
    if any(ch.isdigit() for ch in s) or _URL_RE.search(s):
        return None
    if s[-1] in ".!?" and not re.search(r"\b[A-Z]\.$", s):  # sentence punctuation: copy, not a name
        return None
    words = s.split()
    if len(words) > MAX_NAME_WORDS:
        return None
    if not all(_NAME_WORD_RE.match(w) for w in words):
        return None
    if not all(w[0].isupper() for w in words):
        return None
    if len(s.replace(" ", "")) > 3 and s.isupper():  # ALL-CAPS headings / buttons
        return None
    if all(w.lower().strip(".") in UI_CHROME for w in words) or any(w.lower() in {"the", "and", "of"} for w in words):
        return None
    return s


def _frames(ocr: Iterable) -> list[tuple[int, str]]:
    """(ms, text) of each OCR'd frame: ``ocr`` rows as mappings, records (``ms``, ``text``) or pairs."""
    out = []
    for r in ocr or []:
        if isinstance(r, Mapping):
            ms, text = r["ms"], r.get("text")
        elif hasattr(r, "ms"):
            ms, text = r.ms, r.text
        else:
            ms, text = r[0], r[1]
        out.append((int(ms), text or ""))
    return sorted(out)


def _turn(t: Turn | Mapping[str, Any]) -> Turn:
    """A ``turns`` row as its record: the manifest stage may hand its stored rows as mappings."""
    return t if isinstance(t, Turn) else Turn(int(t["t0_ms"]), int(t["t1_ms"]), t["speaker"])


def name_candidates(turns: Sequence[Turn | Mapping[str, Any]], ocr: Iterable, *,
                    limit: int = MAX_CANDIDATES) -> dict[str, list[str]]:
    """Up to ``limit`` OCR name candidates per label, never applied automatically.

    A frame at ``ms`` is on screen until the next OCR'd frame (the last one until the end of the
    last turn). Each plausible-name line scores the time it is on screen during the label's turns;
    ranked by how specific it is to the label (share of its on-screen-during-speech time), then by
    that time. A line shown during more than half of every label's speech is ambient (a logo,
    a window title) unless there is only one speaker."""
    frames = _frames(ocr)
    turns = [_turn(t) for t in turns]
    if not frames or not turns:
        return {}
    end = max(t.t1_ms for t in turns)
    spans = []
    for i, (ms, text) in enumerate(frames):
        nxt = frames[i + 1][0] if i + 1 < len(frames) else max(end, ms)
        if nxt > ms:
            spans.append((ms, nxt, text))
    labels = labels_in_order(turns)
    talk = {lab: max(1, talk_ms(turns, lab)) for lab in labels}
    score: dict[str, dict[str, int]] = {}
    for a, b, text in spans:
        names = {n for line in text.splitlines() if (n := clean_name_candidate(line))}
        if not names:
            continue
        for t in turns:
            ov = overlap_ms(a, b, t.t0_ms, t.t1_ms)
            if ov:
                for n in names:
                    per = score.setdefault(n, {})
                    per[t.speaker] = per.get(t.speaker, 0) + ov
    out: dict[str, list[str]] = {}
    for lab in labels:
        ranked = []
        for n, per in score.items():
            mine = per.get(lab, 0)
            if not mine:
                continue
            if len(labels) > 1 and all(per.get(x, 0) / talk[x] > 0.5 for x in labels):
                continue  # on screen through everyone's speech: not evidence for anyone
            ranked.append((-(mine / talk[lab]) / (sum(v / talk[x] for x, v in per.items())), -mine, n))
        out[lab] = [n for *_, n in sorted(ranked)[:limit]]
    return {k: v for k, v in out.items() if v}


# --------------------------------------------------------------------------- speaker names (CLI helper)

LABEL_RE = re.compile(r"^S[1-9]\d*$")



def parse_name_assignments(pairs: Iterable[str]) -> dict[str, str | None]:
    """["S1=Alice", "S2=", ...] -> {"S1": "Alice", "S2": None}; ValueError with a clear message."""
    out: dict[str, str | None] = {}
    for p in pairs:
        if "=" not in p:
            raise UsageError(f"expected LABEL=NAME (e.g. S1=Alice) or LABEL= to remove, got {p!r}")
        label, name = p.split("=", 1)
        label = label.strip().upper()
        if not LABEL_RE.match(label):
            raise UsageError(f"speaker label must look like S1, S2 ...; got {label!r}")
        name = " ".join(name.split())
        if len(name) > MAX_CANDIDATE_CHARS:
            raise UsageError(f"name for {label} is longer than {MAX_CANDIDATE_CHARS} characters")
        out[label] = name or None
    return out


def merge_names(current: dict | None, changes: dict[str, str | None]) -> dict[str, str]:
    merged = dict(current or {})
    for label, name in changes.items():
        if name is None:
            merged.pop(label, None)
        else:
            merged[label] = name
    return dict(sorted(merged.items(), key=lambda kv: label_num(kv[0])))



__all__ = ["clean_name_candidate", "name_candidates", "parse_name_assignments", "merge_names"]

"""The evaluation set (bench/eval/manifest.json): real public speech with reference texts and speaker turns.

    import evalset
    for clip in evalset.load_manifest():            # every clip; .audio is its path in the cache
        if clip.kind == "asr" and clip.exists():     # kind: asr | non_english | diarization
            ref = evalset.words(clip.text, clip.language)
        turns = clip.turns()                         # [(start_s, end_s, speaker)], [] when none

``python bench/fetch_eval.py`` puts the audio into the cache (``$TALKTHROUGH_EVAL_CACHE`` or
``~/.cache/talkthrough-eval``); sources and licences are in bench/eval/SOURCES.md.
"""

from __future__ import annotations

import json
import os
import re
import unicodedata
from dataclasses import dataclass, field
from pathlib import Path

MANIFEST = Path(__file__).resolve().parent / "eval" / "manifest.json"
KINDS = ("asr", "non_english", "diarization")


def default_cache() -> Path:
    return Path(os.environ.get("TALKTHROUGH_EVAL_CACHE") or Path.home() / ".cache" / "talkthrough-eval")


@dataclass(frozen=True)
class Clip:
    id: str
    kind: str
    language: str
    audio: Path
    text: str | None
    tags: tuple[str, ...]
    licence: str
    sha256: str
    sources: tuple[dict, ...]
    duration_s: float | None = None
    # the text covers only the speech before this time; after it comes speech in another language, where an
    # English-only model should write nothing (fw_multilingual_en_de: English, then German from 30 s)
    text_until_s: float | None = None
    _turns: tuple[tuple[float, float, str], ...] = field(default=(), repr=False)

    def turns(self) -> list[tuple[float, float, str]]:
        """Reference speaker turns [(start_s, end_s, speaker)], sorted; [] when the clip has none."""
        return list(self._turns)

    @property
    def speakers(self) -> int:
        return len({s for _, _, s in self._turns})

    @property
    def rttm(self) -> Path:
        """The turns as an RTTM file next to the audio (written by fetch_eval.py)."""
        return self.audio.with_name(self.id + ".rttm")

    def exists(self) -> bool:
        return self.audio.is_file()

    def has(self, tag: str) -> bool:
        return tag in self.tags


def load_manifest(path: str | Path | None = None, cache: str | Path | None = None,
                  kind: str | None = None, tag: str | None = None) -> list[Clip]:
    """The clips of the manifest (all, or those of one ``kind`` / with one ``tag``), audio paths in ``cache``."""
    man = json.loads(Path(path or MANIFEST).read_text(encoding="utf-8"))
    root = Path(cache).expanduser() if cache else default_cache()
    out = []
    for c in man["clips"]:
        if c["kind"] not in KINDS:
            raise ValueError(f"{c['id']}: unknown kind {c['kind']!r}")
        turns = tuple(sorted((float(a), float(b), str(s)) for a, b, s in c.get("turns") or ()))
        for a, b, s in turns:
            if not b > a >= 0:
                raise ValueError(f"{c['id']}: turn {a}-{b} of {s} is not a positive interval")
        clip = Clip(id=c["id"], kind=c["kind"], language=c.get("language", "en"), audio=root / c["file"],
                    text=c.get("text"), tags=tuple(c.get("tags", ())), licence=c.get("licence", ""),
                    sha256=c["sha256"], sources=tuple(c["sources"]), duration_s=c.get("duration_s"),
                    text_until_s=c.get("text_until_s"),
                    _turns=turns)
        if (kind is None or clip.kind == kind) and (tag is None or clip.has(tag)):
            out.append(clip)
    return out


# ---------------------------------------------------------------- text normalisation for WER

_ONES = ["zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "eleven",
         "twelve", "thirteen", "fourteen", "fifteen", "sixteen", "seventeen", "eighteen", "nineteen"]
_TENS = ["", "", "twenty", "thirty", "forty", "fifty", "sixty", "seventy", "eighty", "ninety"]
_ABBR = {"mr": "mister", "mrs": "missus", "dr": "doctor", "st": "saint", "ok": "okay", "vs": "versus"}
_FILLERS = {"um", "uh", "uhm", "umm", "er", "erm", "ah", "eh", "hmm", "hm", "mm", "mhm", "uhhuh", "uhuh"}
_SYMBOLS = {"%": " percent ", "&": " and ", "+": " plus ", "=": " equals ", "×": " times ", "@": " at "}


def number_words(n: int) -> list[str]:
    """English words of 0 <= n < 10**9 ("one hundred twenty three"; no "and")."""
    if n < 20:
        return [_ONES[n]]
    if n < 100:
        return [_TENS[n // 10]] + ([_ONES[n % 10]] if n % 10 else [])
    for size, name in ((10**6, "million"), (1000, "thousand"), (100, "hundred")):
        if n >= size:
            rest = n % size
            return number_words(n // size) + [name] + (number_words(rest) if rest else [])
    raise AssertionError(n)


def year_words(n: int) -> list[str]:
    """How a year is read: 1813 -> eighteen thirteen, 1900 -> nineteen hundred, 2015 -> twenty fifteen."""
    hi, lo = divmod(n, 100)
    if lo == 0:
        return number_words(hi) + ["hundred"]
    return number_words(hi) + (["oh"] + number_words(lo) if lo < 10 else number_words(lo))


def _is_cjk(ch: str) -> bool:
    o = ord(ch)
    return (0x3040 <= o <= 0x30FF or 0x3400 <= o <= 0x9FFF or 0xF900 <= o <= 0xFAFF
            or 0xAC00 <= o <= 0xD7AF or 0x1100 <= o <= 0x11FF)


def words(text: str | None, language: str = "en") -> list[str]:
    """Words to score WER on: Unicode NFKC, lower case, punctuation dropped (apostrophes inside words kept,
    hyphens and slashes split words), a few symbols spelt out; for English, numbers up to 10**9 spelt out
    ("60" -> "sixty", "12%" -> "twelve percent"; four digits 1100-1999 and 2010-2099 read as years, "1813" ->
    "eighteen thirteen"), digit groups joined ("600,000"), and mr/mrs/dr/ok
    expanded, filled pauses (um, uh, hmm, ...) and bracketed annotation marks (<noise>, [laughter]) dropped.
    Chinese, Japanese and Korean characters count one token each (a character error rate)."""
    if not text:
        return []
    t = unicodedata.normalize("NFKC", text).lower().replace("’", "'").replace("‘", "'")
    t = re.sub(r"<[^<>]*>|\[[^\[\]]*\]", " ", t)  # annotation marks: <vocnoise>, [laughter]
    en = language.split("-")[0] == "en"
    if en:
        t = re.sub(r"(?<=\d)[,.](?=\d{3}\b)", "", t)  # 600,000 -> 600000
    for sym, rep in _SYMBOLS.items():
        t = t.replace(sym, rep if en else " ")
    t = re.sub(r"[-/_]", " ", t)
    t = "".join(ch if (ch.isalnum() or ch in "' " or unicodedata.category(ch).startswith("M")) else " "
                for ch in t)
    out: list[str] = []
    for w in t.split():
        w = w.strip("'")
        if not w:
            continue
        if any(_is_cjk(ch) for ch in w):
            out += [ch for ch in w if not ch.isspace()]
        elif en and w.isdigit() and len(w) == 4 and (1100 <= int(w) <= 1999 or 2010 <= int(w) <= 2099):
            out += year_words(int(w))
        elif en and w.isdigit() and len(w) <= 9:
            out += number_words(int(w))
        elif en and re.fullmatch(r"\d+(st|nd|rd|th)", w):
            out.append(w)
        elif en and w in _FILLERS:
            continue
        elif en and w == "yknow":
            out += ["you", "know"]
        else:
            out.append(_ABBR.get(w, w) if en else w)
    return out


def edit_distance(ref: list[str], hyp: list[str]) -> int:
    """Word-level Levenshtein distance (substitutions + deletions + insertions)."""
    prev = list(range(len(hyp) + 1))
    for i, r in enumerate(ref, 1):
        cur = [i] + [0] * len(hyp)
        for j, h in enumerate(hyp, 1):
            cur[j] = min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (r != h))
        prev = cur
    return prev[-1]


def wer(ref: str, hyp: str, language: str = "en") -> float:
    r = words(ref, language)
    return edit_distance(r, words(hyp, language)) / max(1, len(r))


def summary(clips: list[Clip]) -> dict:
    """Counts by kind, language and tag, the audio seconds, and the clips missing from the cache."""
    out: dict = {"clips": len(clips), "kinds": {}, "languages": {}, "tags": {}, "seconds": 0.0, "missing": []}
    for c in clips:
        out["kinds"][c.kind] = out["kinds"].get(c.kind, 0) + 1
        out["languages"][c.language] = out["languages"].get(c.language, 0) + 1
        for t in c.tags:
            out["tags"][t] = out["tags"].get(t, 0) + 1
        out["seconds"] += c.duration_s or 0.0
        if not c.exists():
            out["missing"].append(c.id)
    out["seconds"] = round(out["seconds"], 1)
    return out


if __name__ == "__main__":  # python bench/evalset.py: what the set holds and what the cache lacks
    s = summary(load_manifest())
    print(f"{s['clips']} clips, {s['seconds'] / 60:.1f} min of audio, cache {default_cache()}")
    for key in ("kinds", "languages", "tags"):
        print(f"{key}: " + ", ".join(f"{k} {v}" for k, v in sorted(s[key].items(), key=lambda kv: -kv[1])))
    print(f"missing from the cache: {len(s['missing'])}" + (" (python bench/fetch_eval.py)" if s["missing"] else ""))

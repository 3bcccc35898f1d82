"""How a speaker label's hints read: the name candidates shown to an agent, and a voice match in words."""

from __future__ import annotations

MAX_CANDIDATES = 3  # name candidates kept per speaker label


def hints(candidates: dict[str, list[str]], confirmed: dict[str, str] | None = None,
          *, limit: int = MAX_CANDIDATES) -> dict[str, list[str]]:
    """What to show an agent: candidates of the labels with no confirmed name, minus names that are
    another label's top candidate (a tile that switched late) unless that is the label's own top."""
    confirmed = confirmed or {}
    tops = {lab: c[0] for lab, c in candidates.items() if c}
    out = {}
    for lab, cands in candidates.items():
        if lab in confirmed or not cands:
            continue
        others = {n for other, n in tops.items() if other != lab}
        keep = [cands[0]] + [n for n in cands[1:] if n not in others]
        out[lab] = keep[:limit]
    return out


def describe_match(match) -> str:
    """``voice match 0.86 to Alice Chen, 3 recordings`` (+ ``, applied`` when the name was applied by voice), of a
    match record (``person``, ``score``, ``recordings`` and, once the manifest decided, ``applied``)."""
    n = int(match.recordings or 0)
    return (f"voice match {float(match.score):.2f} to {match.person}, {n} recording{'s' if n != 1 else ''}"
            + (", applied" if getattr(match, "applied", False) else ""))

#!/usr/bin/env python3
"""How much speech the language check needs before its verdict is evidence.

    python bench/bench_language_id.py [--durations 1,1.5,2,3,4,6,8] [--per-clip 2] [--json FILE]

For every clip of the evaluation set (bench/eval, ``python bench/fetch_eval.py``) in English (kind ``asr``,
the English part of mixed-language clips only) and in other languages (``non_english``): windows of each
duration, starting where voice activity starts, are given to the segments stage's language check
(``segments_engine.language_checker``, the multilingual base model) both ways: on the window's own frames (the
cheap default) and padded to Whisper's 30-s window. Printed per duration and way:

* English windows called another language by the rule that would drop their text (default way: p >= 0.8 and
  P(en) < 0.05; padded way: P(en) < ``LANGUAGE_SHORT_MAX_P_EN``): ``LANGUAGE_MIN_SPEECH_S`` is the shortest
  duration at which the default way does so on under 1 % of English windows;
* other-language windows the same rule catches (what keeps English text from being invented over them).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from bench_asr import _decode  # noqa: E402


def windows(n: int, core, dur_s: float, per_clip: int, limit_s: float | None) -> list[tuple[int, int]]:
    """Up to ``per_clip`` windows of ``dur_s`` starting at voice-activity starts, not overlapping."""
    out, end = [], -1
    w = int(dur_s * 16000)
    for a, _ in core:
        if a < end or a + w > n or (limit_s is not None and a + w > limit_s * 16000):
            continue
        out.append((a, a + w))
        end = a + w
        if len(out) >= per_clip:
            break
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--durations", default="1,1.5,2,3,4,6,8")
    ap.add_argument("--per-clip", type=int, default=2)
    ap.add_argument("--json")
    args = ap.parse_args()
    import evalset

    from talkthrough_assets.stages.segments import engine as segments_engine
    from talkthrough_assets.stages.segments import rules as segments_rules

    check = segments_engine.language_checker(segments_engine.default_whisper())
    if check is None:
        sys.exit("the multilingual base model is not installed")
    durs = [float(x) for x in args.durations.split(",")]
    rows = []
    clips = [c for c in evalset.load_manifest() if c.exists() and c.kind in ("asr", "non_english")]
    for k, c in enumerate(clips, 1):
        english = c.kind == "asr"
        x = _decode(c.audio)
        core = segments_rules.core_speech(segments_rules.speech_regions(x))
        for d in durs:
            for a, b in windows(len(x), core, d, args.per_clip, c.text_until_s if english else None):
                for padded in (False, True):
                    lang, p, p_en = check(x[a:b], padded=padded)
                    other = (lang != "en" and p_en < segments_rules.LANGUAGE_SHORT_MAX_P_EN) if padded else \
                        (lang != "en" and p >= segments_rules.LANGUAGE_CHECK_MIN_TOP_P and p_en < segments_rules.LANGUAGE_CHECK_MIN_P)
                    rows.append({"clip": c.id, "english": english, "dur": d, "padded": padded, "lang": lang,
                                 "p": round(p, 3), "p_en": round(p_en, 4), "other": other})
        print(f"  {k}/{len(clips)} {c.id}", file=sys.stderr, flush=True)
    print(f"{len(clips)} clips; up to {args.per_clip} windows per clip and duration")
    print(f"{'dur s':>6} {'way':7} {'EN windows':>10} {'EN called other':>16} {'min P(en) EN':>13} "
          f"{'other windows':>14} {'other caught':>13} {'max P(en) other':>16}")
    for d in durs:
        for padded in (False, True):
            sel = [r for r in rows if r["dur"] == d and r["padded"] == padded]
            en = [r for r in sel if r["english"]]
            ot = [r for r in sel if not r["english"]]
            bad = [r for r in en if r["other"]]
            ok = [r for r in ot if r["other"]]
            print(f"{d:6.1f} {'padded' if padded else 'own':7} {len(en):10d} {len(bad):8d} "
                  f"({100 * len(bad) / max(1, len(en)):4.1f}%) {min([r['p_en'] for r in en] or [0]):13.3f} "
                  f"{len(ot):14d} {len(ok):6d} ({100 * len(ok) / max(1, len(ot)):4.1f}%) "
                  f"{max([r['p_en'] for r in ot] or [0]):16.3f}")
        print(f"{'':6}   misjudged English ({d:g} s): "
              + ", ".join(f"{r['clip']}{'/pad' if r['padded'] else ''}={r['lang']}"
                          for r in rows if r["dur"] == d and r["english"] and r["other"]))
    own_ok = [d for d in durs if (lambda en: en and sum(r["other"] for r in en) / len(en) < 0.01)(
        [r for r in rows if r["dur"] == d and not r["padded"] and r["english"]])]
    print(f"shortest duration with < 1 % of English windows misjudged (own frames): "
          f"{min(own_ok) if own_ok else 'none'} s (LANGUAGE_MIN_SPEECH_S = {segments_rules.LANGUAGE_MIN_SPEECH_S})")
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=0))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

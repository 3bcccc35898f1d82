"""A chunk's Whisper result as the JSON object ``chunks.pack`` stores (checksummed and compressed there): the
records of :mod:`talkthrough_assets.model.transcript` converted at the cache's edge. The layout is the one of
``chunks.CHUNK_FORMAT``: the keys a result had before it was a record, so a result stored by either reads."""

from __future__ import annotations

import dataclasses

from talkthrough_assets.model.transcript import Decoded, Segment, Word, spans


def to_payload(result: Decoded) -> dict:
    """``result`` as the JSON object a chunk's stored result holds."""
    meta = {"available": True, "reason": result.reason, "language": result.language,
            "language_probability": result.language_probability, "model": result.model,
            "segment_count": len(result.segments), "word_count": len(result.words), "audio_ms": result.audio_ms,
            "elapsed_s": result.elapsed_s, "dropped_count": len(result.dropped), "dropped": "[]"}
    payload = {"meta": meta, "segments": [dataclasses.asdict(s) for s in result.segments],
               "words": [dataclasses.asdict(w) for w in result.words], "speech_ms": result.speech_ms,
               "core_ms": [list(c) for c in result.core_ms], "english_only": result.english_only,
               "tail": list(result.tail)}
    for kind in ("dropped", "doubtful", "uncovered"):
        payload[kind] = [{k: v for k, v in dataclasses.asdict(x).items() if v is not None}
                         for x in getattr(result, kind)]
        for x in payload[kind]:
            if "evidence" in x:
                x["evidence"] = {k: v for k, v in x["evidence"].items() if v is not None}
    if result.recontext:
        payload["recontext"] = True
    return payload


def from_payload(p: dict) -> Decoded:
    """A chunk's result from its stored JSON object (this layout, or the one stored before it: the same keys);
    KeyError, TypeError or ValueError when it is not one."""
    m = p.get("meta") or {}
    return Decoded(
        model=m.get("model"), audio_ms=int(m.get("audio_ms") or 0), reason=m.get("reason"),
        language=m.get("language"), language_probability=m.get("language_probability"),
        elapsed_s=float(m.get("elapsed_s") or 0.0), segments=tuple(Segment(**s) for s in p["segments"]),
        words=tuple(Word(**w) for w in p["words"]), dropped=spans(p.get("dropped")),
        doubtful=spans(p.get("doubtful")), uncovered=spans(p.get("uncovered")),
        english_only=bool(p.get("english_only")), speech_ms=int(p.get("speech_ms") or 0),
        core_ms=tuple((int(a), int(b)) for a, b in p.get("core_ms") or ()), tail=tuple(p.get("tail") or ()),
        recontext=bool(p.get("recontext")))


__all__ = ["to_payload", "from_payload"]

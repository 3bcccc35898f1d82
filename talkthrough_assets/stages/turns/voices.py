"""Recognising enrolled people by voice: each diarized label's voiceprint compared (cosine) with
every enrolled person's voice.

A person's voice is the speech-weighted, unit-norm mean of the voiceprints that named them (the ``people``
table: one row per recording and label a person named, with a copy of that voiceprint). A label with no
confirmed name whose voiceprint is at least SUGGEST_SIMILARITY like a person's gets a hint ("voice match
0.86 to Alice Chen, 3 recordings"); at least APPLY_SIMILARITY, and with the ``apply_voice_names`` setting
on, the name is applied, recorded as applied by voice. Both thresholds were chosen on evaluation data
(``python bench/bench_voices.py``), not by hand.

The manifest stage calls :func:`matches_for` (its recognition, on every build); :func:`hints_changed` tells
``plan()`` that enrolments changed since the published manifest, so only the manifest re-runs.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Iterable, Mapping, Sequence

from talkthrough_assets import store
from talkthrough_assets.model.manifest import Manifest, VoiceMatch
from talkthrough_assets.model.turns import Enrolment, Recognition, Voiceprint
from talkthrough_assets.stages.turns.labels import label_num

# chosen with bench/bench_voices.py on its speaker-ID set (55 recordings, 74 labels, 18 people enrolled, 34
# never enrolled): suggest = the lowest threshold whose false suggestions stay <= 1 % of labels (0.72; 0.73 when
# chosen on one enrolment round alone, no false suggestion on the other); apply = the lowest with none at all,
# rounded up to 0.05. Short-window CAM++ centroids of different voices reach 0.70 (flite rms vs awb)
SUGGEST_SIMILARITY = 0.72
APPLY_SIMILARITY = 0.75
SCORE_DIGITS = 2


@dataclass(frozen=True)
class Person:
    name: str
    vector: Any                      # unit-norm numpy vector
    recordings: tuple[str, ...]      # recordings with a voiceprint that named them
    speech_ms: int
    sources: tuple[tuple[str, str], ...]  # (recording, label)


def profiles(rows: Iterable[tuple[str, Enrolment]]) -> list[Person]:
    """People from ``people`` rows (each with its recording): their voices, recordings and speech. Pure."""
    import numpy as np

    acc: dict[str, dict] = {}
    for rec, r in rows:
        emb = r.embedding
        if not r.person or emb is None or not len(emb):
            continue
        a = acc.setdefault(r.person, {"sum": None, "recs": set(), "ms": 0, "src": []})
        w = max(1, int(r.speech_ms or 0))
        v = np.asarray(emb, dtype=np.float64) * w
        a["sum"] = v if a["sum"] is None else a["sum"] + v
        a["recs"].add(rec)
        a["ms"] += int(r.speech_ms or 0)
        a["src"].append((rec, r.label))
    out = []
    for name, a in sorted(acc.items()):
        n = float(np.linalg.norm(a["sum"]))
        if n > 0:
            out.append(Person(name, a["sum"] / n, tuple(sorted(a["recs"])), a["ms"], tuple(sorted(a["src"]))))
    return out


def recognise(voiceprints: Sequence[Voiceprint], people: Sequence[Person], *, confirmed: dict[str, str] | None = None,
              suggest: float = SUGGEST_SIMILARITY, apply: float = APPLY_SIMILARITY,
              rid: str | None = None) -> dict[str, Recognition]:
    """{label: its :class:`Recognition`} for labels without a confirmed name whose voice
    is >= ``suggest`` like an enrolled person's (the best one). A person confirmed for another label of this
    recording, or already suggested for a likelier label, is not suggested again. ``applicable``: score >=
    ``apply``. Voiceprints that named a person in this very recording (``rid``) count for that person only
    when the label is another one. Pure."""
    import numpy as np

    confirmed = confirmed or {}
    taken = {n.casefold() for n in confirmed.values()}
    cands = [p for p in people if p.name.casefold() not in taken]
    if not cands:
        return {}
    m = np.stack([p.vector for p in cands])
    scored = []
    for vp in voiceprints:
        lab = vp.label
        if lab in confirmed or vp.embedding is None:
            continue
        v = np.asarray(vp.embedding, dtype=np.float64)
        n = float(np.linalg.norm(v))
        if n == 0:
            continue
        sims = m @ (v / n)
        for k in np.argsort(-sims):
            if (rid, lab) in cands[k].sources:  # its own enrolment (a label named, then unnamed): not evidence
                continue
            if sims[k] >= suggest:
                scored.append((float(sims[k]), lab, cands[k]))
            break
    out: dict[str, Recognition] = {}
    used: set[str] = set()
    for s, lab, p in sorted(scored, key=lambda x: (-x[0], label_num(x[1]))):
        if p.name in used:
            continue
        used.add(p.name)
        out[lab] = Recognition(person=p.name, score=round(s, SCORE_DIGITS), recordings=len(p.recordings),
                               applicable=s >= apply)
    return dict(sorted(out.items(), key=lambda kv: label_num(kv[0])))


# --------------------------------------------------------------------------- stored people and voiceprints

PEOPLE_TABLE = "people"


def people_recordings() -> list[str]:
    """Recordings with a ``people`` partition (someone was named there)."""
    prefix = store.partition_key(PEOPLE_TABLE, store.SCHEMA_PARTITION).rpartition("/")[0]
    out = []
    for n in store.list_names(prefix):
        rid = n.partition("=")[2]
        if n.startswith("recording=") and store.ID_RE.fullmatch(rid):
            out.append(rid)
    return out


def people_rows() -> list[tuple[str, Enrolment]]:
    """Every ``people`` row of every recording, each with its recording: (recording, enrolment)."""
    return [(rid, r) for rid in people_recordings() for r in store.read_rows(PEOPLE_TABLE, rid, record=Enrolment)]


def matches_for(rid: str, confirmed: dict[str, str] | None,
                people: list[Person] | None = None) -> dict[str, Recognition]:
    """The voice matches of ``rid``'s labels against everyone enrolled now ({} when nothing to compare)."""
    prints = store.read_rows("voiceprints", rid, record=Voiceprint)
    if not prints:
        return {}
    people = profiles(people_rows()) if people is None else people
    return recognise(prints, people, confirmed=confirmed, rid=rid) if people else {}


def published_matches(rid: str) -> dict[str, VoiceMatch] | None:
    """The voice matches ``rid``'s published manifest shows, by label (its bytes parsed and typed in one pass):
    none when nothing is published, it holds no diarization or is not a manifest this version reads; None when
    it could not be read (the store did not answer, or it is not JSON)."""
    try:
        raw = store.get_bytes(store.manifest_key(rid))
        di = Manifest.from_json_bytes(raw).transcript.diarization if raw is not None else None
    except (OSError, json.JSONDecodeError):
        return None
    except ValueError:
        return {}
    return {s.label: s.voice_match for s in (di.speakers if di else ()) if s.voice_match}


def _key(matches: Mapping[str, Recognition | VoiceMatch]) -> dict:
    return {lab: (m.person, m.score, m.recordings, bool(m.applicable)) for lab, m in matches.items()}


def hints_changed(rid: str, confirmed: dict[str, str] | None, people: list[Person] | None = None) -> bool:
    """True when the enrolled people now give ``rid`` other voice matches than its published manifest shows
    (someone was enrolled, renamed or forgotten since): its manifest is stale. Cheap when nothing is enrolled
    and nothing was shown."""
    if not store.has_partition("voiceprints", rid):
        return False
    shown = published_matches(rid)
    if shown is None:
        return False
    if not shown and not people_recordings():
        return False
    return _key(matches_for(rid, confirmed, people)) != _key(shown)


__all__ = ["SUGGEST_SIMILARITY", "APPLY_SIMILARITY", "Person", "profiles", "recognise", "people_rows",
           "people_recordings", "matches_for", "published_matches", "hints_changed"]

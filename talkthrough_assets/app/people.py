"""People across recordings: enrolling a named speaker's voice, listing, forgetting and renaming
people, and re-checking the recordings whose voice matches that changes.

A person is enrolled when ``talkthrough name ID S1="Alice Chen"`` names a label that has a voiceprint: the
recording's ``people`` partition gets (person, label, when, a copy of the voiceprint). Everything else is
derived: the people list, each person's voice (:mod:`stages.turns.voices`) and the matches the manifest
stage shows. A change re-materializes only ``manifest`` of the recordings whose matches change (``turns``
never re-runs); a recording that was busy is caught by ``plan()`` (:func:`voices.hints_changed`).
"""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime, timezone
from typing import Callable

from talkthrough_assets.core.errors import UsageError
from talkthrough_assets.pipeline import settings as S
from talkthrough_assets import store
from talkthrough_assets.model.turns import Enrolment, Voiceprint
from talkthrough_assets.stages.turns import voices

TABLE = voices.PEOPLE_TABLE
LOCK_WAIT_S = 60


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def _fold(name: str) -> str:
    return " ".join((name or "").split()).casefold()


def enrol(rid: str, names: dict[str, str]) -> list[Enrolment]:
    """Make ``rid``'s ``people`` partition match its confirmed ``names`` (label -> person): a named label with
    a voiceprint is enrolled (an enrolment already there keeps its time and voiceprint), an unnamed one is
    not. Returns the partition's rows. The caller holds the recording's lock."""
    prints = {v.label: v for v in store.read_rows("voiceprints", rid, record=Voiceprint)}
    old = {(r.person, r.label): r for r in store.read_rows(TABLE, rid, record=Enrolment)}
    rows = []
    for lab, person in sorted((names or {}).items()):
        if (person, lab) in old:
            rows.append(old[(person, lab)])
        elif lab in prints:
            vp = prints[lab]
            rows.append(Enrolment(person=person, label=lab, named_at=_now(), speech_ms=vp.speech_ms,
                                  embedding=vp.embedding))
    if rows:
        store.write_table(TABLE, rid, rows)
    elif store.has_partition(TABLE, rid):
        store.delete_partition(TABLE, rid)
    return rows


def list_people() -> list[dict]:
    """Everyone enrolled: name, recordings (id, label), seconds of speech behind their voice, enrolled since."""
    rows = voices.people_rows()
    out = []
    for p in voices.profiles(rows):
        mine = [r for _, r in rows if r.person == p.name]
        out.append({"person": p.name, "recordings": len(p.recordings), "speech_s": round(p.speech_ms / 1000, 1),
                    "voiceprints": [{"recording": rid, "label": lab} for rid, lab in p.sources],
                    "since": min(r.named_at for r in mine)})
    return out


def find(name: str) -> str:
    """The enrolled person called ``name`` (case and spacing aside); UsageError naming who is enrolled."""
    want = _fold(name)
    known = sorted({r.person for _, r in voices.people_rows()})
    hit = [p for p in known if _fold(p) == want]
    if not hit:
        raise UsageError(f"no person {name!r} is enrolled (people: {', '.join(known) or 'none'})")
    return hit[0]


def forget_plan(name: str) -> dict:
    """What :func:`forget_person` would remove: the person as enrolled, as :func:`list_people` lists them (their
    voiceprints: recording and label). UsageError naming who is enrolled: no such person."""
    person = find(name)
    return next(p for p in list_people() if p["person"] == person)


# re-runs ``manifest`` of one recording (the caller's Dagster job: ``service.manifest_again``); True when it ran
Rerun = Callable[[str], bool]


def _rematerialize(rids: list[str], rerun: Rerun) -> list[str]:
    """Re-run ``manifest`` of ``rids`` (each under its lock); returns those that ran. A busy recording is
    left to ``plan()`` (its matches are found stale there)."""
    done = []
    for rid in rids:
        try:
            with store.partition_lock(rid, timeout_s=LOCK_WAIT_S):
                ok = rerun(rid)
        except store.PartitionBusy:
            continue
        if ok:
            done.append(rid)
    return done


def voiceprint_recordings() -> list[str]:
    prefix = store.partition_key("voiceprints", store.SCHEMA_PARTITION).rpartition("/")[0]
    return [n.partition("=")[2] for n in store.list_names(prefix)
            if n.startswith("recording=") and store.ID_RE.fullmatch(n.partition("=")[2])]


def recheck(rerun: Rerun, exclude: set[str] | frozenset = frozenset()) -> list[str]:
    """Re-materialize ``manifest`` of every diarized recording whose voice matches against the people enrolled
    now differ from what its published manifest shows (never ``turns``). Returns the recordings re-checked."""
    people = voices.profiles(voices.people_rows())
    stale = [rid for rid in voiceprint_recordings() if rid not in exclude
             and voices.hints_changed(rid, S.load_overrides(rid).get("speaker_names") or None, people)]
    return _rematerialize(stale, rerun)


def _change_names(rid: str, person: str, new: str | None) -> bool:
    """In ``rid``'s confirmed names, ``person`` becomes ``new`` (None: removed). True when something changed."""
    names = dict(S.load_overrides(rid).get("speaker_names") or {})
    hit = [lab for lab, n in names.items() if _fold(n) == _fold(person)]
    for lab in hit:
        if new is None:
            names.pop(lab)
        else:
            names[lab] = new
    if hit:
        S.save_overrides(rid, {"speaker_names": names or None})
    return bool(hit)


def forget_person(name: str, rerun: Rerun) -> dict:
    """Remove a person everywhere: their enrolments, the voiceprints of the labels that named them and those
    labels' names; then re-check every recording (their matches go). UsageError: no such person."""
    person = find(name)
    touched, removed = [], 0
    for rid in voices.people_recordings():
        rows = store.read_rows(TABLE, rid, record=Enrolment)
        gone = {r.label for r in rows if r.person == person}
        if not gone:
            continue
        with store.partition_lock(rid, timeout_s=LOCK_WAIT_S):
            keep = [r for r in rows if r.person != person]
            if keep:
                store.write_table(TABLE, rid, keep)
            else:
                store.delete_partition(TABLE, rid)
            prints = store.read_rows("voiceprints", rid, record=Voiceprint)
            left = [v for v in prints if v.label not in gone]
            removed += len(prints) - len(left)
            store.write_table("voiceprints", rid, left)
            _change_names(rid, person, None)
        touched.append(rid)
    redone = sorted(set(_rematerialize(touched, rerun)) | set(recheck(rerun, exclude=set(touched))))
    from talkthrough_assets.model import search_index

    for rid in redone:  # the name was in their earlier search index generations too
        search_index.scrub(rid)
    return {"person": person, "recordings": touched, "voiceprints_removed": removed, "rechecked": redone}


def rename_person(old: str, new: str, rerun: Rerun) -> dict:
    """``old`` becomes ``new`` in every enrolment and confirmed name; when ``new`` is enrolled already the two
    are merged into one person (their voiceprints together). UsageError: no such person, or a bad name."""
    person = find(old)
    new = " ".join((new or "").split())
    if not new:
        raise UsageError("the new name is empty")
    from talkthrough_assets.stages.turns.speaker_names import MAX_CANDIDATE_CHARS

    if len(new) > MAX_CANDIDATE_CHARS:
        raise UsageError(f"the new name is longer than {MAX_CANDIDATE_CHARS} characters")
    existing = {_fold(r.person): r.person for _, r in voices.people_rows()}
    target = existing.get(_fold(new), new) if _fold(new) != _fold(person) else new
    merged = _fold(target) in existing and _fold(target) != _fold(person)
    touched = []
    for rid in voices.people_recordings():
        rows = store.read_rows(TABLE, rid, record=Enrolment)
        if not any(r.person == person for r in rows):
            continue
        with store.partition_lock(rid, timeout_s=LOCK_WAIT_S):
            store.write_table(TABLE, rid, [replace(r, person=target) if r.person == person else r for r in rows])
            _change_names(rid, person, target)
        touched.append(rid)
    redone = _rematerialize(touched, rerun)
    return {"person": person, "now": target, "merged": merged, "recordings": touched,
            "rechecked": sorted(set(redone) | set(recheck(rerun, exclude=set(touched))))}


__all__ = ["enrol", "list_people", "forget_plan", "forget_person", "rename_person", "recheck", "voiceprint_recordings"]

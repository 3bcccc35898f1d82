"""Voiceprints and voice recognition, the pure parts (issue #35): centroids of clean windows, people's voices
from their enrolments, matching with thresholds, one suggestion per person and recording, the hint text."""

from __future__ import annotations

import dataclasses

import numpy as np

from talkthrough_assets.model.manifest import VoiceMatch
from talkthrough_assets.model.speakers import describe_match
from talkthrough_assets.model.turns import Enrolment, Turn, Voiceprint
from talkthrough_assets.stages.turns import voiceprints
from talkthrough_assets.stages.turns import voices


def _unit(v):
    v = np.asarray(v, dtype=np.float64)
    return v / np.linalg.norm(v)


def test_voiceprint_is_the_unit_centroid_of_the_labels_clean_windows_with_its_clean_speech():
    turns = [Turn(0, 4000, "S1"), Turn(3000, 9000, "S2")]
    windows = [(0, "S1"), (750, "S1"), (4500, "S2")]
    vecs = [_unit([1, 0, 0]), _unit([0, 1, 0]), _unit([0, 0, 1])]
    rows = {r.label: r for r in voiceprints.voiceprint_rows(turns, windows, vecs, "campplus")}
    assert np.allclose(rows["S1"].embedding, _unit([1, 1, 0]), atol=1e-6)
    assert rows["S1"].windows == 2 and rows["S1"].speech_ms == 3000  # 3-4 s overlapped: not clean
    assert rows["S2"].speech_ms == 5000 and rows["S2"].model == "campplus"
    # stored as float32: each value is a float32's, as a plain float
    assert all(type(x) is float and float(np.float32(x)) == x for x in rows["S1"].embedding)
    assert voiceprints.voiceprint_rows(turns, [], np.zeros((0, 3)), None) == []


def _people(*spec):
    rows = [(rec, Enrolment(person=name, label=lab, named_at=None, speech_ms=ms, embedding=tuple(vec)))
            for name, rec, lab, ms, vec in spec]
    return voices.profiles(rows)


def _print(label, vec):
    return Voiceprint(label, tuple(_unit(vec)), 1, 1000, "campplus")


def test_people_voices_are_speech_weighted_over_their_enrolments():
    (alice,) = _people(("Alice", "a" * 16, "S1", 30000, _unit([1, 0, 0])), ("Alice", "b" * 16, "S2", 10000, _unit([0, 1, 0])))
    assert alice.recordings == ("a" * 16, "b" * 16) and alice.speech_ms == 40000
    assert np.allclose(alice.vector, _unit([3, 1, 0]))


def test_recognise_suggests_above_threshold_once_per_person_and_never_for_confirmed_labels():
    people = _people(("Alice", "a" * 16, "S1", 20000, _unit([1, 0, 0])), ("Bob", "a" * 16, "S2", 20000, _unit([0, 1, 0])))
    prints = [_print("S1", [0.95, 0.1, 0.1]),    # Alice
              _print("S2", [0.8, 0.2, 0.5]),     # Alice-ish too, but less: not twice
              _print("S3", [0, 0, 1]),           # nobody enrolled
              _print("S4", [0.1, 1, 0])]         # Bob, but confirmed already
    got = voices.recognise(prints, people, confirmed={"S4": "Bob"}, suggest=0.6, apply=0.95, rid="c" * 16)
    assert set(got) == {"S1"}
    assert got["S1"].person == "Alice" and got["S1"].recordings == 1 and got["S1"].applicable
    assert describe_match(got["S1"]) == f"voice match {got['S1'].score:.2f} to Alice, 1 recording"
    shown = VoiceMatch(**dataclasses.asdict(got["S1"]) | {"recordings": 3}, applied=True, hint="")
    assert describe_match(shown).endswith("3 recordings, applied")
    # below the suggest threshold: nothing; Bob confirmed for S4 is not suggested for another label
    assert voices.recognise(prints, people, suggest=0.999) == {}
    assert "Bob" not in {m.person for m in voices.recognise(
        [_print("S1", [0, 1, 0])], people, confirmed={"S2": "Bob"}, suggest=0.5).values()}


def test_a_labels_own_enrolment_is_not_evidence_for_it():
    people = _people(("Alice", "a" * 16, "S1", 20000, _unit([1, 0, 0])))
    same = [_print("S1", [1, 0, 0])]
    assert voices.recognise(same, people, suggest=0.5, rid="a" * 16) == {}
    assert voices.recognise(same, people, suggest=0.5, rid="b" * 16)["S1"].person == "Alice"


def test_thresholds_are_ordered():
    assert 0 < voices.SUGGEST_SIMILARITY < voices.APPLY_SIMILARITY < 1


def test_pick_keeps_embedded_windows_first_and_bounds_each_label():
    wins = [(i * 750, "S1") for i in range(100)] + [(80000, "S2")]
    known = {w[0]: None for w in wins[:10]}
    got = voiceprints.pick(wins, known, limit=32)
    s1 = [w for w in got if w[1] == "S1"]
    # the 10 embedded already, then at most MAX_NEW_WINDOWS more for the voiceprint alone
    assert len(s1) == 10 + voiceprints.MAX_NEW_WINDOWS and set(wins[:10]) <= set(s1) and (80000, "S2") in got
    assert voiceprints.pick(wins[:5], {}, limit=32) == wins[:5]
    known = {w[0]: None for w in wins[:40]}  # embedded ones count up to the limit
    assert len([w for w in voiceprints.pick(wins, known, limit=32) if w[1] == "S1"]) == 32
    one_speaker = voiceprints.pick(wins, {}, limit=32)  # nothing embedded: a one-speaker recording
    assert len(one_speaker) == voiceprints.MAX_NEW_WINDOWS + 1 and one_speaker[0] == wins[0]

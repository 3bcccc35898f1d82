"""Speaker diarization (`turns`): the offline model copies, the real sherpa-onnx engine on bad inputs,
and the committed two-voice fixture through the real Dagster job (amend, names, missing models). No
mocks: real models, real files, real Dagster. The pure math is in tests/unit/test_diarize_logic.py."""

from __future__ import annotations

import json
import wave

import numpy as np
import pytest
from dagster_records import latest_materialization_id, materialized_in_run, new_run, run_ids
from fixture_facts import (
    EXPECTED_SPEAKER_LABELS, FIXTURES_DIR, TWO_VOICE_TURNS, TWO_VOICES_BOUNDARY_TOLERANCE_S, TWO_VOICES_NAME,
    VOICE_LABELS, VOICE_WORDS,
)
from typer.testing import CliRunner

from talkthrough_assets.core import config
from talkthrough_assets.pipeline import freshness
from talkthrough_assets.app import service
from talkthrough_assets.app import runs
from talkthrough_assets.pipeline import settings
from talkthrough_assets import store
from talkthrough_assets.cli.main import app
from talkthrough_assets.model.transcript import Segment, Word
from talkthrough_assets.model.turns import Turn
from talkthrough_assets.store.models import sha256_file
from talkthrough_assets.stages import audio
from talkthrough_assets.stages import turns as D
from talkthrough_assets.stages.turns import attribution as A
from talkthrough_assets.stages.turns import labels as L
from talkthrough_assets.stages.turns import models as M

SR = 16000


def write_wav(path, samples: np.ndarray):
    with wave.open(str(path), "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(SR)
        w.writeframes((np.clip(samples, -1, 1) * 32767).astype("<i2").tobytes())
    return path


# =========================================================================== model resolver

class TestModelResolver:
    def test_finds_the_offline_copies_and_they_match_their_sha256sums(self):
        from conftest import DIARIZATION_MODELS

        seg, emb = M.find_in_dir(DIARIZATION_MODELS)
        assert "segmentation" in seg.name and "campplus" in emb.name
        sums = {name: sha for sha, name in (ln.split() for ln in (DIARIZATION_MODELS / "SHA256SUMS").read_text().splitlines())}
        assert sha256_file(seg) == sums[seg.name] and sha256_file(emb) == sums[emb.name]


# =========================================================================== real engine, bad cases

@pytest.fixture(scope="module")
def two_voices_wav(tt_home, tmp_path_factory):
    d = tmp_path_factory.mktemp("wav")
    audio.extract_wav(FIXTURES_DIR / TWO_VOICES_NAME, d / "two.wav")
    return d / "two.wav"


def _run(wav, **kw):
    kw = {"segments": [], "words": [], "num_speakers": None, "threshold": 0.5,
          "models_dir": config.get(D.models.ENV_MODELS_DIR), **kw}
    return D.run_turns(wav, **kw)


class TestBadCases:
    def test_video_only(self, tt_home):
        out = _run(None, num_speakers=2)
        d = out.diarization
        assert d.requested and not d.available and "no audio stream" in d.reason
        assert out.turns == out.speakers == out.speaker_segments == ()

    def test_shorter_than_one_second(self, tt_home, tmp_path, two_voices_wav):
        wav = write_wav(tmp_path / "short.wav", audio.load_wav(two_voices_wav)[SR: SR + SR // 2])
        d = _run(wav, num_speakers=2).diarization
        assert not d.available and "too short" in d.reason

    def test_silence(self, tt_home, tmp_path):
        d = _run(write_wav(tmp_path / "zero.wav", np.zeros(5 * SR)), num_speakers=2).diarization
        assert not d.available and "no speech" in d.reason
        # faint noise passes the silence gate: the engine itself finds no speech
        noise = np.random.default_rng(0).normal(0, 0.003, 5 * SR)
        out = _run(write_wav(tmp_path / "noise.wav", noise), num_speakers=2)
        assert not out.diarization.available and out.diarization.reason == "no speech detected"
        assert out.turns == ()

    def test_missing_models(self, tt_home, two_voices_wav, tmp_path, monkeypatch):
        monkeypatch.setenv(M.ENV_MODELS_DIR, str(tmp_path))
        segs = [Segment(t0_ms=500, t1_ms=7400, text="Welcome.", avg_logprob=-0.2, no_speech_prob=0.01, seq=0)]
        out = _run(two_voices_wav, num_speakers=2, segments=segs)
        d = out.diarization
        assert not d.available and M.ENV_MODELS_DIR in d.reason and d.requested_num_speakers == 2
        assert out.speaker_segments == ()  # the manifest then falls back to whisper's segments

    def test_one_speaker_and_more_speakers_requested_than_present(self, tt_home, two_voices_wav, tmp_path):
        first = audio.load_wav(two_voices_wav)[: int(7.9 * SR)]  # only the first (rms) turn
        wav = write_wav(tmp_path / "one.wav", first)
        one = _run(wav)
        assert one.diarization.available and one.diarization.detected_num_speakers == 1
        assert "one speaker" in one.diarization.reason
        assert [s.label for s in one.speakers] == ["S1"]
        more = _run(wav, num_speakers=3)
        d = more.diarization
        assert d.available and d.requested_num_speakers == 3 and d.detected_num_speakers == 1
        assert "requested 3 speakers, 1 distinct voice found" in d.reason
        assert {t.speaker for t in more.turns} == {"S1"}


# =========================================================================== through the Dagster job

def _truth():
    return [(t0, t1, VOICE_LABELS[v]) for t0, t1, v in TWO_VOICE_TURNS]


def _correct_share(items, key=lambda r: r["speaker"]):
    """Share of truth-speech time covered by ``items`` with the right label (over time covered)."""
    right = total = 0
    for r in items:
        for t0, t1, lab in _truth():
            ov = L.overlap_ms(r["t0_ms"], r["t1_ms"], t0, t1)
            total += ov
            right += ov if key(r) == lab else 0
    return right / total if total else 0.0


def test_two_voices_turns_labels_and_attribution(processed):
    rid = processed[TWO_VOICES_NAME]["recording_id"]
    d = store.read_one("diarization", rid)
    assert d["available"] and d["requested"] and d["reason"] is None
    assert (d["requested_num_speakers"], d["detected_num_speakers"]) == (2, 2)
    assert d["engine"] == "sherpa-onnx" and d["engine_version"]
    assert "sha256" in d["segmentation_model"] and "sha256" in d["embedding_model"]
    turns = store.read_rows("turns", rid)
    assert [t["speaker"] for t in turns] == EXPECTED_SPEAKER_LABELS
    tol = TWO_VOICES_BOUNDARY_TOLERANCE_S * 1000
    for t, (t0, t1, _) in zip(turns, TWO_VOICE_TURNS):
        assert abs(t["t0_ms"] - t0) <= tol and abs(t["t1_ms"] - t1) <= tol, (t, t0, t1)
    truth_ms = sum(t1 - t0 for t0, t1, _ in TWO_VOICE_TURNS)
    right = sum(L.overlap_ms(t["t0_ms"], t["t1_ms"], a, b) for t in turns for a, b, lab in _truth()
                if t["speaker"] == lab)
    assert right / truth_ms >= 0.9
    # words/segments attributed to the right speaker for >= 90 % of speech time
    ss = store.read_rows("speaker_segments", rid)
    assert ss and _correct_share(ss) >= 0.9
    words = store.read_rows("words", rid, record=Word)
    labels = A.attribute_words(words, store.read_rows("turns", rid, record=Turn))
    for voice, vocab in VOICE_WORDS.items():
        said = [lab for w, lab in zip(words, labels) if w.word.strip(" .,").lower() in vocab]
        assert said and sum(lab == VOICE_LABELS[voice] for lab in said) / len(said) >= 0.9, (voice, said)
    # whisper's own tables are untouched; split pieces point back at their segment
    segs = store.read_rows("segments", rid)
    assert {s["seq"] for s in segs} >= {r["source_seq"] for r in ss}
    assert [r["seq"] for r in ss] == list(range(len(ss)))
    # roster
    roster = {s["label"]: s for s in store.read_rows("speakers", rid)}
    assert list(roster) == ["S1", "S2"] and all(s["turn_count"] == 2 for s in roster.values())
    for lab in ("S1", "S2"):
        truth_talk = sum(t1 - t0 for t0, t1, x in _truth() if x == lab)
        assert abs(roster[lab]["talk_time_ms"] - truth_talk) <= 2 * tol
    assert roster["S1"]["first_ms"] < roster["S2"]["first_ms"]


def test_two_voices_manifest_and_summary(processed):
    s = processed[TWO_VOICES_NAME]
    m = json.loads(store.manifest_path(s["recording_id"]).read_text())
    di = m["transcript"]["diarization"]
    assert di["available"] and di["engine"] == "sherpa-onnx" and di["engine_version"]
    assert di["segmentation_model"] and di["embedding_model"] and di["detected_num_speakers"] == 2
    assert [x["label"] for x in di["speakers"]] == ["S1", "S2"]
    assert [t[2] for t in di["turns"]] == EXPECTED_SPEAKER_LABELS
    assert all(seg.get("speaker") in {"S1", "S2"} for seg in m["transcript"]["segments"])
    assert s["diarized"] and s["speakers"] == 2 and all("speaker" in p for p in s["preview"])


def test_undiarized_recordings_record_not_requested(processed):
    for name, summary in processed.items():
        if name == TWO_VOICES_NAME:
            continue
        d = store.read_one("diarization", summary["recording_id"])
        assert d["requested"] is False and d["available"] is False
        assert store.read_rows("turns", summary["recording_id"]) == []
        m = json.loads(store.manifest_path(summary["recording_id"]).read_text())
        assert "diarization" not in m["transcript"]


# ---------------------------------------------------------------- amend / names / missing models

def _materialized_in_run(run_id: str, rid: str) -> set[str]:
    return materialized_in_run(runs.instance(), run_id, rid, settings.STAGES)


def _latest_materialization_id(asset: str, rid: str) -> int | None:
    return latest_materialization_id(runs.instance(), asset, rid)


def _file_state(table: str, rid: str) -> tuple[int, str]:
    p = store.table_path(table, rid)
    return p.stat().st_mtime_ns, sha256_file(p)


@pytest.fixture(scope="module")
def amended(processed, tmp_path_factory):
    """A byte-different copy of two_voices.m4a (a trailing MP4 `free` box: same media), processed
    WITHOUT diarization, then amended with diarize=True through service.process."""
    copy = tmp_path_factory.mktemp("amend") / "two voices copy.m4a"
    copy.write_bytes((FIXTURES_DIR / TWO_VOICES_NAME).read_bytes() + b"\x00\x00\x00\x08free")
    plain = service.process(copy)
    assert plain["status"] == "processed" and not plain["diarized"], plain
    rid = plain["recording_id"]
    before = {"segments": _file_state("segments", rid), "words": _file_state("words", rid),
              "segments_event": _latest_materialization_id("segments", rid),
              "turns_event": _latest_materialization_id("turns", rid)}
    runs_before = run_ids(runs.instance(), rid)
    out = service.process(copy, overrides={"diarize": True, "num_speakers": 2})
    return {"path": copy, "rid": rid, "plain": plain, "out": out, "before": before,
            "run_id": new_run(runs.instance(), rid, runs_before).run_id}


def test_amend_materializes_exactly_turns_and_manifest(amended, processed):
    rid, out = amended["rid"], amended["out"]
    assert out["status"] == "processed" and out["stages_run"] == ["turns", "manifest"]
    assert _materialized_in_run(amended["run_id"], rid) == {"turns", "manifest"}  # from the Dagster event log
    # segments untouched: same parquet bytes and mtime, and no new segments materialization event
    assert _file_state("segments", rid) == amended["before"]["segments"]
    assert _file_state("words", rid) == amended["before"]["words"]
    assert _latest_materialization_id("segments", rid) == amended["before"]["segments_event"]
    assert _latest_materialization_id("turns", rid) != amended["before"]["turns_event"]
    assert out["diarized"] and out["speakers"] == 2
    # same audio as the session's two_voices: the same turns
    ref = store.read_rows("turns", processed[TWO_VOICES_NAME]["recording_id"])
    got = store.read_rows("turns", rid)
    assert [t["speaker"] for t in got] == [t["speaker"] for t in ref]
    assert all(abs(a["t0_ms"] - b["t0_ms"]) <= 100 and abs(a["t1_ms"] - b["t1_ms"]) <= 100
               for a, b in zip(got, ref))
    # a repeat with the same settings is a no-op
    assert service.process(amended["path"], overrides={"diarize": True, "num_speakers": 2})["stages_run"] == []


def test_names_apply_through_the_manifest_only(amended):
    rid = amended["rid"]
    turns_event = _latest_materialization_id("turns", rid)
    turns_file = _file_state("turns", rid)
    runner = CliRunner()
    runs_before = run_ids(runs.instance(), rid)
    res = runner.invoke(app, ["name", rid, "S1=Alice Chen", "S2=Bob Stone"])
    assert res.exit_code == 0, res.output
    assert _materialized_in_run(new_run(runs.instance(), rid, runs_before).run_id, rid) == {"manifest"}
    di = json.loads(store.manifest_path(rid).read_text())["transcript"]["diarization"]
    assert di["speaker_names"] == {"S1": "Alice Chen", "S2": "Bob Stone"}
    assert settings.load_overrides(rid)["speaker_names"] == {"S1": "Alice Chen", "S2": "Bob Stone"}
    res = runner.invoke(app, ["name", rid, "S2=", "--json"])
    assert res.exit_code == 0, res.output
    assert json.loads(res.output)["speaker_names"] == {"S1": "Alice Chen"}
    di = json.loads(store.manifest_path(rid).read_text())["transcript"]["diarization"]
    assert di["speaker_names"] == {"S1": "Alice Chen"}
    # diarization was not re-run by naming
    assert _latest_materialization_id("turns", rid) == turns_event and _file_state("turns", rid) == turns_file
    # bad input: clear errors, nothing run
    n_runs = len(runs.instance().get_run_records())
    for args in (["name", rid, "S9=Zed"], ["name", rid, "Alice"], ["name", "nothex", "S1=A"],
                 ["name", "0123456789abcdef", "S1=A"]):
        res = runner.invoke(app, args)
        assert res.exit_code == 2, (args, res.output)
    assert len(runs.instance().get_run_records()) == n_runs  # no run of any recording
    # the names persist: processing again runs nothing and keeps them
    assert service.process(amended["path"])["stages_run"] == []
    assert freshness.plan(rid) == []


def test_missing_models_through_the_job_is_a_recorded_reason(amended, tmp_path, monkeypatch):
    rid = amended["rid"]
    seg_state = _file_state("segments", rid)
    monkeypatch.setenv(M.ENV_MODELS_DIR, str(tmp_path))  # an empty folder: no models anywhere
    out = service.process(amended["path"], overrides={"num_speakers": 3})
    assert out["status"] == "processed" and out["stages_run"] == ["turns", "manifest"]
    d = store.read_one("diarization", rid)
    assert d["requested"] and not d["available"] and M.ENV_MODELS_DIR in d["reason"]
    assert store.read_rows("turns", rid) == [] and store.read_rows("speaker_segments", rid) == []
    assert _file_state("segments", rid) == seg_state  # nothing else lost
    m = json.loads(store.manifest_path(rid).read_text())
    assert m["transcript"]["diarization"]["available"] is False
    assert M.ENV_MODELS_DIR in m["transcript"]["diarization"]["reason"]
    assert m["transcript"]["segments"] and "speaker" not in m["transcript"]["segments"][0]
    assert not out["diarized"] and out["transcript"]["segments"] == amended["plain"]["transcript"]["segments"]
    monkeypatch.undo()  # the models are back: the next process retries diarization, nothing else
    assert freshness.plan(rid) == ["turns", "manifest"]
    again = service.process(amended["path"])
    assert again["stages_run"] == ["turns", "manifest"] and again["diarized"]
    assert _file_state("segments", rid) == seg_state


def test_num_speakers_auto_is_an_explicit_value_and_the_count_is_explained(amended):
    """Issue #23: a count given once sticks (like every setting) until `--num-speakers auto`; the summary
    says which count was used and why; a bad value is a usage error before anything runs."""
    rid, path = amended["rid"], str(amended["path"])
    runner = CliRunner()
    given = json.loads(runner.invoke(app, ["process", path, "--diarize", "--num-speakers", "2", "--json"]).output)[0]
    assert given["speakers"] == 2 and given["speakers_note"] == "as given (--num-speakers 2)", given
    kept = json.loads(runner.invoke(app, ["process", path, "--diarize", "--json"]).output)[0]
    assert kept["stages_run"] == [] and kept["speakers_note"] == "as given (--num-speakers 2)"
    res = runner.invoke(app, ["process", path, "--num-speakers", "auto", "--json"])
    assert res.exit_code == 0, res.output
    auto = json.loads(res.output)[0]
    assert auto["stages_run"] == ["turns", "manifest"], auto
    assert auto["speakers"] == 2 and auto["speakers_note"] == "found from the audio (--num-speakers auto)"
    assert settings.load_overrides(rid)["num_speakers"] == "auto"
    row = store.read_one("diarization", rid)
    assert row["requested_num_speakers"] is None and row["speaker_count"] == auto["speakers_note"]
    m = json.loads(store.manifest_path(rid).read_text())["transcript"]["diarization"]
    assert m["speaker_count"] == auto["speakers_note"]
    text = runner.invoke(app, ["process", path]).output
    assert "speakers: 2 (found from the audio (--num-speakers auto))" in text, text
    # what an older version stored for automatic (0) reads as auto: nothing to re-run
    store.put_json(store.settings_key(rid), {**settings.load_overrides(rid), "num_speakers": 0})
    assert freshness.plan(rid) == []
    n_runs = len(runs.instance().get_run_records())
    for bad in ("five", "-1", "2.5"):
        res = runner.invoke(app, ["process", path, "--num-speakers", bad])
        assert res.exit_code == 2 and "--num-speakers" in res.output, (bad, res.output)
    assert len(runs.instance().get_run_records()) == n_runs

"""Speaker diarization (`turns`): pure attribution/roster/candidate math, the model resolver, the
real sherpa-onnx engine on bad inputs, and the committed two-voice fixture through the real
Dagster job (amend, names, missing models). No mocks: real models, real files, real Dagster."""

from __future__ import annotations

import hashlib
import io
import json
import tarfile
import wave

import numpy as np
import pytest
from dagster import AssetKey, AssetRecordsFilter, DagsterEventType
from fixture_facts import (
    EXPECTED_SPEAKER_LABELS, FIXTURES_DIR, TWO_VOICE_TURNS, TWO_VOICES_BOUNDARY_TOLERANCE_S, TWO_VOICES_NAME,
    VOICE_LABELS, VOICE_WORDS,
)
from typer.testing import CliRunner

from talkthrough_assets import pipeline, service, settings, store
from talkthrough_assets.cli import app
from talkthrough_assets.models import sha256_file
from talkthrough_assets.stages import audio
from talkthrough_assets.stages import diarize as D

SR = 16000


def T(t0, t1, s):
    return {"t0_ms": t0, "t1_ms": t1, "speaker": s}


def W(seq, idx, t0, t1, word):
    return {"seq": seq, "idx": idx, "t0_ms": t0, "t1_ms": t1, "word": word, "prob": 0.9}


def write_wav(path, samples: np.ndarray):
    with wave.open(str(path), "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(SR)
        w.writeframes((np.clip(samples, -1, 1) * 32767).astype("<i2").tobytes())
    return path


# =========================================================================== pure math

class TestLabels:
    def test_labels_follow_first_appearance_not_engine_ids(self):
        turns = D.relabel([(5000, 6000, 0), (0, 1000, 3), (2000, 3000, 1), (7000, 8000, 3)])
        assert [t["speaker"] for t in turns] == ["S1", "S2", "S3", "S1"]
        assert [t["t0_ms"] for t in turns] == [0, 2000, 5000, 7000]

    def test_empty_and_zero_length_engine_segments_are_dropped(self):
        assert D.relabel([]) == []
        assert D.relabel([(100, 100, 0), (200, 900, 1)]) == [T(200, 900, "S1")]

    def test_merge_renames_joins_close_same_speaker_turns_and_relabels(self):
        turns = [T(0, 1000, "S1"), T(1200, 2000, "S2"), T(2100, 3000, "S3"), T(5000, 6000, "S2")]
        merged = D.merge_labels(turns, {"S3": "S2"})
        assert merged == [T(0, 1000, "S1"), T(1200, 3000, "S2"), T(5000, 6000, "S2")]
        # merging the first speaker away relabels by first appearance again
        assert D.merge_labels([T(0, 900, "S1"), T(3000, 4000, "S2")], {"S1": "S2"}) == [
            T(0, 900, "S1"), T(3000, 4000, "S1")]

    def test_same_voice_and_tiny_labels_are_merged_with_notes(self):
        turns = [T(0, 5000, "S1"), T(6000, 11000, "S2"), T(12000, 17000, "S3"), T(17200, 17500, "S4")]
        sims = {("S1", "S2"): 0.55, ("S1", "S3"): 0.91, ("S2", "S3"): 0.52,
                ("S1", "S4"): 0.40, ("S2", "S4"): 0.62, ("S3", "S4"): 0.41}
        mapping, notes = D.plan_merges(turns, sims)
        assert mapping == {"S3": "S1", "S4": "S2"}
        assert any("S3 merged into S1" in n for n in notes) and any("S4 absorbed into S2" in n for n in notes)

    def test_distinct_voices_are_never_merged(self):
        turns = [T(0, 5000, "S1"), T(6000, 11000, "S2")]
        assert D.plan_merges(turns, {("S1", "S2"): 0.55}) == ({}, [])
        assert D.plan_merges(turns, {}) == ({}, [])  # no embedding: no evidence, no merge


class TestRoster:
    def test_roster_counts_union_talk_time_turns_and_extent(self):
        turns = [T(1000, 3000, "S1"), T(2500, 4000, "S2"), T(5000, 6000, "S1"), T(5500, 5800, "S1")]
        r = {x["label"]: x for x in D.roster(turns, {"S2": ["Bob Stone"]})}
        assert list(r) == ["S1", "S2"]
        assert (r["S1"]["talk_time_ms"], r["S1"]["turn_count"], r["S1"]["first_ms"], r["S1"]["last_ms"]) == (
            3000, 3, 1000, 6000)
        assert (r["S2"]["talk_time_ms"], r["S2"]["turn_count"]) == (1500, 1)
        assert json.loads(r["S1"]["name_candidates_json"]) == [] and json.loads(
            r["S2"]["name_candidates_json"]) == ["Bob Stone"]

    def test_roster_rows_fit_the_store_schema(self, tt_home):
        rid = "00000000000000d1"
        store.write_table("speakers", rid, D.roster([T(0, 10, "S1")]))
        assert store.read_rows("speakers", rid)[0]["label"] == "S1"
        store.delete_partition("speakers", rid)


class TestAttribution:
    TURNS = [T(0, 4000, "S1"), T(4000, 9000, "S2"), T(9500, 12000, "S1")]

    def test_word_goes_to_the_speaker_with_maximum_overlap(self):
        words = [W(0, 0, 100, 500, " a"), W(0, 1, 3700, 4500, " b"),  # 300 ms S1 vs 500 ms S2
                 W(0, 2, 3500, 4100, " c"), W(0, 3, 9100, 9400, " d")]  # gap word: no overlap
        assert D.attribute_words(words, self.TURNS) == ["S1", "S2", "S1", None]

    def test_ties_go_to_the_lower_label_and_a_speakers_turns_add_up(self):
        turns = [T(0, 1000, "S2"), T(1000, 2000, "S1")]
        assert D.attribute_words([W(0, 0, 500, 1500, " x")], turns) == ["S1"]  # 500 ms each: lower label
        turns = [T(0, 1000, "S1"), T(1000, 1600, "S2"), T(1700, 2000, "S2")]
        assert D.attribute_words([W(0, 0, 500, 2000, " y")], turns) == ["S2"]  # S1 500 < S2 600 + 300
        # overlapping turns (two people at once): each overlap counts for its speaker
        turns = [T(0, 2000, "S1"), T(500, 1500, "S2"), T(1500, 1800, "S2")]
        assert D.TurnIndex(turns).speaker(400, 1800) == "S1"  # S1 1400 vs S2 1000 + 300

    def test_segment_split_where_words_change_speaker(self):
        seg = {"seq": 7, "t0_ms": 3000, "t1_ms": 6000, "text": "Right. Thanks for that update."}
        words = [W(7, 0, 3000, 3600, " Right."), W(7, 1, 4100, 4500, " Thanks"), W(7, 2, 4500, 4700, " for"),
                 W(7, 3, 4700, 5000, " that"), W(7, 4, 5000, 6000, " update.")]
        rows = D.attribute_segments([seg], words, self.TURNS)
        assert rows == [
            {"seq": 0, "source_seq": 7, "t0_ms": 3000, "t1_ms": 3600, "speaker": "S1", "text": "Right."},
            {"seq": 1, "source_seq": 7, "t0_ms": 4100, "t1_ms": 6000, "speaker": "S2",
             "text": "Thanks for that update."},
        ]

    def test_unsplit_segment_keeps_whisper_text_and_times_exactly(self):
        seg = {"seq": 0, "t0_ms": 100, "t1_ms": 3000, "text": "Hello there."}
        rows = D.attribute_segments([seg], [W(0, 0, 100, 900, " Hello"), W(0, 1, 900, 3000, " there.")],
                                    self.TURNS)
        assert rows == [{"seq": 0, "source_seq": 0, "t0_ms": 100, "t1_ms": 3000, "speaker": "S1",
                         "text": "Hello there."}]

    def test_segment_without_words_falls_back_to_segment_overlap_then_nearest(self):
        segs = [{"seq": 0, "t0_ms": 3500, "t1_ms": 8000, "text": "mostly S2"},
                {"seq": 1, "t0_ms": 9350, "t1_ms": 9450, "text": "in the gap"},
                {"seq": 2, "t0_ms": 30000, "t1_ms": 31000, "text": "far away"}]
        rows = D.attribute_segments(segs, [], self.TURNS)
        assert [r["speaker"] for r in rows] == ["S2", "S1", None]
        assert [r["source_seq"] for r in rows] == [0, 1, 2] and [r["seq"] for r in rows] == [0, 1, 2]

    def test_gap_words_inherit_and_a_lone_jittery_word_is_smoothed(self):
        seg = {"seq": 3, "t0_ms": 4200, "t1_ms": 9000, "text": "one two three four"}
        turns = [T(4000, 6000, "S2"), T(6000, 6200, "S1"), T(6200, 9000, "S2")]
        words = [W(3, 0, 4200, 5000, " one"), W(3, 1, 6000, 6200, " two"),  # lone 200 ms S1 word
                 W(3, 2, 6300, 7000, " three"), W(3, 3, 7000, 9000, " four")]
        rows = D.attribute_segments([seg], words, turns)
        assert len(rows) == 1 and rows[0]["speaker"] == "S2" and rows[0]["text"] == "one two three four"
        # a word overlapping no turn takes the previous word's speaker
        turns2 = [T(0, 1000, "S1"), T(2000, 3000, "S2")]
        seg2 = {"seq": 0, "t0_ms": 0, "t1_ms": 3000, "text": "a b c"}
        rows2 = D.attribute_segments([seg2], [W(0, 0, 0, 900, " a"), W(0, 1, 1200, 1700, " b"),
                                              W(0, 2, 2000, 3000, " c")], turns2)
        assert [(r["speaker"], r["text"]) for r in rows2] == [("S1", "a b"), ("S2", "c")]

    def test_seq_is_renumbered_across_segments(self):
        segs = [{"seq": 0, "t0_ms": 3000, "t1_ms": 6000, "text": "x y"},
                {"seq": 1, "t0_ms": 9600, "t1_ms": 11000, "text": "z"}]
        words = [W(0, 0, 3000, 3900, " x"), W(0, 1, 4100, 6000, " y"), W(1, 0, 9600, 11000, " z")]
        rows = D.attribute_segments(segs, words, self.TURNS)
        assert [(r["seq"], r["source_seq"], r["speaker"]) for r in rows] == [(0, 0, "S1"), (1, 0, "S2"),
                                                                             (2, 1, "S1")]


class TestNameCandidates:
    @pytest.mark.parametrize("line,expect", [
        ("Alice Chen", "Alice Chen"),
        ("  Alice   Chen (Host) ", "Alice Chen"),
        ("Jean-Luc O'Neil", "Jean-Luc O'Neil"),
        ("José Álvarez", "José Álvarez"),
        ("Mute", None), ("Stop Video", None), ("Share Screen", None), ("Participants", None),
        ("Recording", None), ("Gallery View", None),
        ("ERROR 503 GATEWAY TIMEOUT", None), ("Build 42 passed", None), ("Room 4", None),
        ("https://meet.example.com/abc", None), ("zoom.us", None), ("alice@example.com", None),
        ("DEPLOY PIPELINE", None), ("alice chen", None),
        ("The build passed and staging is ready", None), ("Thanks everyone.", None),
        ("Bank of America", None), ("A" * 81, None), ("", None), ("x", None),
    ])
    def test_filter(self, line, expect):
        assert D.clean_name_candidate(line) == expect

    def test_candidates_follow_the_frames_shown_during_each_speakers_turns(self):
        turns = [T(0, 10000, "S1"), T(10000, 20000, "S2"), T(20000, 30000, "S1")]
        ocr = [(0, "Alice Chen\nMute\nops-console - Talkthrough demo"), (10000, "Bob Stone\nShare Screen"),
               (20000, "Alice Chen"), (25000, "Carol White\nhttps://example.com")]
        c = D.name_candidates(turns, ocr)
        assert c["S1"][0] == "Alice Chen" and "Carol White" in c["S1"] and c["S2"] == ["Bob Stone"]
        assert all(len(v) <= 3 and all(len(n) <= 80 for n in v) for v in c.values())

    def test_at_most_three_and_ambient_names_are_no_evidence(self):
        turns = [T(0, 10000, "S1"), T(10000, 20000, "S2")]
        many = "\n".join(["Ann Lee", "Ben Ode", "Cat Poe", "Dan Roe", "Eve Sun"])
        c = D.name_candidates(turns, [{"ms": 0, "text": many}, {"ms": 10000, "text": "Zed Quinn\n" + many}])
        assert c["S2"][0] == "Zed Quinn" and len(c["S2"]) == 1  # the five are on screen throughout
        assert "S1" not in c
        assert D.name_candidates(turns, []) == {} and D.name_candidates([], [(0, "Ann Lee")]) == {}


class TestNameAssignments:
    def test_parse_and_merge(self):
        ch = D.parse_name_assignments(["S1=Alice Chen", "s2=", "S3= Bob  Stone "])
        assert ch == {"S1": "Alice Chen", "S2": None, "S3": "Bob Stone"}
        assert D.merge_names({"S2": "Old", "S10": "Zed"}, ch) == {"S1": "Alice Chen", "S3": "Bob Stone",
                                                                   "S10": "Zed"}

    @pytest.mark.parametrize("bad", ["Alice", "X1=Alice", "S0=Alice", "S1=" + "a" * 81])
    def test_bad_assignments_are_clear_errors(self, bad):
        with pytest.raises(ValueError):
            D.parse_name_assignments([bad])


# =========================================================================== model resolver

class TestModelResolver:
    def test_pinned_upstream_files(self):
        assert D.SEGMENTATION.url.startswith("https://github.com/k2-fsa/sherpa-onnx/releases/download/")
        assert D.EMBEDDING.url.endswith("3dspeaker_speech_campplus_sv_zh_en_16k-common_advanced.onnx")
        for s in (D.SEGMENTATION.sha256, D.SEGMENTATION.member_sha256, D.EMBEDDING.sha256):
            assert len(s) == 64 and int(s, 16) >= 0

    def test_finds_the_offline_copies_and_they_match_their_sha256sums(self):
        from conftest import DIARIZATION_MODELS

        seg, emb = D.find_in_dir(DIARIZATION_MODELS)
        assert "segmentation" in seg.name and "campplus" in emb.name
        sums = {name: sha for sha, name in (ln.split() for ln in (DIARIZATION_MODELS / "SHA256SUMS").read_text().splitlines())}
        assert sha256_file(seg) == sums[seg.name] and sha256_file(emb) == sums[emb.name]

    def test_env_folder_without_models_is_a_clear_reason_and_no_download(self, tmp_path, monkeypatch):
        empty = tmp_path / "empty"
        empty.mkdir()
        monkeypatch.setenv(D.ENV_MODELS_DIR, str(empty))
        monkeypatch.setenv("TALKTHROUGH_MODELS_DIR", str(tmp_path / "cache"))
        assert D.find_in_dir(empty) is None
        with pytest.raises(D.ModelsUnavailable, match="TALKTHROUGH_DIARIZATION_MODELS"):
            D.resolve_models()
        assert not (tmp_path / "cache").exists()  # nothing was downloaded or created

    def test_download_verifies_unpacks_and_caches(self, tmp_path, monkeypatch):
        """The real download path (urllib, file:// URLs) with pinned hashes; a bad hash leaves nothing."""
        src = tmp_path / "upstream"
        src.mkdir()
        model = b"fake-onnx-bytes" * 1000
        buf = io.BytesIO()
        with tarfile.open(fileobj=buf, mode="w:bz2") as tar:
            info = tarfile.TarInfo("pkg/model.onnx")
            info.size = len(model)
            tar.addfile(info, io.BytesIO(model))
        (src / "pkg.tar.bz2").write_bytes(buf.getvalue())
        (src / "emb.onnx").write_bytes(b"embedding" * 100)
        seg = D.ModelSpec("segmentation", "seg.onnx", (src / "pkg.tar.bz2").as_uri(),
                          sha256_file(src / "pkg.tar.bz2"), member="pkg/model.onnx",
                          member_sha256=hashlib.sha256(model).hexdigest())
        emb = D.ModelSpec("embedding", "emb.onnx", (src / "emb.onnx").as_uri(), sha256_file(src / "emb.onnx"))
        cache = tmp_path / "cache"
        assert D.ensure_cached(seg, cache).read_bytes() == model
        assert D.ensure_cached(emb, cache).read_bytes() == b"embedding" * 100
        assert sorted(p.name for p in cache.iterdir()) == ["emb.onnx", "seg.onnx"]  # archive removed
        (src / "emb.onnx").write_bytes(b"tampered")
        (cache / "emb.onnx").unlink()
        with pytest.raises(D.ModelsUnavailable, match="sha256"):
            D.ensure_cached(emb, cache)
        bad_member = D.ModelSpec("segmentation", "seg2.onnx", seg.url, seg.sha256, member="pkg/model.onnx",
                                 member_sha256="0" * 64)
        with pytest.raises(D.ModelsUnavailable, match="expected"):
            D.ensure_cached(bad_member, cache)
        assert sorted(p.name for p in cache.iterdir()) == ["seg.onnx"]  # no partial/unverified files
        with pytest.raises(D.ModelsUnavailable, match="failed"):
            D.ensure_cached(D.ModelSpec("embedding", "x.onnx", (src / "missing.onnx").as_uri(), "0" * 64), cache)


# =========================================================================== real engine, bad cases

@pytest.fixture(scope="module")
def two_voices_wav(tt_home, tmp_path_factory):
    d = tmp_path_factory.mktemp("wav")
    audio.extract_wav(FIXTURES_DIR / TWO_VOICES_NAME, d / "two.wav")
    return d / "two.wav"


def _run(wav, **kw):
    kw = {"segments": [], "words": [], "num_speakers": None, "threshold": 0.5, **kw}
    return D.run_turns(wav, **kw)


class TestBadCases:
    def test_video_only(self, tt_home):
        out = _run(None, num_speakers=2)
        d = out["diarization"]
        assert d["requested"] and not d["available"] and "no audio stream" in d["reason"]
        assert out["turns"] == out["speakers"] == out["speaker_segments"] == []

    def test_shorter_than_one_second(self, tt_home, tmp_path, two_voices_wav):
        wav = write_wav(tmp_path / "short.wav", audio.load_wav(two_voices_wav)[SR: SR + SR // 2])
        d = _run(wav, num_speakers=2)["diarization"]
        assert not d["available"] and "too short" in d["reason"]

    def test_silence(self, tt_home, tmp_path):
        d = _run(write_wav(tmp_path / "zero.wav", np.zeros(5 * SR)), num_speakers=2)["diarization"]
        assert not d["available"] and "no speech" in d["reason"]
        # faint noise passes the silence gate: the engine itself finds no speech
        noise = np.random.default_rng(0).normal(0, 0.003, 5 * SR)
        out = _run(write_wav(tmp_path / "noise.wav", noise), num_speakers=2)
        assert not out["diarization"]["available"] and out["diarization"]["reason"] == "no speech detected"
        assert out["turns"] == []

    def test_missing_models(self, tt_home, two_voices_wav, tmp_path, monkeypatch):
        monkeypatch.setenv(D.ENV_MODELS_DIR, str(tmp_path))
        segs = [{"seq": 0, "t0_ms": 500, "t1_ms": 7400, "text": "Welcome."}]
        out = _run(two_voices_wav, num_speakers=2, segments=segs)
        d = out["diarization"]
        assert not d["available"] and D.ENV_MODELS_DIR in d["reason"] and d["requested_num_speakers"] == 2
        assert out["speaker_segments"] == []  # the manifest then falls back to whisper's segments

    def test_one_speaker_and_more_speakers_requested_than_present(self, tt_home, two_voices_wav, tmp_path):
        first = audio.load_wav(two_voices_wav)[: int(7.9 * SR)]  # only the first (rms) turn
        wav = write_wav(tmp_path / "one.wav", first)
        one = _run(wav)
        assert one["diarization"]["available"] and one["diarization"]["detected_num_speakers"] == 1
        assert "one speaker" in one["diarization"]["reason"]
        assert [s["label"] for s in one["speakers"]] == ["S1"]
        more = _run(wav, num_speakers=3)
        d = more["diarization"]
        assert d["available"] and d["requested_num_speakers"] == 3 and d["detected_num_speakers"] == 1
        assert "requested 3 speakers, 1 distinct voice found" in d["reason"]
        assert {t["speaker"] for t in more["turns"]} == {"S1"}


# =========================================================================== through the Dagster job

def _truth():
    return [(t0, t1, VOICE_LABELS[v]) for t0, t1, v in TWO_VOICE_TURNS]


def _correct_share(items, key=lambda r: r["speaker"]):
    """Share of truth-speech time covered by ``items`` with the right label (over time covered)."""
    right = total = 0
    for r in items:
        for t0, t1, lab in _truth():
            ov = D.overlap_ms(r["t0_ms"], r["t1_ms"], t0, t1)
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
    right = sum(D.overlap_ms(t["t0_ms"], t["t1_ms"], a, b) for t in turns for a, b, lab in _truth()
                if t["speaker"] == lab)
    assert right / truth_ms >= 0.9
    # words/segments attributed to the right speaker for >= 90 % of speech time
    ss = store.read_rows("speaker_segments", rid)
    assert ss and _correct_share(ss) >= 0.9
    words = store.read_rows("words", rid)
    labels = D.attribute_words(words, turns)
    for voice, vocab in VOICE_WORDS.items():
        said = [lab for w, lab in zip(words, labels) if w["word"].strip(" .,").lower() in vocab]
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

def _materialized_in_run(run_id: str) -> set[str]:
    recs = service.instance().get_records_for_run(run_id, of_type=DagsterEventType.ASSET_MATERIALIZATION).records
    return {r.event_log_entry.dagster_event.asset_key.path[-1] for r in recs}


def _latest_run_id(rid: str) -> str:
    runs = service.instance().get_runs(limit=1)
    assert runs and runs[0].tags.get("dagster/partition") == rid
    return runs[0].run_id


def _latest_materialization_id(asset: str, rid: str) -> int | None:
    recs = service.instance().fetch_materializations(
        AssetRecordsFilter(asset_key=AssetKey(asset), asset_partitions=[rid]), limit=1).records
    return recs[0].storage_id if recs else None


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
    out = service.process(copy, overrides={"diarize": True, "num_speakers": 2})
    return {"path": copy, "rid": rid, "plain": plain, "out": out, "before": before,
            "run_id": _latest_run_id(rid)}


def test_amend_materializes_exactly_turns_and_manifest(amended, processed):
    rid, out = amended["rid"], amended["out"]
    assert out["status"] == "processed" and out["stages_run"] == ["turns", "manifest"]
    assert _materialized_in_run(amended["run_id"]) == {"turns", "manifest"}  # from the Dagster event log
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
    res = runner.invoke(app, ["name", rid, "S1=Alice Chen", "S2=Bob Stone"])
    assert res.exit_code == 0, res.output
    assert _materialized_in_run(_latest_run_id(rid)) == {"manifest"}
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
    n_runs = len(service.instance().get_runs())
    for args in (["name", rid, "S9=Zed"], ["name", rid, "Alice"], ["name", "nothex", "S1=A"],
                 ["name", "0123456789abcdef", "S1=A"]):
        res = runner.invoke(app, args)
        assert res.exit_code == 2, (args, res.output)
    assert len(service.instance().get_runs()) == n_runs
    # the names persist: processing again runs nothing and keeps them
    assert service.process(amended["path"])["stages_run"] == []
    assert pipeline.plan(rid) == []


def test_missing_models_through_the_job_is_a_recorded_reason(amended, tmp_path, monkeypatch):
    rid = amended["rid"]
    seg_state = _file_state("segments", rid)
    monkeypatch.setenv(D.ENV_MODELS_DIR, str(tmp_path))  # an empty folder: no models anywhere
    out = service.process(amended["path"], overrides={"num_speakers": 3})
    assert out["status"] == "processed" and out["stages_run"] == ["turns", "manifest"]
    d = store.read_one("diarization", rid)
    assert d["requested"] and not d["available"] and D.ENV_MODELS_DIR in d["reason"]
    assert store.read_rows("turns", rid) == [] and store.read_rows("speaker_segments", rid) == []
    assert _file_state("segments", rid) == seg_state  # nothing else lost
    m = json.loads(store.manifest_path(rid).read_text())
    assert m["transcript"]["diarization"]["available"] is False
    assert D.ENV_MODELS_DIR in m["transcript"]["diarization"]["reason"]
    assert m["transcript"]["segments"] and "speaker" not in m["transcript"]["segments"][0]
    assert not out["diarized"] and out["transcript"]["segments"] == amended["plain"]["transcript"]["segments"]
    monkeypatch.undo()  # the models are back: the next process retries diarization, nothing else
    assert pipeline.plan(rid) == ["turns", "manifest"]
    again = service.process(amended["path"])
    assert again["stages_run"] == ["turns", "manifest"] and again["diarized"]
    assert _file_state("segments", rid) == seg_state

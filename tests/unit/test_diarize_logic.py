"""Speaker diarization (`turns`), the pure part: label/merge/roster math, word and segment
attribution, on-screen name candidates, `--name` parsing, and the model resolver's pinned specs and
download path (file:// URLs). No models, no Dagster: tests/integration/test_diarization.py runs the
real sherpa-onnx engine and the Dagster job."""

from __future__ import annotations

import hashlib
import io
import tarfile

import pytest

from talkthrough_assets import store
from talkthrough_assets.model.transcript import Segment, Word
from talkthrough_assets.model.turns import SpeakerSegment, SpeakerStats, Turn
from talkthrough_assets.store.models import sha256_file
from talkthrough_assets.stages.turns import attribution as A
from talkthrough_assets.stages.turns import labels as L
from talkthrough_assets.stages.turns import models as M
from talkthrough_assets.stages.turns import speaker_names as N


def T(t0, t1, s):
    return Turn(t0, t1, s)


def W(seq, idx, t0, t1, word):
    return Word(idx=idx, t0_ms=t0, t1_ms=t1, word=word, prob=0.9, seq=seq)


def S(seq, t0, t1, text):
    return Segment(t0_ms=t0, t1_ms=t1, text=text, avg_logprob=-0.2, no_speech_prob=0.01, seq=seq)


def R(seq, source_seq, t0, t1, speaker, text, overlap=()):
    return SpeakerSegment(seq=seq, source_seq=source_seq, t0_ms=t0, t1_ms=t1, speaker=speaker, text=text,
                          overlap=overlap)


# =========================================================================== pure math

class TestLabels:
    def test_labels_follow_first_appearance_not_engine_ids(self):
        turns = L.relabel([(5000, 6000, 0), (0, 1000, 3), (2000, 3000, 1), (7000, 8000, 3)])
        assert [t.speaker for t in turns] == ["S1", "S2", "S3", "S1"]
        assert [t.t0_ms for t in turns] == [0, 2000, 5000, 7000]

    def test_empty_and_zero_length_engine_segments_are_dropped(self):
        assert L.relabel([]) == []
        assert L.relabel([(100, 100, 0), (200, 900, 1)]) == [T(200, 900, "S1")]

    def test_merge_renames_joins_close_same_speaker_turns_and_relabels(self):
        turns = [T(0, 1000, "S1"), T(1200, 2000, "S2"), T(2100, 3000, "S3"), T(5000, 6000, "S2")]
        merged = L.merge_labels(turns, {"S3": "S2"})
        assert merged == [T(0, 1000, "S1"), T(1200, 3000, "S2"), T(5000, 6000, "S2")]
        # merging the first speaker away relabels by first appearance again
        assert L.merge_labels([T(0, 900, "S1"), T(3000, 4000, "S2")], {"S1": "S2"}) == [
            T(0, 900, "S1"), T(3000, 4000, "S1")]

    def test_same_voice_and_tiny_labels_are_merged_with_notes(self):
        turns = [T(0, 5000, "S1"), T(6000, 11000, "S2"), T(12000, 17000, "S3"), T(17200, 17500, "S4")]
        sims = {("S1", "S2"): 0.55, ("S1", "S3"): 0.91, ("S2", "S3"): 0.52,
                ("S1", "S4"): 0.40, ("S2", "S4"): 0.62, ("S3", "S4"): 0.41}
        mapping, notes = L.plan_merges(turns, sims)
        assert mapping == {"S3": "S1", "S4": "S2"}
        assert any("S3 merged into S1" in n for n in notes) and any("S4 absorbed into S2" in n for n in notes)

    def test_distinct_voices_are_never_merged(self):
        turns = [T(0, 5000, "S1"), T(6000, 11000, "S2")]
        assert L.plan_merges(turns, {("S1", "S2"): 0.55}) == ({}, [])
        assert L.plan_merges(turns, {}) == ({}, [])  # no embedding: no evidence, no merge


class TestRoster:
    def test_roster_counts_union_talk_time_turns_and_extent(self):
        turns = [T(1000, 3000, "S1"), T(2500, 4000, "S2"), T(5000, 6000, "S1"), T(5500, 5800, "S1")]
        r = {x.label: x for x in L.roster(turns)}
        assert list(r) == ["S1", "S2"]
        assert r["S1"] == SpeakerStats(label="S1", talk_time_ms=3000, turn_count=3, first_ms=1000, last_ms=6000)
        assert (r["S2"].talk_time_ms, r["S2"].turn_count) == (1500, 1)

    def test_roster_rows_fit_the_store_schema(self, tmp_path, monkeypatch):
        monkeypatch.setenv("TALKTHROUGH_HOME", str(tmp_path))
        rid = "00000000000000d1"
        store.write_table("speakers", rid, L.roster([T(0, 10, "S1")]))
        assert store.read_rows("speakers", rid)[0]["label"] == "S1"
        store.delete_partition("speakers", rid)


class TestAttribution:
    TURNS = [T(0, 4000, "S1"), T(4000, 9000, "S2"), T(9500, 12000, "S1")]

    def test_word_goes_to_the_speaker_with_maximum_overlap(self):
        words = [W(0, 0, 100, 500, " a"), W(0, 1, 3700, 4500, " b"),  # 300 ms S1 vs 500 ms S2
                 W(0, 2, 3500, 4100, " c"), W(0, 3, 9100, 9400, " d")]  # gap word: no overlap
        assert A.attribute_words(words, self.TURNS) == ["S1", "S2", "S1", None]

    def test_ties_go_to_the_lower_label_and_a_speakers_turns_add_up(self):
        turns = [T(0, 1000, "S2"), T(1000, 2000, "S1")]
        assert A.attribute_words([W(0, 0, 500, 1500, " x")], turns) == ["S1"]  # 500 ms each: lower label
        turns = [T(0, 1000, "S1"), T(1000, 1600, "S2"), T(1700, 2000, "S2")]
        assert A.attribute_words([W(0, 0, 500, 2000, " y")], turns) == ["S2"]  # S1 500 < S2 600 + 300
        # overlapping turns (two people at once): each overlap counts for its speaker
        turns = [T(0, 2000, "S1"), T(500, 1500, "S2"), T(1500, 1800, "S2")]
        assert A.TurnIndex(turns).speaker(400, 1800) == "S1"  # S1 1400 vs S2 1000 + 300

    def test_segment_split_where_words_change_speaker(self):
        seg = S(7, 3000, 6000, "Right. Thanks for that update.")
        words = [W(7, 0, 3000, 3600, " Right."), W(7, 1, 4100, 4500, " Thanks"), W(7, 2, 4500, 4700, " for"),
                 W(7, 3, 4700, 5000, " that"), W(7, 4, 5000, 6000, " update.")]
        rows = A.attribute_segments([seg], words, self.TURNS)
        assert rows == [R(0, 7, 3000, 3600, "S1", "Right."), R(1, 7, 4100, 6000, "S2", "Thanks for that update.")]

    def test_unsplit_segment_keeps_whisper_text_and_times_exactly(self):
        seg = S(0, 100, 3000, "Hello there.")
        rows = A.attribute_segments([seg], [W(0, 0, 100, 900, " Hello"), W(0, 1, 900, 3000, " there.")],
                                    self.TURNS)
        assert rows == [R(0, 0, 100, 3000, "S1", "Hello there.")]

    def test_segment_without_words_falls_back_to_segment_overlap_then_nearest(self):
        segs = [S(0, 3500, 8000, "mostly S2"), S(1, 9350, 9450, "in the gap"), S(2, 30000, 31000, "far away")]
        rows = A.attribute_segments(segs, [], self.TURNS)
        assert [r.speaker for r in rows] == ["S2", "S1", None]
        assert [r.source_seq for r in rows] == [0, 1, 2] and [r.seq for r in rows] == [0, 1, 2]

    def test_gap_words_inherit_and_a_lone_jittery_word_is_smoothed(self):
        seg = S(3, 4200, 9000, "one two three four")
        turns = [T(4000, 6000, "S2"), T(6000, 6200, "S1"), T(6200, 9000, "S2")]
        words = [W(3, 0, 4200, 5000, " one"), W(3, 1, 6000, 6200, " two"),  # lone 200 ms S1 word
                 W(3, 2, 6300, 7000, " three"), W(3, 3, 7000, 9000, " four")]
        rows = A.attribute_segments([seg], words, turns)
        assert len(rows) == 1 and rows[0].speaker == "S2" and rows[0].text == "one two three four"
        # a word overlapping no turn takes the previous word's speaker
        turns2 = [T(0, 1000, "S1"), T(2000, 3000, "S2")]
        seg2 = S(0, 0, 3000, "a b c")
        rows2 = A.attribute_segments([seg2], [W(0, 0, 0, 900, " a"), W(0, 1, 1200, 1700, " b"),
                                              W(0, 2, 2000, 3000, " c")], turns2)
        assert [(r.speaker, r.text) for r in rows2] == [("S1", "a b"), ("S2", "c")]

    def test_a_row_names_who_else_talks_at_the_same_time_and_not_a_turns_blurred_edge(self):
        # S2 talks over S1 for 2 s inside S1's sentence; S3 only touches its end (300 ms)
        turns = [T(0, 6000, "S1"), T(2000, 4000, "S2"), T(5700, 9000, "S3")]
        seg = S(0, 0, 6000, "one two three")
        words = [W(0, 0, 0, 1500, " one"), W(0, 1, 1500, 4500, " two"), W(0, 2, 4500, 6000, " three")]
        (row,) = A.attribute_segments([seg], words, turns)
        assert row.speaker == "S1" and row.overlap == ("S2",)
        assert A.TurnIndex(turns).others(0, 6000, "S1", min_ms=300) == ["S2", "S3"]
        assert A.TurnIndex(turns).others(6000, 9000, "S3") == []  # S1 ended where S3 goes on alone

    def test_seq_is_renumbered_across_segments(self):
        segs = [S(0, 3000, 6000, "x y"), S(1, 9600, 11000, "z")]
        words = [W(0, 0, 3000, 3900, " x"), W(0, 1, 4100, 6000, " y"), W(1, 0, 9600, 11000, " z")]
        rows = A.attribute_segments(segs, words, self.TURNS)
        assert [(r.seq, r.source_seq, r.speaker) for r in rows] == [(0, 0, "S1"), (1, 0, "S2"),
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
        assert N.clean_name_candidate(line) == expect

    def test_candidates_follow_the_frames_shown_during_each_speakers_turns(self):
        turns = [T(0, 10000, "S1"), T(10000, 20000, "S2"), T(20000, 30000, "S1")]
        ocr = [(0, "Alice Chen\nMute\nops-console - Talkthrough demo"), (10000, "Bob Stone\nShare Screen"),
               (20000, "Alice Chen"), (25000, "Carol White\nhttps://example.com")]
        c = N.name_candidates(turns, ocr)
        assert c["S1"][0] == "Alice Chen" and "Carol White" in c["S1"] and c["S2"] == ["Bob Stone"]
        assert all(len(v) <= 3 and all(len(n) <= 80 for n in v) for v in c.values())

    def test_at_most_three_and_ambient_names_are_no_evidence(self):
        turns = [T(0, 10000, "S1"), T(10000, 20000, "S2")]
        many = "\n".join(["Ann Lee", "Ben Ode", "Cat Poe", "Dan Roe", "Eve Sun"])
        c = N.name_candidates(turns, [{"ms": 0, "text": many}, {"ms": 10000, "text": "Zed Quinn\n" + many}])
        assert c["S2"][0] == "Zed Quinn" and len(c["S2"]) == 1  # the five are on screen throughout
        assert "S1" not in c
        assert N.name_candidates(turns, []) == {} and N.name_candidates([], [(0, "Ann Lee")]) == {}


class TestNameAssignments:
    def test_parse_and_merge(self):
        ch = N.parse_name_assignments(["S1=Alice Chen", "s2=", "S3= Bob  Stone "])
        assert ch == {"S1": "Alice Chen", "S2": None, "S3": "Bob Stone"}
        assert N.merge_names({"S2": "Old", "S10": "Zed"}, ch) == {"S1": "Alice Chen", "S3": "Bob Stone",
                                                                   "S10": "Zed"}

    @pytest.mark.parametrize("bad", ["Alice", "X1=Alice", "S0=Alice", "S1=" + "a" * 81])
    def test_bad_assignments_are_clear_errors(self, bad):
        with pytest.raises(ValueError):
            N.parse_name_assignments([bad])


# =========================================================================== model resolver

class TestModelResolver:
    def test_pinned_upstream_files(self):
        assert M.SEGMENTATION.url.startswith("https://github.com/k2-fsa/sherpa-onnx/releases/download/")
        assert M.EMBEDDING.url.endswith("3dspeaker_speech_campplus_sv_zh_en_16k-common_advanced.onnx")
        for s in (M.SEGMENTATION.sha256, M.SEGMENTATION.member_sha256, M.EMBEDDING.sha256):
            assert len(s) == 64 and int(s, 16) >= 0


    def test_env_folder_without_models_is_a_clear_reason_and_no_download(self, tmp_path, monkeypatch):
        empty = tmp_path / "empty"
        empty.mkdir()
        monkeypatch.setenv(M.ENV_MODELS_DIR, str(empty))
        monkeypatch.setenv("TALKTHROUGH_MODELS_DIR", str(tmp_path / "cache"))
        assert M.find_in_dir(empty) is None
        with pytest.raises(M.ModelUnavailable, match="TALKTHROUGH_DIARIZATION_MODELS"):
            M.resolve_models(models_dir=str(empty))
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
        seg = M.ModelSpec("segmentation", "seg.onnx", (src / "pkg.tar.bz2").as_uri(),
                          sha256_file(src / "pkg.tar.bz2"), member="pkg/model.onnx",
                          member_sha256=hashlib.sha256(model).hexdigest())
        emb = M.ModelSpec("embedding", "emb.onnx", (src / "emb.onnx").as_uri(), sha256_file(src / "emb.onnx"))
        cache = tmp_path / "cache"
        assert M.ensure_cached(seg, cache).read_bytes() == model
        assert M.ensure_cached(emb, cache).read_bytes() == b"embedding" * 100
        assert sorted(p.name for p in cache.iterdir()) == ["emb.onnx", "seg.onnx"]  # archive removed
        (src / "emb.onnx").write_bytes(b"tampered")
        (cache / "emb.onnx").unlink()
        with pytest.raises(M.ModelUnavailable, match="sha256"):
            M.ensure_cached(emb, cache)
        bad_member = M.ModelSpec("segmentation", "seg2.onnx", seg.url, seg.sha256, member="pkg/model.onnx",
                                 member_sha256="0" * 64)
        with pytest.raises(M.ModelUnavailable, match="expected"):
            M.ensure_cached(bad_member, cache)
        assert sorted(p.name for p in cache.iterdir()) == ["seg.onnx"]  # no partial/unverified files
        with pytest.raises(M.ModelUnavailable, match="failed"):
            M.ensure_cached(M.ModelSpec("embedding", "x.onnx", (src / "missing.onnx").as_uri(), "0" * 64), cache)


def test_num_speakers_values():
    from talkthrough_assets.stages.turns.labels import parse_num_speakers

    assert [parse_num_speakers(v) for v in ("auto", "AUTO", " auto ", None, "", 0, "0")] == ["auto"] * 7
    assert [parse_num_speakers(v) for v in (1, "2", 6, " 4 ")] == [1, 2, 6, 4]
    for bad in ("five", "-1", "2.5", True, 51):
        with pytest.raises(ValueError):
            parse_num_speakers(bad)


def test_merge_to_count_joins_the_most_alike_voices_first():
    import numpy as np

    turns = [T(i * 2000, i * 2000 + 1500, f"S{i + 1}") for i in range(5)]
    a, b, c = np.eye(3)
    near_a = (a * 0.95 + b * 0.05) / np.linalg.norm(a * 0.95 + b * 0.05)
    near_c = (c * 0.9 + b * 0.1) / np.linalg.norm(c * 0.9 + b * 0.1)
    vectors = {"S1": a, "S2": b, "S3": near_a, "S4": c, "S5": near_c}
    assert L.merge_to_count(turns, vectors, 3) == {"S3": "S1", "S5": "S4"}
    assert L.merge_to_count(turns, vectors, 5) == {}
    # a label without a vector is left alone (too little clean audio to place it)
    assert "S2" not in L.merge_to_count(turns, {k: v for k, v in vectors.items() if k != "S2"}, 2)

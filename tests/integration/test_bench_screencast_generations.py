"""The screencast generations bench/bench_vs_bare.py times `process` on (bench/make_long_media.py
``screencast_variant``: the default screencast's slides over a narration varied by seed and voice), and how that
bench scores what `process` kept against their script. The benchmarks' code, so tested here rather than in the
unit tier (which never imports bench/); real espeak-ng, x264 and PyAV, nothing stands in for them."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))

import bench_vs_bare  # noqa: E402  (kept: what process kept of a generation's script)
import make_long_media as ml  # noqa: E402  (narration_variant, variant_scenes, screencast_variant)


@pytest.mark.parametrize("seed", [1, 4])
def test_every_sentence_of_a_generation_stays_on_its_own_slide(seed):
    narrated: list[dict] = []
    _, said = ml.narration_variant(seed, minutes=3, scenes_out=narrated)
    scenes = ml.variant_scenes(narrated, 180)
    assert [s["index"] for s in scenes] == list(range(len(narrated))) and len(scenes) >= 5
    assert scenes[0]["start_s"] == 0 and sum(s["duration_s"] for s in scenes) == 180
    for a, b in zip(scenes, scenes[1:]):
        assert b["start_s"] == a["start_s"] + a["duration_s"]
    assert all(s["duration_s"] >= 2 * ml.GOP_S and s["duration_s"] % ml.GOP_S == 0 for s in scenes)
    assert [s["title"] for s in scenes] == [s["title"] for s in narrated]
    for x in said:  # the remux repeats whole GOPs: a cut rounded down must not split a scene's narration
        s = scenes[x["scene"] - 1]
        assert s["start_s"] <= x["t0_s"] and x["t1_s"] <= s["start_s"] + s["duration_s"], (x, s)


def test_a_generation_is_a_screencast_cached_with_its_script(tmp_path):
    import av

    path, facts = ml.screencast_variant(2, minutes=1, out=tmp_path, quiet=True)
    assert path.name == ml.variant_name(2, 1) and facts["voice"] == ml.VARIANT_VOICES[2]
    assert json.loads(path.with_suffix(".json").read_text()) == facts
    with av.open(str(path)) as c:
        v = c.streams.video[0]
        assert (v.width, v.height, v.frames) == (1920, 1080, 1800)
        assert c.streams.audio and abs(c.duration / 1e6 - 60) < 0.1
        assert "seed 2" in c.metadata["title"]
    assert facts["said"][0]["intro"] and facts["titles"][0] in facts["said"][0]["text"].upper()
    mtime = path.stat().st_mtime_ns
    assert ml.screencast_variant(2, minutes=1, out=tmp_path, quiet=True) == (path, facts)
    assert path.stat().st_mtime_ns == mtime  # cached, not made again
    with pytest.raises(ValueError):
        ml.screencast_variant(2, minutes=1.01, out=tmp_path)


def test_kept_scores_words_introductions_and_wer_against_the_script():
    said = [{"t0_s": 0.5, "t1_s": 3.0, "text": "Scene 1. Now we look at the cache hit rate.", "scene": 1, "intro": True},
            {"t0_s": 4.0, "t1_s": 6.0, "text": "I will come back to this in a minute.", "scene": 1, "intro": False},
            {"t0_s": 20.5, "t1_s": 23.0, "text": "Scene 2. Now we look at the backup status.", "scene": 2,
             "intro": True}]
    words, seq = [], 0
    for x in said[:2]:  # the second introduction is lost
        toks = x["text"].split()
        step = (x["t1_s"] - x["t0_s"]) / len(toks)
        words += [{"seq": seq, "idx": i, "t0_ms": int(1000 * (x["t0_s"] + i * step)),
                   "t1_ms": int(1000 * (x["t0_s"] + (i + 1) * step)), "word": " " + w} for i, w in enumerate(toks)]
        seq += 1
    words.reverse()  # as stored rows come: kept orders them by segment and index
    k = bench_vs_bare.kept(said, words, " ".join(x["text"] for x in said))
    assert (k["ref_words"], k["words"], k["bare_words"]) == (28, 19, 28)
    assert (k["intros"], k["named"], k["intros_total"]) == (1, 1, 2)
    assert k["wer"] == pytest.approx(9 / 28) and k["bare_wer"] == 0

"""Engines as Dagster resources (#13): the stages asset runs on the engines its resources hand it.

The real job's assets, materialized with the three engine resources replaced by fakes: what the
`segments`, `ocr` and `turns` tables hold then comes from the fakes, so the pipeline used the injected
objects and loaded no model of its own. A private data root and an ephemeral instance."""

from __future__ import annotations

import threading
from types import SimpleNamespace

import pytest
from dagster import AssetKey, DagsterInstance, materialize
from fixture_facts import FIXTURES_DIR

from talkthrough_assets import definitions, pipeline, store
from talkthrough_assets.ids import recording_id


class FakeWhisper:
    def __init__(self):
        self.lock = threading.RLock()
        self.asked = []

    def model(self, model_ref, threads=None):
        self.asked.append(model_ref)
        return self

    def transcribe(self, samples, **kw):
        seg = SimpleNamespace(start=0.5, end=1.5, text=" fake whisper words", avg_logprob=-0.1, no_speech_prob=0.0,
                              words=[SimpleNamespace(start=0.5, end=1.5, word=" fake", probability=0.9)])
        return iter([seg]), SimpleNamespace(language="en", language_probability=1.0)


class FakeOcr:
    def __init__(self):
        self.frames = 0

    def status(self, enabled):
        return (self if enabled else None), "fake-ocr"

    def __call__(self, image, use_cls=False):
        self.frames += 1
        return [[[[0, 0], [10, 0], [10, 10], [0, 10]], "FAKE SCREEN TEXT", 0.9]], None


class FakeDiarizer:
    def __init__(self):
        self.calls = 0

    def run_turns(self, wav_path, **kw):
        from talkthrough_assets.stages import diarize

        self.calls += 1
        row = dict(diarize._row(reason="fake diarizer"), available=False)
        return {"diarization": row, "turns": [], "speakers": [], "speaker_segments": []}


@pytest.fixture()
def private_root(tmp_path, monkeypatch):
    monkeypatch.setenv("TALKTHROUGH_HOME", str(tmp_path / "home"))
    return tmp_path / "home"


def test_the_stages_asset_runs_on_the_engines_its_resources_give(private_root):
    src = FIXTURES_DIR / "screencast.mp4"  # audio and video: all three engines are asked
    rid = recording_id(src)
    pipeline.register_source(src, rid)
    instance = DagsterInstance.ephemeral()
    instance.add_dynamic_partitions(definitions.PARTITIONS_NAME, [rid])
    whisper, ocr, diarizer = FakeWhisper(), FakeOcr(), FakeDiarizer()
    stages = ["probe", "audio", "segments", "turns", "keyframes", "dedup", "ocr"]
    result = materialize(
        definitions.ASSETS, instance=instance, partition_key=rid, selection=[AssetKey(s) for s in stages],
        resources={"whisper": whisper, "ocr_engine": ocr, "diarizer": diarizer},
        run_config={"ops": {"talkthrough_stages": {"config": {"diarize": True}}}})
    assert result.success
    assert whisper.asked and diarizer.calls == 1 and ocr.frames > 0
    assert [s["text"] for s in store.read_rows("segments", rid)] == ["fake whisper words"]
    assert store.read_one("diarization", rid)["reason"] == "fake diarizer"
    rows = store.read_rows("ocr", rid)
    assert rows and {r["engine"] for r in rows} == {"fake-ocr"} and {r["text"] for r in rows} == {"FAKE SCREEN TEXT"}

"""Engines as Dagster resources (#13): the stages asset runs on the engines its resources hand it.

The real job's assets, materialized with the three engine resources set to engine objects of this test's
own (real faster-whisper, RapidOCR and sherpa-onnx, not the process's shared ones): those objects load
the models and the tables hold what they produced, so the pipeline used the injected engines and
loaded no model of its own. A private data root and an ephemeral instance."""

from __future__ import annotations

import os

import pytest
from dagster import AssetKey, DagsterInstance, materialize
from fixture_facts import FIXTURES_DIR, SCREENCAST_KEYWORDS, SCREENCAST_SCENES, ocr_normalize

from talkthrough_assets.defs import assets as definitions
from talkthrough_assets.defs.partitions import PARTITIONS_NAME
from talkthrough_assets.pipeline import events, engines
from talkthrough_assets.store import models
from talkthrough_assets.pipeline import prewarm, sources
from talkthrough_assets.pipeline import settings as S
from talkthrough_assets import store
from talkthrough_assets.core.ids import recording_id
from talkthrough_assets.stages.turns import engine as diarize_engine
from talkthrough_assets.stages.ocr.engine import OcrEngine
from talkthrough_assets.stages.segments.engine import Whisper


class CountingDiarizer(engines.Diarizer):
    """The real diarizer, counting the calls it gets."""

    def __init__(self):
        super().__init__(cache=diarize_engine.EngineCache())  # engines of its own, not the process's
        self.calls = 0

    def run_turns(self, wav_path, **kw):
        self.calls += 1
        return super().run_turns(wav_path, **kw)


@pytest.fixture()
def private_root(tmp_path, monkeypatch, tt_home):
    monkeypatch.setenv("TALKTHROUGH_HOME", str(tmp_path / "home"))
    assert os.environ.get("TALKTHROUGH_DIARIZATION_MODELS")  # set by tt_home: the offline model copies
    return tmp_path / "home"


def test_the_stages_asset_runs_on_the_engines_its_resources_give(private_root):
    src = FIXTURES_DIR / "screencast.mp4"  # audio and video: all three engines are asked
    rid = recording_id(src)
    sources.register_source(src, rid)
    instance = DagsterInstance.ephemeral()
    instance.add_dynamic_partitions(PARTITIONS_NAME, [rid])
    whisper, ocr, diarizer = Whisper(), OcrEngine(), CountingDiarizer()
    assert whisper is not engines.shared().whisper and ocr is not engines.shared().ocr
    stages = ["probe", "audio", "segments", "turns", "keyframes", "dedup", "ocr"]
    seen, progress = [], []  # the run's observer resource: told every stage's state and the long stages' progress
    watcher = events.Observer(on_stage=lambda stage, r, state, info: seen.append((stage, r, state)),
                              on_progress=lambda stage, r, info: progress.append(stage))
    result = materialize(
        definitions.ASSETS, instance=instance, partition_key=rid, selection=[AssetKey(s) for s in stages],
        resources={"whisper": whisper, "ocr_engine": ocr, "diarizer": diarizer, "observer": watcher},
        run_config={"ops": {"talkthrough_stages": {"config": {"diarize": True}}}})
    assert result.success
    assert {s for s, r, state in seen if state == "ok" and r == rid} == set(stages), seen
    assert all((s, rid, "started") in seen for s in stages) and "segments" in progress, (seen, progress)
    # the injected objects did the work: each loaded its model, and the diarizer was asked once
    # the transcription model, and the multilingual one when the language check of a doubtful segment ran
    loaded = [key[0] for key in whisper._models]
    assert models.resolve_whisper()[0] in loaded and len(loaded) <= 2, loaded
    assert ocr._engines and diarizer.calls == 1  # loaded (one engine per detection cap)
    assert diarizer.cache is not diarize_engine.default_cache() and len(diarizer.cache.engines) == 1
    words = " ".join(s["text"] for s in store.read_rows("segments", rid)).lower()
    assert sum(k in words for k in SCREENCAST_KEYWORDS) >= len(SCREENCAST_KEYWORDS) // 2
    seen = ocr_normalize(" ".join(r["text"] for r in store.read_rows("ocr", rid)))
    assert all(any(k in seen for k in sc["ocr_keywords"]) for sc in SCREENCAST_SCENES)
    assert {r["engine"] for r in store.read_rows("ocr", rid)} == {"rapidocr"}
    assert store.read_one("diarization", rid)["requested"]


def test_an_audio_file_never_loads_the_ocr_engine(private_root):
    """Neither the prewarm nor the ocr stage loads RapidOCR for a recording with no picture."""
    import threading

    src = FIXTURES_DIR / "meeting_audio.m4a"
    rid = recording_id(src)
    sources.register_source(src, rid)
    mine = engines.Engines(whisper=Whisper(), ocr=OcrEngine(), diarizer=engines.Diarizer())
    prewarm.prewarm(rid, list(S.STAGES), engines=mine)  # before probe: judged by the extension
    for t in threading.enumerate():
        if t.name == "prewarm":
            t.join(120)
    # Whisper only: never RapidOCR, and not yet the language check's multilingual model
    from talkthrough_assets.store.models import BASE_IN_MEMORY, resolve_whisper

    assert [k[0] for k in mine.whisper._models] == [resolve_whisper()[0]]
    assert mine.ocr._engines == {}
    instance = DagsterInstance.ephemeral()
    instance.add_dynamic_partitions(PARTITIONS_NAME, [rid])
    result = materialize(definitions.ASSETS, instance=instance, partition_key=rid,
                         resources={"whisper": mine.whisper, "ocr_engine": mine.ocr, "diarizer": mine.diarizer,
                                    "observer": events.NOBODY})
    assert result.success and mine.ocr._engines == {}
    assert store.read_rows("ocr", rid) == [] and store.read_rows("segments", rid)
    # English speech heard by the English-only default: the recording's language check loaded the multilingual
    # model when it ran, from its wheels into memory (nothing joined into the model cache)
    assert sorted(k[0] for k in mine.whisper._models) == sorted([resolve_whisper()[0], BASE_IN_MEMORY])
    assert not (store.models_dir() / "whisper-base").exists()


def test_a_recording_without_speech_never_loads_the_language_checks_model(private_root, tmp_path):
    """The language check's multilingual model is loaded when a check first needs it, not at the run's start:
    a recording whose audio holds no speech (5 s of faint noise) is transcribed by Whisper alone."""
    import wave

    import numpy as np

    from talkthrough_assets.store.models import BASE_IN_MEMORY, resolve_whisper

    src = tmp_path / "quiet.wav"
    noise = (np.random.default_rng(0).normal(0, 30, 16000 * 5)).astype("<i2")
    with wave.open(str(src), "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(16000)
        w.writeframes(noise.tobytes())
    rid = recording_id(src)
    sources.register_source(src, rid)
    mine = engines.Engines(whisper=Whisper(), ocr=OcrEngine(), diarizer=engines.Diarizer())
    prewarm.prewarm(rid, list(S.STAGES), engines=mine)
    instance = DagsterInstance.ephemeral()
    instance.add_dynamic_partitions(PARTITIONS_NAME, [rid])
    result = materialize(definitions.ASSETS, instance=instance, partition_key=rid,
                         resources={"whisper": mine.whisper, "ocr_engine": mine.ocr, "diarizer": mine.diarizer,
                                    "observer": events.NOBODY})
    assert result.success
    assert store.read_rows("words", rid) == []  # nothing said: no segment to doubt, no recording to judge
    loaded = [k[0] for k in mine.whisper._models]
    assert loaded == [resolve_whisper()[0]] and BASE_IN_MEMORY not in loaded


def test_the_ocr_prewarm_builds_the_sessions_the_stage_starts_on(private_root):
    """A screencast's OCR prewarm builds RapidOCR's ONNX sessions for the thread count the ocr stage starts
    with: what Whisper leaves when the audio branch runs beside it (cpu_plan), so the stage builds none at its
    start; and the stage, once Whisper is done, widens onto the other count."""
    import threading

    from talkthrough_assets.pipeline.scheduler import stage_workers
    from talkthrough_assets.stages import cpu_plan

    src = FIXTURES_DIR / "screencast.mp4"
    rid = recording_id(src)
    sources.register_source(src, rid)
    mine = engines.Engines(whisper=Whisper(), ocr=OcrEngine(), diarizer=engines.Diarizer())
    prewarm.prewarm(rid, list(S.STAGES), engines=mine)
    for t in threading.enumerate():
        if t.name == "prewarm":
            t.join(120)
    (engine,) = mine.ocr._engines.values()
    start = cpu_plan.ocr_threads(beside_whisper=stage_workers() >= 2)
    assert set(engine._tt_threads.sessions) == {start} and engine._tt_threads.current == start
    if cpu_plan.cores() >= 2:
        assert start < cpu_plan.cores()  # fewer than every core: Whisper decodes beside it

"""Engines as Dagster resources (#13): one set of loaded models per process, handed to the pipeline.

No models are loaded here: faster-whisper's and RapidOCR's loaders are replaced by counters."""

from __future__ import annotations

import threading
import time

from dagster import build_init_resource_context

from talkthrough_assets import definitions
from talkthrough_assets.defs import resources
from talkthrough_assets.pipeline import engines
from talkthrough_assets.stages.ocr import engine as ocr_engine
from talkthrough_assets.stages.segments import engine as segments_engine


def test_the_resources_hand_out_this_process_one_set_of_engines():
    shared = engines.shared()
    assert engines.shared() is shared
    got = {key: res.create_resource(build_init_resource_context()) for key, res in resources.RESOURCES.items()}
    assert got["whisper"] is shared.whisper is segments_engine.default_whisper()
    assert got["ocr_engine"] is shared.ocr is ocr_engine.default_ocr()
    assert got["diarizer"] is shared.diarizer
    assert got["data_store"].location()  # the store resource names the data root


def test_every_job_has_the_resources_bound():
    for name in ("process_recording", "register_folder"):
        job = definitions.defs.resolve_job_def(name)
        assert {"whisper", "ocr_engine", "diarizer", "data_store"} <= set(job.resource_defs), name


def test_whisper_loads_each_model_once_and_a_warmup_load_is_waited_for_not_repeated(monkeypatch):
    loads = []
    gate = threading.Event()

    class FakeModel:
        def __init__(self, ref, device, compute_type, cpu_threads, files=None, encoder_threads=None):
            loads.append((ref, device, compute_type, cpu_threads))
            gate.wait(5)

    monkeypatch.delenv("TALKTHROUGH_DEVICE", raising=False)
    monkeypatch.delenv("TALKTHROUGH_COMPUTE_TYPE", raising=False)
    w = segments_engine.Whisper(max_models=2, load=FakeModel)
    warm = threading.Thread(target=w.warm, args=("tiny", 2))  # the CLI's prewarm, in the background
    warm.start()
    while not loads:
        time.sleep(0.001)
    got = []
    stage = threading.Thread(target=lambda: got.append(w.model("tiny", 2)))  # the stage asks meanwhile
    stage.start()
    gate.set()
    warm.join(5)
    stage.join(5)
    assert loads == [("tiny", "cpu", "int8", 2)] and isinstance(got[0], FakeModel)
    assert w.model("tiny", 2) is got[0]
    w.model("tiny", 1)
    w.model("base", 1)  # a third key evicts the oldest
    assert len(loads) == 3
    w.model("tiny", 2)
    assert len(loads) == 4


def test_ocr_engine_loads_once_and_a_failed_load_is_tried_again(monkeypatch):
    calls = []

    def load(max_side, threads=None):
        calls.append(1)
        if len(calls) == 1:
            raise ImportError("no wheel")
        return "engine"

    monkeypatch.setattr(ocr_engine, "_load_engine", load)
    e = ocr_engine.OcrEngine()
    assert e.status(False) == (None, "off (TALKTHROUGH_OCR=off)") and calls == []
    engine, status = e.status(True)
    assert engine is None and status.startswith("off (rapidocr unavailable: ImportError")
    assert e.status(True) == ("engine", "rapidocr") and e.status(True) == ("engine", "rapidocr")
    assert len(calls) == 2


def test_the_engine_stages_are_the_runners_that_take_engines():
    import inspect

    from talkthrough_assets.pipeline import stagerun

    takes = {s for s, fn in stagerun.RUNNERS.items() if "engines" in inspect.signature(fn).parameters}
    assert takes == stagerun.ENGINE_STAGES == {"segments", "turns", "ocr"}


def test_a_model_loading_holds_no_lock_a_decode_needs():
    gate, started = threading.Event(), threading.Event()

    class SlowModel:
        def __init__(self, ref, device, compute_type, cpu_threads, files=None, encoder_threads=None):
            started.set()
            gate.wait(5)

    w = segments_engine.Whisper(max_models=2, load=SlowModel)
    loading = threading.Thread(target=w.warm, args=("base", 1))  # the language check's model, in the background
    loading.start()
    assert started.wait(5)
    got = []
    decode = threading.Thread(target=lambda: got.append(w.lock.acquire(timeout=2) and (w.lock.release() or True)))
    decode.start()
    decode.join(5)
    assert got == [True]  # a decode of another model goes on meanwhile
    gate.set()
    loading.join(5)
    assert isinstance(w.model("base", 1), SlowModel)


def test_a_failed_load_is_tried_again_by_the_next_caller():
    calls = []

    class Flaky:
        def __init__(self, ref, device, compute_type, cpu_threads, files=None, encoder_threads=None):
            calls.append(1)
            if len(calls) == 1:
                raise MemoryError("no room")

    w = segments_engine.Whisper(max_models=2, load=Flaky)
    try:
        w.model("tiny", 1)
        raise AssertionError("the first load should fail")
    except MemoryError:
        pass
    assert isinstance(w.model("tiny", 1), Flaky) and len(calls) == 2


def test_english_only_is_read_from_the_vocabulary_without_loading_the_model(tmp_path):
    from talkthrough_assets.stages.segments import engine as E

    for name, tokens, expected in (("en", 51864, True), ("multi", 51865, False), ("v3", 51866, False)):
        folder = tmp_path / name
        folder.mkdir()
        (folder / "vocabulary.txt").write_text("".join(f"t{i}\n" for i in range(tokens)))
        assert E.english_only(str(folder)) is expected, name
    assert E.english_only(str(tmp_path / "missing")) is None  # said by the loaded model then

"""Dagster resources: the models the stages run on (Whisper, RapidOCR, the sherpa-onnx diarizer), loaded once per
process (:mod:`talkthrough_assets.pipeline.engines`), and the data store. Injected into the stages asset, which hands them to
the pipeline as plain objects."""

# no `from __future__ import annotations`: Dagster reads the op/resource annotations at definition time
from contextlib import contextmanager
from contextvars import ContextVar

from dagster import ConfigurableResource, InitResourceContext

from talkthrough_assets.pipeline import engines
from talkthrough_assets.pipeline.events import NOBODY, Observer
from talkthrough_assets import store
from talkthrough_assets.stages.ocr.engine import OcrEngine
from talkthrough_assets.stages.segments.engine import Whisper


class WhisperResource(ConfigurableResource):
    """faster-whisper (the `segments` stage): each model loaded once per process and kept. The model,
    device and threads are the recording's settings and the TALKTHROUGH_DEVICE/COMPUTE_TYPE/WHISPER_THREADS
    environment, as before; the CLI's prewarm loads into this same object while Dagster starts."""

    def create_resource(self, context: InitResourceContext) -> Whisper:
        return engines.shared().whisper


class OcrResource(ConfigurableResource):
    """The RapidOCR engine (the `ocr` stage), loaded once per process and kept."""

    def create_resource(self, context: InitResourceContext) -> OcrEngine:
        return engines.shared().ocr


class DiarizerResource(ConfigurableResource):
    """sherpa-onnx speaker diarization (the `turns` stage): models verified once per process, an engine
    kept per clustering setting (speaker count, threshold)."""

    def create_resource(self, context: InitResourceContext) -> engines.Diarizer:
        return engines.shared().diarizer


class DataStoreResource(ConfigurableResource):
    """The data root every stage reads and writes (``$TALKTHROUGH_HOME``: a folder or ``s3://...``), owned
    by :mod:`talkthrough_assets.store`; this resource names it for Dagster code."""

    def location(self, key: str = "") -> str:
        """Where ``key`` (a path relative to the data root) lives, as a user would name it."""
        return store.data_location(key)


# Who watches the in-process run being executed in this context (a context variable: each thread and task has
# its own value, set only around that run; see watched_by)
_WATCHER: ContextVar[Observer] = ContextVar("talkthrough_run_observer", default=NOBODY)


@contextmanager
def watched_by(observer: Observer):
    """Around an in-process execution (``execute_in_process`` runs the step in the caller's thread): its
    ``observer`` resource is ``observer``."""
    token = _WATCHER.set(observer)
    try:
        yield
    finally:
        _WATCHER.reset(token)


class ObserverResource(ConfigurableResource):
    """Who watches a run from outside Dagster: nobody for the UI's and the sensor's runs (the event log says it
    all); the CLI's in-process run is watched by its own (:func:`watched_by` around it, from
    :func:`talkthrough_assets.app.runs.run_stages`), so what it shows live travels with that run alone. (Dagster
    binds the Definitions' resources to the assets, so a run cannot be handed a resource object of its own.)"""

    def create_resource(self, context: InitResourceContext) -> Observer:
        return _WATCHER.get()


RESOURCES = {"whisper": WhisperResource(), "ocr_engine": OcrResource(), "diarizer": DiarizerResource(),
             "data_store": DataStoreResource(), "observer": ObserverResource()}

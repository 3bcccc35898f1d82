"""The model-backed engines the stages run on, one set per process, handed to the pipeline.

* :class:`~talkthrough_assets.stages.segments.engine.Whisper`: faster-whisper models (``segments``);
* :class:`~talkthrough_assets.stages.ocr.engine.OcrEngine`: the RapidOCR engine (``ocr``);
* :class:`Diarizer`: sherpa-onnx speaker diarization (``turns``).

Each loads its model on first use and keeps it for the life of the process. The pipeline takes an
:class:`Engines` as a plain argument (``pipeline.run_stages(..., engines=...)``); Dagster's resources
(``definitions.py``) hand out :func:`shared`, and so does the CLI's prewarm, which starts loading
them in background threads while Dagster imports: the run then finds them loaded (or waits for the
load already under way, never starting a second one). No Dagster here.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from talkthrough_assets.core import config
from talkthrough_assets.model.turns import TurnsOutput
from talkthrough_assets.stages import turns as diarize_stage
from talkthrough_assets.stages.turns import engine as diarize_engine
from talkthrough_assets.stages.turns import models as diarize_models
from talkthrough_assets.stages.ocr import engine as ocr_engine
from talkthrough_assets.stages.segments import engine as whisper_engine


class Diarizer:
    """sherpa-onnx speaker diarization: :func:`stages.turns.run_turns` on this diarizer's engines (built
    once per clustering setting and kept in ``cache``, since the speaker count and threshold are
    per-recording settings; default: the process-wide cache). Its models are found and verified on each
    call (a cached hash)."""

    def __init__(self, cache: diarize_engine.EngineCache | None = None):
        self.cache = cache or diarize_engine.default_cache()

    def run_turns(self, wav_path: str | os.PathLike | None, **kw) -> TurnsOutput:
        return diarize_stage.run_turns(wav_path, cache=self.cache,
                                       models_dir=config.get(diarize_models.ENV_MODELS_DIR), **kw)


@dataclass(frozen=True)
class Engines:
    whisper: whisper_engine.Whisper
    ocr: ocr_engine.OcrEngine
    diarizer: Diarizer


# the stage modules' defaults (nothing is loaded until first use), so a stage function called on its
# own, e.g. from a benchmark, shares the loaded models too
_shared = Engines(whisper=whisper_engine.default_whisper(), ocr=ocr_engine.default_ocr(), diarizer=Diarizer())


def shared() -> Engines:
    """This process's engines (the same objects every call)."""
    return _shared

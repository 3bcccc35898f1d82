"""Loading the engines a run's stages will need before the run starts: each planned stage's StageSpec
``prewarm`` hook. Native hooks (``prewarm_native``) run first, in the calling thread, beside Dagster's import;
the Python ones once the run's first stage starts, each starting its own thread (bench/bench_cold_start.py)."""

from __future__ import annotations

from talkthrough_assets.pipeline import options
from talkthrough_assets.pipeline import settings as S
from talkthrough_assets.pipeline.engines import Engines
from talkthrough_assets.pipeline.engines import shared as shared_engines
from talkthrough_assets.pipeline.scheduler import beside, stage_workers
from talkthrough_assets.pipeline.stagespec import SPECS
from talkthrough_assets.stages.runner import RunContext


def prewarm(recording_id: str, stages: list[str], engines: Engines | None = None, given: dict | None = None) -> None:
    """Load the engines the planned stages will need: :func:`prewarm_native` here, then :func:`prewarm_python`.
    Loads into ``engines`` (default: this process's, the ones Dagster's resources hand the run)."""
    prewarm_native(recording_id, stages, engines, given)
    prewarm_python(recording_id, stages, engines, given)


def prewarm_native(recording_id: str, stages: list[str], engines: Engines | None = None,
                   given: dict | None = None) -> None:
    """The native hooks of the planned stages, in the calling thread (e.g. Whisper: CTranslate2)."""
    _prewarm(recording_id, stages, engines, given, native=True)


def prewarm_python(recording_id: str, stages: list[str], engines: Engines | None = None,
                   given: dict | None = None) -> None:
    """The Python hooks of the planned stages (e.g. RapidOCR's import), each starting its own thread: called
    once the run's first stage starts, so that they overlap the first stages rather than Dagster's own import and
    its creation of the run, which need the interpreter just as much."""
    _prewarm(recording_id, stages, engines, given, native=False)


def _prewarm(recording_id: str, stages: list[str], engines: Engines | None, given: dict | None, *,
             native: bool) -> None:
    for spec in SPECS:
        if spec.prewarm is None or spec.prewarm_native != native or spec.name not in stages:
            continue
        ctx = RunContext(recording_id, spec.name, beside=beside(spec.name, stages, stage_workers()))
        spec.prewarm(recording_id, options.build(spec.name, S.effective(recording_id, given)), engines or shared_engines(), ctx)

"""A file that a stage rejects in milliseconds (text renamed .mp4, 0 bytes, no streams) fails before a
Dagster run is started (seconds of start-up for nothing): that stage runs in-process and records its failure
and reason in ``stage_runs`` exactly as in a run. Which stages can tell: their ``StageSpec.reject``. The drop
folder asks the same checks of a file before it registers it (:func:`refusal`): a refused file is no recording,
whatever its bytes."""

from __future__ import annotations

import os

from talkthrough_assets.core.errors import BadMediaError, StageError
from talkthrough_assets.pipeline import stagerun
from talkthrough_assets.pipeline.events import NOBODY, Observer, Skipped
from talkthrough_assets.pipeline.stagespec import SPECS


def rejected(path: str | os.PathLike, rid: str, stages: list[str], observer: Observer = NOBODY) -> str | None:
    """The stage (of ``stages``, the ones about to run) that rejected the file and recorded its failure (told to
    ``observer`` as a run's would be); None: run them."""
    for sp in SPECS:
        if sp.reject is None or sp.name not in stages:
            continue
        try:
            sp.reject(path)
        except BadMediaError:
            try:
                stagerun.run_stage(sp.name, rid, observer=observer)
            except StageError:
                return sp.name
    return None


def refusal(path: str | os.PathLike) -> tuple[str, str] | None:
    """(stage, one-line reason) of the first stage whose fast check refuses the file (empty, not media, no
    stream); None: a run may start on it. Nothing is recorded: what refused a file is for the caller to say."""
    for sp in SPECS:
        if sp.reject is None:
            continue
        try:
            sp.reject(path)
        except BadMediaError as e:
            return sp.name, str(e)
    return None


def refused_run(stage: str, reason: str, stages: list[str]) -> list[tuple[str, str, Exception]]:
    """What a run of ``stages`` on a file ``stage`` refused reports, as a run's stage failures: (stage, one-line
    reason, error), the refusing stage first, then every other stage as not run because of it."""
    first = (stage, f"{stage}: {reason}", BadMediaError(reason, stage=stage))
    return [first] + [(s, str(Skipped(s, stage)), Skipped(s, stage)) for s in stages if s != stage]

"""A file that a stage rejects in milliseconds (text renamed .mp4, 0 bytes, no streams) fails before a
Dagster run is started (seconds of start-up for nothing): that stage runs in-process and records its failure
and reason in ``stage_runs`` exactly as in a run. Which stages can tell: their ``StageSpec.reject``."""

from __future__ import annotations

import os

from talkthrough_assets.core.errors import BadMediaError, StageError
from talkthrough_assets.pipeline import execute as pipeline
from talkthrough_assets.pipeline.stagespec import SPECS


def rejected(path: str | os.PathLike, rid: str, stages: list[str]) -> str | None:
    """The stage (of ``stages``, the ones about to run) that rejected the file and recorded its failure;
    None: run them."""
    for sp in SPECS:
        if sp.reject is None or sp.name not in stages:
            continue
        try:
            sp.reject(path)
        except BadMediaError:
            try:
                pipeline.run_stage(sp.name, rid)
            except StageError:
                return sp.name
    return None

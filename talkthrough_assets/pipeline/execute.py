"""Running stages, the pipeline's one entry point (what Dagster's assets, the service and the CLI call). No Dagster
here, and no stage named: what differs per stage is a field or hook of its StageSpec (``pipeline/stagespec.py``).

* :func:`run_stage`: one stage of one recording (``stagerun.py``: under the recording's lock, recording what
  config/code produced it);
* :func:`run_stages`: the concurrent scheduler of a recording's stages (``scheduler.py``) and the events it
  yields (``events.py``: :data:`STARTED`, :class:`Progress`, :class:`Skipped`; the stage :data:`listeners`);
* :func:`plan`: what to re-run, :func:`record_unfinished`: why a run that failed outside its stages left one undone
  (``freshness.py``); :func:`prewarm`: engines loaded before a run (``prewarm.py``);
* :func:`register_source` and a recording's names (``sources.py``); :func:`disk_reason` (``disk.py``).

What a run tells a stage (its progress listener, the branches beside it) is the stage run's explicit
:class:`~talkthrough_assets.stages.runner.RunContext`, not module state.
"""

from __future__ import annotations

from talkthrough_assets.pipeline import settings as S  # noqa: F401 - pipeline.S: the stage order and settings
from talkthrough_assets.pipeline.disk import disk_reason
from talkthrough_assets.pipeline.events import (STARTED, Progress, Skipped, failed_stage, failure_reason,
                                                listeners)
from talkthrough_assets.pipeline.freshness import plan, record_unfinished
from talkthrough_assets.pipeline.prewarm import prewarm, prewarm_native, prewarm_python
from talkthrough_assets.pipeline.scheduler import run_stages, stage_workers
from talkthrough_assets.pipeline.sources import recording_filename, recording_names, register_source
from talkthrough_assets.pipeline.stagerun import (CODE_VERSIONS, CONTEXT_STAGES, ENGINE_STAGES, RUNNERS,
                                                  STAGE_LOCK_WAIT_S, run_stage, verify_check)
from talkthrough_assets.stages.runner import (CheckResult, RunContext, StageResult, source_path, stage_reason,
                                              stage_state)

__all__ = [
    "S", "disk_reason", "STARTED", "Progress", "Skipped", "failed_stage", "failure_reason", "listeners", "plan",
    "record_unfinished",
    "prewarm", "prewarm_native", "prewarm_python", "run_stages",
    "stage_workers", "recording_filename", "recording_names", "register_source", "CODE_VERSIONS",
    "CONTEXT_STAGES", "ENGINE_STAGES", "RUNNERS", "STAGE_LOCK_WAIT_S", "run_stage", "verify_check",
    "CheckResult", "RunContext", "StageResult", "source_path", "stage_reason", "stage_state",
]

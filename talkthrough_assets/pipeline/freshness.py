"""What to (re)run for a recording (:func:`plan`): the stages whose output is missing, failed or made under
other settings or code, those their StageSpec's ``stale`` hook says are out of date, the ones that re-make damaged
outputs, and everything downstream of them. Names no stage."""

from __future__ import annotations

from talkthrough_assets.model.runs import StageRun
from talkthrough_assets.pipeline import datacheck
from talkthrough_assets.pipeline import options
from talkthrough_assets.pipeline import settings as S
from talkthrough_assets.pipeline.events import failure_reason, record
from talkthrough_assets.pipeline.stagerun import CODE_VERSIONS
from talkthrough_assets.pipeline.stagespec import BY_NAME, downstream
from talkthrough_assets.stages.runner import stage_state


def plan(recording_id: str, *, force: bool = False, given: dict | None = None) -> list[str]:
    """Stages to (re)run: missing, failed, changed config or code, stale by their StageSpec's hook (chunks left
    undecoded, diarization models that appeared, enrolled voices that changed) -> those plus their downstream."""
    if force:
        return list(S.STAGES)
    cfg = S.effective(recording_id, given)
    state = stage_state(recording_id)
    stale = set()
    for stage in S.STAGES:
        st = state.get(stage)
        hook = BY_NAME[stage].stale
        if (st is None or not st.ok or st.config_hash != S.config_hash(stage, cfg)
                or st.code_version != CODE_VERSIONS[stage] or (hook is not None and hook(recording_id, cfg, st, options.build(stage, cfg)))):
            stale.add(stage)
    # outputs deleted or damaged since (a torn Parquet file, a removed published file or frame folder): exactly
    # the stages that re-make them (datacheck)
    repair = datacheck.repair_stages(recording_id) if len(stale) < len(S.STAGES) else set()
    return S.ordered(downstream(stale) | repair)


def record_unfinished(recording_id: str, why: str) -> str | None:
    """A run that ended outside any stage (Dagster's storage full, say): ``why`` recorded as the failure of the
    first stage it left to do, so `recordings --find` and the summary say why, not "registered"; the next
    `process` runs that stage again, as it would anyway. The stage named, or None (a stage said why already, or
    nothing is left to do)."""
    if failure_reason(recording_id):
        return None
    todo = plan(recording_id)
    if not todo:
        return None
    stage, cfg = todo[0], S.effective(recording_id)
    record(recording_id, StageRun(stage=stage, config_hash=S.config_hash(stage, cfg), code_version=CODE_VERSIONS[stage],
                                  status="failed", reason=why, elapsed_s=0.0))
    return stage

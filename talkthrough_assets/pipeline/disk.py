"""A disk fault said in one line: the reason a stage or run that hit a full or read-only disk reports."""

from __future__ import annotations

from talkthrough_assets import store
from talkthrough_assets.pipeline import settings as S
from talkthrough_assets.pipeline.stagespec import SPECS


def disk_reason(e: BaseException, rid: str | None = None) -> str | None:
    """``disk full at <path>: <n> MB free, <m> MB needed`` / ``read-only data root: <path>`` when ``e`` is a
    disk fault (anywhere: stage outputs, the model cache, Dagster's storage, a lock), else None; <m> is the
    estimate of the first stage whose StageSpec has a ``disk_need`` (a preflight's) for the recording."""
    if store.diskfault.kind(e) is None:
        return None
    need = None
    if rid:
        need = next((n for spec in SPECS if spec.disk_need is not None
                     and (n := spec.disk_need(rid, lambda: S.effective(rid))) is not None), None)
    return store.diskfault.reason(e, store.data_location(), need)

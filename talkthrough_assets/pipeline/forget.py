"""Forgetting a recording's stored outputs: every table's partition (search terms and aliases included), its
frames, WAV, manifest and settings (:func:`talkthrough_assets.store.forget_recording`), then what each stage
keeps beyond its tables (its ``StageSpec.forget``: the Whisper/OCR results no other recording uses, the
search index part and merged postings). No Dagster here: the partition and its runs are the caller's."""

from __future__ import annotations

from talkthrough_assets import store
from talkthrough_assets.pipeline.stagespec import SPECS


def forget_outputs(rid: str) -> list[str]:
    """Remove every stored output of ``rid`` (the caller holds its lock); returns the removed locations."""
    then = [sp.forget(rid) for sp in SPECS if sp.forget]  # each reads what it needs before the tables go
    removed = store.forget_recording(rid)
    for remove in then:
        removed += remove()
    return removed

"""Each stage's typed options, built once per run (the way faster-whisper passes ``TranscriptionOptions``).

A stage module declares a frozen ``Options`` dataclass (its ``StageSpec.options``) and its ``run()`` takes one.
:func:`build` fills it from the recording's effective settings (``pipeline.settings.effective``: the setting's
one default, replaced by its environment variable, replaced by the value persisted for the recording) and from
the environment (engine choices, e.g. ``TALKTHROUGH_WHISPER_THREADS``): a field named as a setting takes that
setting's value; a field whose metadata names an ``env`` variable takes :func:`core.config.get` of it (its
declared default when unset); any other field keeps its own default. So stage modules never read the
environment, and the values are the same ones the config hash covers (``settings.config_hash``).
"""

from __future__ import annotations

from dataclasses import fields
from typing import Any, Mapping

from talkthrough_assets.core import config
from talkthrough_assets.pipeline.stagespec import BY_NAME, SETTING_BY_NAME


def build(stage: str, settings: Mapping[str, Any]) -> Any:
    """``stage``'s Options from ``settings`` (its effective settings) and the environment; None for a stage
    without options."""
    cls = BY_NAME[stage].options
    if cls is None:
        return None
    kw: dict[str, Any] = {}
    for f in fields(cls):
        if f.name in SETTING_BY_NAME:
            kw[f.name] = settings.get(f.name)
        elif "env" in f.metadata:
            kw[f.name] = config.get(f.metadata["env"])
    return cls(**kw)


__all__ = ["build"]

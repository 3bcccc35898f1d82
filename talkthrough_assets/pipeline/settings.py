"""Effective per-recording settings: defaults (env) < persisted per-recording values < the run's own.

A run's settings (``--recorded-at``, ``--diarize``, a vocabulary ..., or the UI's run config) travel with the run
(its Dagster run config) and are persisted for the recording only once that run has succeeded
(:func:`persist`), so a later re-run of an upstream stage never silently drops them, and a value that failed
never sticks. Each stage's config hash covers only the keys it reads; a changed key re-runs that stage and its
downstream.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from talkthrough_assets.core import config
from talkthrough_assets.core.errors import UsageError
from talkthrough_assets import store
from talkthrough_assets.pipeline import options
from talkthrough_assets.pipeline.stagespec import BY_NAME, SETTING_BY_NAME, SETTINGS, SPECS

# Everything below is derived from stagespec (the one description of stages and settings).
DEFAULTS: dict[str, Any] = {st.name: st.default for st in SETTINGS}

# Which settings each stage reads (its config hash covers exactly these).
STAGE_KEYS: dict[str, tuple[str, ...]] = {sp.name: sp.settings for sp in SPECS}

# The asset graph (stage -> upstream stages), in topological order. Dagster deps are built from this.
DEPS: dict[str, tuple[str, ...]] = {sp.name: sp.upstream for sp in SPECS}
STAGES = tuple(DEPS)


def _env_defaults() -> dict[str, Any]:
    d = dict(DEFAULTS)
    for st in SETTINGS:  # a setting's default replaced by its environment variable (config parses and checks it)
        if st.env and (config.is_set(st.env) or st.default is None):
            d[st.name] = st.normalize(config.get(st.env))
    return d


def load_overrides(recording_id: str) -> dict[str, Any]:
    return store.get_json(store.settings_key(recording_id), {}) or {}


def save_overrides(recording_id: str, changes: dict[str, Any]) -> dict[str, Any]:
    """Merge ``changes`` into the persisted overrides (a None value removes the key). A value its
    setting cannot take raises ValueError (nothing is saved)."""
    unknown = set(changes) - set(DEFAULTS)
    if unknown:
        raise KeyError(f"unknown setting(s): {sorted(unknown)}")
    changes = {k: SETTING_BY_NAME[k].normalize(v) for k, v in changes.items()}
    cur = load_overrides(recording_id)
    for k, v in changes.items():
        if v is None:
            cur.pop(k, None)
        else:
            cur[k] = v
    store.put_json(store.settings_key(recording_id), cur)
    return cur


def checked(given: dict[str, Any] | None) -> dict[str, Any]:
    """A run's settings, normalised (None values dropped); UsageError for one its setting cannot take."""
    out = {}
    for k, v in (given or {}).items():
        if v is None:
            continue
        if k not in SETTING_BY_NAME:
            raise UsageError(f"unknown setting {k!r}")
        try:
            out[k] = SETTING_BY_NAME[k].normalize(v)
        except (ValueError, UsageError) as e:
            raise UsageError(f"{k}: {e}") from None
    return out


def as_run_config(given: dict[str, Any]) -> dict[str, Any]:
    """Checked settings as the stages asset's run config takes them: each of its declared type (a speaker count
    normalises to a number, the config field is text)."""
    return {k: SETTING_BY_NAME[k].type(v) if SETTING_BY_NAME[k].type in (str, int, float)
            and not isinstance(v, SETTING_BY_NAME[k].type) else v for k, v in checked(given).items()}


def persist(recording_id: str, given: dict[str, Any] | None) -> None:
    """Keep a succeeded run's settings for the recording's later runs (nothing written when they are kept already)."""
    given = checked(given)
    if given and any(load_overrides(recording_id).get(k) != v for k, v in given.items()):
        save_overrides(recording_id, given)


def check_environment() -> None:
    """Raise UsageError when an environment variable gives a setting a value it cannot take (checked where a
    command starts, before any run: not at the stage that reads it)."""
    _env_defaults()


def effective(recording_id: str, given: dict[str, Any] | None = None) -> dict[str, Any]:
    """The settings a run of the recording uses: the defaults, its persisted values, then ``given`` (the run's)."""
    s = _env_defaults()
    given = checked(given)
    # normalised: a value persisted by an older version (num_speakers 0 or null = automatic) reads as today's;
    # one the run gives anew is not read (a bad stored value is replaced by giving the setting again)
    for k, v in load_overrides(recording_id).items():
        if k in given:
            continue
        try:
            s[k] = SETTING_BY_NAME[k].normalize(v) if k in SETTING_BY_NAME else v
        except ValueError as e:  # stored before values were checked, or edited by hand
            raise UsageError(f"{e} (stored in {store.settings_key(recording_id)}; give the setting again to "
                             f"replace it)") from None
    s.update(given)
    return s


def engine_fingerprint(stage: str, settings: dict[str, Any] | None = None) -> dict[str, Any]:
    """Engine choices that change a stage's output without being per-recording settings (its
    ``StageSpec.engine``, of the stage's options): part of its config hash, so changing one re-runs the stage
    (and records what produced it)."""
    engine = BY_NAME[stage].engine
    return engine(options.build(stage, settings or {})) if engine else {}


def stage_config(stage: str, settings: dict[str, Any]) -> dict[str, Any]:
    cfg = {k: settings.get(k) for k in STAGE_KEYS[stage]}
    env = engine_fingerprint(stage, settings)
    if env:
        cfg["_engine"] = env
    return cfg


def config_hash(stage: str, settings: dict[str, Any]) -> str:
    blob = json.dumps(stage_config(stage, settings), sort_keys=True, default=str)
    return hashlib.sha256(blob.encode()).hexdigest()[:16]


def ordered(stages: set[str]) -> list[str]:
    return [s for s in STAGES if s in stages]

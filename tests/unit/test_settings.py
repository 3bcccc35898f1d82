"""settings and stagespec: amend scopes, config hashes, and every stage fact derived from its StageSpec."""

from __future__ import annotations

from talkthrough_assets.pipeline import settings as S
from talkthrough_assets.pipeline.stagespec import downstream


def test_amend_scopes_follow_the_graph():
    assert S.ordered(downstream({"wall_clock"})) == ["wall_clock", "manifest"]
    assert S.ordered(downstream({"turns"})) == ["turns", "manifest"]
    assert S.ordered(downstream({"segments"})) == ["segments", "turns", "manifest"]
    assert S.ordered(downstream({"keyframes"})) == ["keyframes", "dedup", "ocr", "manifest"]
    assert S.config_hash("wall_clock", {"recorded_at": "x"}) != S.config_hash("wall_clock", {"recorded_at": "y"})
    assert S.config_hash("segments", {"recorded_at": "x"}) == S.config_hash("segments", {"recorded_at": "y"})


def test_engine_choices_from_the_environment_are_in_the_config_hash(monkeypatch):
    """TALKTHROUGH_DEVICE / COMPUTE_TYPE change Whisper's output: changing them re-runs segments."""
    cfg = dict(S.DEFAULTS, ocr=True)
    base = S.config_hash("segments", cfg)
    monkeypatch.setenv("TALKTHROUGH_COMPUTE_TYPE", "int8_float32")
    assert S.config_hash("segments", cfg) != base
    monkeypatch.delenv("TALKTHROUGH_COMPUTE_TYPE")
    assert S.config_hash("segments", cfg) == base
    assert "det_max_side" in S.stage_config("ocr", cfg)["_engine"]


def test_every_stage_fact_comes_from_its_stage_spec():
    """One StageSpec per stage (#13): the settings, plan, pipeline and Dagster views agree with it."""
    from dagster import AssetKey

    from talkthrough_assets.defs import assets as definitions
    from talkthrough_assets.defs.asset_specs import StagesConfig
    from talkthrough_assets.pipeline import stagerun
    from talkthrough_assets.pipeline.stagespec import SETTINGS, SPECS

    assert S.STAGES == tuple(sp.name for sp in SPECS) and set(stagerun.RUNNERS) == set(S.STAGES)
    assert S.DEFAULTS == {st.name: st.default for st in SETTINGS}
    asset = definitions.ASSETS[0]
    for sp in SPECS:
        key = AssetKey(sp.name)
        assert S.DEPS[sp.name] == sp.upstream and S.STAGE_KEYS[sp.name] == sp.settings
        assert stagerun.CODE_VERSIONS[sp.name] == sp.code_version == asset.code_versions_by_key[key]
        assert {d.asset_key for d in asset.specs_by_key[key].deps} == {AssetKey(u) for u in sp.upstream}
        assert asset.specs_by_key[key].description == sp.description
        checks = {c.name for c in asset.check_specs if c.asset_key == key}
        assert checks == {c.name for c in sp.checks}
    assert set(StagesConfig.model_fields) == {st.name for st in SETTINGS}

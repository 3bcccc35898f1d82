"""pipeline.options: each stage runs with a frozen Options built once from its settings and the environment;
stage modules never read the environment themselves."""

from __future__ import annotations

import dataclasses
import inspect
import re
from pathlib import Path

import pytest

from talkthrough_assets.pipeline import options
from talkthrough_assets.pipeline import settings as S
from talkthrough_assets.pipeline.stagespec import SPECS

STAGES_DIR = Path(__file__).resolve().parents[2] / "talkthrough_assets" / "stages"


def test_every_stage_with_settings_runs_with_frozen_options_holding_their_values():
    eff = dict(S._env_defaults(), beam_size=3, language="en", max_frames=12, recorded_at="2024-01-02T03:04:05Z",
               diarize=True, num_speakers="2", speaker_names={"S1": "Ada"})
    for spec in SPECS:
        opts = options.build(spec.name, eff)
        first = list(inspect.signature(spec.run).parameters)[1]
        if not spec.settings and spec.options is None:
            assert opts is None, spec.name
            continue
        assert isinstance(opts, spec.options) and first == "opts", spec.name
        assert {k: getattr(opts, k) for k in spec.settings} == {k: eff[k] for k in spec.settings}, spec.name
        with pytest.raises(dataclasses.FrozenInstanceError):
            setattr(opts, dataclasses.fields(opts)[0].name, None)


def test_the_environment_reaches_a_stage_through_its_options(monkeypatch):
    monkeypatch.setenv("TALKTHROUGH_WHISPER_THREADS", "3")
    monkeypatch.setenv("TALKTHROUGH_CHUNK_S", "90")
    monkeypatch.setenv("TALKTHROUGH_OCR_DET_SIDE", "0")
    monkeypatch.setenv("TALKTHROUGH_DIARIZATION_THREADS", "2")
    monkeypatch.setenv("TALKTHROUGH_MAX_FRAMES", "30")  # a setting's default replaced by its variable
    eff = S._env_defaults()
    seg = options.build("segments", eff)
    assert (seg.threads, seg.chunk_s) == (3, 90.0)
    assert options.build("ocr", eff).det_max_side == 0
    assert options.build("turns", eff).threads == 2
    assert options.build("keyframes", eff).max_frames == 30 == options.build("probe", eff).max_frames
    monkeypatch.delenv("TALKTHROUGH_WHISPER_THREADS")
    assert options.build("segments", eff).threads is None  # unset: the declared default (every core)


def test_the_engine_part_of_a_config_hash_is_the_options_engine_fingerprint(monkeypatch):
    monkeypatch.setenv("TALKTHROUGH_COMPUTE_TYPE", "int8_float32")
    eff = S._env_defaults()
    for spec in SPECS:
        if spec.engine:
            assert S.stage_config(spec.name, eff)["_engine"] == spec.engine(options.build(spec.name, eff))
    assert S.stage_config("segments", eff)["_engine"] == {"device": "cpu", "compute_type": "int8_float32"}


def test_no_stage_module_reads_the_environment():
    readers = re.compile(r"core import config|core\.config|os\.environ|os\.getenv|config\.get\(")
    found = [f"{p.relative_to(STAGES_DIR)}:{n}" for p in sorted(STAGES_DIR.rglob("*.py"))
             for n, line in enumerate(p.read_text().splitlines(), 1) if readers.search(line)]
    assert found == []

"""config: every environment variable declared once, read only there, checked with a clear message, and the
environment table of docs/operations.md generated from the declarations."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from talkthrough_assets.core import config
from talkthrough_assets.pipeline import settings as S

ROOT = Path(__file__).resolve().parents[2]
SOURCES = sorted(p for pkg in ("talkthrough_assets", "talkthrough_mcp") for p in (ROOT / pkg).rglob("*.py"))
# process-level set-up that writes the environment for Dagster and the children it starts (each commented there)
WRITES_ENVIRONMENT = {"talkthrough_assets/__init__.py", "talkthrough_assets/defs/instance.py",
                      "talkthrough_assets/app/ui_supervisor.py", "talkthrough_assets/app/dagster_dev.py"}


def test_the_operations_environment_table_is_the_declared_one():
    doc = (ROOT / "docs" / "operations.md").read_text()
    assert config.readme_with_env_table(doc) == doc, \
        "docs/operations.md's environment table is stale: run python -m talkthrough_assets.core.config docs/operations.md"


def test_every_talkthrough_variable_named_in_the_code_is_declared():
    named = {m for p in SOURCES for m in re.findall(r"\bTALKTHROUGH_[A-Z0-9_]+\b", p.read_text())}
    assert named - set(config.BY_NAME) == set()


def test_only_the_config_module_reads_the_environment():
    readers = []
    for p in SOURCES:
        rel = p.relative_to(ROOT).as_posix()
        for n, line in enumerate(p.read_text().splitlines(), 1):
            if re.search(r"os\.(environ|getenv)", line) and rel != "talkthrough_assets/core/config.py":
                readers.append(f"{rel}:{n}")
    assert all(r.rsplit(":", 1)[0] in WRITES_ENVIRONMENT for r in readers), readers


def test_a_bad_value_stops_with_the_variable_and_what_it_takes(monkeypatch, tmp_path):
    monkeypatch.setenv("TALKTHROUGH_HOME", str(tmp_path))
    monkeypatch.setenv("TALKTHROUGH_MAX_FRAMES", "lots")
    with pytest.raises(config.ConfigError, match=r"TALKTHROUGH_MAX_FRAMES='lots': expected a whole number; "
                                                 r"Keyframe budget"):
        S.effective("0123456789abcdef")
    monkeypatch.setenv("TALKTHROUGH_OCR", "maybe")
    assert any(p.startswith("TALKTHROUGH_OCR='maybe': expected on or off") for p in config.problems())


def test_values_are_typed_and_an_unset_or_blank_variable_is_its_default(monkeypatch):
    monkeypatch.setenv("TALKTHROUGH_MAX_FRAMES", " 40 ")
    monkeypatch.setenv("TALKTHROUGH_OCR", "OFF")
    monkeypatch.setenv("TALKTHROUGH_DROP_INTERVAL_S", "2.5")
    monkeypatch.setenv("TALKTHROUGH_LANGUAGE", "  ")
    monkeypatch.delenv("TALKTHROUGH_STAGE_WORKERS", raising=False)
    assert config.get("TALKTHROUGH_MAX_FRAMES") == 40 and config.get("TALKTHROUGH_OCR") is False
    assert config.get("TALKTHROUGH_DROP_INTERVAL_S") == 2.5 and config.get("TALKTHROUGH_LANGUAGE") is None
    assert config.get("TALKTHROUGH_STAGE_WORKERS") == 2
    with pytest.raises(KeyError, match="not declared"):
        config.get("TALKTHROUGH_NO_SUCH_THING")


def test_a_settings_environment_variable_replaces_its_default(monkeypatch, tmp_path):
    monkeypatch.setenv("TALKTHROUGH_HOME", str(tmp_path))
    monkeypatch.setenv("TALKTHROUGH_MAX_FRAMES", "40")
    monkeypatch.setenv("TALKTHROUGH_OCR", "off")
    cfg = S.effective("0123456789abcdef")
    assert cfg["max_frames"] == 40 and cfg["ocr"] is False and cfg["whisper_model"] == "tiny.en"


def test_an_engine_setting_is_in_its_stage_config_hash_only(monkeypatch):
    cfg = dict(S.DEFAULTS, ocr=True, whisper_model="tiny.en")
    before = {s: S.config_hash(s, cfg) for s in S.STAGES}
    monkeypatch.setenv("TALKTHROUGH_OCR_DET_SIDE", "800")
    after = {s: S.config_hash(s, cfg) for s in S.STAGES}
    assert {s for s in S.STAGES if before[s] != after[s]} == {"ocr"}


def test_doctor_names_a_bad_variable_and_passes_good_ones(monkeypatch):
    from talkthrough_assets.app import selfcheck

    monkeypatch.setenv("TALKTHROUGH_STAGE_WORKERS", "2")
    name, state, detail = selfcheck.config_check()
    assert state == "ok" and "every value accepted" in detail
    monkeypatch.setenv("TALKTHROUGH_DROP_INTERVAL_S", "soon")
    name, state, detail = selfcheck.config_check()
    assert state == "FAIL" and detail.startswith("TALKTHROUGH_DROP_INTERVAL_S='soon': expected a number")

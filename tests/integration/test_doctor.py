"""`talkthrough doctor` checks the engines too (issue #25 item 3): RapidOCR reads a line doctor
renders, and the diarization models are found (no download) and run in sherpa-onnx; missing
diarization models are a warning that says what to do, not a broken install."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from talkthrough_assets.cli import main as cli
from talkthrough_assets.stages.turns import models as diarize_models


def _doctor() -> tuple[int, dict]:
    r = CliRunner().invoke(cli.app, ["doctor", "--json"])
    return r.exit_code, json.loads(r.stdout)


def test_doctor_runs_the_ocr_engine_and_the_diarization_models(tt_home):
    code, rep = _doctor()
    assert code == 0 and rep["ok"], rep
    checks = {c["check"]: c for c in rep["checks"]}
    ocr = checks["OCR engine (RapidOCR)"]
    assert ocr["status"] == "ok" and "TALKTHROUGH" in ocr["detail"]
    diar = checks["diarization models (--diarize)"]
    assert diar["status"] == "ok" and "pyannote" in diar["detail"] and "ran on a 4-s test signal" in diar["detail"]


def test_missing_diarization_models_are_a_warning_with_the_fix(tt_home, tmp_path, monkeypatch):
    empty = tmp_path / "none"
    empty.mkdir()
    monkeypatch.setenv(diarize_models.ENV_MODELS_DIR, str(empty))
    monkeypatch.setenv("TALKTHROUGH_MODELS_DIR", str(tmp_path / "cache"))
    code, rep = _doctor()
    assert code == 0 and rep["ok"], rep
    (diar,) = [c for c in rep["checks"] if c["check"].startswith("diarization")]
    assert diar["status"] == "warn" and diar["ok"] is True
    assert "not found" in diar["detail"] and diarize_models.ENV_MODELS_DIR in diar["detail"]
    text = CliRunner().invoke(cli.app, ["doctor"]).output
    assert "warn diarization models (--diarize): " in text and text.rstrip().endswith("all checks passed")

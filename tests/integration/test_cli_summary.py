"""The `process` summary a user reads (issue #25), through the real CLI and a real Dagster run:
the language shows as `[en]` (not eaten as markup), only the stages that ran are listed, and a
`--diarize` that could not run says why in the summary and in `--json` (not only in the manifest)."""

from __future__ import annotations

import json

from fixture_facts import TWO_VOICES_PATH, remux_audio
from typer.testing import CliRunner

from talkthrough_assets.cli import main as cli
from talkthrough_assets.stages.turns import models as diarize_models


def test_summary_says_language_stages_and_why_diarization_did_not_run(tt_home, tmp_path, monkeypatch):
    media = tmp_path / "call [draft].mka"
    remux_audio(TWO_VOICES_PATH, media)
    empty = tmp_path / "no-models"
    empty.mkdir()
    monkeypatch.setenv(diarize_models.ENV_MODELS_DIR, str(empty))  # no models, no download: a reason
    monkeypatch.setenv("TALKTHROUGH_MODELS_DIR", str(tmp_path / "model-cache"))
    r = CliRunner().invoke(cli.app, ["process", str(media), "--diarize"])
    # the transcript is stored, but what --diarize asked for was not done: not a success
    assert r.exit_code == 1 and "diarization did not run for 1 file(s)" in r.output, r.output
    (head,) = [ln for ln in r.output.splitlines() if "  processed  id=" in ln]
    assert head.startswith("call [draft].mka  processed"), r.output
    assert "stages: probe, wall_clock, audio, segments, turns" in head
    assert " [en]" in r.output
    diar = [ln for ln in r.output.splitlines() if ln.strip().startswith("diarization:")]
    assert len(diar) == 1 and "diarization models not found" in diar[0], r.output
    j = CliRunner().invoke(cli.app, ["process", str(media), "--json"])
    assert j.exit_code == 1, j.output  # still asked for (persisted), still not done
    (s,) = json.loads(j.output[:j.output.rindex("]") + 1])
    assert s["status"] == "cached" and s["stages_run"] == []
    assert "diarization models not found" in s["diarization_reason"] and s["transcript"]["language"] == "en"
    assert s["diarization_unavailable"] is True

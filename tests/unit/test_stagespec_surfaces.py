"""The surfaces generated from stagespec (#13): `talkthrough process`'s setting options and the amend table of
docs/architecture.md. A setting with a ``flag`` is a `process` option; the docs table is what
``stagespec.amend_table()`` renders (regenerate it with ``python -m talkthrough_assets.pipeline.stagespec docs/architecture.md``)."""

from __future__ import annotations

from pathlib import Path

import pytest
import typer.main
from typer.testing import CliRunner

from talkthrough_assets.cli import main as cli
from talkthrough_assets.pipeline import stagespec
from talkthrough_assets.pipeline import settings as S
from talkthrough_assets.pipeline.stagespec import downstream

pytestmark = pytest.mark.unit

AMEND_DOC = Path(__file__).resolve().parents[2] / "docs" / "architecture.md"
FLAGGED = [st for st in stagespec.SETTINGS if st.flag]


def _process_command():
    return typer.main.get_command(cli.app).commands["process"]


def test_docs_amend_table_is_the_one_generated_from_the_spec():
    text = AMEND_DOC.read_text()
    assert text == stagespec.readme_with_amend_table(text), (
        "docs/architecture.md's amend table differs from stagespec: "
        "run `python -m talkthrough_assets.pipeline.stagespec docs/architecture.md`")


def test_amend_table_rows_are_what_plan_reruns():
    rows = {}
    for line in stagespec.amend_table().splitlines()[2:]:
        change, redo = (c.strip() for c in line.strip("|").split("|"))
        rows[change] = redo
    for sp in stagespec.SPECS:
        flags = [stagespec.SETTING_BY_NAME[k].flag.split("/")[0] for k in sp.settings
                 if stagespec.SETTING_BY_NAME[k].flag]
        if not flags:
            continue
        row = next(v for k, v in rows.items() if k.startswith(f"`{flags[0]}`"))
        assert row.split(" (")[0] == ", ".join(f"`{s}`" for s in S.ordered(downstream({sp.name}))), sp.name
    # the rules the docs state in words
    assert rows["`--recorded-at` (re-anchor)"] == "`wall_clock`, `manifest`"
    assert rows["`--diarize`, `--num-speakers` (diarize amend)"].startswith("`turns`, `manifest` (")
    assert rows["`talkthrough name ID S1=Alice`"] == "`manifest`"


def test_process_options_are_the_flagged_settings():
    opts = {p.name: p for p in _process_command().params}
    assert set(opts) == {"paths", "force", "as_json"} | {st.name for st in FLAGGED}
    for st in FLAGGED:
        o = opts[st.name]
        assert o.opts + o.secondary_opts == st.flag.split("/") and o.help == st.help and o.default is None
    # the user-facing flags, exactly as before the options were generated
    assert sorted(f for p in opts.values() for f in p.opts + p.secondary_opts if f.startswith("--")) == sorted([
        "--force", "--recorded-at", "--diarize", "--no-diarize", "--num-speakers", "--vocabulary", "--language",
        "--model", "--max-frames", "--beam-size", "--json", "--apply-voice-names", "--no-apply-voice-names"])


@pytest.fixture
def captured(monkeypatch, tmp_path):
    """`service.process` replaced by a recorder: what the CLI hands over for one file."""
    from talkthrough_assets.app import service

    calls = []
    media = tmp_path / "a.mp4"
    media.write_bytes(b"x")
    monkeypatch.setattr(service, "collect", lambda paths: ([media], []))

    def fake_process(path, overrides=None, force=False, on_stages=None, observer=None):
        calls.append({"overrides": overrides, "force": force})
        return {"source": str(path), "status": "cached", "recording_id": "0" * 16}

    monkeypatch.setattr(service, "process", fake_process)
    return media, calls


def test_given_options_become_setting_overrides(captured):
    media, calls = captured
    args = ["process", str(media), "--recorded-at", "2026-03-14T11:00:00+01:00", "--diarize", "--num-speakers", "2",
            "--vocabulary", "Talkthrough, Dagster", "--language", "en", "--model", "small",
            "--max-frames", "40", "--beam-size", "5", "--force", "--json"]
    r = CliRunner().invoke(cli.app, args)
    assert r.exit_code == 0, r.output
    assert calls == [{"force": True, "overrides": {
        "recorded_at": "2026-03-14T11:00:00+01:00", "diarize": True, "num_speakers": 2,
        "vocabulary": "Talkthrough, Dagster", "language": "en", "whisper_model": "small", "max_frames": 40,
        "beam_size": 5}}]


def test_unset_options_are_not_overrides(captured):
    media, calls = captured
    assert CliRunner().invoke(cli.app, ["process", str(media), "--no-diarize", "--json"]).exit_code == 0
    assert CliRunner().invoke(cli.app, ["process", str(media), "--json"]).exit_code == 0
    assert calls == [{"force": False, "overrides": {"diarize": False}}, {"force": False, "overrides": {}}]
    bad = CliRunner().invoke(cli.app, ["process", str(media), "--max-frames", "many"])
    assert bad.exit_code == 2 and not calls[2:]


def test_num_speakers_takes_a_count_or_auto(captured):
    media, calls = captured
    for value, want in (("auto", "auto"), ("3", 3), ("0", "auto")):
        r = CliRunner().invoke(cli.app, ["process", str(media), "--num-speakers", value, "--json"])
        assert r.exit_code == 0, r.output
        assert calls[-1]["overrides"] == {"num_speakers": want}
    n = len(calls)
    bad = CliRunner().invoke(cli.app, ["process", str(media), "--num-speakers", "several"])
    assert bad.exit_code == 2 and "auto" in bad.output and len(calls) == n

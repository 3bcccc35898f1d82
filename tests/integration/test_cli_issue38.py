"""Issue #38, item 8, through the real CLI on fixtures the real Dagster job processed (the session's
``processed``): a copy of a processed file under another name prints every name; `forget` without --yes
prints a short list of what exists (no settings file that is not there); `report`/`export` of an id nothing
is stored under says "unknown recording"; doctor's OCR check reads its line exactly."""

from __future__ import annotations

import shutil

from fixture_facts import SCREENCAST_NAME, SILENT_NAME, SILENT_PATH
from typer.testing import CliRunner

from talkthrough_assets.cli import main as cli
from talkthrough_assets.app import selfcheck
from talkthrough_assets import store


def test_processing_a_copy_prints_every_name_of_the_recording(processed, tmp_path):
    copy = tmp_path / "silent under another name.mp4"
    shutil.copyfile(SILENT_PATH, copy)
    r = CliRunner().invoke(cli.app, ["process", str(copy)], env={"COLUMNS": "200"})
    assert r.exit_code == 0, r.output
    assert f"{SILENT_NAME}  cached" in r.output and "also registered as: silent under another name.mp4" in r.output


def test_forget_without_yes_prints_a_short_list_of_what_exists(processed):
    rid = processed[SCREENCAST_NAME]["recording_id"]
    r = CliRunner().invoke(cli.app, ["forget", rid])
    assert r.exit_code == 0, r.output  # the dry run did what it was asked
    lines = r.output.strip().splitlines()
    # its names: the fixture's, and any other name a test registered the same bytes under before this one
    assert lines[0].startswith(f"would remove recording {rid} ({SCREENCAST_NAME}"), lines[0]
    assert lines[-1] == "run again with --yes to remove it" and len(lines) <= 11, lines
    assert "settings/" not in r.output and not (store.home() / store.settings_key(rid)).exists()
    listed = [ln.strip() for ln in lines[1:-1] if ln.startswith("  ") and "/" in ln and ":" not in ln]
    assert listed and all((store.home() / k).exists() for k in listed), listed
    assert any(ln.startswith("  rows of ") for ln in lines)
    # what goes with it is said too: the search index entries and the stored results only it uses
    assert any("search index entries" in ln and "Whisper chunk" in ln and "OCR result(s)" in ln for ln in lines)
    assert store.exists(store.manifest_key(rid))  # nothing was removed


def test_report_and_export_of_an_unknown_id_say_unknown_recording(processed):
    for args in (["report", "0123456789abcdef"], ["export", "0123456789abcdef"], ["forget", "0123456789abcdef"],
                 ["repair", "0123456789abcdef"]):
        r = CliRunner().invoke(cli.app, args)
        assert r.exit_code == 2 and "unknown recording 0123456789abcdef" in r.output, (args, r.output)


def test_doctors_ocr_check_reads_its_line_exactly():
    (ocr,) = [c for c in selfcheck.engine_checks() if c[0] == "OCR engine (RapidOCR)"]
    assert ocr[1] == "ok" and "read 'TALKTHROUGH 42'" in ocr[2], ocr

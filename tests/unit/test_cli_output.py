"""What a user sees on the command line (issue #25): user text is never read as markup, a mistyped
path is an error, obviously bad files are rejected by the probe before any Dagster run (only `probe`
listed as run), and `talkthrough recordings` shows whole ids. Real CLI (typer's CliRunner), real store."""

from __future__ import annotations

import re

import pytest
from typer.testing import CliRunner

from talkthrough_assets.cli import main as cli
from talkthrough_assets.pipeline import events
from talkthrough_assets.stages import runner
from talkthrough_assets import store


@pytest.fixture
def home(tmp_path, monkeypatch):
    monkeypatch.setenv("TALKTHROUGH_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("DAGSTER_HOME", str(tmp_path / "home" / "dagster"))
    monkeypatch.setenv("COLUMNS", "100")
    return tmp_path


def _run(*args):
    return CliRunner().invoke(cli.app, [str(a) for a in args])


def test_a_folder_name_with_brackets_is_printed_as_is_not_a_markup_crash(home):
    odd = home / "odd["
    odd.mkdir()
    (odd / "x].txt").write_text("not media")
    r = _run("process", odd)
    assert r.exit_code == 2 and r.exception is None or isinstance(r.exception, SystemExit), r.output
    assert "MarkupError" not in r.output and "Traceback" not in r.output
    assert f"skip {odd / 'x].txt'}: not a media file extension (.txt)" in r.output
    assert "no media files to process" in r.output


def test_bad_files_fail_at_probe_before_a_dagster_run_with_their_name_and_reason(home):
    text = home / "notes [final].mp4"
    text.write_text("just some notes, renamed\n" * 20)
    empty = home / "empty [0].mov"
    empty.write_bytes(b"")
    r = _run("process", text, empty)
    assert r.exit_code == 1, r.output
    lines = r.output.splitlines()
    head = [ln for ln in lines if "  failed  id=" in ln]
    assert len(head) == 2 and str(text) in head[0] and str(empty) in head[1], r.output
    assert all(ln.endswith("stages: probe") for ln in head), head  # not all nine stages
    assert "notes [final].mp4: probe failed" in lines  # the progress line (a pipe: one line per stage)
    reasons = [ln for ln in lines if ln.strip().startswith("reason:")]
    assert "not a readable media file" in reasons[0] and "notes [final].mp4" in reasons[0]
    assert "empty file (0 bytes): empty [0].mov" in reasons[1]
    # recorded like a run's probe failure, and no Dagster run (nor its storage) was started
    for path in (text, empty):
        rid = re.search(rf"{re.escape(str(path))}\s+failed\s+id=([0-9a-f]{{16}})", r.output).group(1)
        assert runner.stage_state(rid)["probe"].status == "failed"
        assert events.failure_reason(rid).startswith("probe: ")
    assert not (home / "home" / "dagster" / "storage").exists()


def test_a_missing_path_among_several_is_an_error_after_the_others(home):
    bad = home / "bad.mp4"
    bad.write_bytes(b"\x00" * 64)
    r = _run("process", home / "typo.mp4", bad, "--json")
    assert r.exit_code == 2, r.output
    assert f"error {home / 'typo.mp4'}: no such file or folder" in r.output
    assert '"status": "failed"' in r.output  # the existing file was still processed (and failed at probe)
    assert "1 path(s) not found" in r.output


RID = "d9fb81f683d5a0c1"
NAME = "a very long recording name [final] of the weekly planning meeting, take two.mp4"


def _recording(rid=RID, name=NAME):
    store.write_table("recordings", rid, [{
        "filename": name, "path": f"/x/{name}", "kind": "video", "duration_ms": 192_000, "size_bytes": 1,
        "recorded_at": "2026-03-14T09:26:53.000+00:00", "tz_offset_min": 0, "wall_clock_source": "creation_time",
        "wall_clock_confidence": "medium", "language": "en", "segment_count": 12, "frame_count": 30,
        "unique_frame_count": 28, "diarized": True, "speaker_count": 2, "has_audio": True, "has_video": True,
        "transcript_available": True, "manifest_path": "m.json", "processed_at": "2026-03-14T10:00:00+00:00"}])


def test_recordings_in_a_pipe_shows_whole_ids_and_whole_names_one_line_each(home):
    """In a pipe nothing is cut or wrapped (on a terminal the name is cut in the middle to its width:
    tests/unit/test_cli_layout.py, tests/integration/test_cli_80_columns.py)."""
    rid = RID
    _recording()
    r = _run("recordings")
    assert r.exit_code == 0, r.output
    (row,) = [ln for ln in r.output.splitlines() if rid in ln]
    assert row.startswith(rid) and row.endswith(NAME) and "…" not in r.output  # "[final]": never read as markup


def test_help_has_no_type_placeholders_and_every_option_is_described():
    r = _run("process", "--help")
    assert r.exit_code == 0
    assert "<bool>" not in r.output and "{paths}" not in r.output and "<list[Path]>" not in r.output
    rec = _run("recordings", "--help")
    assert "Print the list as JSON." in rec.output
    import typer.main

    commands = sorted(typer.main.get_command(cli.app).commands)
    assert {"process", "doctor", "recordings", "sql", "name", "mcp", "ui"} <= set(commands)
    for command in commands:  # every command, present and future
        text = _run(command, "--help").output
        assert "<" not in text and "{" not in text, (command, text)  # no `<int>`, `{paths}...` labels
    assert "--port PORT " in _run("ui", "--help").output


def test_version():
    from importlib.metadata import version

    r = _run("--version")
    assert r.exit_code == 0 and r.output.strip() == f"talkthrough {version('talkthrough')}"


def test_sql_queries_the_tables_without_a_duckdb_cli(home):
    _recording()
    r = _run("sql", "SELECT recording, filename, segment_count FROM recordings", "--json")
    assert r.exit_code == 0, r.output
    assert r.stdout and __import__("json").loads(r.stdout) == [
        {"recording": RID, "filename": NAME, "segment_count": 12}]
    table = _run("sql", "SELECT recording, language FROM recordings")
    assert table.exit_code == 0 and RID in table.output and "en" in table.output
    bad = _run("sql", "SELECT nope FROM recordings")
    assert bad.exit_code == 2 and "query failed:" in bad.output and "nope" in bad.output

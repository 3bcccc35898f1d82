"""`talkthrough forget` (#22 item 3), through the real CLI on recordings processed by the real Dagster job:
every trace of the forgotten recording goes (each table's partition incl. search terms and aliases, frames,
WAV, manifest, report, settings, the Dagster partition), a running MCP reader stops knowing
it, other recordings are byte-for-byte untouched, and processing the same bytes again starts clean."""

from __future__ import annotations

import json
import os
import shutil

from fixture_facts import TWO_VOICES_PATH, remux_audio
from typer.testing import CliRunner

from talkthrough_assets.cli import main as cli
from talkthrough_assets.pipeline import registry
from talkthrough_assets.app import service
from talkthrough_assets.app import runs
from talkthrough_assets import store
from talkthrough_assets.read.reader import Reader


def _tree(rid: str) -> dict[str, tuple]:
    """Every file stored for ``rid`` (under each of its keys) with its (size, mtime_ns)."""
    out = {}
    for key in store.recording_keys(rid):
        path = store.home() / key
        files = [path] if path.is_file() else sorted(p for p in path.rglob("*") if p.is_file()) if path.is_dir() else []
        for f in files:
            st = f.stat()
            out[str(f)] = (st.st_size, st.st_mtime_ns)
    return out


def test_forget_removes_one_recording_everywhere_and_nothing_else(tt_home, tmp_path):
    gone, alias = tmp_path / "to forget.mka", tmp_path / "alias copy.mka"
    remux_audio(TWO_VOICES_PATH, gone)
    shutil.copyfile(gone, alias)
    kept = service.process(TWO_VOICES_PATH)
    assert kept["status"] in ("processed", "cached"), kept
    first = service.process(gone, overrides={"recorded_at": "2026-03-14T11:00:00+01:00"})
    assert first["status"] == "processed", first
    rid, keep = first["recording_id"], kept["recording_id"]
    service.register(alias)  # a second name for the same bytes: an alias row in `sources`
    assert rid != keep
    for table in ("sources", "segments", "words", "terms", "recordings", "stage_runs", "transcripts"):
        assert store.has_partition(table, rid), table
    assert len(store.read_rows("sources", rid)) == 2
    assert store.exists(store.settings_key(rid)) and store.exists(store.audio_key(rid))
    assert store.exists(store.report_key(rid))  # the HTML page each run writes beside the manifest
    inst = runs.instance()
    assert inst.has_dynamic_partition(registry.PARTITIONS_NAME, rid)
    before_keep = _tree(keep)
    assert before_keep

    reader = Reader(refresh_interval=0)  # an MCP reader running over the data root the whole time
    try:
        listed = {r["id"] for r in reader.list_recordings(limit=100).dump()["recordings"]}
        assert rid in listed and keep in listed
        word = store.read_rows("segments", rid)[0]["text"].split()[0].strip(".,").lower()
        assert any(h["recording"] == rid for h in reader.search(word, limit=50).dump()["hits"])

        dry = CliRunner().invoke(cli.app, ["forget", rid])  # without --yes: says what would go, removes nothing
        assert dry.exit_code == 0 and "--yes" in dry.output and rid in dry.output, dry.output
        assert store.exists(store.manifest_key(rid))

        r = CliRunner().invoke(cli.app, ["forget", str(gone), "--yes", "--json"])  # by path: hashed to the id
        assert r.exit_code == 0, r.output
        out = json.loads(r.output)
        assert out["recording_id"] == rid and out["dagster_partition_removed"] is True
        assert store.data_location(store.manifest_key(rid)) in out["removed"]

        for table in store.TABLES:
            assert not store.has_partition(table, rid), table
            assert not store.partition_dir(table, rid).exists(), table
        for key in (store.frames_key(rid), store.audio_key(rid), store.manifest_key(rid), store.report_key(rid),
                    store.settings_key(rid)):
            assert not (store.home() / key).exists(), key
        assert not inst.has_dynamic_partition(registry.PARTITIONS_NAME, rid)
        assert inst.has_dynamic_partition(registry.PARTITIONS_NAME, keep)
        con = store.connect()
        try:
            for table in ("recordings", "segments", "terms", "sources", "frames"):
                assert con.execute(f"SELECT count(*) FROM {table} WHERE recording = ?", [rid]).fetchone()[0] == 0
            assert con.execute("SELECT count(*) FROM recordings WHERE recording = ?", [keep]).fetchone()[0] == 1
        finally:
            con.close()
        listed = {r["id"] for r in reader.list_recordings(limit=100).dump()["recordings"]}
        assert rid not in listed and keep in listed
        assert not any(h["recording"] == rid for h in reader.search(word, limit=50).dump()["hits"])
        assert _tree(keep) == before_keep  # the other recording: every file as it was

        again = CliRunner().invoke(cli.app, ["forget", rid, "--yes"])
        assert again.exit_code == 2 and "unknown recording" in again.output, again.output
    finally:
        reader.index.close()

    redo = service.process(gone)  # same bytes: a fresh start, none of the forgotten settings
    assert redo["status"] == "processed" and redo["recording_id"] == rid, redo
    assert redo["wall_clock"] is None or redo["wall_clock"]["source"] != "cli", redo["wall_clock"]
    assert [r["filename"] for r in store.read_rows("sources", rid)] == ["to forget.mka"]


def test_forget_is_refused_while_the_recording_is_being_processed(tt_home, tmp_path):
    media = tmp_path / "busy.mka"
    remux_audio(TWO_VOICES_PATH, media)
    with open(media, "ab") as f:
        f.write(os.urandom(16))  # other bytes than the other test's copy
    rid = service.register(media)
    with store.partition_lock(rid):  # what a run of it holds
        import subprocess
        import sys

        r = subprocess.run([sys.executable, "-m", "talkthrough_assets.cli.main", "forget", rid, "--yes"],
                           capture_output=True, text=True, timeout=300, env=os.environ.copy())
    assert r.returncode == 1 and "refused" in r.stderr and "being processed" in r.stderr, r.stderr
    assert store.has_partition("sources", rid)
    assert runs.instance().has_dynamic_partition(registry.PARTITIONS_NAME, rid)

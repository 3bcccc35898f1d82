"""A run that fails after publishing a partial generation (#19 item 5) says so in it: the real Dagster run of the
fixture in 4-s chunks, its manifest stage failing (fault injection: a StageError, as a full disk would raise); the
published generation stays partial, covers the transcribed chunks and names why the run stopped; the next run
replaces it with the final one."""

from __future__ import annotations

from fixture_facts import TWO_VOICES_PATH, unique_copy

from talkthrough_assets.pipeline import stagerun
from talkthrough_assets.app import service
from talkthrough_assets import store
from talkthrough_assets.core.errors import StageError
from talkthrough_assets.read import snapshot


def test_a_failed_run_leaves_a_partial_generation_that_says_it_stopped(tmp_path, monkeypatch):
    monkeypatch.setenv("TALKTHROUGH_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("DAGSTER_HOME", str(tmp_path / "home" / "dagster"))
    monkeypatch.setenv("TALKTHROUGH_CHUNK_S", "4")
    src = unique_copy(TWO_VOICES_PATH, tmp_path / "stops.m4a", "partial-stops")

    def no_space(rid, cfg):
        raise StageError("no space left on device")

    real = stagerun.RUNNERS["manifest"]
    monkeypatch.setitem(stagerun.RUNNERS, "manifest", no_space)
    out = service.process(src)
    assert out["status"] == "failed", out
    rid = out["recording_id"]
    snap = snapshot.read(rid)
    assert snap is not None and snap.partial.stopped == "manifest: no space left on device", snap.partial
    audio_ms = store.read_one("transcripts", rid)["audio_ms"]
    assert snap.partial.covered_ms == (0, audio_ms)  # every chunk was transcribed before the failure
    assert snap.segments and len(snap.segments) == len(store.read_rows("segments", rid))
    assert store.read_one("recordings", rid) is None  # nothing of it looks final

    monkeypatch.setitem(stagerun.RUNNERS, "manifest", real)
    again = service.process(src)
    assert again["status"] == "processed", again
    final = snapshot.read(rid)
    assert final.partial is None and [s.text for s in final.segments] == [s.text for s in snap.segments]
    assert snapshot.partial_fields(final) is None  # a finished generation carries no partial marking

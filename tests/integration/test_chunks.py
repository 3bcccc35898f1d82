"""The segments stage in content-addressed chunks (#19 items 1, 3, 6), real faster-whisper on the fixtures with
small chunks (TALKTHROUGH_CHUNK_S) so a 28-s file has several: a re-run decodes only the chunks without a stored
result, a corrupt stored result is recomputed, a failing chunk is recorded and retried by the next run, a copy
of the same audio reuses every chunk, coverage is derived from the stored keys, gc and forget remove only what
no recording uses, and a run killed with SIGKILL loses at most the chunk in flight."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import pytest
from fixture_facts import SCREENCAST_PATH, TWO_VOICES_PATH, run_on_terminal, unique_copy
from typer.testing import CliRunner

from talkthrough_assets.model.frames import OcrKey
from talkthrough_assets.cli import main as cli
from talkthrough_assets.pipeline import freshness, stagerun
from talkthrough_assets.stages import runner
from talkthrough_assets.app import service
from talkthrough_assets.app.summary import list_recordings
from talkthrough_assets import store
from talkthrough_assets.store import cache_gc
from talkthrough_assets.stages.segments import stage as segments_stage
from talkthrough_assets.stages import audio as audio_stage
from talkthrough_assets.stages.segments import chunks as C
from talkthrough_assets.stages.runner import hms
from talkthrough_assets.model.transcript import Chunk, spans

CHUNK_S = "6"


@pytest.fixture
def small_chunks(monkeypatch):
    monkeypatch.setenv("TALKTHROUGH_CHUNK_S", CHUNK_S)


def _transcript(rid: str) -> tuple[list, list]:
    return ([(s["seq"], s["t0_ms"], s["t1_ms"], s["text"]) for s in store.read_rows("segments", rid)],
            [(w["seq"], w["idx"], w["t0_ms"], w["t1_ms"], w["word"]) for w in store.read_rows("words", rid)])


def _plan(rid: str) -> list[Chunk]:
    return sorted(store.read_rows("chunks", rid, record=Chunk), key=lambda r: r.idx)


def _path(key: str):
    return store.home() / store.chunk_result_key(key)


def _segments_md(rid: str) -> dict:
    return stagerun.run_stage("segments", rid).metadata


def test_chunks_are_planned_at_silences_stored_and_assembled(tt_home, tmp_path, small_chunks):
    src = unique_copy(TWO_VOICES_PATH, tmp_path / "chunked.m4a", "chunks-a")
    out = service.process(src)
    assert out["status"] == "processed", out
    rid = out["recording_id"]
    rows = _plan(rid)
    assert len(rows) >= 3, rows
    # the chunks tile the audio without gap or overlap, each cut on a VAD window, and each has a stored result
    audio_ms = store.read_one("transcripts", rid)["audio_ms"]
    assert rows[0].t0_ms == 0 and rows[-1].t1_ms == audio_ms
    assert all(a.t1_ms == b.t0_ms for a, b in zip(rows, rows[1:]))
    assert all(r.t0_ms * 16 % C.WIN == 0 for r in rows)
    assert all(_path(r.key).is_file() for r in rows)
    # a cut falls where the VAD hears silence: no word of the transcript spans one
    words = store.read_rows("words", rid)
    assert words
    cuts = [r.t0_ms for r in rows[1:]]
    assert not [(w["word"], c) for w in words for c in cuts if w["t0_ms"] < c < w["t1_ms"]]
    # the tables are exactly the chunks' stored results assembled
    results = [C.unpack(_path(r.key).read_bytes()) for r in rows]
    again = C.assemble(results, rows, model_label=results[0].model, audio_ms=audio_ms)
    segs, words_t = _transcript(rid)
    assert [(s.seq, s.t0_ms, s.t1_ms, s.text) for s in again.segments] == segs
    assert [(w.seq, w.idx, w.t0_ms, w.t1_ms, w.word) for w in again.words] == words_t
    row = store.read_one("transcripts", rid)  # and so is its row, the spans stored as structs
    assert (row["segment_count"], row["word_count"], row["dropped_count"]) == \
        (again.meta.segment_count, again.meta.word_count, again.meta.dropped_count)
    assert spans(row["dropped"]) == again.meta.dropped and spans(row["uncovered"]) == again.meta.uncovered
    assert [s[0] for s in segs] == list(range(len(segs)))
    # coverage is derived from the keys: summary, `recordings`, the stage's metadata
    cov = segments_stage.coverage(rid)
    assert cov.covered == cov.chunks == len(rows) and cov.missing_ms == ()
    assert out["transcript"]["coverage"] == cov.text == f"{len(rows)} of {len(rows)} chunks, 0:00-0:28"
    listed = {r["recording"]: r for r in list_recordings()}
    assert listed[rid]["chunks"] == f"{len(rows)}/{len(rows)}"
    res = CliRunner().invoke(cli.app, ["recordings"], env={"COLUMNS": "200"})
    assert res.exit_code == 0 and f"{len(rows)}/{len(rows)}" in res.output, res.output

    # a re-run decodes only the chunk whose result is gone, and the transcript is the same
    gone = rows[1]
    _path(gone.key).unlink()
    cov = segments_stage.coverage(rid)
    assert cov.covered == len(rows) - 1 and cov.missing_ms == ((gone.t0_ms, gone.t1_ms),)
    assert cov.text.startswith(f"{len(rows) - 1} of {len(rows)} chunks, 0:00-0:")
    md = _segments_md(rid)
    assert (md["chunks_decoded"], md["chunks_reused"], md["chunks_corrupt_recomputed"]) == (1, len(rows) - 1, 0)
    assert md["coverage"] == f"{len(rows)} of {len(rows)} chunks, 0:00-0:28"
    assert _transcript(rid) == (segs, words_t)

    # a corrupt stored result (one byte changed, or cut short) is detected by its checksum and recomputed
    p = _path(rows[0].key)
    blob = bytearray(p.read_bytes())
    blob[-5] ^= 0xFF
    p.write_bytes(bytes(blob))
    _path(rows[2].key).write_bytes(_path(rows[2].key).read_bytes()[:40])
    with pytest.raises(C.CorruptChunk):
        C.decode_blob(p.read_bytes())
    md = _segments_md(rid)
    assert (md["chunks_decoded"], md["chunks_corrupt_recomputed"]) == (2, 2)
    fresh = C.unpack(p.read_bytes())
    assert (fresh.segments, fresh.words, fresh.dropped) == (results[0].segments, results[0].words, results[0].dropped)
    assert _transcript(rid) == (segs, words_t)

    # the same audio in another file (a new recording id) decodes nothing: every chunk's result is reused
    copy = service.process(unique_copy(TWO_VOICES_PATH, tmp_path / "same audio.m4a", "chunks-b"))
    assert copy["status"] == "processed" and copy["recording_id"] != rid
    assert [r.key for r in _plan(copy["recording_id"])] == [r.key for r in rows]
    assert _transcript(copy["recording_id"]) == (segs, words_t)
    assert segments_stage.metadata(copy["recording_id"], None)["chunks_covered"] == len(rows)

    # forget the copy: the results stay (the first recording uses them); forget both: they go
    r1 = service.forget(copy["recording_id"])
    assert all(_path(r.key).is_file() for r in rows)
    assert not [x for x in r1["removed"] if "/chunks/whisper/" in x]
    r2 = service.forget(rid)
    assert sorted(x for x in r2["removed"] if "/chunks/whisper/" in x) == \
        sorted(store.data_location(store.chunk_result_key(r.key)) for r in rows)
    assert not any(_path(r.key).exists() for r in rows)


def test_a_failing_chunk_is_recorded_and_the_next_run_decodes_it(tt_home, tmp_path, small_chunks, monkeypatch):
    out = service.process(unique_copy(TWO_VOICES_PATH, tmp_path / "fails.m4a", "chunks-fail"))
    rid = out["recording_id"]
    rows = _plan(rid)
    want = _transcript(rid)
    for r in rows:
        _path(r.key).unlink()
    bad = rows[1]
    real = C._decode_chunk

    bad_samples = audio_stage.load_wav(store.audio_path(rid))[bad.t0_ms * 16:bad.t1_ms * 16]

    def decode_or_fail(samples, opts, engine, **kw):  # the real decoder, except on one chunk (fault injection)
        if len(samples) == len(bad_samples) and (samples == bad_samples).all():
            raise RuntimeError("decoder crashed on this chunk")
        return real(samples, opts, engine, **kw)

    monkeypatch.setattr(C, "_decode_chunk", decode_or_fail)
    res = stagerun.run_stage("segments", rid)
    assert res.metadata["chunks_failed"] == 1 and res.metadata["chunks_decoded"] == len(rows) - 1
    after = rows[2:]  # decoded without the failed chunk's context: in the transcript, not stored
    assert len(store.read_rows("segments", rid)) > 0
    reason = runner.stage_reason(rid, "segments")
    assert reason.startswith(segments_stage.FAILED_PREFIX) and "decoder crashed on this chunk" in reason
    assert f"{hms(bad.t0_ms / 1000)}-{hms(bad.t1_ms / 1000)}" in reason, reason
    assert runner.stage_state(rid)["segments"].status == "ok"
    # the other chunks are transcribed and stored; the failed one has no result and is not covered
    segs = store.read_rows("segments", rid)
    assert segs and not [s for s in segs if s["t0_ms"] >= bad.t0_ms and s["t1_ms"] <= bad.t1_ms]
    assert not _path(bad.key).exists() and not any(_path(r.key).exists() for r in after)
    assert _path(rows[0].key).exists()
    assert segments_stage.coverage(rid).missing_ms == tuple((r.t0_ms, r.t1_ms) for r in [bad, *after])
    assert any(s["t0_ms"] >= after[0].t0_ms for s in segs)
    assert "segments" in freshness.plan(rid)  # the next run comes back for it

    monkeypatch.setattr(C, "_decode_chunk", real)
    again = service.process(tmp_path / "fails.m4a")
    assert again["status"] == "processed", again
    assert runner.stage_reason(rid, "segments") is None
    assert _transcript(rid) == want
    assert segments_stage.coverage(rid).covered == len(rows)


def test_gc_removes_only_unused_results_and_never_during_a_run(tt_home, tmp_path, small_chunks):
    out = service.process(unique_copy(TWO_VOICES_PATH, tmp_path / "gc.m4a", "chunks-gc"))
    rid = out["recording_id"]
    used = {r.key for r in _plan(rid)}
    old_orphan, young_orphan = "ab" * 32, "cd" * 32  # results no plan names (e.g. from an older setting)
    for k in (old_orphan, young_orphan):
        store.put_bytes(store.chunk_result_key(k), C.encode({"meta": {}, "segments": [], "words": [], "dropped": []}))
    past = time.time() - 2 * cache_gc.GC_MIN_AGE_S
    os.utime(_path(old_orphan), (past, past))

    # while a run holds a recording's lock (another process), gc removes nothing
    holder = subprocess.Popen([sys.executable, "-c", (
        "import sys, time; from talkthrough_assets import store\n"
        f"with store.partition_lock({rid!r}):\n    print('held', flush=True); time.sleep(60)")],
        stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "held"
        res = CliRunner().invoke(cli.app, ["gc"])
        assert res.exit_code == 1 and "refused" in res.output and rid in res.output, res.output
        assert _path(old_orphan).exists()
    finally:
        holder.send_signal(signal.SIGKILL)
        holder.wait()

    dry = CliRunner().invoke(cli.app, ["gc", "--dry-run", "--json"])
    assert dry.exit_code == 0, dry.output
    assert json.loads(dry.output)["removed"] >= 1 and _path(old_orphan).exists()
    res = CliRunner().invoke(cli.app, ["gc", "--json"])
    assert res.exit_code == 0, res.output
    r = json.loads(res.output)
    assert not _path(old_orphan).exists()  # unused and old: removed
    assert _path(young_orphan).exists()  # unused but young: a run that began meanwhile may be writing it
    assert all(_path(k).is_file() for k in used)  # used: kept
    assert r["kept"] >= len(used) and r["audio_hours"] > 0 and r["bytes_per_audio_hour"] > 0
    text = CliRunner().invoke(cli.app, ["gc"]).output
    assert "per hour of audio" in text, text
    store.delete_file(store.chunk_result_key(young_orphan))


def test_kill_9_mid_run_loses_at_most_the_chunk_in_flight(tt_home, tmp_path):
    src = unique_copy(TWO_VOICES_PATH, tmp_path / "killed.m4a", "chunks-kill")
    rid = service.recording_id_for(src)
    env = dict(os.environ, TALKTHROUGH_CHUNK_S="4", TALKTHROUGH_STAGE_WORKERS="1")
    proc = subprocess.Popen([sys.executable, "-m", "talkthrough_assets.cli.main", "process", str(src), "--json"],
                            env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    deadline = time.monotonic() + 300
    try:
        while time.monotonic() < deadline and proc.poll() is None:  # kill once two chunks are stored
            rows = store.read_rows("chunks", rid, record=Chunk) if store.has_partition("chunks", rid) else []
            if rows and sum(_path(r.key).exists() for r in rows) >= 2:
                break
            time.sleep(0.05)
        assert proc.poll() is None, "the run finished before it could be killed"
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    rows = _plan(rid)
    stored_before = sum(_path(r.key).exists() for r in rows)
    assert 2 <= stored_before < len(rows)
    assert segments_stage.coverage(rid).covered == stored_before
    os.environ["TALKTHROUGH_CHUNK_S"] = "4"
    try:
        md = _segments_md(rid)
    finally:
        del os.environ["TALKTHROUGH_CHUNK_S"]
    assert md["chunks_reused"] == stored_before and md["chunks_decoded"] == len(rows) - stored_before
    # the same transcript as an uninterrupted run: the chunks decoded once more from nothing
    want = _transcript(rid)
    for r in rows:
        _path(r.key).unlink()
    os.environ["TALKTHROUGH_CHUNK_S"] = "4"
    try:
        assert _segments_md(rid)["chunks_decoded"] == len(rows)
    finally:
        del os.environ["TALKTHROUGH_CHUNK_S"]
    assert _transcript(rid) == want


def test_ocr_results_are_keyed_by_frame_pixels_and_read_once(tt_home, tmp_path, monkeypatch):
    """#19 item 2: the same screens in another file are not read again; a damaged result is read again.
    On a data root of its own: in the shared one the session's processed fixtures use the same screens, and
    forgetting a and b rightly keeps their results."""
    monkeypatch.setenv("TALKTHROUGH_HOME", str(tmp_path / "home"))
    a = service.process(unique_copy(SCREENCAST_PATH, tmp_path / "slides a.mp4", "ocr-a"))
    assert a["status"] == "processed", a
    ra = a["recording_id"]
    rows, keys = store.read_rows("ocr", ra), store.read_rows("ocr_keys", ra, record=OcrKey)
    assert rows and [k.ms for k in keys] == [r["ms"] for r in rows]
    paths = {k.key: store.home() / store.ocr_result_key(k.key) for k in keys}
    assert all(p.is_file() for p in paths.values())
    md = stagerun.run_stage("ocr", ra).metadata  # a re-run reads nothing
    assert md["frames_reused"] == md["frames_read"] == len(rows)
    assert store.read_rows("ocr", ra) == rows

    b = service.process(unique_copy(SCREENCAST_PATH, tmp_path / "slides b.mp4", "ocr-b"))
    rb = b["recording_id"]
    assert rb != ra and store.read_rows("ocr", rb) == rows
    assert stagerun.run_stage("ocr", rb).metadata["frames_reused"] == len(rows)

    first = paths[keys[0].key]
    first.write_bytes(first.read_bytes()[:-7] + b"garbage")  # damaged: detected by its checksum, read again
    md = stagerun.run_stage("ocr", rb).metadata
    assert md["frames_reused"] == len(rows) - 1 and store.read_rows("ocr", rb) == rows
    C.decode_blob(first.read_bytes())  # replaced by a good one

    service.forget(ra)  # b still uses every result
    assert all(p.is_file() for p in paths.values())
    gone = service.forget(rb)["removed"]
    assert sorted(x for x in gone if "/chunks/ocr/" in x) == sorted(
        store.data_location(store.ocr_result_key(k)) for k in paths)
    assert not any(p.exists() for p in paths.values())


def test_on_a_terminal_the_share_of_audio_transcribed_is_shown(tmp_path):
    """#19 item 4: a real pseudo-terminal shows the segments stage's share of the audio, chunk by chunk, with an
    ETA; in a pipe the lines are the stage lines as before (no percentages)."""
    import re

    src = unique_copy(TWO_VOICES_PATH, tmp_path / "progress.m4a", "chunks-progress")
    home = tmp_path / "home"
    env = dict(os.environ, TALKTHROUGH_HOME=str(home), DAGSTER_HOME=str(home / "dagster"), COLUMNS="160",
               TERM="xterm-256color", TALKTHROUGH_CHUNK_S="5")
    cmd = [sys.executable, "-m", "talkthrough_assets.cli.main", "process", str(src)]
    text = run_on_terminal(cmd, env)
    # the status, then the bar, the share, the elapsed time and the ETA at the line's end (issue #38, item 6)
    shown = re.findall(r"segments (\d+)% of the audio \((\d+) of (\d+) chunks\) +[━─]* +\d+% \d+:\d\d( ETA \d+:\d\d)?",
                       text)
    assert shown, text[-3000:]
    total = int(shown[0][2])
    assert total >= 4 and {int(d) for _, d, _, _ in shown} >= {1, total}, shown
    assert int(shown[-1][0]) == 100 and any(eta for *_, eta in shown), shown
    shares = [int(p) for p, *_ in shown]
    assert shares == sorted(shares)

    piped = subprocess.run(cmd + ["--force"], capture_output=True, text=True, env=env, timeout=500)
    assert piped.returncode == 0 and "% of the audio" not in piped.stderr + piped.stdout, piped.stderr
    # the Dagster run logs one progress line per chunk (its console log at INFO)
    logged = subprocess.run(cmd + ["--force"], capture_output=True, text=True, timeout=500,
                            env=dict(env, TALKTHROUGH_LOG_LEVEL="INFO"))
    assert logged.returncode == 0, logged.stderr[-2000:]
    lines = re.findall(r'Stage "segments": (\d+) % of the audio \((\d+) of (\d+) chunks\)', logged.stderr)
    assert [int(d) for _, d, _ in lines] == list(range(1, total + 1)), logged.stderr[-3000:]
    assert int(lines[-1][0]) == 100


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_a_stopped_run_ends_at_the_next_window_and_a_rerun_resumes(tt_home, tmp_path, monkeypatch, sig):
    """SIGTERM (a service manager, `docker stop`) or Ctrl-C (SIGINT) while Whisper runs: the run stops at the next
    Whisper window instead of transcribing the rest of the recording first; it says why, records the reason,
    keeps the finished chunks, and a re-run decodes only the rest."""
    monkeypatch.setenv("TALKTHROUGH_HOME", str(tmp_path / "home"))
    src = unique_copy(TWO_VOICES_PATH, tmp_path / "stopped.m4a", f"chunks-stop-{int(sig)}")
    rid = service.recording_id_for(src)
    env = dict(os.environ, TALKTHROUGH_CHUNK_S="4", TALKTHROUGH_STAGE_WORKERS="1")
    proc = subprocess.Popen([sys.executable, "-m", "talkthrough_assets.cli.main", "process", str(src), "--json"],
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline and proc.poll() is None:  # stop once the first chunk is stored
            rows = store.read_rows("chunks", rid, record=Chunk) if store.has_partition("chunks", rid) else []
            if rows and any(_path(r.key).exists() for r in rows):
                break
            time.sleep(0.05)
        assert proc.poll() is None, "the run finished before it could be stopped"
        proc.send_signal(sig)
        out, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode != 0, (out, err)
    result = json.loads(out)[0]
    assert result["status"] == "failed" and "interrupted" in result["reason"], result
    assert "Traceback" not in err, err[-2000:]
    rows = _plan(rid)
    stored = sum(_path(r.key).exists() for r in rows)
    assert 1 <= stored < len(rows), (stored, len(rows))  # stopped long before the last chunk
    runs = {r["stage"]: r for r in store.read_rows("stage_runs", rid, part=None)}
    assert runs["segments"]["status"] == "failed" and "interrupted" in runs["segments"]["reason"]
    monkeypatch.setenv("TALKTHROUGH_CHUNK_S", "4")
    # a stop that came before Dagster's step took over the stages started ahead of it leaves those it finished
    # (probe, audio) to run again (scheduler.EarlyRun.end): the re-run does that first
    for stage in [s for s in freshness.plan(rid) if s in ("probe", "audio")]:
        stagerun.run_stage(stage, rid)
    md = _segments_md(rid)  # the re-run: the stopped run's chunks are kept and reused
    assert md["chunks_reused"] == stored and md["chunks_decoded"] == len(rows) - stored, md

"""Media the header lies about, through `talkthrough process` (typer's runner, in this process) on a data root of
this module's own: a header that claims 2 s of a 24-s clip, an mp4 that stores all its video before its audio cut
short, a text file named .mp4. Decoded time beats header time both ways, each stream counts on its own, and a
file that is not media says so in words; nothing already stored is lost. Clips: tests/lying_media.py."""

from __future__ import annotations

import json
import os
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest
from fixture_facts import FIXTURES_DIR, SILENT_NAME
from lying_media import claim_length, clip, cut_in_video
from typer.testing import CliRunner

from talkthrough_assets import store
from talkthrough_assets.cli import main as cli
from talkthrough_assets.app import service

MTIME = datetime(2026, 3, 14, 14, 32, 24, tzinfo=timezone.utc)


@pytest.fixture(scope="module")
def home(tmp_path_factory):
    """A data root of its own holding one processed recording (the silent fixture video: no Whisper)."""
    root = tmp_path_factory.mktemp("mediahome")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("TALKTHROUGH_HOME", str(root / "home"))
        mp.setenv("DAGSTER_HOME", str(root / "home" / "dagster"))
        kept = service.process(FIXTURES_DIR / SILENT_NAME)
        assert kept["status"] == "processed", kept
        yield {"root": root, "kept": kept["recording_id"]}


def _cli(*args: str):
    store.integrity.forget_skipped()
    return CliRunner().invoke(cli.app, list(args))


def _process(path: Path) -> tuple[int, dict]:
    r = _cli("process", "--json", str(path))
    (out,) = json.loads(r.stdout)
    return r.exit_code, out


def _stored(rid: str) -> dict[str, bytes]:
    """Every stored file of one recording (tables, manifest, report, frames), bookkeeping aside."""
    return {str(p.relative_to(store.home())): p.read_bytes() for p in store.home().rglob("*")
            if p.is_file() and rid in str(p) and not any(k in str(p) for k in ("/locks/", "stage_runs", "/sources/"))}


def test_a_header_that_claims_2_s_of_24_s_is_not_believed(home):
    liar = claim_length(clip(home["root"] / "short_claim.mp4", 24), 2.0)
    os.utime(liar, (MTIME.timestamp(), MTIME.timestamp()))
    rc, out = _process(liar)
    assert rc == 0 and out["status"] == "processed", out
    assert out["duration_s"] == 24.0, out  # before: 2.0
    assert out["warning"] == ("its header claims 2.0 s but 24.0 s of media could be read (a header that lies about "
                              "its length): processed all 24.0 s"), out
    rid = out["recording_id"]
    # the wall clock anchors on the file's mtime minus the real length (before: 22 s late)
    wc = store.read_one("wall_clock", rid)
    assert wc["source"] == "file_mtime_minus_duration", wc
    assert datetime.fromisoformat(wc["start_utc"]) == MTIME - timedelta(seconds=24), wc
    listed = _cli("recordings", "--find", liar.name)
    assert "0:24" in listed.stdout and "0:02" not in listed.stdout, listed.stdout
    media = store.get_json(store.manifest_key(rid))["media"]
    assert media["duration_s"] == 24.0 and media["header_duration_s"] == 2.0, media
    assert max(k["ms"] for k in store.read_rows("keyframes", rid)) >= 20_000  # the last scene is a frame


def test_a_header_that_claims_more_than_its_packets_hold_is_not_believed(home):
    liar = claim_length(clip(home["root"] / "long_claim.mkv", 6), 60.0)
    rc, out = _process(liar)
    assert rc == 0 and out["status"] == "processed", out
    assert 5.5 <= out["duration_s"] <= 6.5, out
    assert out["warning"].startswith(f"only {out['duration_s']:.1f} s of the 60.0 s its header claims"), out


def test_an_mp4_with_its_video_before_its_audio_cut_short_keeps_the_video_it_holds(home):
    whole = clip(home["root"] / "video_first.mp4", 24, scene_s=2, video_first=True)
    cut = cut_in_video(whole, home["root"] / "video_first_cut.mp4", 8.0)  # 8 s of video, no audio packet
    rc, out = _process(cut)
    assert rc == 0 and out["status"] == "processed", out
    assert 7.5 <= out["duration_s"] <= 9.0, out  # before: 1.3 s, where the demuxer met the first missing audio
    assert out["warning"].startswith("only ") and "of the 24.0 s its header claims" in out["warning"], out
    rid = out["recording_id"]
    frames = [k["ms"] for k in store.read_rows("keyframes", rid)]
    assert max(frames) >= 6_000, frames  # the scene from 6 s on is a frame (before: frames up to 1.3 s)
    assert out["transcript"]["reason"] == "no speech detected (audio shorter than 0.1 s)", out  # none was stored


def test_a_text_file_named_mp4_is_refused_in_one_line_of_words_and_nothing_stored_is_lost(home):
    kept = _stored(home["kept"])
    text = home["root"] / "minutes.mp4"
    text.write_text("meeting minutes, not a video\n" * 50)
    empty = home["root"] / "empty.mp4"
    empty.write_bytes(b"")
    r_empty = _cli("process", str(empty))
    r = _cli("process", str(text))
    assert r.exit_code == r_empty.exit_code == 1, (r.output, r_empty.output)
    reasons = [ln.strip() for ln in r.stdout.splitlines() if ln.strip().startswith("reason:")]
    assert reasons == ["reason: probe: not a readable media file (it holds text, not audio or video): minutes.mp4"], \
        r.stdout
    assert "InvalidDataError" not in r.output and "Traceback" not in r.output, r.output
    found = _cli("recordings", "--find", text.name)
    assert "failed (probe: not a readable media file (it holds text" in found.stdout, found.stdout
    assert _stored(home["kept"]) == kept
    # other bytes FFmpeg knows no format of say so too
    noise = home["root"] / "noise.mp4"
    noise.write_bytes(bytes(range(256)) * 16)
    rc, out = _process(noise)
    assert rc == 1 and out["reason"] == ("probe: not a readable media file (no audio or video format FFmpeg knows, "
                                         "or its header is missing or damaged): noise.mp4"), out

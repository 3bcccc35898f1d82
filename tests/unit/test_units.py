"""Unit tests of pure stage logic: no Dagster, no models, no media decoding."""

from __future__ import annotations

import json
from datetime import datetime, timezone

import pytest
from PIL import Image, ImageDraw

from talkthrough_assets import settings as S
from talkthrough_assets.stages import dedup, manifest, ocr, terms, wallclock
from talkthrough_assets.stages.probe import frame_floor_s

# Tags captured from real files (PyAV container.metadata).
IPHONE_MOV_TAGS = {  # QuickTime Player / pre-macOS-26 screen recording
    "major_brand": "qt  ", "creation_time": "2026-03-14T09:26:53.000000Z",
    "com.apple.quicktime.creationdate": "2026-03-14T10:26:53+0100",
}
REPLAYKIT_TAGS = {"major_brand": "mp42", "creation_time": "2026-05-01T17:00:00.000000Z"}
ENCODER_GARBAGE_TAGS = {"creation_time": "1904-01-01T00:00:00.000000Z",
                        "com.apple.quicktime.creationdate": "1970-01-01T00:00:00Z"}
MTIME = datetime(2026, 6, 1, 12, 0, 30, tzinfo=timezone.utc).timestamp()


class TestWallClockLadder:
    def test_recorded_at_wins_with_its_offset(self):
        wc = wallclock.resolve(tags=IPHONE_MOV_TAGS, duration_ms=1000, file_mtime=MTIME,
                               recorded_at="2026-01-02T08:00:00-05:00")
        assert wc["source"] == "recorded_at" and wc["confidence"] == "exact"
        assert wc["start_utc"] == "2026-01-02T13:00:00.000+00:00"
        assert wc["tz_offset_min"] == -300

    def test_naive_recorded_at_is_machine_local(self):
        wc = wallclock.resolve(tags={}, duration_ms=0, file_mtime=None, recorded_at="2026-01-02T08:00:00")
        local = datetime(2026, 1, 2, 8, 0).astimezone()
        assert wc["tz_offset_min"] == int(local.utcoffset().total_seconds() // 60)
        assert datetime.fromisoformat(wc["start_utc"]) == local

    def test_bad_recorded_at_is_a_clear_error(self):
        with pytest.raises(ValueError, match="ISO-8601"):
            wallclock.resolve(tags={}, duration_ms=0, file_mtime=None, recorded_at="last tuesday")

    def test_quicktime_creationdate_is_high_with_offset(self):
        wc = wallclock.resolve(tags=IPHONE_MOV_TAGS, duration_ms=5000, file_mtime=MTIME)
        assert (wc["source"], wc["confidence"], wc["tz_offset_min"]) == (wallclock.QT_TAG, "high", 60)
        assert wc["start_utc"] == "2026-03-14T09:26:53.000+00:00"

    def test_creation_time_is_medium_utc_only(self):
        wc = wallclock.resolve(tags=json.dumps(REPLAYKIT_TAGS), duration_ms=5000, file_mtime=MTIME)
        assert (wc["source"], wc["confidence"], wc["tz_offset_min"]) == ("creation_time", "medium", None)
        assert wc["start_utc"] == "2026-05-01T17:00:00.000+00:00"

    def test_pre_1972_tags_are_garbage_and_mtime_minus_duration_is_used(self):
        wc = wallclock.resolve(tags=ENCODER_GARBAGE_TAGS, duration_ms=30_000, file_mtime=MTIME)
        assert (wc["source"], wc["confidence"]) == ("file_mtime_minus_duration", "low")
        assert wc["start_utc"] == "2026-06-01T12:00:00.000+00:00"

    def test_garbage_strings_are_skipped(self):
        wc = wallclock.resolve(tags={"creation_time": "not a date", wallclock.QT_TAG: "??"}, duration_ms=0,
                               file_mtime=None)
        assert wc["available"] is False and wc["start_utc"] is None

    def test_t_wall_renders_in_recording_local_offset_else_utc(self):
        local = wallclock.resolve(tags=IPHONE_MOV_TAGS, duration_ms=0, file_mtime=None)
        assert wallclock.t_wall(local, 1500) == "2026-03-14T10:26:54.500+01:00"
        utc = wallclock.resolve(tags=REPLAYKIT_TAGS, duration_ms=0, file_mtime=None)
        assert wallclock.t_wall(utc, 61_000) == "2026-05-01T17:01:01.000+00:00"
        assert wallclock.t_wall(None, 5) is None


def test_frame_floor_spreads_budget_over_whole_recording():
    assert frame_floor_s(20, 120) == 1.0  # short: one per second at most
    assert frame_floor_s(3600, 120) == 30.0  # an hour: 120 frames cover all of it
    assert frame_floor_s(3600, 0) == 3600.0  # degenerate budget never divides by zero


def _slide(title: str, color=(40, 90, 200), size=(320, 180)) -> Image.Image:
    im = Image.new("RGB", size, (245, 245, 245))
    d = ImageDraw.Draw(im)
    d.rectangle([0, 0, size[0], 24], fill=color)
    d.text((20, 60), title, fill=(0, 0, 0), font_size=28)
    return im


class TestDedup:
    def test_identical_and_recompressed_frames_are_duplicates(self, tmp_path):
        a = _slide("DEPLOY")
        a.save(tmp_path / "a.jpg", quality=95)
        a.save(tmp_path / "b.jpg", quality=40)
        sa, sb = dedup.signature(tmp_path / "a.jpg"), dedup.signature(tmp_path / "b.jpg")
        assert dedup.hamming(sa.dhash, sb.dhash) <= 4
        assert dedup.is_duplicate(sa, sb)

    def test_different_layouts_are_not_duplicates(self):
        a = dedup.signature(_slide("DEPLOY"))
        b = dedup.signature(Image.linear_gradient("L").resize((320, 180)).rotate(90).convert("RGB"))
        assert not dedup.is_duplicate(a, b)

    def test_same_layout_new_text_is_kept_for_ocr(self):
        a = dedup.signature(_slide("DEPLOY PIPELINE"))
        b = dedup.signature(_slide("ROLLBACK DONE"))
        assert not dedup.is_duplicate(a, b)

    def test_one_changed_word_or_colour_is_never_a_duplicate(self):
        a = dedup.signature(_slide("ERROR 503", size=(1280, 720)))
        b = dedup.signature(_slide("ERROR 504", size=(1280, 720)))  # one digit
        c = dedup.signature(_slide("ERROR 503", color=(200, 40, 40), size=(1280, 720)))  # banner recoloured
        assert not dedup.is_duplicate(a, b)
        assert not dedup.is_duplicate(a, c)

    def test_a_blinking_cursor_is_new_but_only_its_band_changed(self):
        a = _slide("DEPLOY", size=(1280, 720))
        b = a.copy()
        ImageDraw.Draw(b).rectangle([900, 300, 903, 330], fill=(0, 0, 0))  # a 4x30 px text cursor
        sa, sb = dedup.signature(a), dedup.signature(b)
        assert not dedup.is_duplicate(sa, sb)
        bands = dedup.changed_bands(sa, sb)
        assert len(bands) == 1 and bands[0][0] == 0 and bands[0][2] == 1280
        assert bands[0][1] <= 300 and bands[0][3] >= 331 and bands[0][3] - bands[0][1] < 120
        assert dedup.changed_bands(sa, dedup.signature(_slide("OTHER", color=(200, 0, 0), size=(1280, 720)))) \
            is not None  # a title + banner change is still a band, not the whole frame
        full = Image.linear_gradient("L").resize((1280, 720)).convert("RGB")
        assert dedup.changed_bands(sa, dedup.signature(full)) is None  # everything changed: read it all

    def test_mark_points_duplicates_at_the_head_of_their_run(self):
        frames = [{"ms": m} for m in (0, 1000, 2000, 3000)]
        stripes = Image.linear_gradient("L").resize((320, 180)).rotate(90).convert("RGB")
        h1, h2 = dedup.signature(_slide("A")), dedup.signature(stripes)
        rows = dedup.mark(frames, [h1, h1, h1, h2])
        assert [r["duplicate_of"] for r in rows] == [None, 0, 0, None]
        assert all(len(r["dhash"]) == 16 for r in rows)


def _manifest_inputs():
    probe = {"path": "/x/a.mp4", "filename": "a.mp4", "kind": "video", "duration_ms": 12_345, "size_bytes": 10,
             "width": 1920, "height": 1080, "video_codec": "h264", "has_audio": True, "has_video": True,
             "cap_hit": False}
    return dict(
        recording_id="0123456789abcdef", probe=probe,
        wall_clock={"available": True, "start_utc": "2026-03-14T09:26:53.000+00:00", "tz_offset_min": None,
                    "source": "creation_time", "confidence": "medium"},
        transcript={"available": True, "reason": None, "language": "en", "model": "tiny.en"},
        segments=[{"seq": 0, "t0_ms": 0, "t1_ms": 900, "text": "héllo"}],
        words=[{"seq": 0, "idx": 0, "t0_ms": 0, "t1_ms": 900, "word": " héllo"}],
        diarization={"requested": False}, turns=[], speakers=[], speaker_segments=[],
        keyframes=[{"ms": 0, "file": "frames/x/g/t00000000.jpg"}, {"ms": 1000, "file": "frames/x/g/t00001000.jpg"}],
        dedup=[{"ms": 0, "duplicate_of": None}, {"ms": 1000, "duplicate_of": 0}],
        ocr=[{"ms": 0, "text": "DEPLOY"}], settings=dict(S.DEFAULTS, ocr=True),
    )


def test_manifest_round_trip_and_validation():
    m = manifest.build(**_manifest_inputs())
    assert manifest.validate(m) == []
    again = manifest.loads(manifest.dumps(m))
    assert again == m
    assert m["frames"]["count"] == 2 and m["frames"]["unique_count"] == 1
    assert m["frames"]["items"][1]["duplicate_of"] == 0 and m["frames"]["items"][0]["ocr_text"] == "DEPLOY"
    assert "diarization" not in m["transcript"]  # not requested -> block absent
    broken = dict(m, schema="other/v9")
    with pytest.raises(ValueError, match="schema"):
        manifest.loads(json.dumps(broken))


class TestOcrBands:
    @staticmethod
    def _line(y0, y1, x0=20, x1=600):
        return {"box": [[x0, y0], [x1, y0], [x1, y1], [x0, y1]], "text": "t", "score": 1.0}

    def test_a_band_grows_to_the_whole_lines_it_touches(self):
        lines = [self._line(10, 40), self._line(50, 80), self._line(90, 120), self._line(200, 230)]
        # the band's top edge cuts the second line: it takes all of it (+4 px), not the first or the last
        assert ocr.whole_line_bands([[0, 60, 1280, 100]], lines, (1280, 720)) == [[0, 46, 1280, 124]]

    def test_growing_bands_chain_and_merge_and_stay_in_the_frame(self):
        lines = [self._line(0, 30), self._line(28, 60), self._line(100, 130), self._line(126, 150)]
        # band 1 touches line 2, which overlaps line 1; band 2 touches lines 3 and 4: two bands,
        # clipped at the frame's top; a third band inside the grown second one merges into it
        got = ocr.whole_line_bands([[0, 50, 1280, 55], [0, 110, 1280, 112], [0, 140, 1280, 145]], lines, (1280, 720))
        assert got == [[0, 0, 1280, 64], [0, 96, 1280, 154]]

    def test_a_band_touching_no_line_is_unchanged(self):
        assert ocr.whole_line_bands([[0, 300, 1280, 340]], [self._line(10, 40)], (1280, 720)) == [[0, 300, 1280, 340]]


def test_term_folding_is_case_and_diacritic_insensitive():
    assert terms.tokens("Café ÜBER-Déploiement, v2!") == ["cafe", "uber", "deploiement", "v2"]
    rows = terms.term_rows("ocr", [(5, 5000, "Deploy deploy pipeline")])
    assert {(r["term"], r["tf"], r["doc_len"]) for r in rows} == {("deploy", 2, 3), ("pipeline", 1, 3)}


def test_amend_scopes_follow_the_graph():
    assert S.ordered(S.downstream({"wall_clock"})) == ["wall_clock", "manifest"]
    assert S.ordered(S.downstream({"turns"})) == ["turns", "manifest"]
    assert S.ordered(S.downstream({"segments"})) == ["segments", "turns", "manifest"]
    assert S.ordered(S.downstream({"keyframes"})) == ["keyframes", "dedup", "ocr", "manifest"]
    assert S.config_hash("wall_clock", {"recorded_at": "x"}) != S.config_hash("wall_clock", {"recorded_at": "y"})
    assert S.config_hash("segments", {"recorded_at": "x"}) == S.config_hash("segments", {"recorded_at": "y"})


def test_engine_choices_from_the_environment_are_in_the_config_hash(monkeypatch):
    """TALKTHROUGH_DEVICE / COMPUTE_TYPE change Whisper's output: changing them re-runs segments."""
    cfg = dict(S.DEFAULTS, ocr=True)
    base = S.config_hash("segments", cfg)
    monkeypatch.setenv("TALKTHROUGH_COMPUTE_TYPE", "int8_float32")
    assert S.config_hash("segments", cfg) != base
    monkeypatch.delenv("TALKTHROUGH_COMPUTE_TYPE")
    assert S.config_hash("segments", cfg) == base
    assert "det_max_side" in S.stage_config("ocr", cfg)["_engine"]


def test_every_stage_fact_comes_from_its_stage_spec():
    """One StageSpec per stage (#13): the settings, plan, pipeline and Dagster views agree with it."""
    from dagster import AssetKey

    from talkthrough_assets import definitions, pipeline
    from talkthrough_assets.stagespec import SETTINGS, SPECS

    assert S.STAGES == tuple(sp.name for sp in SPECS) and set(pipeline.RUNNERS) == set(S.STAGES)
    assert S.DEFAULTS == {st.name: st.default for st in SETTINGS}
    asset = definitions.ASSETS[0]
    for sp in SPECS:
        key = AssetKey(sp.name)
        assert S.DEPS[sp.name] == sp.upstream and S.STAGE_KEYS[sp.name] == sp.settings
        assert pipeline.CODE_VERSIONS[sp.name] == sp.code_version == asset.code_versions_by_key[key]
        assert {d.asset_key for d in asset.specs_by_key[key].deps} == {AssetKey(u) for u in sp.upstream}
        assert asset.specs_by_key[key].description == sp.description
        checks = {c.name for c in asset.check_specs if c.asset_key == key}
        assert checks == {c.name for c in sp.checks}
    assert set(definitions.StagesConfig.model_fields) == {st.name for st in SETTINGS}


def test_srt_time_matches_faster_whispers_formatter():
    from faster_whisper.utils import format_timestamp

    from talkthrough_mcp.transcript import srt_time

    for ms in (0, 1, 999, 1000, 59_999, 61_004, 3_723_004, 36_000_000 + 123):
        assert srt_time(ms) == format_timestamp(ms / 1000, always_include_hours=True, decimal_marker=",")

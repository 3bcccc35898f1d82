"""What `talkthrough process` draws for one file while its long stages run (#19 item 4): the share of the audio
transcribed and of the video scanned, one bar for both, the later branch's ETA; the keyframe scan's progress
reports come at a bounded rate (each 5 % of the video, at most every 0.25 s, or after 10 s)."""

from __future__ import annotations

from talkthrough_assets.cli.progress import FileProgress
from talkthrough_assets.stages import keyframes
from talkthrough_assets.stages import runner


def test_the_board_shows_both_branches_one_bar_and_the_later_eta():
    b = FileProgress()
    assert b.percent() == 0 and b.text() == ""
    b.report("segments", {"share": 0.5, "text": "5 of 10 chunks", "eta_s": 30.0})
    assert b.percent() == 50 and b.text() == "segments 50% of the audio (5 of 10 chunks), ETA 0:30"
    b.report("keyframes", {"share": 0.2, "text": "frames to 0:12 of 1:00", "eta_s": 95.0,
                           "what": "the video scanned"})
    assert b.percent() == 50  # a second branch reporting late never takes the bar back
    assert b.text() == ("segments 50% of the audio (5 of 10 chunks), keyframes 20% of the video scanned "
                        "(frames to 0:12 of 1:00), ETA 1:35")
    b.finished("keyframes")  # its branch is done: the ETA is the audio's
    assert b.percent() == 61 and b.text().endswith("keyframes 100% of the video scanned (frames to 0:12 of 1:00), "
                                                    "ETA 0:30")
    b.finished("segments")
    assert b.percent() == 100 and "ETA" not in b.text()
    b.finished("ocr")  # a stage that never reported: nothing to show
    assert set(b.reports) == {"segments", "keyframes"}


def test_the_bar_counts_every_planned_stage_never_goes_back_and_is_full_only_at_the_end():
    """The run's plan weighs each stage: OCR (which reports no share) counts, a branch done early does not show
    100 % while Whisper is on its first chunk, and a late report never takes the bar back."""
    b = FileProgress(clock=lambda: 0.0)
    stages = ["probe", "wall_clock", "audio", "segments", "keyframes", "dedup", "ocr", "manifest"]
    b.plan(stages)
    seen = [b.percent()]
    for stage in ("probe", "wall_clock", "audio"):
        b.finished(stage)
        seen.append(b.percent())
    b.report("keyframes", {"share": 1.0, "eta_s": None})
    b.finished("keyframes")
    b.finished("dedup")
    seen.append(b.percent())
    assert seen[-1] < 40  # the video branch is done, Whisper has not reported: far from full
    b.report("segments", {"share": 0.1, "eta_s": 60.0, "text": "1 of 10 chunks"})
    seen.append(b.percent())
    b.report("segments", {"share": 1.0, "eta_s": None})
    b.finished("segments")
    seen.append(b.percent())
    assert seen[-1] < 100  # OCR still runs
    b.finished("ocr")
    seen.append(b.percent())
    assert seen[-1] < 100  # the manifest is still to come
    b.finished("manifest")
    seen.append(b.percent())
    assert seen == sorted(seen) and seen[-1] == 100 and seen.count(100) == 1, seen


def test_the_keyframe_scan_reports_its_share_and_eta_at_a_bounded_rate():
    got = []

    def listen(stage, rid, info):
        got.append((stage, rid, info))

    now = [100.0]
    rid = "0123456789abcdef"
    ctx = runner.RunContext(rid, "keyframes", on_progress=lambda info: listen("keyframes", rid, info))
    on_time = keyframes.scan_progress(rid, 600.0, clock=lambda: now[0], ctx=ctx)
    for i in range(1, 601):  # one frame per second of a 10-min video, scanned at 0.05 s per frame
        now[0] += 0.05
        on_time(float(i))
    assert got and all(s == "keyframes" and r == "0123456789abcdef" for s, r, _ in got)
    shares = [i["share"] for _, _, i in got]
    # the last step before the end (the stage's own "ok" says 100 %: FileProgress.finished)
    assert shares == sorted(shares) and shares[-1] >= 1 - keyframes.PROGRESS_STEP and 10 <= len(got) <= 20, shares
    assert all(b - a >= keyframes.PROGRESS_STEP - 1e-9 for a, b in zip(shares, shares[1:]))
    first = got[0][2]
    assert first["what"] == "the video scanned" and first["text"].startswith("frames to 0:") and \
        first["text"].endswith(" of 10:00")
    # the ETA from this run's pace: 0.05 s per second of video, so ~(600 - t) * 0.05 s left
    t = first["share"] * 600
    assert abs(first["eta_s"] - (600 - t) * 0.05) < 1.0, first
    assert got[-1][2]["eta_s"] < 0.05 * 600 * keyframes.PROGRESS_STEP

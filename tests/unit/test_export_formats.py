"""Transcript formats against their specs (#22 item 2): SRT numbering from 1 and comma milliseconds, WebVTT's
header and dotted times with escaped text and voice spans, Markdown escaping of user text, and the MCP
server's get_transcript SRT built by the same cue function."""

from __future__ import annotations

import json
import re

from manifests import snap as snap_of
from talkthrough_assets.model.manifest import Segment, WallClock
from talkthrough_assets.read import formats
from talkthrough_assets.read import snapshot
from talkthrough_assets.read import transcript

WC_JSON = {"start_utc": "2026-03-14T10:00:00+00:00", "tz_offset_min": 60, "source": "cli", "confidence": "high"}
WC = WallClock(**WC_JSON)
SEG_JSON = [
    {"seq": 0, "t0_ms": 0, "t1_ms": 1500, "text": "Hello & welcome", "speaker": "S1"},
    {"seq": 1, "t0_ms": 61_250, "t1_ms": 3_723_004, "text": "a <script>alert(1)</script>\n\nsecond line --> x",
     "speaker": "S2"},
    {"seq": 2, "t0_ms": 3_723_004, "t1_ms": 3_723_004, "text": "[link](javascript:alert(1)) *bold* # not a heading",
     "speaker": "S1"},
]
SEGS = [Segment(**s) for s in SEG_JSON]
NAMES = {"S1": "Ann <b>O'Neil</b>"}


def test_srt_cues_are_numbered_from_one_with_comma_times_and_one_text_line():
    srt = formats.render("srt", SEGS, NAMES, WC)
    blocks = srt.split("\n\n")
    assert blocks[-1] == "" and len(blocks) == 4  # every cue ends with a blank line
    for n, block in enumerate(blocks[:-1], 1):
        num, times, text = block.split("\n")  # a line break in the text never splits a cue
        assert num == str(n)
        assert re.fullmatch(r"\d\d:\d\d:\d\d,\d{3} --> \d\d:\d\d:\d\d,\d{3}", times)
    assert "00:01:01,250 --> 01:02:03,004" in srt
    assert "[S1 Ann <b>O'Neil</b>] Hello & welcome" in srt  # SRT has no escaping: the text as spoken
    assert "[S2] a <script>" in srt


def test_vtt_has_its_header_dotted_times_voice_spans_and_escaped_text():
    vtt = formats.render("vtt", SEGS, NAMES, WC, title="call --> notes.mka")
    assert vtt.startswith("WEBVTT\n\n")
    assert "NOTE call -> notes.mka\n\n" in vtt  # a NOTE may not hold -->
    times = re.findall(r"(?m)^(\S+) --> (\S+)$", vtt)
    assert len(times) == 3 and all(re.fullmatch(r"\d\d:\d\d:\d\d\.\d{3}", t) for pair in times for t in pair)
    assert times[2] == ("01:02:03.004", "01:02:03.005")  # a zero-length cue gets its 1 ms: end > start
    assert "<v Ann &lt;b&gt;O'Neil&lt;/b&gt;>Hello &amp; welcome" in vtt
    assert "<script>" not in vtt and "a &lt;script&gt;alert(1)&lt;/script&gt; second line -&gt; x" in vtt
    assert vtt.count("-->") == 3  # only the cue timings


def test_markdown_escapes_user_text_and_names():
    md = formats.render("md", SEGS, NAMES, WC, title="my *notes* [v2].mp4", wall_clock=True)
    lines = md.splitlines()
    assert lines[0] == r"# my \*notes\* \[v2\].mp4"  # a period is not escaped (issue #38, item 8)
    assert r"\[link\]\(javascript:alert\(1\)\) \*bold\* \# not a heading" in md
    assert r"**S1 Ann \<b\>O'Neil\</b\>:**" in md
    assert "<script>" not in md and "](" not in md
    assert r"- **\[00:00:00 · 2026-03-14T11:00:00.000+01:00\]**" in md  # wall time when asked
    assert "\\." not in md and "\\-" not in md


def test_txt_and_json_carry_names_and_optional_wall_clock():
    txt = formats.render("txt", SEGS, NAMES, WC, wall_clock=True).splitlines()
    assert txt[0] == "[00:00:00 2026-03-14T11:00:00.000+01:00] S1 Ann <b>O'Neil</b>: Hello & welcome"
    assert formats.render("txt", SEGS, NAMES, WC).splitlines()[1].startswith("[00:01:01] S2: a <script>")
    j = json.loads(formats.render("json", SEGS, NAMES, WC, title="f.mka", recording_id="0123456789abcdef"))
    assert j["recording"] == "0123456789abcdef" and j["speaker_names"] == NAMES
    assert j["segments"][0] == {"seq": 0, "t_ms": 0, "t1_ms": 1500, "t_wall": "2026-03-14T11:00:00.000+01:00",
                                "speaker": "S1", "speaker_name": "Ann <b>O'Neil</b>", "text": "Hello & welcome"}


def _snap() -> snapshot.Snapshot:
    return snap_of(SEG_JSON, wall_clock=WC_JSON, duration_ms=4_000_000, names=NAMES)


def test_mcp_get_transcript_srt_and_json_are_the_export_formats():
    snap = _snap()
    page = transcript.page(snap, format="srt").dump()
    assert page["srt"] == formats.render("srt", SEGS, NAMES, WC)
    page = transcript.page(snap, format="json", with_t_wall=True).dump()
    assert page["segments"] == json.loads(formats.render("json", SEGS, NAMES, WC))["segments"]
    # by default get_transcript leaves t_wall out (wall_clock.start_utc + t_ms: issue #26, item 5)
    lean = transcript.page(snap, format="json").dump()["segments"]
    assert lean == [{k: v for k, v in s.items() if k != "t_wall"} for s in page["segments"]]


def test_srt_time_matches_faster_whispers_formatter():
    from faster_whisper.utils import format_timestamp

    from talkthrough_assets.read.formats import srt_time

    for ms in (0, 1, 999, 1000, 59_999, 61_004, 3_723_004, 36_000_000 + 123):
        assert srt_time(ms) == format_timestamp(ms / 1000, always_include_hours=True, decimal_marker=",")


def test_overlapping_segments_never_give_overlapping_cues():
    """ASR segments may overlap (one pair by 440 ms in the 10-min screencast): each SRT/VTT cue ends where
    the next begins (issue #38, item 8), in `export` and in get_transcript(format='srt') alike."""
    seg_json = [{"seq": 0, "t0_ms": 1000, "t1_ms": 5440, "text": "one."},
                {"seq": 1, "t0_ms": 5000, "t1_ms": 7000, "text": "two."},
                {"seq": 2, "t0_ms": 7000, "t1_ms": 9000, "text": "three."}]
    segs = [Segment(**s) for s in seg_json]

    def spans(text: str, sep: str) -> list[tuple[str, str]]:
        return re.findall(rf"(\d\d:\d\d:\d\d{sep}\d{{3}}) --> (\d\d:\d\d:\d\d{sep}\d{{3}})", text)

    srt = formats.render("srt", segs, {}, None)
    assert spans(srt, ",") == [("00:00:01,000", "00:00:05,000"), ("00:00:05,000", "00:00:07,000"),
                               ("00:00:07,000", "00:00:09,000")]
    vtt = formats.render("vtt", segs, {}, None)
    assert [b for _, b in spans(vtt, r"\.")] == ["00:00:05.000", "00:00:07.000", "00:00:09.000"]
    snap = snap_of(seg_json, duration_ms=9000)
    assert transcript.page(snap, format="srt").srt == srt
    assert transcript.page(snap, format="srt", start_ms=4000, end_ms=6000).srt.count("-->") == 2
    assert "00:00:01,000 --> 00:00:05,000" in transcript.page(snap, format="srt", start_ms=0, end_ms=2000).srt


def test_two_people_at_once_is_said_in_every_format():
    segs = [Segment(seq=0, t0_ms=0, t1_ms=4000, text="so the budget", speaker="S1", overlap=["S2"]),
            Segment(seq=1, t0_ms=4000, t1_ms=6000, text="agreed", speaker="S2")]
    names = {"S2": "Bob"}
    assert "[S1, with S2 Bob at once] so the budget" in formats.render("srt", segs, names, None)
    assert "S1, with S2 Bob at once: so the budget" in formats.render("txt", segs, names, None)
    assert "**S1, with S2 Bob at once:**" in formats.render("md", segs, names, None)
    assert "<v S1>(with Bob at once) so the budget" in formats.render("vtt", segs, names, None)
    j = json.loads(formats.render("json", segs, names, None))["segments"]
    assert j[0]["overlap"] == ["S2"] and "overlap" not in j[1]  # said only where it happened

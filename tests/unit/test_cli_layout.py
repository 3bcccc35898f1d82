"""Issue #38, item 6: what the CLI draws on an 80-column terminal, as pure functions: the recordings table
(ids whole, names cut in the middle), the one progress line (fits the width, spinner, elapsed, ETA), and the
share interpolated within a chunk between two progress reports. The real terminal: tests/integration/
test_cli_80_columns.py."""

from __future__ import annotations

from talkthrough_assets.cli.layout import middle, progress_line, recordings_lines
from talkthrough_assets.cli.progress import FileProgress

LONG = "quarterly planning session with the platform and payments teams (final cut).m4a"


def _row(i: int, name: str) -> dict:
    return {"recording": f"{i:016x}", "filename": name, "kind": "video", "duration_ms": 612_000,
            "recorded_at": "2026-03-14T09:26:53+01:00", "segment_count": 1234, "frame_count": 56,
            "diarized": True, "chunks": "11/11"}


def test_middle_keeps_the_start_and_the_extension():
    assert middle("short.mp4", 20) == "short.mp4"
    cut = middle(LONG, 20)
    assert len(cut) == 20 and cut.startswith("quarterly") and cut.endswith("cut).m4a") and "…" in cut


def test_recordings_at_80_columns_keep_ids_whole_and_cut_names_in_the_middle():
    rows = [_row(1, LONG), _row(2, "a.mp4")]
    lines = recordings_lines(rows, 80)
    assert all(len(ln) <= 80 for ln in lines), lines
    assert lines[0].split()[0] == "id" and len(lines) == 3
    assert lines[1].startswith("0000000000000001 ") and "…" in lines[1] and lines[1].endswith(").m4a")
    assert lines[2].startswith("0000000000000002 ") and lines[2].endswith("a.mp4")
    wide = recordings_lines(rows, 10 ** 6)  # a pipe: nothing cut, the time of day shown, its zone named
    assert wide[1].endswith(LONG) and "2026-03-14 08:26 UTC" in wide[1]  # stored as 09:26:53+01:00
    from zoneinfo import ZoneInfo

    tokyo = recordings_lines(rows, 80, ZoneInfo("Asia/Tokyo"))  # narrow: the year goes, the time of day stays
    assert "03-14 17:26 JST" in tokyo[1] and all(len(ln) <= 80 for ln in tokyo), tokyo


def test_the_progress_line_fits_and_moves():
    a = progress_line(name=LONG, status="3/9 stages, segments 45% of the audio (5 of 11 chunks)", short="3/9 "
                      "segments 5 of 11 chunks", share=0.45, elapsed_s=35, eta_s=291, tick=0, width=79)
    b = progress_line(name=LONG, status="3/9 stages, segments 45% of the audio (5 of 11 chunks)", short="3/9 "
                      "segments 5 of 11 chunks", share=0.47, elapsed_s=36, eta_s=290, tick=1, width=79)
    assert len(a) <= 79 and len(b) <= 79 and a != b
    assert a.endswith(" 45% 0:35 ETA 4:51") and b.endswith(" 47% 0:36 ETA 4:50")
    assert a[0] != b[0]  # the spinner
    assert "3/9 segments 5 of 11 chunks" in a  # the compact wording when the full one does not fit
    wide = progress_line(name="x.mp4", status="3/9 stages, segments 45% of the audio (5 of 11 chunks)",
                         share=None, elapsed_s=3, eta_s=None, tick=0, width=200)
    assert "x.mp4: 3/9 stages, segments 45% of the audio (5 of 11 chunks)" in wide and wide.endswith(" - 0:03")


def test_the_share_is_interpolated_within_a_chunk_and_never_passes_its_end():
    now = [100.0]
    b = FileProgress(clock=lambda: now[0])
    assert b.share_now() is None
    b.report("segments", {"share": 0.2, "eta_s": 40.0, "text": "2 of 10 chunks", "next_share": 0.3})
    assert b.share_now() == 0.2
    now[0] += 5  # 5 s of a 40-s ETA: 1/8 of what is left
    assert abs(b.share_now() - (0.2 + 0.8 / 8)) < 1e-9 and abs(b.eta_now() - 35) < 1e-9
    now[0] += 30  # the chunk takes longer than the pace said: the bar waits at the chunk's end
    assert b.share_now() == 0.3
    b.report("segments", {"share": 0.3, "eta_s": 35.0, "text": "3 of 10 chunks", "next_share": 0.4})
    assert b.share_now() == 0.3 and b.short() == "segments 3 of 10 chunks"
    b.finished("segments")
    assert b.share_now() == 1.0 and b.eta_now() is None

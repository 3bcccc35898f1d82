"""The time grammar (issue #36, item 1): every documented form on a fixed clock in two time zones, across both
DST changes of each, and every wrong form answered by a one-line correction (never an internal error)."""

from __future__ import annotations

from datetime import datetime, timezone

import pytest

from talkthrough_assets.read import timeq as T

BERLIN, NEW_YORK = "Europe/Berlin", "America/New_York"
# Wednesday 2026-03-11 15:00 UTC: 16:00 in Berlin (CET, +01:00), 11:00 in New York (EDT since Sunday 03-08, -04:00)
NOW = datetime(2026, 3, 11, 15, 0, tzinfo=timezone.utc)


def span(text: str, tz: str, now: datetime = NOW) -> tuple[str, str]:
    zone = T.zone(tz)[0]
    s = T.parse(text, now=now, tz=zone)
    return T.iso(s.start, zone), T.iso(s.end, zone)


@pytest.mark.parametrize("text,tz,start,end", [
    ("now", BERLIN, "2026-03-11T16:00:00+01:00", "2026-03-11T16:00:00+01:00"),
    ("14:30", BERLIN, "2026-03-11T14:30:00+01:00", "2026-03-11T14:30:00+01:00"),
    ("9:05", NEW_YORK, "2026-03-11T09:05:00-04:00", "2026-03-11T09:05:00-04:00"),
    ("10:15am", NEW_YORK, "2026-03-11T10:15:00-04:00", "2026-03-11T10:15:00-04:00"),
    ("2:30 PM", BERLIN, "2026-03-11T14:30:00+01:00", "2026-03-11T14:30:00+01:00"),
    ("14:30-15:00", BERLIN, "2026-03-11T14:30:00+01:00", "2026-03-11T15:00:00+01:00"),
    ("today", BERLIN, "2026-03-11T00:00:00+01:00", "2026-03-12T00:00:00+01:00"),
    ("Yesterday", NEW_YORK, "2026-03-10T00:00:00-04:00", "2026-03-11T00:00:00-04:00"),
    ("yesterday 14:30", BERLIN, "2026-03-10T14:30:00+01:00", "2026-03-10T14:30:00+01:00"),
    ("today 23:00", BERLIN, "2026-03-11T23:00:00+01:00", "2026-03-11T23:00:00+01:00"),  # explicit: later is fine
    ("wednesday", BERLIN, "2026-03-11T00:00:00+01:00", "2026-03-12T00:00:00+01:00"),   # today's weekday: today
    ("last wednesday", BERLIN, "2026-03-04T00:00:00+01:00", "2026-03-05T00:00:00+01:00"),
    ("mon", BERLIN, "2026-03-09T00:00:00+01:00", "2026-03-10T00:00:00+01:00"),
    ("thursday 9:00-9:30", BERLIN, "2026-03-05T09:00:00+01:00", "2026-03-05T09:30:00+01:00"),
    ("last week", BERLIN, "2026-03-02T00:00:00+01:00", "2026-03-09T00:00:00+01:00"),
    ("this week", BERLIN, "2026-03-09T00:00:00+01:00", "2026-03-16T00:00:00+01:00"),
    ("2h ago", BERLIN, "2026-03-11T14:00:00+01:00", "2026-03-11T14:00:00+01:00"),
    ("90 min ago", NEW_YORK, "2026-03-11T09:30:00-04:00", "2026-03-11T09:30:00-04:00"),
    ("3 days ago", NEW_YORK, "2026-03-08T11:00:00-04:00", "2026-03-08T11:00:00-04:00"),  # elapsed time: 72 h
    ("since 9:00", BERLIN, "2026-03-11T09:00:00+01:00", "2026-03-11T16:00:00+01:00"),
    ("since yesterday", NEW_YORK, "2026-03-10T00:00:00-04:00", "2026-03-11T11:00:00-04:00"),
    ("2026-03-01", BERLIN, "2026-03-01T00:00:00+01:00", "2026-03-02T00:00:00+01:00"),
    ("2026-03-01 14:32", NEW_YORK, "2026-03-01T14:32:00-05:00", "2026-03-01T14:32:00-05:00"),  # EST then
    ("2026-03-01T14:32:05", BERLIN, "2026-03-01T14:32:05+01:00", "2026-03-01T14:32:05+01:00"),
    ("2026-03-01T14:32:05.250Z", BERLIN, "2026-03-01T15:32:05.250+01:00", "2026-03-01T15:32:05.250+01:00"),
    ("2026-03-01T14:32+0530", NEW_YORK, "2026-03-01T04:02:00-05:00", "2026-03-01T04:02:00-05:00"),
    ("2026-03-01T14:30-05:00", BERLIN, "2026-03-01T20:30:00+01:00", "2026-03-01T20:30:00+01:00"),
    ("2026-03-01 14:30-15:00", BERLIN, "2026-03-01T14:30:00+01:00", "2026-03-01T15:00:00+01:00"),
    ("2026-03-01T14:00/15:00", BERLIN, "2026-03-01T14:00:00+01:00", "2026-03-01T15:00:00+01:00"),
    ("2026-03-01T14:00Z/2026-03-01T15:00Z", NEW_YORK, "2026-03-01T09:00:00-05:00", "2026-03-01T10:00:00-05:00"),
    ("2026-03-01/2026-03-02", BERLIN, "2026-03-01T00:00:00+01:00", "2026-03-03T00:00:00+01:00"),  # days whole
    ("yesterday 23:30/today 00:30", BERLIN, "2026-03-10T23:30:00+01:00", "2026-03-11T00:30:00+01:00"),
])
def test_every_documented_form_on_a_fixed_clock_in_two_zones(text, tz, start, end):
    assert span(text, tz) == (start, end)


def test_days_across_the_dst_changes_are_23_and_25_hours_and_ago_is_elapsed_time():
    # New York sprang forward on Sunday 2026-03-08 (02:00 -> 03:00), Berlin on 2026-03-29, back on 11-01 / 10-25
    for tz, day in ((NEW_YORK, "2026-03-08"), (BERLIN, "2026-03-29")):
        s = T.parse(day, now=NOW.replace(month=4), tz=T.zone(tz)[0])
        assert (s.end - s.start).total_seconds() == 23 * 3600, tz
    for tz, day in ((NEW_YORK, "2026-11-01"), (BERLIN, "2026-10-25")):
        s = T.parse(day, now=NOW.replace(month=12), tz=T.zone(tz)[0])
        assert (s.end - s.start).total_seconds() == 25 * 3600, tz
    # Monday 2026-03-09 08:00 in New York, the day after the change: 'yesterday' is the short day,
    # 'since yesterday' starts at its midnight (EST); '8h ago' from Sunday 08:00 EDT is 23:00 EST on Saturday
    monday = datetime(2026, 3, 9, 12, 0, tzinfo=timezone.utc)
    assert span("yesterday", NEW_YORK, monday) == ("2026-03-08T00:00:00-05:00", "2026-03-09T00:00:00-04:00")
    assert span("since yesterday", NEW_YORK, monday)[0] == "2026-03-08T00:00:00-05:00"
    sunday = datetime(2026, 3, 8, 12, 0, tzinfo=timezone.utc)
    assert span("8h ago", NEW_YORK, sunday)[0] == "2026-03-07T23:00:00-05:00"  # elapsed, not wall-clock, hours
    assert span("yesterday 01:30", NEW_YORK, monday)[0] == "2026-03-08T01:30:00-05:00"
    assert span("yesterday 03:30", NEW_YORK, monday)[0] == "2026-03-08T03:30:00-04:00"
    # the week of Berlin's change: Monday 00:00 CET to Monday 00:00 CEST
    april = datetime(2026, 4, 1, 10, 0, tzinfo=timezone.utc)
    assert span("last week", BERLIN, april) == ("2026-03-23T00:00:00+01:00", "2026-03-30T00:00:00+02:00")


@pytest.mark.parametrize("text,tz,says", [
    ("2026-03-08 02:30", NEW_YORK, "2026-03-08T02:30 does not exist in America/New_York (clocks skipped it for DST); "
                                   "write it with an offset, e.g. 2026-03-08T02:30-05:00 or 2026-03-08T02:30-04:00"),
    ("2026-03-29 02:15", BERLIN, "does not exist in Europe/Berlin"),
    ("2026-11-01 01:30", NEW_YORK, "2026-11-01T01:30 happened twice in America/New_York (clocks went back for DST); "
                                   "write 2026-11-01T01:30-04:00 (the first) or 2026-11-01T01:30-05:00 (the second)"),
    ("2026-10-25 02:30", BERLIN, "write 2026-10-25T02:30+02:00 (the first) or 2026-10-25T02:30+01:00 (the second)"),
    ("17:00", BERLIN, "'17:00' is later than now (16:00 here): write 'yesterday 17:00' for yesterday's, "
                      "or 'today 17:00'"),
    ("23:30-00:30", BERLIN, "ends before it starts; across midnight write e.g. 'yesterday 23:30/today 00:30'"),
    ("2026-03-01 14:30-05:00", BERLIN, "a UTC offset needs the T: 2026-03-01T14:30-05:00"),
    ("14", BERLIN, "'14' alone is ambiguous; write a time as 14:00, or a date as 2026-03-14"),
    ("03/04/2026", BERLIN, "day/month order is ambiguous; write the date as ISO 8601, YYYY-MM-DD"),
    ("next tuesday", BERLIN, "recordings are in the past"),
    ("tomorrow", NEW_YORK, "recordings are in the past"),
    ("2 ago", BERLIN, "write a number and a unit before 'ago'"),
    ("3 fortnights ago", BERLIN, "unknown unit 'fortnights'"),
    ("lunchtime", BERLIN, "can't read 'lunchtime' as a time; write e.g. '2026-03-14 14:30', '14:30'"),
    ("", BERLIN, "empty time"),
    ("2026-02-30", BERLIN, "is not a calendar date"),
    ("25:00", BERLIN, "is not a time of day"),
    ("13pm", BERLIN, "is not a 12-hour time"),
    ("last week 9:00", BERLIN, "a time needs one day, not a week"),
    ("15:00/14:00", BERLIN, "ends before it starts"),
    ("a/b/c", BERLIN, "an interval is START/END"),
    ("since 17:00", BERLIN, "later than now"),
])
def test_wrong_or_ambiguous_forms_answer_with_a_one_line_correction(text, tz, says):
    with pytest.raises(T.TimeError) as e:
        T.parse(text, now=NOW, tz=T.zone(tz)[0])
    msg = str(e.value)
    assert says in msg and "\n" not in msg and len(msg) < 300, msg


def test_instant_window_and_overlap():
    tz = T.zone(BERLIN)[0]
    assert T.instant("2h ago", now=NOW, tz=tz) == datetime(2026, 3, 11, 13, 0, tzinfo=timezone.utc)
    with pytest.raises(T.TimeError, match="is a span, not an instant: name one time, e.g. 'yesterday 14:30'"):
        T.instant("yesterday", now=NOW, tz=tz)
    lo, hi = T.window("yesterday", "yesterday", now=NOW, tz=tz)  # until a day: the whole day
    assert (T.iso(lo, tz), T.iso(hi, tz)) == ("2026-03-10T00:00:00+01:00", "2026-03-11T00:00:00+01:00")
    assert T.window(None, None, now=NOW, tz=tz) == (None, None)
    assert T.window("since 9:00", None, now=NOW, tz=tz)[0] == datetime(2026, 3, 11, 8, 0, tzinfo=timezone.utc)
    with pytest.raises(T.TimeError, match="is before since"):
        T.window("today 12:00", "yesterday", now=NOW, tz=tz)
    a, b = datetime(2026, 3, 9, 22, 50, tzinfo=timezone.utc), datetime(2026, 3, 9, 23, 10, tzinfo=timezone.utc)
    assert T.overlaps(a, b, lo, hi) and T.overlaps(a, b, None, None)  # a recording running into the window
    assert not T.overlaps(a, b, None, a.replace(minute=40)) and not T.overlaps(a, b, b.replace(minute=11), None)


def test_zones_by_name_offset_and_the_server_default(monkeypatch):
    assert T.zone("utc")[1] == "UTC" and T.zone("+05:30")[1] == "+05:30" and T.zone("-0800")[1] == "-08:00"
    assert T.zone(" Europe/Berlin ")[1] == BERLIN
    for bad in ("Mars/Olympus", "../etc/passwd", "+19:00", "", 5):
        with pytest.raises(T.TimeError, match="time zone|out of range|tz must be"):
            T.zone(bad)
    monkeypatch.setenv("TZ", NEW_YORK)
    assert T.zone(None)[1] == NEW_YORK == T.local_zone()[1]
    monkeypatch.setenv("TZ", "Not/AZone")  # an unusable $TZ: the machine's zone, still named
    assert T.local_zone()[1]

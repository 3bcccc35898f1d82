"""Time questions: the one grammar every surface reads wall-clock times with (MCP ``since``/``until``/``at``,
``talkthrough recordings --since``, ``talkthrough at``). Pure and deterministic: a text, a clock (``now``)
and a time zone give a :class:`Span` in UTC, or :class:`TimeError` whose one line says how to write it.

Forms (case and extra blanks ignored; ``tz`` places every form without its own offset):

| form | means |
|---|---|
| ``2026-03-14T14:32[:05[.250]][Z\\|+01:00]``, ``2026-03-14 14:32`` | that instant |
| ``2026-03-14`` | that whole day |
| ``A/B`` (ISO interval; B may be a bare time: ``2026-03-14T14:00/15:00``) | from A's start to B's end |
| ``now``, ``14:30``, ``9:00``, ``2:30pm`` | now; today at that time (an error when later than now) |
| ``14:30-15:00`` | today from 14:30 to 15:00 |
| ``today``, ``yesterday``, ``monday`` .. ``sunday`` (``mon`` ..), ``last monday`` | that whole day: a weekday is the latest one not after today (``last``: before today) |
| ``this week``, ``last week`` | Monday 00:00 to the next Monday 00:00 |
| ``<day> 14:30``, ``<day> 14:30-15:00`` (a day: any day form above) | that time / span of that day |
| ``2h ago``, ``90 min ago``, ``3 days ago`` | now minus that much elapsed time (s, m/min, h, d, w) |
| ``since X`` | from X's start until now |

Days and weeks start at local midnight in ``tz`` (a DST day is 23 or 25 hours long); ``ago`` subtracts elapsed
time. A local time that does not exist (the spring-forward gap) or happens twice (the fall-back hour) is an
error naming both ways to write it with an offset.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import date, datetime, time, timedelta, timezone, tzinfo
from pathlib import Path
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from talkthrough_assets.core import config
from talkthrough_assets.core.errors import TalkthroughError

FORMS = "'2026-03-14 14:30', '14:30', 'yesterday 14:30', '14:30-15:00', '2h ago', 'since 9:00', 'last week'"
WEEKDAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
_UNITS = {"s": 1, "sec": 1, "secs": 1, "second": 1, "seconds": 1, "m": 60, "min": 60, "mins": 60, "minute": 60,
          "minutes": 60, "h": 3600, "hr": 3600, "hrs": 3600, "hour": 3600, "hours": 3600, "d": 86400, "day": 86400,
          "days": 86400, "w": 604800, "week": 604800, "weeks": 604800}
_TIME = r"(?P<h>\d{1,2})(?::(?P<m>\d{2})(?::(?P<s>\d{2})(?:\.(?P<f>\d{1,6}))?)?)?\s*(?P<ampm>am|pm)?"
_TIME_RE = re.compile(rf"^{_TIME}$")
_OFFSET = r"(?P<z>z|[+-]\d{2}(?::?\d{2})?)"
_DATE_RE = re.compile(r"^(?P<y>\d{4})-(?P<mo>\d{2})-(?P<d>\d{2})$")
_ISO_RE = re.compile(rf"^(?P<date>\d{{4}}-\d{{2}}-\d{{2}})[t ](?P<time>\d{{1,2}}:\d{{2}}(?::\d{{2}}(?:\.\d+)?)?)"
                     rf"\s*{_OFFSET}?$")
_AGO_RE = re.compile(r"^(?P<n>\d+(?:\.\d+)?)\s*(?P<u>[a-z]+)\s+ago$")


class TimeError(TalkthroughError, ValueError):
    """A time text that cannot be read unambiguously; the message is one line saying how to write it."""


@dataclass(frozen=True)
class Span:
    """``start``..``end`` in UTC (equal for an instant)."""
    start: datetime
    end: datetime

    @property
    def instant(self) -> bool:
        return self.start == self.end


# --------------------------------------------------------------------------- zones

def zone(name: str | None = None) -> tuple[tzinfo, str]:
    """(tzinfo, its name as answers state it) for an IANA name, ``UTC``/``Z`` or a fixed offset ``+02:00``;
    None: the server's (``$TZ``, else the machine's ``/etc/localtime``, else its current UTC offset)."""
    if name is None:
        return local_zone()
    if not isinstance(name, str) or not name.strip():
        raise TimeError("tz must be a time zone name like Europe/Paris, UTC or +02:00")
    text = name.strip()
    if text.upper() in ("UTC", "Z", "GMT"):
        return timezone.utc, "UTC"
    m = re.fullmatch(r"(?:utc)?([+-])(\d{1,2})(?::?(\d{2}))?", text, re.IGNORECASE)
    if m:
        mins = int(m.group(2)) * 60 + int(m.group(3) or 0)
        if mins > 18 * 60:
            raise TimeError(f"tz offset {text!r} is out of range: use -18:00..+18:00")
        off = timedelta(minutes=mins if m.group(1) == "+" else -mins)
        return timezone(off), _offset_name(off)
    try:
        if ".." in text or text.startswith("/"):
            raise ValueError
        return ZoneInfo(text), text
    except (ZoneInfoNotFoundError, ValueError, OSError):
        raise TimeError(f"unknown time zone {text[:60]!r}: use an IANA name like Europe/Paris, or UTC, "
                        "or an offset like +02:00") from None


def _offset_name(off: timedelta) -> str:
    mins = int(off.total_seconds() // 60)
    return "UTC" if mins == 0 else f"{'+' if mins > 0 else '-'}{abs(mins) // 60:02d}:{abs(mins) % 60:02d}"


def local_zone() -> tuple[tzinfo, str]:
    """The server's zone: ``$TZ`` when it names one, else the IANA zone ``/etc/localtime`` links to, else
    the machine's current UTC offset (fixed: it does not follow DST)."""
    env = config.get("TZ")
    if env:
        try:
            return zone(env.lstrip(":"))
        except TimeError:
            pass
    try:
        link = str(Path("/etc/localtime").resolve())
        if "zoneinfo/" in link:
            name = link.split("zoneinfo/", 1)[1]
            return ZoneInfo(name), name
    except (OSError, ZoneInfoNotFoundError, ValueError):
        pass
    off = datetime.now().astimezone().utcoffset() or timedelta(0)
    return timezone(off), _offset_name(off)


# --------------------------------------------------------------------------- rendering

def iso(dt: datetime, tz: tzinfo) -> str:
    """``dt`` in ``tz`` as ISO 8601 (seconds; milliseconds when it has them)."""
    local = dt.astimezone(tz)
    return local.isoformat(timespec="milliseconds" if local.microsecond else "seconds")


def shown(stamp: str | None, tz: tzinfo, *, seconds: bool = True) -> str | None:
    """A stored ISO instant as a person reads it, in ``tz`` with its abbreviation: ``2026-03-14 18:26:53 JST``
    (what `talkthrough at` reads back in the same zone). None for no or an unreadable stamp."""
    try:
        dt = datetime.fromisoformat(stamp) if stamp else None
    except ValueError:
        return None
    if dt is None:
        return None
    local = (dt if dt.tzinfo else dt.replace(tzinfo=timezone.utc)).astimezone(tz)
    return local.strftime("%Y-%m-%d %H:%M" + (":%S" if seconds else "")) + f" {abbreviation(local)}"


def abbreviation(local: datetime) -> str:
    """The zone of an aware datetime as a label: JST, CET, UTC; +09:00 where the zone has no letters."""
    name = local.tzname() or ""
    return name if name[:1].isalpha() else _offset_name(local.utcoffset() or timedelta(0))


# --------------------------------------------------------------------------- parsing

def _localize(d: date, t: time, tz: tzinfo, text: str) -> datetime:
    """``d t`` in ``tz`` as UTC; a time in the DST gap or fold is an error naming both offsets."""
    naive = datetime.combine(d, t)
    a, b = naive.replace(tzinfo=tz, fold=0), naive.replace(tzinfo=tz, fold=1)
    if a.utcoffset() == b.utcoffset():
        return a.astimezone(timezone.utc)
    shown = naive.isoformat(timespec="seconds" if t.second else "minutes")
    back = a.astimezone(timezone.utc).astimezone(tz).replace(tzinfo=None)
    name = getattr(tz, "key", str(tz))
    if back != naive:  # the spring-forward gap: this wall time never happened
        raise TimeError(f"{text!r}: {shown} does not exist in {name} (clocks skipped it for DST); write it with "
                        f"an offset, e.g. {shown}{_offset_name(a.utcoffset())} or {shown}{_offset_name(b.utcoffset())}")
    raise TimeError(f"{text!r}: {shown} happened twice in {name} (clocks went back for DST); write "
                    f"{shown}{_offset_name(a.utcoffset())} (the first) or {shown}{_offset_name(b.utcoffset())} "
                    "(the second)")


def _day_start(d: date, tz: tzinfo) -> datetime:
    """Local midnight of ``d`` (the first instant of the day when midnight is in a DST gap)."""
    return datetime.combine(d, time()).replace(tzinfo=tz, fold=0).astimezone(timezone.utc)


def _days(d0: date, n: int, tz: tzinfo) -> Span:
    return Span(_day_start(d0, tz), _day_start(d0 + timedelta(days=n), tz))


def _time_of_day(text: str, whole: str) -> time | None:
    m = _TIME_RE.match(text)
    if not m:
        return None
    if m.group("m") is None and not m.group("ampm"):  # a bare number: 14 is not a time
        raise TimeError(f"{whole!r}: {text!r} alone is ambiguous; write a time as {int(m.group('h')):02d}:00, "
                        f"or a date as 2026-03-{int(m.group('h')):02d}")
    h, mi, s = int(m.group("h")), int(m.group("m") or 0), int(m.group("s") or 0)
    us = int((m.group("f") or "0").ljust(6, "0"))
    if m.group("ampm"):
        if not 1 <= h <= 12:
            raise TimeError(f"{whole!r}: {text!r} is not a 12-hour time; write 1-12 before am/pm, or 24-hour 14:30")
        h = h % 12 + (12 if m.group("ampm") == "pm" else 0)
    if h > 23 or mi > 59 or s > 59:
        raise TimeError(f"{whole!r}: {text!r} is not a time of day (00:00-23:59:59)")
    return time(h, mi, s, us)


def _date(text: str, whole: str) -> date | None:
    m = _DATE_RE.match(text)
    if not m:
        return None
    try:
        return date(int(m.group("y")), int(m.group("mo")), int(m.group("d")))
    except ValueError:
        raise TimeError(f"{whole!r}: {text!r} is not a calendar date (YYYY-MM-DD)") from None


def _day(text: str, today: date, whole: str) -> tuple[date, int] | None:
    """(first day, number of days) of a day form, or None when ``text`` is not one."""
    if text == "today":
        return today, 1
    if text == "yesterday":
        return today - timedelta(days=1), 1
    if text in ("this week", "last week"):
        monday = today - timedelta(days=today.weekday())
        return (monday if text == "this week" else monday - timedelta(days=7)), 7
    last = text.startswith("last ")
    word = text[5:] if last else text
    for i, name in enumerate(WEEKDAYS):
        if word in (name, name[:3]):
            back = (today.weekday() - i) % 7
            if last and back == 0:
                back = 7
            return today - timedelta(days=back), 1
    d = _date(text, whole)
    return (d, 1) if d else None


def _offset(text: str) -> timezone:
    if text in ("z", "Z"):
        return timezone.utc
    sign = 1 if text[0] == "+" else -1
    digits = text[1:].replace(":", "")
    h, mi = int(digits[:2]), int(digits[2:4] or 0)
    if h > 18 or mi > 59:
        raise TimeError(f"offset {text!r} is out of range: use -18:00..+18:00")
    return timezone(sign * timedelta(hours=h, minutes=mi))


def _instant_iso(text: str, tz: tzinfo, whole: str) -> datetime | None:
    m = _ISO_RE.match(text)
    if not m:
        return None
    z = m.group("z") or ""
    if z.startswith("-") and ":" in z and text[10] == " " and m.group("time").count(":") == 1:
        return None  # '2026-03-14 14:30-15:00' is a span of that day (an offset needs the T: 2026-03-14T14:30-05:00)
    d = _date(m.group("date"), whole)
    t = _time_of_day(m.group("time"), whole)
    if m.group("z"):
        return datetime.combine(d, t).replace(tzinfo=_offset(m.group("z"))).astimezone(timezone.utc)
    return _localize(d, t, tz, whole)


def _one(text: str, now: datetime, tz: tzinfo, whole: str, future_ok: bool = False) -> Span:
    """One side of a range, or a whole non-range form."""
    today = now.astimezone(tz).date()
    if text == "now":
        return Span(now, now)
    m = _AGO_RE.match(text)
    if m:
        unit = _UNITS.get(m.group("u"))
        if unit is None:
            raise TimeError(f"{whole!r}: unknown unit {m.group('u')!r}; write e.g. '2h ago', '30 min ago', '3 days ago'")
        t = now - timedelta(seconds=float(m.group("n")) * unit)
        return Span(t, t)
    if text.endswith(" ago"):
        raise TimeError(f"{whole!r}: write a number and a unit before 'ago', e.g. '2h ago', '30 min ago'")
    t = _instant_iso(text, tz, whole)
    if t is not None:
        return Span(t, t)
    day = _day(text, today, whole)
    if day is not None:
        return _days(day[0], day[1], tz)
    # <day> <time> or <day> <time>-<time>
    head, _, tail = text.rpartition(" ")
    if head:
        day = _day(head, today, whole)
        if day is not None:
            if day[1] != 1:
                raise TimeError(f"{whole!r}: a time needs one day, not a week; write e.g. 'monday {tail}'")
            return _clock(tail, day[0], tz, whole, now, future_ok=True)
    if re.match(r"^\d", text):
        return _clock(text, today, tz, whole, now, future_ok=future_ok)
    return _unknown(text, whole)


def _clock(text: str, d: date, tz: tzinfo, whole: str, now: datetime, future_ok: bool) -> Span:
    """``14:30`` or ``14:30-15:00`` on day ``d``."""
    parts = text.split("-")
    if len(parts) == 2 and parts[0] and parts[1]:
        a, b = _time_of_day(parts[0].strip(), whole), _time_of_day(parts[1].strip(), whole)
        if a is None or b is None:
            return _unknown(text, whole)
        if b < a:
            a_txt, b_txt = parts[0].strip(), parts[1].strip()
            hint = (f" (a UTC offset needs the T: {d.isoformat()}T{a_txt}-{b_txt})"
                    if re.search(r"\d{4}-\d{2}-\d{2}", whole) else "")
            raise TimeError(f"{whole!r} ends before it starts; across midnight write e.g. "
                            f"'yesterday {a_txt}/today {b_txt}'{hint}")
        span = Span(_localize(d, a, tz, whole), _localize(d, b, tz, whole))
    else:
        t = _time_of_day(text, whole)
        if t is None:
            return _unknown(text, whole)
        at = _localize(d, t, tz, whole)
        span = Span(at, at)
    if not future_ok and span.start > now:
        shown = now.astimezone(tz).strftime("%H:%M")
        raise TimeError(f"{whole!r} is later than now ({shown} here): write 'yesterday {text}' for yesterday's, "
                        f"or 'today {text}'")
    return span


def _unknown(text: str, whole: str) -> Span:
    if re.match(r"^\d{1,2}[/.]\d{1,2}[/.]\d{2,4}", text):
        raise TimeError(f"{whole!r}: day/month order is ambiguous; write the date as ISO 8601, YYYY-MM-DD "
                        "(e.g. 2026-03-14)")
    if text.startswith("next ") or text in ("tomorrow",):
        raise TimeError(f"{whole!r}: recordings are in the past; write e.g. {FORMS}")
    raise TimeError(f"can't read {whole!r} as a time; write e.g. {FORMS}")


def parse(text: str, *, now: datetime | None = None, tz: tzinfo | None = None) -> Span:
    """The span ``text`` names, relative to ``now`` (default: the current time) in ``tz`` (default: the server's)."""
    if not isinstance(text, str):
        raise TimeError(f"a time must be a string like {FORMS}")
    now = (now or datetime.now(timezone.utc)).astimezone(timezone.utc)
    tz = tz or local_zone()[0]
    whole = text.strip()[:80]
    s = re.sub(r"\s+(am|pm)\b", r"\1", " ".join(text.strip().lower().split()))
    if not s:
        raise TimeError(f"empty time; write e.g. {FORMS}")
    if len(s) > 80:
        raise TimeError("a time is at most 80 characters")
    if s.startswith("since "):
        span = parse(s[6:], now=now, tz=tz)
        if span.start > now:
            raise TimeError(f"{whole!r} starts after now")
        return Span(span.start, now)
    if "/" in s and not re.match(r"^\d{1,2}/\d{1,2}/", s):
        a_txt, _, b_txt = (p.strip() for p in s.partition("/"))
        if not a_txt or not b_txt or "/" in b_txt:
            raise TimeError(f"{whole!r}: an interval is START/END, e.g. 2026-03-14T14:00/2026-03-14T15:00")
        a = _one(a_txt, now, tz, whole, future_ok=True)
        m = _ISO_RE.match(a_txt)
        if m and re.fullmatch(r"\d{1,2}:\d{2}(:\d{2})?", b_txt):  # ISO: the end's date omitted
            b_txt = f"{m.group('date')}t{b_txt}{m.group('z') or ''}"
        b = _one(b_txt, now, tz, whole, future_ok=True)
        if b.end < a.start:
            raise TimeError(f"{whole!r} ends before it starts: write START/END with START first")
        return Span(a.start, b.end)
    return _one(s, now, tz, whole)


def instant(text: str, *, now: datetime | None = None, tz: tzinfo | None = None) -> datetime:
    """The instant ``text`` names; a span (a day, a range) is an error saying how to name one instant."""
    span = parse(text, now=now, tz=tz)
    if not span.instant:
        raise TimeError(f"{text.strip()[:80]!r} is a span, not an instant: name one time, e.g. 'yesterday 14:30', "
                        "'2026-03-14 14:32', '2h ago'")
    return span.start


def window(since: str | None, until: str | None, *, now: datetime | None = None,
           tz: tzinfo | None = None) -> tuple[datetime | None, datetime | None]:
    """(start, end) in UTC from ``since`` (its start) and ``until`` (its end: ``until=yesterday`` keeps all of
    yesterday); either may be None (open)."""
    now = (now or datetime.now(timezone.utc)).astimezone(timezone.utc)
    lo = parse(since, now=now, tz=tz).start if since is not None else None
    hi = parse(until, now=now, tz=tz).end if until is not None else None
    if lo is not None and hi is not None and hi < lo:
        raise TimeError(f"until ({until!r}) is before since ({since!r})")
    return lo, hi


def overlaps(start: datetime, end: datetime, lo: datetime | None, hi: datetime | None) -> bool:
    """Whether [start, end] meets the window [lo, hi] (open sides: None)."""
    return (hi is None or start <= hi) and (lo is None or end >= lo)

"""wall_clock: anchor a recording's t=0 to a real instant, and render t_wall for any offset.

Ladder (first usable rung wins):

| rung | source                              | confidence | tz offset                                 |
|------|-------------------------------------|------------|-------------------------------------------|
| 1    | explicit ``recorded_at``            | exact      | from the ISO string (naive -> machine-local) |
| 2    | ``com.apple.quicktime.creationdate`` | high       | carried by the tag                        |
| 3    | container ``creation_time``         | medium     | unknown (UTC instant only)                |
| 4    | a date tag: ``date`` (MP4 ©day, RIFF ICRD, ID3 TDRC), ``date_recorded``, ``creation_date``, ``date_created`` (any case) | medium | from the value when it carries one |
| 5    | file mtime - duration               | low        | machine-local                             |
| 6    | nothing                             | (null)     |                                           |

Tag values with a year before 1972 are encoder garbage (1904/1970 epochs) and are skipped. A date tag
without a time of day (``2010``, ``2014-05-07``) is not an instant and is skipped too.
Rung 5 subtracts the duration because recorders finalize the file when recording stops.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone

from talkthrough_assets.core.errors import UsageError
from talkthrough_assets import store
from talkthrough_assets.core.errors import StageError
from talkthrough_assets.model.media import WallClockRow
from talkthrough_assets.stages.runner import StageResult, digest, probe_row

CODE_VERSION = "2"

QT_TAG = "com.apple.quicktime.creationdate"
CT_TAG = "creation_time"
DATE_TAGS = ("date", "date_recorded", "creation_date", "date_created")  # rung 4, in this order
MIN_YEAR = 1972
_HAS_TIME = re.compile(r"^\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}")


def _local_offset_min(at: datetime) -> int:
    off = at.astimezone().utcoffset() or timedelta(0)
    return int(off.total_seconds() // 60)


def parse_iso(value: str) -> datetime | None:
    """Parse ISO-8601 variants seen in tags ('Z', '+0100', fractional seconds, space separator)."""
    if not isinstance(value, str):
        return None
    s = value.strip()
    if not s:
        return None
    s = s.replace(" ", "T", 1) if re.match(r"^\d{4}-\d{2}-\d{2} \d", s) else s
    s = re.sub(r"[zZ]$", "+00:00", s)
    s = re.sub(r"([+-]\d{2})(\d{2})$", r"\1:\2", s)  # +0100 -> +01:00
    s = re.sub(r"(\.\d{6})\d+", r"\1", s)  # python accepts up to microseconds
    try:
        return datetime.fromisoformat(s)
    except ValueError:
        return None


def _usable(dt: datetime | None) -> bool:
    return dt is not None and dt.year >= MIN_YEAR


def _result(dt_utc: datetime, tz_offset_min, source: str, confidence: str) -> WallClockRow:
    return WallClockRow(available=True, start_utc=dt_utc.astimezone(timezone.utc).isoformat(timespec="milliseconds"),
                        tz_offset_min=tz_offset_min, source=source, confidence=confidence)


NULL_WALL_CLOCK = WallClockRow(available=False)


def resolve(*, tags: dict | str | None, duration_ms: int | None, file_mtime: float | None,
            recorded_at: str | None = None) -> WallClockRow:
    """The wall-clock anchor (``available=False`` when no rung applies)."""
    if isinstance(tags, str):
        tags = json.loads(tags or "{}")
    tags = tags or {}
    if recorded_at:
        dt = parse_iso(recorded_at)
        if dt is None:
            raise UsageError(f"recorded_at {recorded_at!r} is not an ISO-8601 timestamp (e.g. 2026-03-14T10:26:53+01:00)")
        if dt.tzinfo is None:
            dt = dt.astimezone()  # naive -> machine-local
        off = int(dt.utcoffset().total_seconds() // 60)
        return _result(dt, off, "recorded_at", "exact")
    qt = tags.get(QT_TAG) or tags.get(f"stream:video:{QT_TAG}")
    dt = parse_iso(qt) if qt else None
    if _usable(dt):
        off = int(dt.utcoffset().total_seconds() // 60) if dt.tzinfo else None
        if dt.tzinfo is None:
            dt = dt.replace(tzinfo=timezone.utc)
        return _result(dt, off, QT_TAG, "high")
    for key in (CT_TAG, f"stream:video:{CT_TAG}", f"stream:audio:{CT_TAG}"):
        dt = parse_iso(tags.get(key)) if tags.get(key) else None
        if _usable(dt):
            if dt.tzinfo is None:
                dt = dt.replace(tzinfo=timezone.utc)
            return _result(dt, None, CT_TAG if key == CT_TAG else key, "medium")
    lower = {str(k).lower(): v for k, v in tags.items()}
    for key in DATE_TAGS:
        for k in (key, f"stream:video:{key}", f"stream:audio:{key}"):
            dt = _date_tag(lower.get(k))
            if _usable(dt):
                off = int(dt.utcoffset().total_seconds() // 60) if dt.tzinfo else None
                if dt.tzinfo is None:
                    dt = dt.replace(tzinfo=timezone.utc)
                return _result(dt, off, k, "medium")
    if file_mtime:
        end = datetime.fromtimestamp(file_mtime, tz=timezone.utc)
        start = end - timedelta(milliseconds=duration_ms or 0)
        if start.year >= MIN_YEAR:
            return _result(start, _local_offset_min(start), "file_mtime_minus_duration", "low")
    return NULL_WALL_CLOCK


def _date_tag(value) -> datetime | None:
    """A date tag's value as a datetime, only when it names a time of day (not '2010' / a bare date)."""
    if not isinstance(value, str):
        return None
    v = re.sub(r"^(\d{4}):(\d{2}):(\d{2}) ", r"\1-\2-\3 ", value.strip())  # EXIF style 2014:05:07 12:43:25
    return parse_iso(v) if _HAS_TIME.match(v) else None


@dataclass(frozen=True)
class Options:
    """What the wall_clock stage runs with (built by ``pipeline.options`` from its settings)."""

    recorded_at: str | None  # ISO-8601 start time given for the recording


def run(rid: str, opts: Options) -> StageResult:
    p = probe_row(rid)
    try:
        wc = resolve(tags=p.tag_map, duration_ms=p.duration_ms, file_mtime=p.file_mtime, recorded_at=opts.recorded_at)
    except ValueError as e:
        raise StageError(str(e)) from None
    store.write_table("wall_clock", rid, [wc])
    return StageResult({"start_utc": wc.start_utc or "null", "source": wc.source or "none",
                        "confidence": wc.confidence or "none"}, digest(wc))

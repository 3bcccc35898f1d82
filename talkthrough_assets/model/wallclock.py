"""A recording's wall clock as readers see it (the manifest, the CLI summary, the MCP tools, exports): the anchor
the wall_clock stage resolved, and any offset into the recording rendered as a wall-clock time."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

from talkthrough_assets.model.manifest import WallClock
from talkthrough_assets.model.media import WallClockRow


def view(row: WallClockRow | None) -> WallClock | None:
    """The wall clock as readers get it (the manifest, the CLI summary, the MCP tools) from the wall_clock stage's
    row: None when that stage found no anchor (or one without a start time)."""
    if row is None or not row.available or not row.start_utc:
        return None
    return WallClock(start_utc=row.start_utc, tz_offset_min=row.tz_offset_min, source=row.source,
                     confidence=row.confidence)


def t_wall(wall_clock, t_ms: int | float) -> str | None:
    """Render start + t_ms in the recording-local offset when known, else UTC (ISO-8601, ms). ``wall_clock``:
    the manifest's typed ``WallClock``, or its JSON (``{start_utc, tz_offset_min, ...}``), or None."""
    if isinstance(wall_clock, dict):
        at, off = wall_clock.get("start_utc"), wall_clock.get("tz_offset_min")
    else:
        at, off = getattr(wall_clock, "start_utc", None), getattr(wall_clock, "tz_offset_min", None)
    if not at:
        return None
    start = datetime.fromisoformat(at)
    tz = timezone(timedelta(minutes=off)) if off is not None else timezone.utc
    return (start + timedelta(milliseconds=float(t_ms))).astimezone(tz).isoformat(timespec="milliseconds")

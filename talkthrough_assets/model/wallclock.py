"""A recording's wall clock as readers see it (the manifest, the CLI summary, the MCP tools, exports): the anchor
the wall_clock stage resolved, and any offset into the recording rendered as a wall-clock time."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

WALL_CLOCK_KEYS = ("start_utc", "tz_offset_min", "source", "confidence")


def view(wall_clock: dict | None) -> dict | None:
    """The wall clock as readers get it (the manifest, the CLI summary, the MCP tools): ``{start_utc,
    tz_offset_min, source, confidence}``, or None when the recording has no anchor."""
    if not isinstance(wall_clock, dict) or not wall_clock.get("start_utc"):
        return None
    return {k: wall_clock.get(k) for k in WALL_CLOCK_KEYS}


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

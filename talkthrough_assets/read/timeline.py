"""Timeline: the library's recordings by anchored wall-clock span, for questions asked in wall time.

Built with each published view of :class:`~talkthrough_assets.read.index.LibraryIndex` from its listing rows: numpy
arrays of the anchored start and end (epoch ms, UTC) sorted by start, and the longest duration. Which
recordings cover an instant is one binary search (starts <= t) narrowed to the starts within the longest
duration before t, then a vectorized end check: O(log n + k), about 0.1 ms at 10 000 recordings
(``bench/bench_bytime.py``). Recordings without a wall clock are counted, never placed.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta, timezone

import numpy as np

LOW = "low"  # the wall_clock confidence that answers mark (file mtime - duration)


@dataclass(frozen=True, slots=True)
class Placed:
    """An anchored recording as the timeline places it (its listing row's wall-clock columns)."""

    recording: str
    recorded_at: str
    duration_ms: int | None
    tz_offset_min: int | None
    wall_clock_source: str | None
    wall_clock_confidence: str | None
    filename: str
    kind: str | None

    @property
    def low(self) -> bool:
        """Placed by a low-confidence anchor (file mtime - duration): answers mark it."""
        return self.wall_clock_confidence == LOW


def epoch_ms(dt: datetime) -> int:
    return int(round(dt.timestamp() * 1000))


def from_ms(ms: int) -> datetime:
    return datetime(1970, 1, 1, tzinfo=timezone.utc) + timedelta(milliseconds=int(ms))


class Timeline:
    """Anchored recordings of one index view. ``rows``: the listing columns (``recording``, ``recorded_at`` =
    the anchor's start_utc, ``duration_ms``, ``tz_offset_min``, ``wall_clock_source``,
    ``wall_clock_confidence``, ``filename``, ``kind``), one list per column."""

    def __init__(self, rows: dict[str, list] | None = None):
        rows = rows or {}
        rids = rows.get("recording") or []
        keep, starts, ends = [], [], []
        self.unanchored = 0
        for i, at in enumerate(rows.get("recorded_at") or []):
            try:
                s = epoch_ms(datetime.fromisoformat(at)) if at else None
            except (TypeError, ValueError):
                s = None
            if s is None:
                self.unanchored += 1
                continue
            keep.append(i)
            starts.append(s)
            ends.append(s + max(int(rows["duration_ms"][i] or 0), 0))
        order = np.argsort(np.array(starts, dtype=np.int64), kind="stable")
        self.start = np.array(starts, dtype=np.int64)[order]
        self.end = np.array(ends, dtype=np.int64)[order]
        self.longest = int((self.end - self.start).max()) if len(order) else 0
        cols = {c: rows.get(c) or [None] * len(rids) for c in Placed.__slots__}
        self.recs = [Placed(**{c: v[keep[j]] for c, v in cols.items()}) for j in order]
        self.index = {r.recording: j for j, r in enumerate(self.recs)}

    def __len__(self) -> int:
        return len(self.recs)

    def covering(self, t: int) -> list[int]:
        """Positions of the recordings whose [start, end] holds ``t`` (epoch ms), by start."""
        hi = int(np.searchsorted(self.start, t, side="right"))
        lo = int(np.searchsorted(self.start, t - self.longest, side="left"))
        return [lo + int(k) for k in np.flatnonzero(self.end[lo:hi] >= t)]

    def overlapping(self, lo: int | None, hi: int | None) -> list[int]:
        """Positions of the recordings meeting [lo, hi] (epoch ms; None: open), by start."""
        b = len(self.start) if hi is None else int(np.searchsorted(self.start, hi, side="right"))
        if lo is None:
            return list(range(b))
        a = int(np.searchsorted(self.start, lo - self.longest, side="left"))
        return [a + int(k) for k in np.flatnonzero(self.end[a:b] >= lo)]

    def nearest(self, t: int) -> tuple[int | None, int | None]:
        """(the recording that ended last before ``t``, the first that starts after it), as positions."""
        after = int(np.searchsorted(self.start, t, side="right"))
        nxt = after if after < len(self.start) else None
        ended = np.flatnonzero(self.end[:after] < t)
        prev = int(ended[np.argmax(self.end[ended])]) if len(ended) else None
        return prev, nxt

    def offset_window(self, lo: int | None, hi: int | None) -> dict[str, tuple[int, int]]:
        """Recording id -> the (start, end) ms within it that [lo, hi] covers, for every recording it meets."""
        out = {}
        for j in self.overlapping(lo, hi):
            s, e = int(self.start[j]), int(self.end[j])
            out[self.recs[j].recording] = (max(0, (lo if lo is not None else s) - s),
                                              min(e, hi if hi is not None else e) - s)
        return out

"""Questions asked in wall time: the ``since``/``until``/``tz`` arguments of list_recordings and
search, and ``get_moment_at`` (the moment at a wall-clock instant in every recording covering it).

Times are read by the one grammar, :mod:`talkthrough_assets.read.timeq`; recordings are placed by the anchored
start/end index of the library view (:class:`~talkthrough_assets.read.timeline.Timeline`). Every answer states the
zone the question was read in. An anchor of low confidence (file mtime) is used, and marked.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta, timezone, tzinfo
from typing import Callable

from talkthrough_assets.read import timeq

from talkthrough_assets.read.errors import InvalidArgument, ReadError
from talkthrough_assets.read.images import Image, ImageResult
from talkthrough_assets.read.timeline import LOW, Timeline, epoch_ms, from_ms

AT_MAX_RECORDINGS = 3          # moments per get_moment_at answer (overlapping recordings, ranked: see _ranked)
AT_TRANSCRIPT_CHARS = 24_000   # shared by its moments' transcript slices
LOW_NOTE = ("low_confidence: that recording's wall clock comes from its file's modification time, so its times may "
            "be off by minutes or more")


def _bad(e: timeq.TimeError, zone_name: str | None = None) -> InvalidArgument:
    return InvalidArgument(str(e), hint=f"times are read in {zone_name} unless tz names a zone" if zone_name else
                           "tz is an IANA zone like Europe/Paris or UTC, or an offset like +02:00; omit it for "
                           "this machine's zone")


def zone_arg(tz) -> tuple[tzinfo, str]:
    if tz is not None and not isinstance(tz, str):
        raise InvalidArgument(f"tz must be a string (an IANA zone like Europe/Paris, UTC or +02:00), "
                              f"got {type(tz).__name__}", hint="pass tz as a string, or omit it")
    try:
        return timeq.zone(tz)
    except timeq.TimeError as e:
        raise _bad(e) from None


@dataclass
class Window:
    lo: datetime | None
    hi: datetime | None
    tz: tzinfo
    tz_name: str

    def ms(self) -> tuple[int | None, int | None]:
        return (epoch_ms(self.lo) if self.lo else None), (epoch_ms(self.hi) if self.hi else None)

    def stated(self) -> dict:
        """What answers say about the question's time: the zone and the window read in it."""
        return {"tz": self.tz_name, "since": timeq.iso(self.lo, self.tz) if self.lo else None,
                "until": timeq.iso(self.hi, self.tz) if self.hi else None}


def window_arg(since, until, tz, now: datetime | None = None) -> Window | None:
    """The window ``since``/``until`` name in ``tz`` (None when neither is given)."""
    for name, v in (("since", since), ("until", until)):
        if v is not None and not isinstance(v, str):
            raise InvalidArgument(f"{name} must be a string like 'yesterday', '14:30' or '2026-03-14 14:30', "
                                  f"got {type(v).__name__}", hint=f"pass {name} as a string, or omit it")
    zone, name = zone_arg(tz)
    if since is None and until is None:
        return None
    try:
        lo, hi = timeq.window(since, until, now=now, tz=zone)
    except timeq.TimeError as e:
        raise _bad(e, name) from None
    return Window(lo, hi, zone, name)


def filter_rows(rows: list[dict], win: Window) -> list[dict]:
    """Rows with ``recorded_at`` (ISO, any offset) and ``duration_ms`` whose span meets the window (``talkthrough
    recordings --since``); rows without a wall clock are left out."""
    out = []
    for r in rows:
        if not r.get("recorded_at"):
            continue
        start = datetime.fromisoformat(str(r["recorded_at"]))
        if timeq.overlaps(start, start + timedelta(milliseconds=int(r.get("duration_ms") or 0)), win.lo, win.hi):
            out.append(r)
    return out


def low(rec: dict) -> bool:
    return rec.get("wall_clock_confidence") == LOW


def listed_ids(timeline: Timeline, win: Window) -> list[str]:
    """Recordings whose anchored span meets the window."""
    return [timeline.recs[j]["recording"] for j in timeline.overlapping(*win.ms())]


def mark_listing(out: dict, win: Window, timeline: Timeline) -> dict:
    """A time-filtered listing's answer: the window stated, low-confidence anchors marked, the unplaced counted."""
    out["time"] = win.stated()
    for item in out["recordings"]:
        if (item.get("wall_clock") or {}).get("confidence") == LOW:
            item["low_confidence"] = True
    if any(i.get("low_confidence") for i in out["recordings"]):
        out["low_confidence_note"] = LOW_NOTE
    if timeline.unanchored:
        out["unanchored"] = timeline.unanchored
        out["unanchored_note"] = (f"{timeline.unanchored} recording(s) have no wall clock and cannot be placed in "
                                  "time: list_recordings without since/until shows them")
    return out


def mark_search(out: dict, win: Window, timeline: Timeline) -> dict:
    out["time"] = win.stated()
    for rid, rec in out["recordings"].items():
        j = timeline.index.get(rid)
        if j is not None and low(timeline.recs[j]):
            rec["low_confidence"] = True
    if any(r.get("low_confidence") for r in out["recordings"].values()):
        out["low_confidence_note"] = LOW_NOTE
    return out


def _brief(rec: dict, start: int, end: int, tz: tzinfo) -> dict:
    return {"recording": rec["recording"], "filename": rec["filename"],
            "start": timeq.iso(from_ms(start), tz), "end": timeq.iso(from_ms(end), tz)}


def _ranked(timeline: Timeline, found: list[int]) -> list[int]:
    """What an agent asking about an instant needs first: a recording with a screen (the only frame of the moment
    must not be the one left to `more`), then one whose wall clock is trusted, then the earliest started."""
    return sorted(found, key=lambda j: (timeline.recs[j].get("kind") != "video", bool(low(timeline.recs[j])),
                                        int(timeline.start[j])))


def moment_at(timeline: Timeline, get_moment: Callable[..., ImageResult], at, tz=None, window_ms: int = 10_000,
              now: datetime | None = None) -> ImageResult:
    """The moment at the wall-clock instant ``at`` in every recording covering it (each at its own offset,
    t_ms, with its anchor's source and confidence), or where the nearest recordings are when none does."""
    if not isinstance(at, str):
        raise InvalidArgument(f"at must be a string like '2026-03-14 14:32', 'yesterday 14:30' or '2h ago', "
                              f"got {type(at).__name__}", hint="pass at as a string")
    zone, name = zone_arg(tz)
    try:
        when = timeq.instant(at, now=now, tz=zone)
    except timeq.TimeError as e:
        raise _bad(e, name) from None
    t = epoch_ms(when)
    found = _ranked(timeline, timeline.covering(t))
    out: dict = {"at": timeq.iso(when, zone), "tz": name, "covering": len(found), "moments": []}
    images: list[Image] = []
    budget = AT_TRANSCRIPT_CHARS // max(1, min(len(found), AT_MAX_RECORDINGS))
    for j in found[:AT_MAX_RECORDINGS]:
        rec = timeline.recs[j]
        offset = int(t - timeline.start[j])
        try:
            res = get_moment(rec["recording"], offset, window_ms, max_frames=1, transcript_chars=budget)
        except ReadError as e:  # one recording unreadable: the others still answer
            out["moments"].append({"recording": rec["recording"], "filename": rec["filename"], "t_ms": offset,
                                   **e.to_dict()})
            continue
        m = res.meta
        if low(rec):
            m["low_confidence"] = True
        out["moments"].append(m)
        images += [Image(f"{rec['filename']}: {img.caption}", img.data, img.mime_type) for img in res.images]
    if len(found) > AT_MAX_RECORDINGS:
        rest = [timeline.recs[j]["recording"] for j in found[AT_MAX_RECORDINGS:]]
        out["more"] = (f"{len(rest)} more recording(s) cover this instant: get_moment(id, t_ms) for "
                       f"{', '.join(rest[:10])}")
    if any(m.get("low_confidence") for m in out["moments"]):
        out["low_confidence_note"] = LOW_NOTE
    if not found:
        prev, nxt = timeline.nearest(t)
        near = {}
        if prev is not None:
            near["before"] = _brief(timeline.recs[prev], int(timeline.start[prev]), int(timeline.end[prev]), zone)
        if nxt is not None:
            near["after"] = _brief(timeline.recs[nxt], int(timeline.start[nxt]), int(timeline.end[nxt]), zone)
        out["nearest"] = near
        out["note"] = (f"no recording covers {out['at']}" + (" (nearest ones in `nearest`)" if near else "")
                       + (f"; {timeline.unanchored} recording(s) have no wall clock" if timeline.unanchored else ""))
    return ImageResult(out, images)


def render(answer: dict) -> str:
    """``talkthrough at``: the moment(s) as plain text (``--json`` prints the answer itself)."""
    lines = [f"at {answer['at']} ({answer['tz']}): {answer['covering']} recording(s) cover it"]
    try:  # every time in the zone the question was asked in, named
        zone = timeq.zone(answer["tz"])[0]
    except timeq.TimeError:
        zone = timezone.utc
    for m in answer["moments"]:
        if "error" in m:
            lines.append(f"\n{m['filename']} ({m['recording']}) +{m['t_ms'] / 1000:.3f} s: {m['message']}")
            continue
        wc = m.get("wall_clock") or {}
        lines.append(f"\n{m['filename']} ({m['recording']}) at +{m['t_ms'] / 1000:.3f} s = "
                     f"{timeq.shown(m['t_wall'], zone) or m['t_wall']}"
                     f"  [anchor: {wc.get('source')}, {wc.get('confidence')}"
                     + (", LOW: may be off by minutes" if m.get("low_confidence") else "") + "]")
        for f in m.get("frames") or []:
            text = " ".join((f.get("ocr_text") or "").split())
            lines.append(f"  on screen: frame {f['ms']} ms" + (f": {text[:200]}" if text else ""))
        if m.get("speaker_at_t"):
            lines.append(f"  speaking: {m['speaker_at_t']}"
                         + (f" ({m['speaker_name_at_t']})" if m.get("speaker_name_at_t") else ""))
        at_seq = m["transcript"].get("segment_at_t")
        for s in m["transcript"]["segments"]:
            who = f"{s.get('speaker')}: " if s.get("speaker") else ""
            mark = ">" if s["seq"] == at_seq else " "
            lines.append(f" {mark}[{s['t_ms'] / 1000:7.1f}s] {who}{s['text']}")
        if m.get("note"):
            lines.append(f"  ({m['note']})")
    for k in ("note", "more", "low_confidence_note"):
        if answer.get(k):
            lines.append(f"\n{answer[k]}")
    for side, n in (answer.get("nearest") or {}).items():
        lines.append(f"  {side}: {n['filename']} ({n['recording']}) {timeq.shown(n['start'], zone) or n['start']} .. "
                     f"{timeq.shown(n['end'], zone) or n['end']}")
    return "\n".join(lines)


__all__ = ["Window", "filter_rows", "window_arg", "zone_arg", "moment_at", "render", "listed_ids", "mark_listing", "mark_search"]

"""Questions asked in wall time: the ``since``/``until``/``tz`` arguments of list_recordings and
search, and ``get_moment_at`` (the moment at a wall-clock instant in every recording covering it).

Times are read by the one grammar, :mod:`talkthrough_assets.read.timeq`; recordings are placed by the anchored
start/end index of the library view (:class:`~talkthrough_assets.read.timeline.Timeline`). Every answer states the
zone the question was read in. An anchor of low confidence (file mtime) is used, and marked.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone, tzinfo
from typing import Callable, TypeVar

from talkthrough_assets.read import timeq

from talkthrough_assets.read.answers import Answer, ErrorBody
from talkthrough_assets.read.errors import InvalidArgument, ReadError
from talkthrough_assets.read.images import Image, ImageResult
from talkthrough_assets.read.moment import Moment
from talkthrough_assets.read.timeline import Timeline, epoch_ms, from_ms

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


class TimeWindow(Answer):
    """The zone a question in wall time was read in, and the window it named in that zone."""

    tz: str
    since: str | None
    until: str | None


class Brief(Answer):
    """A recording placed in time: its anchored start and end in the question's zone."""

    recording: str
    filename: str
    start: str
    end: str


class Nearest(Answer):
    before: Brief | None = None
    after: Brief | None = None


class MomentError(ErrorBody):
    """A covering recording that could not be read: the others still answer."""

    recording: str
    filename: str
    t_ms: int


class MomentsAt(Answer):
    """get_moment_at's answer: get_moment's answer per covering recording, each at its own t_ms."""

    at: str
    tz: str
    covering: int
    moments: list[Moment | MomentError]
    more: str | None = None
    low_confidence_note: str | None = None
    nearest: Nearest | None = None
    note: str | None = None


@dataclass
class Window:
    lo: datetime | None
    hi: datetime | None
    tz: tzinfo
    tz_name: str

    def ms(self) -> tuple[int | None, int | None]:
        return (epoch_ms(self.lo) if self.lo else None), (epoch_ms(self.hi) if self.hi else None)

    def stated(self) -> TimeWindow:
        """What answers say about the question's time: the zone and the window read in it."""
        return TimeWindow(tz=self.tz_name, since=timeq.iso(self.lo, self.tz) if self.lo else None,
                          until=timeq.iso(self.hi, self.tz) if self.hi else None)


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


Row = TypeVar("Row", bound=Mapping)


def filter_rows(rows: list[Row], win: Window) -> list[Row]:
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


def listed_ids(timeline: Timeline, win: Window) -> list[str]:
    """Recordings whose anchored span meets the window."""
    return [timeline.recs[j].recording for j in timeline.overlapping(*win.ms())]


def _brief(timeline: Timeline, j: int, tz: tzinfo) -> Brief:
    rec = timeline.recs[j]
    return Brief(recording=rec.recording, filename=rec.filename,
                 start=timeq.iso(from_ms(int(timeline.start[j])), tz), end=timeq.iso(from_ms(int(timeline.end[j])), tz))


def _ranked(timeline: Timeline, found: list[int]) -> list[int]:
    """What an agent asking about an instant needs first: a recording with a screen (the only frame of the moment
    must not be the one left to `more`), then one whose wall clock is trusted, then the earliest started."""
    return sorted(found, key=lambda j: (timeline.recs[j].kind != "video", timeline.recs[j].low,
                                        int(timeline.start[j])))


def moment_at(timeline: Timeline, get_moment: Callable[..., ImageResult[Moment]], at, tz=None, window_ms: int = 10_000,
              now: datetime | None = None) -> ImageResult[MomentsAt]:
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
    out = MomentsAt(at=timeq.iso(when, zone), tz=name, covering=len(found), moments=[])
    images: list[Image] = []
    budget = AT_TRANSCRIPT_CHARS // max(1, min(len(found), AT_MAX_RECORDINGS))
    for j in found[:AT_MAX_RECORDINGS]:
        rec = timeline.recs[j]
        offset = int(t - timeline.start[j])
        try:
            res = get_moment(rec.recording, offset, window_ms, max_frames=1, transcript_chars=budget)
        except ReadError as e:  # one recording unreadable: the others still answer
            out.moments.append(MomentError(recording=rec.recording, filename=rec.filename, t_ms=offset,
                                           **e.to_dict()))
            continue
        if rec.low:
            res.meta.low_confidence = True
        out.moments.append(res.meta)
        images += [Image(f"{rec.filename}: {img.caption}", img.data, img.mime_type) for img in res.images]
    if len(found) > AT_MAX_RECORDINGS:
        rest = [timeline.recs[j].recording for j in found[AT_MAX_RECORDINGS:]]
        out.more = (f"{len(rest)} more recording(s) cover this instant: get_moment(id, t_ms) for "
                    f"{', '.join(rest[:10])}")
    if any(isinstance(m, Moment) and m.low_confidence for m in out.moments):
        out.low_confidence_note = LOW_NOTE
    if not found:
        _nowhere(out, timeline, t, zone)
    return ImageResult(out, images)


def _nowhere(out: MomentsAt, timeline: Timeline, t: int, zone: tzinfo) -> None:
    """No recording covers ``t``: the nearest ones before and after, said so."""
    prev, nxt = timeline.nearest(t)
    out.nearest = Nearest()
    if prev is not None:
        out.nearest.before = _brief(timeline, prev, zone)
    if nxt is not None:
        out.nearest.after = _brief(timeline, nxt, zone)
    near = prev is not None or nxt is not None
    out.note = (f"no recording covers {out.at}" + (" (nearest ones in `nearest`)" if near else "")
                + (f"; {timeline.unanchored} recording(s) have no wall clock" if timeline.unanchored else ""))


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


__all__ = ["Window", "TimeWindow", "MomentsAt", "filter_rows", "window_arg", "zone_arg", "moment_at", "render",
           "listed_ids"]

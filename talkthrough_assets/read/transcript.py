"""get_transcript's answer: one page of a recording's transcript from its snapshot, as JSON segments or
SRT cues, cut at a character budget with ``truncated``, ``next_start_ms`` and ``continue_with`` for the
next page, optionally one speaker's segments only. From a partial generation (a run in progress) the page says
``partial: true`` with the ``covered_ms`` range, and ``next_start_ms`` (``truncated`` false) is where the covered
transcript ends: the same call later continues there."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from talkthrough_assets.model import manifest as model
from talkthrough_assets.model import speakers

from talkthrough_assets.read import formats
from talkthrough_assets.read.answers import GENERATION, Answer, Partial, Segment, WallClock
from talkthrough_assets.read import snapshot
from talkthrough_assets.read.args import SPEAKER_MAX_CHARS, clip, dumps, limit_arg, range_arg, text_arg
from talkthrough_assets.read.errors import InvalidArgument

TRANSCRIPT_MAX_CHARS = 30_000
TRANSCRIPT_MIN_CHARS = 1000


NAME_HINTS_NOTE = ("unconfirmed: names read on screen while each label was talking (e.g. a meeting tile); "
                   "say 'S2 (possibly Bob Stone)', never present one as fact; a person confirms with "
                   "`talkthrough name ID 'S2=Bob Stone'`")


def name_hints(snap) -> dict[str, list[str]]:
    """On-screen name candidates (the manifest's) of the speakers that have no confirmed name."""
    cands = {str(sp.label): [str(c) for c in sp.name_candidates or []] for sp in snap.speakers if sp.label}
    return speakers.hints(cands, snap.names)


def name_matches(name: str | None, want: str) -> bool:
    """A speaker name matches the full name or any of its words ("Alice" and "stone" match "Alice Stone")."""
    n = " ".join((name or "").casefold().split())
    return bool(n) and (n == want or want in n.split(" "))


def voice_hints(snap) -> dict[str, str]:
    """Voice matches with enrolled people not applied as names: label -> "voice match 0.86 to Alice Chen, 3
    recordings"."""

    return {lab: m.hint or speakers.describe_match(m) for lab, m in snap.voice_hints.items()}


def speaker_match(snap: snapshot.Snapshot, speaker: str) -> set[str]:
    """Labels whose label, name, or voice-suggested person is ``speaker``."""
    want = " ".join(speaker.casefold().split())
    labels = sorted({s.speaker for s in snap.segments if s.speaker})
    match = {lab for lab in labels if lab.casefold() == want or name_matches(snap.names.get(lab), want)}
    if not match:
        match = {lab for lab in labels if lab in snap.voice_hints
                 and name_matches(snap.voice_hints[lab].person, want)}
    if not match:
        known = ", ".join(f"{lab} ({snap.names[lab]})" if lab in snap.names else lab for lab in labels) or "none"
        shown, _ = clip(speaker, 60)
        raise InvalidArgument(f"no speaker {shown!r} in recording {snap.rid}; speakers: {known}",
                              hint="pass one of the speakers listed, or omit speaker")
    return match


class ContinueWith(Answer):
    """The arguments of the call that reads the next page (those that differ from the defaults)."""

    id: str
    start_ms: int
    end_ms: int | None = None
    speaker: str | None = None
    format: str | None = None
    max_chars: int | None = None
    with_t_wall: bool | None = None


class TranscriptPage(Partial):
    """get_transcript's answer: one page of segments (JSON) or cues (SRT)."""

    recording: str
    filename: str
    generation: str = Field(description=GENERATION)
    format: Literal["json", "srt"]
    diarized: bool
    wall_clock: WallClock | None
    start_ms: int
    end_ms: int
    transcript_available: bool | None = None
    reason: str | None = None
    note: str | None = None
    speaker_names: dict[str, str] | None = None
    name_sources: dict[str, Literal["confirmed", "voice"]] | None = Field(
        None, description="label -> confirmed (by a person) or voice (applied from a voice match)")
    voice_hints: dict[str, str] | None = Field(None, description="label -> unconfirmed voice match with an "
                                                                 "enrolled person")
    name_hints: dict[str, list[str]] | None = None
    name_hints_note: str | None = None
    segments: list[Segment] | None = None
    srt: str | None = None
    returned: int
    truncated: bool
    next_start_ms: int | None
    continue_with: ContinueWith | None = None


def _arguments(snap: snapshot.Snapshot, start_ms, end_ms, speaker, format, max_chars, with_t_wall
               ) -> tuple[int, int, str | None, int]:
    """The page's arguments checked: (start, end, speaker, max_chars)."""
    start, end = range_arg(snap.rec.duration_ms, start_ms, end_ms)
    if format not in ("json", "srt"):
        shown = format[:20] if isinstance(format, str) else type(format).__name__
        raise InvalidArgument(f"format must be 'json' or 'srt', got {shown!r}",
                              hint="pass format 'json' or 'srt', or omit it for json")
    max_chars = limit_arg("max_chars", max_chars, TRANSCRIPT_MIN_CHARS, TRANSCRIPT_MAX_CHARS)
    speaker = text_arg("speaker", speaker, SPEAKER_MAX_CHARS, required=False)
    if not isinstance(with_t_wall, bool):
        raise InvalidArgument(f"with_t_wall must be true or false, got {type(with_t_wall).__name__}",
                              hint="pass a JSON boolean, or omit it")
    return start, end, speaker, max_chars


def _speakers(out: TranscriptPage, snap: snapshot.Snapshot, names: dict[str, str]) -> None:
    """Who the labels are: confirmed names, unconfirmed voice matches and on-screen name hints."""
    if names:
        out.speaker_names = names
        out.name_sources = {lab: snap.name_sources.get(lab, "confirmed") for lab in names}
    voiced = voice_hints(snap) if out.diarized else {}
    if voiced:  # unconfirmed, like name_hints
        out.voice_hints = voiced
    hints = name_hints(snap) if out.diarized else {}
    if hints:
        out.name_hints = hints
        out.name_hints_note = NAME_HINTS_NOTE


def _fill(out: TranscriptPage, segs: list[model.Segment], window: list[model.Segment], names: dict[str, str],
          wc: model.WallClock | None,
          with_t_wall: bool, max_chars: int, speaker: str | None) -> int | None:
    """Segments (or SRT cues) of ``window`` until the page's budget is spent; where the next page starts."""
    # SRT cue numbers count the cues of this (possibly speaker-filtered) transcript: 1, 2, 3 …
    cue = {id(s): i + 1 for i, s in enumerate(segs)}
    after = {id(s): (segs[i + 1] if i + 1 < len(segs) else None) for i, s in enumerate(segs)}  # SRT cue ends
    widest = ContinueWith(id=out.recording, start_ms=10 ** 12, end_ms=10 ** 12, speaker=speaker or "",
                          format="json", max_chars=30000, with_t_wall=True)
    used = out.model_copy(update={"segments": [], "srt": "", "returned": 10 ** 6, "truncated": True,
                                  "next_start_ms": 10 ** 12, "continue_with": widest}).size()
    items: list = []
    for s in window:
        if out.format == "srt":
            item = formats.srt_cue(cue[id(s)], s, names, end_ms=formats.cue_end(s, after[id(s)]))
            size = len(dumps(item)) - 2
        else:
            item = Segment.of(s, names, wc, with_t_wall)
            size = item.size() + 1
        if items and used + size > max_chars:
            out.next_start_ms = s.t0_ms
            break
        items.append(item)
        used += size
    if out.format == "srt":
        out.srt = "".join(items)
    else:
        out.segments = items
    out.returned = len(items)
    out.truncated = out.next_start_ms is not None
    return out.next_start_ms


def _goes_on(out: TranscriptPage, snap: snapshot.Snapshot, start: int, end: int) -> int | None:
    """A partial generation: its marking, the window cut where the transcript so far ends, and where the
    same call continues once it goes on (None: nothing to wait for)."""
    mark = snapshot.partial_fields(snap)
    if mark is None:
        return None
    out.mark(mark)
    covered = mark.covered_ms[1]
    out.end_ms = max(start, min(end, covered))  # not the (unread) duration
    if not out.truncated and mark.next_start_ms is not None and end > covered:
        out.next_start_ms = max(start, mark.next_start_ms)
        return out.next_start_ms
    return None


def page(snap: snapshot.Snapshot, start_ms=None, end_ms=None, speaker: str | None = None,
         format: str = "json", max_chars: int = TRANSCRIPT_MAX_CHARS, with_t_wall: bool = False) -> TranscriptPage:
    """One transcript page. Segments carry t_ms/t1_ms; their wall time is ``wall_clock.start_utc`` +
    t_ms, given per segment only with ``with_t_wall`` (it was 28 % of a page)."""
    rec, rid = snap.rec, snap.rid
    start, end, speaker, max_chars = _arguments(snap, start_ms, end_ms, speaker, format, max_chars, with_t_wall)
    wc = snap.wall_clock
    segs = snap.segments
    attributed = any(s.speaker for s in segs)
    if speaker is not None:
        if not attributed:
            raise InvalidArgument(f"recording {rid} is not diarized, so it has no speaker labels",
                                  hint="drop `speaker`, or reprocess with `talkthrough process --diarize`")
        match = speaker_match(snap, speaker)
        segs = [s for s in segs if s.speaker in match]
    window = [s for s in segs if s.t1_ms > start and s.t0_ms <= end] if (start_ms or end_ms is not None) \
        else segs
    out = TranscriptPage(recording=rid, filename=rec.filename, generation=snap.generation, format=format,
                         diarized=attributed, wall_clock=WallClock.of(wc), start_ms=start, end_ms=end,
                         returned=0, truncated=False, next_start_ms=None)
    if not rec.transcript_available:
        out.transcript_available = False
        out.reason = snap.transcript_reason or "no transcript"
    if wc is None:
        out.note = "wall_clock unknown: t_wall is null; t_ms counts from the recording start"
    names = snap.names if attributed else {}
    _speakers(out, snap, names)
    next_start = _fill(out, segs, window, names, wc, with_t_wall, max_chars, speaker)
    later = _goes_on(out, snap, start, end)
    if next_start is not None or later is not None:
        same = {"end_ms": end_ms, "speaker": speaker, "format": format if format != "json" else None,
                "max_chars": max_chars if max_chars != TRANSCRIPT_MAX_CHARS else None,
                "with_t_wall": True if with_t_wall else None}
        out.continue_with = ContinueWith(id=rid, start_ms=next_start if next_start is not None else later,
                                         **{k: v for k, v in same.items() if v is not None})
    return out

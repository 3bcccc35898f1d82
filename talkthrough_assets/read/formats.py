"""The one place a transcript is formatted for people and players: SRT (the MCP server's
``get_transcript(format='srt')`` and ``talkthrough export --format srt`` both call :func:`srt_cue`),
WebVTT, Markdown, plain text and JSON segments (the MCP server's JSON items, :class:`.answers.Segment`).

Input is a published snapshot's typed segments (``model.manifest.Segment``: ``seq``, ``t0_ms``, ``t1_ms``,
``text``, ``speaker`` when diarized), the speaker names in force and the wall clock (``None`` when unknown). User text (transcript,
speaker names, file names) is escaped for each format: VTT's ``&``, ``<`` and ``>``, Markdown's
punctuation; a line break inside a segment never ends a cue.
"""

from __future__ import annotations

import dataclasses
import json
import re

from talkthrough_assets.core.errors import UsageError
from talkthrough_assets.model import manifest as model
from talkthrough_assets.model.wallclock import t_wall

from talkthrough_assets.read.answers import Segment

FORMATS = ("srt", "vtt", "md", "json", "txt")


def srt_time(ms: int) -> str:
    """SRT's HH:MM:SS,mmm. The same as faster_whisper.utils.format_timestamp(ms / 1000, True, ","),
    which a unit test checks; not imported from there because faster_whisper's package import pulls
    CTranslate2 and PyAV (0.3 s, ~100 MB) into a read server that transcribes nothing."""
    ms = max(0, int(ms))
    h, rem = divmod(ms, 3_600_000)
    m, rem = divmod(rem, 60_000)
    s, ms = divmod(rem, 1000)
    return f"{h:02d}:{m:02d}:{s:02d},{ms:03d}"


def vtt_time(ms: int) -> str:
    """WebVTT's HH:MM:SS.mmm (hours always written)."""
    return srt_time(ms).replace(",", ".")


def clock(ms: int) -> str:
    """HH:MM:SS of recording time, for reading."""
    return srt_time(ms)[:8]


def time_of_day(stamp: str) -> str:
    """A ``t_wall`` stamp as a person reads it beside a recording time: ``2026-03-14T09:27:00.120+00:00`` ->
    ``09:27:00`` (the date and the zone are said once, where the page starts)."""
    return stamp[11:19] if len(stamp) >= 19 else stamp


def zone(stamp: str) -> str:
    """The zone of a ``t_wall`` stamp: ``UTC`` or ``UTC+09:00`` (the recording's own offset, when known)."""
    off = stamp[23:] if len(stamp) > 23 else ""
    return "UTC" if off in ("", "+00:00", "Z") else f"UTC{off}"


def _one_line(text: str) -> str:
    """Segment text on one line: a blank line would end an SRT/VTT cue early."""
    return " ".join(str(text or "").split())


def speaker_tag(who: str | None, names: dict[str, str], overlap: list[str] | None = None) -> str:
    """How a segment's speaker is written: ``S1 Alice`` when named, ``S1`` when not, '' when undiarized; with
    ``overlap`` (others talking at the same time) ``S1 Alice, with S2 at once``."""
    if not who:
        return ""
    tag = f"{who} {names[who]}" if names.get(who) else who
    if overlap:
        tag += ", with " + " and ".join(speaker_tag(o, names) for o in overlap) + " at once"
    return tag


def cue_end(seg: model.Segment, following: model.Segment | None) -> int:
    """Where a cue ends: its segment's end, or the next cue's start when the segments overlap (ASR segments
    may), so no two cues are on screen at once; never before its own start."""
    t0, t1 = int(seg.t0_ms), int(seg.t1_ms)
    if following is not None:
        t1 = min(t1, int(following.t0_ms))
    return max(t1, t0)


def srt_cue(n: int, seg: model.Segment, names: dict[str, str], wall: str | None = None, end_ms: int | None = None) -> str:
    """One SubRip cue (number, ``start --> end`` with commas, ``[S1 Alice] `` before the text); ``end_ms``:
    :func:`cue_end` (default: the segment's end)."""
    tag = speaker_tag(seg.speaker, names, seg.overlap)
    label = f"[{tag}] " if tag else ""
    when = f"({wall}) " if wall else ""
    end = seg.t1_ms if end_ms is None else end_ms
    return f"{n}\n{srt_time(seg.t0_ms)} --> {srt_time(end)}\n{when}{label}{_one_line(seg.text)}\n\n"


def vtt_escape(text: str) -> str:
    return str(text).replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def vtt_cue(seg: model.Segment, names: dict[str, str], wall: str | None = None, end_ms: int | None = None) -> str:
    """One WebVTT cue: dotted times, the speaker as a voice span (``<v Alice>``), text escaped."""
    t0, t1 = int(seg.t0_ms), int(seg.t1_ms if end_ms is None else end_ms)
    who = seg.speaker
    voice = f"<v {vtt_escape(_one_line(names.get(who) or who))}>" if who else ""
    when = f"({vtt_escape(wall)}) " if wall else ""
    text = _one_line(seg.text).replace("-->", "->")
    if who and seg.overlap:  # the voice span holds one speaker: the others heard at once go before the text
        text = "(with " + " and ".join(names.get(o) or o for o in seg.overlap) + " at once) " + text
    return f"{vtt_time(t0)} --> {vtt_time(max(t1, t0 + 1))}\n{voice}{when}{vtt_escape(text)}\n\n"


# what Markdown reads inside a line (CommonMark, GFM tables, HTML). `.`, `-`, `+` and `!` only mean something
# at the start of a line (a list) or before `[` (escaped): user text never starts a line here, so they stay
# as written (`pipeline.`, not `pipeline\.`)
_MD_SPECIAL = re.compile(r"([\\`*_{}\[\]()#|<>&~])")


def md_escape(text: str) -> str:
    """User text as literal Markdown text inside a line (never at its start): the punctuation Markdown reads
    there is backslash-escaped, so a name or an OCR line never becomes a link, a heading, a tag or emphasis."""
    return _MD_SPECIAL.sub(r"\\\1", _one_line(text))


def render(fmt: str, segments: list[model.Segment], names: dict[str, str], wc: model.WallClock | None, *,
           wall_clock: bool = False, title: str = "", recording_id: str = "") -> str:
    """A whole transcript in ``fmt`` (one of :data:`FORMATS`). ``wall_clock``: each segment also carries
    its wall time (where the wall clock is known); SRT/VTT cue times stay recording time (players sync on
    them) and the wall time goes before the text."""
    if fmt not in FORMATS:
        raise UsageError(f"unknown format {fmt!r}: one of {', '.join(FORMATS)}")

    def wall(seg) -> str | None:
        return t_wall(wc, seg.t0_ms) if wall_clock and wc else None

    if fmt == "srt":
        return "".join(srt_cue(i + 1, s, names, wall(s), cue_end(s, segments[i + 1] if i + 1 < len(segments) else None))
                       for i, s in enumerate(segments))
    if fmt == "vtt":
        head = "WEBVTT"
        if title:
            head += "\n\nNOTE " + _one_line(title).replace("-->", "->")
        return head + "\n\n" + "".join(vtt_cue(s, names, wall(s), cue_end(s, segments[i + 1] if i + 1 < len(segments) else None))
                                       for i, s in enumerate(segments))
    if fmt == "json":
        out = {"recording": recording_id, "filename": title,
               "wall_clock": dataclasses.asdict(wc) if wc is not None else None, "speaker_names": names,
               "segments": [Segment.of(s, names, wc).dump() for s in segments]}
        return json.dumps(out, indent=2, ensure_ascii=False) + "\n"
    lines = []
    if fmt == "md":
        lines += [f"# {md_escape(title)}", ""] if title else []
        for s in segments:
            w = wall(s)
            when = f"{clock(s.t0_ms)}" + (f" · {w}" if w else "")
            tag = speaker_tag(s.speaker, names, s.overlap)
            lines.append(f"- **\\[{md_escape(when)}\\]**" + (f" **{md_escape(tag)}:**" if tag else "")
                         + f" {md_escape(s.text)}")
        return "\n".join(lines) + "\n"
    for s in segments:  # txt
        w = wall(s)
        tag = speaker_tag(s.speaker, names, s.overlap)
        lines.append(f"[{clock(s.t0_ms)}{' ' + w if w else ''}] " + (f"{tag}: " if tag else "")
                     + _one_line(s.text))
    return "\n".join(lines) + "\n"


def export(rid: str, fmt: str, *, wall_clock: bool = False) -> str:
    """A processed recording's whole transcript in ``fmt``, from its published manifest (the snapshot the
    MCP server serves), speaker names applied. ValueError: an unknown format, an unknown recording, or
    nothing finished published."""
    from talkthrough_assets.read import snapshot

    if fmt not in FORMATS:
        raise UsageError(f"unknown format {fmt!r}: one of {', '.join(FORMATS)}")
    snap = snapshot.finished(rid)
    names = snap.names if any(s.speaker for s in snap.segments) else {}
    return render(fmt, snap.segments, names, snap.wall_clock, wall_clock=wall_clock,
                  title=snap.rec.filename, recording_id=rid)

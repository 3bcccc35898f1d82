"""get_moment's answer: one instant of a recording, the nearest stored frames (the one on screen first), the
transcript around it and who spoke then."""

from __future__ import annotations

from pydantic import Field

from talkthrough_assets.model.manifest import FrameItem
from talkthrough_assets.model.wallclock import t_wall

from talkthrough_assets.read import images
from talkthrough_assets.read import snapshot
from talkthrough_assets.read import transcript
from talkthrough_assets.read.answers import GENERATION, Answer, Segment, WallClock
from talkthrough_assets.read.args import limit_arg, ms_arg
from talkthrough_assets.read.errors import InvalidArgument
from talkthrough_assets.read.images import FrameInfo, ImageResult, WithImages

MOMENT_FRAMES = 3
MOMENT_WINDOW_MS = 10_000
MOMENT_MAX_WINDOW_MS = 60_000
MOMENT_TRANSCRIPT_CHARS = 8_000


class MomentTranscript(Answer):
    """The transcript +- window_ms around the instant."""

    start_ms: int
    end_ms: int
    segments: list[Segment]
    truncated: bool
    next_start_ms: int | None
    segment_at_t: int | None
    reason: str | None = None


class SpeakerTalk(Answer):
    """A speaker within a span: how long they talked in it and from when."""

    speaker: str
    speaker_name: str | None = None
    talk_ms: int
    first_ms: int


class Moment(WithImages):
    """get_moment's answer (``low_confidence`` when get_moment_at placed it by a file-mtime anchor)."""

    recording: str
    filename: str
    generation: str = Field(description=GENERATION)
    t_ms: int
    t_wall: str | None
    wall_clock: WallClock | None
    on_screen_frame_ms: int | None = None
    frames: list[FrameInfo]
    note: str | None = None
    transcript: MomentTranscript
    speakers_in_range: list[SpeakerTalk] | None = Field(description="who spoke within the transcript window "
                                                                   "(null: not diarized)")
    speaker_at_t: str | None
    speaker_name_at_t: str | None = None
    low_confidence: bool | None = None


def speakers_in_range(snap: snapshot.Snapshot, lo: int, hi: int, t: int) -> tuple[list[SpeakerTalk], str | None]:
    """Who talked within [lo, hi], most first, and who was talking at ``t``."""
    talk: dict[str, int] = {}
    first: dict[str, int] = {}
    at = None
    for t0, t1, who in snap.turns:
        ov = min(t1, hi) - max(t0, lo)
        if ov > 0 or (lo == hi and t0 <= lo < t1):
            talk[who] = talk.get(who, 0) + max(ov, 0)
            first.setdefault(who, max(t0, lo))
        if t0 <= t < t1:
            at = who
    out = []
    for who in sorted(talk, key=lambda w: (-talk[w], first[w], w)):
        item = SpeakerTalk(speaker=who, talk_ms=talk[who], first_ms=first[who])
        if who in snap.names:
            item.speaker_name = snap.names[who]
        out.append(item)
    return out, at


def _window(snap: snapshot.Snapshot, t: int, lo: int, hi: int, chars: int) -> MomentTranscript:
    """The transcript of [lo, hi] (where it goes on, when a run in progress has not covered it yet)."""
    tr = transcript.page(snap, start_ms=lo, end_ms=hi, max_chars=chars)
    segs = tr.segments or []
    at = [s.seq for s in segs if s.t_ms <= t < s.t1_ms]
    out = MomentTranscript(start_ms=lo, end_ms=hi, segments=segs, truncated=tr.truncated,
                           next_start_ms=tr.next_start_ms, segment_at_t=at[0] if at else None)
    if tr.reason:
        out.reason = tr.reason
    mark = snapshot.partial_fields(snap)
    if mark is not None and not tr.truncated and mark.next_start_ms is not None and hi > mark.covered_ms[1]:
        out.next_start_ms = max(lo, mark.next_start_ms)
    return out


def moment(snap: snapshot.Snapshot, t_ms, window_ms: int = MOMENT_WINDOW_MS, max_frames: int = MOMENT_FRAMES,
           transcript_chars: int = MOMENT_TRANSCRIPT_CHARS) -> ImageResult[Moment]:
    rec = snap.rec
    t = ms_arg("t_ms", t_ms, required=True)
    duration = int(rec.duration_ms or 0)
    if duration and t > duration:
        raise InvalidArgument(f"t_ms {t} is past the end of the recording (duration {duration} ms)",
                              hint=f"use 0 <= t_ms <= {duration}")
    window_ms = limit_arg("window_ms", window_ms, 0, MOMENT_MAX_WINDOW_MS)
    wc = snap.wall_clock
    lo, hi = max(0, t - window_ms), t + window_ms
    hi = max(lo, min(hi, duration) if duration else hi)
    frames: list[FrameItem] = []
    speakers, speaker_at = speakers_in_range(snap, lo, hi, t) if snap.diarized else (None, None)
    out = Moment(recording=snap.rid, filename=rec.filename, generation=snap.generation, t_ms=t,
                 t_wall=t_wall(wc, t), wall_clock=WallClock.of(wc), frames=[],
                 transcript=_window(snap, t, lo, hi, transcript_chars), speakers_in_range=speakers,
                 speaker_at_t=speaker_at)
    if rec.has_video:
        spans = images.screen_spans(snap.frames, duration)
        unique = [f for f in snap.frames if f.duplicate_of is None]
        out.on_screen_frame_ms = images.on_screen(snap.frames, t)
        ranked = sorted(unique, key=lambda f: (f.ms != out.on_screen_frame_ms, abs(f.ms - t), f.ms))
        frames = sorted(ranked[:max_frames], key=lambda f: f.ms)
        out.frames = [images.frame_meta(f, wc, spans) for f in frames]
    else:
        out.note = "audio-only recording: no frames; transcript only"
    out.mark(snapshot.partial_fields(snap))  # a run in progress: the window may not be covered yet
    if speaker_at in snap.names:  # label and name, as on segments
        out.speaker_name_at_t = snap.names[speaker_at]
    return images.image_result(snap.rid, frames, wc, out)

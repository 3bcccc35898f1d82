"""Argument checks shared by the read tools (recording ids, milliseconds, ranges, limits, free text,
crop boxes), each raising :class:`InvalidArgument` with a one-line reason, and the two helpers every
response budget is measured with (:func:`dumps`, :func:`clip`)."""

from __future__ import annotations

import json

from talkthrough_assets import store

from talkthrough_assets.read.errors import InvalidArgument

SPEAKER_MAX_CHARS = 200
CROP_MIN_PX = 8


def dumps(obj) -> str:
    """The one serializer for responses (compact; sizes are measured with it)."""
    return json.dumps(obj, ensure_ascii=False, separators=(",", ":"), default=str)


def check_id(recording_id) -> str:
    try:
        return store.check_id(recording_id)
    except store.InvalidRecordingId:
        shown = repr(recording_id)[:40] + ("…" if len(repr(recording_id)) > 40 else "")
        raise InvalidArgument(f"invalid recording id {shown}: expected 16 lowercase hex characters",
                              hint="ids come from list_recordings or search hits", echo=(shown,)) from None


def ms_arg(name: str, value, *, required: bool = False) -> int | None:
    if value is None:
        if required:
            raise InvalidArgument(f"{name} is required (milliseconds from the recording start)",
                                  hint=f"pass {name} as an integer >= 0")
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        raise InvalidArgument(f"{name} must be an integer number of milliseconds, got {type(value).__name__}",
                              hint=f"pass {name} as an integer >= 0, or omit it")
    if value < 0:
        raise InvalidArgument(f"{name} must be >= 0 (milliseconds from the recording start), got {value}",
                              hint=f"pass {name} >= 0, or omit it")
    return value


def range_arg(duration_ms: int | None, start_ms, end_ms) -> tuple[int, int]:
    s = ms_arg("start_ms", start_ms)
    e = ms_arg("end_ms", end_ms)
    duration = int(duration_ms or 0)
    if s is not None and e is not None and s > e:
        raise InvalidArgument(f"start_ms ({s}) is after end_ms ({e})", hint="pass start_ms <= end_ms")
    if s is not None and duration and s > duration:
        raise InvalidArgument(f"start_ms {s} is past the end of the recording (duration {duration} ms)",
                              hint=f"use 0 <= start_ms <= {duration}")
    return (s or 0), (e if e is not None else max(duration, s or 0))


def limit_arg(name: str, value, lo: int, hi: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not lo <= value <= hi:
        got = value if isinstance(value, int) and not isinstance(value, bool) else type(value).__name__
        raise InvalidArgument(f"{name} must be an integer from {lo} to {hi}, got {got}",
                              hint=f"pass {name} between {lo} and {hi}, or omit it for the default")
    return value


def text_arg(name: str, value, max_chars: int, *, required: bool = True) -> str | None:
    if value is None and not required:
        return None
    if not isinstance(value, str):
        raise InvalidArgument(f"{name} must be a string, got {type(value).__name__}",
                              hint=f"pass {name} as a JSON string" + ("" if required else ", or omit it"))
    if len(value) > max_chars:
        raise InvalidArgument(f"{name} is {len(value)} characters; at most {max_chars} are accepted",
                              hint=f"shorten {name}")
    return value


def clip(text: str | None, n: int) -> tuple[str | None, bool]:
    if text is None or len(text) <= n:
        return text, False
    return text[:n - 1] + "…", True


def crop_arg(crop) -> tuple[int, int, int, int] | None:
    if crop is None:
        return None
    keys = ("x", "y", "width", "height")
    if not isinstance(crop, dict) or set(crop) != set(keys):
        raise InvalidArgument("crop must be an object {x, y, width, height} in source pixels",
                              hint="source_size of an earlier extract_frame/get_frames call gives the bounds")
    vals = []
    for k in keys:
        v = crop[k]
        if isinstance(v, bool) or not isinstance(v, int) or v < 0:
            raise InvalidArgument(f"crop.{k} must be an integer >= 0 (source pixels)",
                                  hint="crop is {x, y, width, height} in the source's pixels")
        vals.append(v)
    if vals[2] < CROP_MIN_PX or vals[3] < CROP_MIN_PX:
        raise InvalidArgument(f"crop width and height must be at least {CROP_MIN_PX} px",
                              hint=f"pass width and height >= {CROP_MIN_PX}, or omit crop for the whole frame")
    return tuple(vals)  # type: ignore[return-value]

"""``talkthrough-manifest/v1`` as typed records: what the manifest stage builds and publishes, its JSON Schema
(generated from these records, shipped as ``manifest.schema.json`` beside this module), the check of a manifest
against it, and a recording's listing row from a manifest.

A field whose metadata says ``omit`` is left out of the JSON when it is None (``speaker`` of an unattributed
segment, ``duplicate_of`` of a unique frame ...); every other field is written, null included. A field with a
default is not required by the schema: manifests published before it existed still validate.

Regenerate the schema after a change to the records: ``python -m talkthrough_assets.model.manifest
talkthrough_assets/model/manifest.schema.json`` (``tests/unit/test_manifest_schema.py`` fails while it is stale).
"""

from __future__ import annotations

import dataclasses
import json
import sys
from dataclasses import dataclass, field
from functools import lru_cache
from importlib import resources
from typing import Literal


SCHEMA = "talkthrough-manifest/v1"
SCHEMA_FILE = "manifest.schema.json"
# published manifests hold only the keys declared here: a misspelt key fails the check instead of going unread
_STRICT = {"extra": "forbid"}
OMIT = {"omit": True}


def _omitted(default=None):
    return field(default=default, metadata=OMIT)


@dataclass(frozen=True, slots=True, kw_only=True)
class Media:
    __pydantic_config__ = _STRICT
    path: str | None
    filename: str
    kind: str  # "video" | "audio"
    duration_s: float
    size_bytes: int | None
    width: int | None
    height: int | None
    video_codec: str | None
    has_audio: bool
    has_video: bool
    # decoded time beats header time: both, when the file ends before (or after) its header says
    header_duration_s: float | None = _omitted()
    readable_note: str | None = _omitted()


@dataclass(frozen=True, slots=True, kw_only=True)
class WallClock:
    __pydantic_config__ = _STRICT
    start_utc: str
    tz_offset_min: int | None
    source: str | None
    confidence: str | None


@dataclass(frozen=True, slots=True, kw_only=True)
class Segment:
    __pydantic_config__ = _STRICT
    seq: int
    t0_ms: int
    t1_ms: int
    text: str
    speaker: str | None = _omitted()
    source_seq: int | None = _omitted()  # the Whisper segment a speaker split came from
    overlap: list[str] | None = _omitted()  # the other speakers heard at the same time


@dataclass(frozen=True, slots=True, kw_only=True)
class Quality:
    """What the drop rules removed (words, by reason), kept in doubt, and the speech left without words."""

    __pydantic_config__ = _STRICT
    dropped_segments: int
    dropped_words: int
    dropped_why: dict[str, int]
    doubtful_segments: int
    speech_s: float
    uncovered_speech_s: float
    uncovered: list[tuple[int, int, str]]  # [t0_ms, t1_ms, reason]


@dataclass(frozen=True, slots=True, kw_only=True)
class VoiceMatch:
    """A hint: this label's voice is like an enrolled person's (applied as the name only when ``applied``)."""

    __pydantic_config__ = _STRICT
    person: str
    score: float
    recordings: int
    applicable: bool
    applied: bool
    hint: str


@dataclass(frozen=True, slots=True, kw_only=True)
class Speaker:
    __pydantic_config__ = _STRICT
    label: str
    talk_time_ms: int
    turn_count: int
    first_ms: int | None
    last_ms: int | None
    name_candidates: list[str] | None = _omitted()  # OCR hints, never applied on their own
    voice_match: VoiceMatch | None = _omitted()


@dataclass(frozen=True, slots=True, kw_only=True)
class Diarization:
    __pydantic_config__ = _STRICT
    available: bool | None
    reason: str | None
    engine: str | None
    engine_version: str | None
    segmentation_model: str | None
    embedding_model: str | None
    requested_num_speakers: int | None
    detected_num_speakers: int | None
    speaker_count: str | None = None  # which count was used, and why
    threshold: float | None
    speakers: list[Speaker]
    turns: list[tuple[int, int, str]]  # [t0_ms, t1_ms, label]
    speaker_names: dict[str, str] | None = _omitted()
    speaker_name_sources: dict[str, Literal["confirmed", "voice"]] | None = _omitted()


@dataclass(frozen=True, slots=True, kw_only=True)
class Transcript:
    __pydantic_config__ = _STRICT
    available: bool
    reason: str | None
    language: str | None
    model: str | None
    segments: list[Segment]
    words: list[tuple[int, int, str]] = field(default_factory=list)  # [t0_ms, t1_ms, raw token]
    quality: Quality | None = _omitted()
    diarization: Diarization | None = _omitted()  # only when diarization was requested


@dataclass(frozen=True, slots=True, kw_only=True)
class FrameItem:
    __pydantic_config__ = _STRICT
    ms: int
    file: str  # relative to the data root
    duplicate_of: int | None = _omitted()
    ocr_text: str | None = _omitted()


@dataclass(frozen=True, slots=True, kw_only=True)
class Frames:
    __pydantic_config__ = _STRICT
    count: int
    unique_count: int
    reason: str | None = None
    cap_hit: bool
    items: list[FrameItem]


@dataclass(frozen=True, slots=True, kw_only=True)
class Caps:
    __pydantic_config__ = _STRICT
    max_seconds: int | None
    max_frames: int | None
    scene_threshold: float | None
    ocr: Literal["on", "off"]


@dataclass(frozen=True, slots=True, kw_only=True)
class Partial:
    """A provisional generation published while the run goes on: the transcript covers ``covered_ms``."""

    __pydantic_config__ = _STRICT
    covered_ms: tuple[int, int]
    next_start_ms: int | None = None
    audio_ms: int | None = None
    chunks_covered: int | None = None
    chunks: int | None = None
    coverage: str | None = None
    published_at: str | None = None
    note: str | None = None
    stopped: str | None = _omitted()  # the run ended without its final generation: why


@dataclass(frozen=True, slots=True, kw_only=True)
class Manifest:
    __pydantic_config__ = _STRICT
    schema: Literal["talkthrough-manifest/v1"]
    job_id: str
    created_at: str
    media: Media
    wall_clock: WallClock | None
    transcript: Transcript
    frames: Frames
    caps: Caps
    tool_versions: dict[str, str | None]
    partial: Partial | None = _omitted()

    def to_json(self) -> dict:
        """The manifest as published (plain JSON values, ``omit`` fields left out when None)."""
        return _plain(self)

    @classmethod
    def from_json(cls, obj) -> Manifest:
        """The typed manifest of a parsed manifest (what :meth:`to_json` wrote, or any v1 manifest published
        before: keys added since have defaults). Lax where JSON is (an int for a float, a list for a pair) and
        blind to keys it does not know, so a reader serves what an older or newer writer published; the schema
        check stays the writer's (:func:`validate`). pydantic's ValidationError (a ValueError) names what
        does not fit."""
        wc = obj.get("wall_clock") if isinstance(obj, dict) else None
        if wc is not None and not (isinstance(wc, dict) and wc.get("start_utc")):
            obj = {**obj, "wall_clock": None}  # an anchor without a start time is no anchor (wallclock.view)
        return _adapter().validate_python(obj, strict=False, extra="ignore")

    @classmethod
    def from_json_bytes(cls, data: bytes | str) -> Manifest:
        """:meth:`from_json` of a manifest's text, parsed and typed in one pass by pydantic-core (faster than
        ``json.loads`` and then the records); one that needs the lenient reading goes through :meth:`from_json`.
        json.JSONDecodeError when it is not JSON."""
        try:
            return _adapter().validate_json(data, strict=False, extra="ignore")
        except ValueError:
            return cls.from_json(json.loads(data))


def _plain(value):
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: _plain(v) for f in dataclasses.fields(value)
                for v in [getattr(value, f.name)] if not (v is None and f.metadata.get("omit"))}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    return value


@lru_cache(maxsize=1)
def _adapter():
    from pydantic import TypeAdapter

    return TypeAdapter(Manifest)


# --------------------------------------------------------------------------- the JSON Schema and the check

def generate_schema() -> dict:
    """The JSON Schema (draft 2020-12) of :class:`Manifest`, generated from the records (needs pydantic)."""
    out = {"$schema": "https://json-schema.org/draft/2020-12/schema", "$id": SCHEMA}
    out.update(_adapter().json_schema())
    out["title"] = SCHEMA
    return out


def schema_text(schema: dict | None = None) -> str:
    return json.dumps(generate_schema() if schema is None else schema, indent=2, sort_keys=True) + "\n"


@lru_cache(maxsize=1)
def shipped_schema() -> dict:
    """The schema shipped with the package (``manifest.schema.json``)."""
    return json.loads(resources.files(__package__).joinpath(SCHEMA_FILE).read_text(encoding="utf-8"))


@lru_cache(maxsize=1)
def _validator():
    from jsonschema import Draft202012Validator

    return Draft202012Validator(shipped_schema())


def _where(path) -> str:
    out = ""
    for p in path:
        out += f"[{p}]" if isinstance(p, int) else (f".{p}" if out else str(p))
    return out or "(top level)"


def validate(manifest) -> list[str]:
    """Problems of a manifest (a :class:`Manifest` or its parsed JSON) against the shipped schema, and the
    rules a schema cannot say (counts that agree, a partial's covered span in order); [] = valid v1."""
    if isinstance(manifest, Manifest):
        manifest = manifest.to_json()
    if not isinstance(manifest, dict):
        return [f"not a JSON object but {type(manifest).__name__}"]
    problems = [f"{_where(e.absolute_path)}: {e.message}"
                for e in sorted(_validator().iter_errors(manifest), key=lambda e: list(map(str, e.absolute_path)))]
    fr = manifest.get("frames") if isinstance(manifest.get("frames"), dict) else {}
    if isinstance(fr.get("items"), list) and fr.get("count") != len(fr["items"]):
        problems.append("frames.count does not match frames.items")
    tr = manifest.get("transcript") if isinstance(manifest.get("transcript"), dict) else {}
    if not tr.get("available") and tr.get("segments"):
        problems.append("transcript unavailable but has segments")
    cov = (manifest.get("partial") or {}).get("covered_ms") if isinstance(manifest.get("partial"), dict) else None
    if isinstance(cov, list) and len(cov) == 2 and all(isinstance(x, int) for x in cov) and cov[0] > cov[1]:
        problems.append("partial.covered_ms is not a [start, end] pair of milliseconds")
    return problems


def dumps(manifest: dict) -> str:
    return json.dumps(manifest, indent=2, ensure_ascii=False)


def loads(text: str) -> Manifest:
    """The typed manifest of a manifest's text, once it validates (ValueError naming the problems otherwise)."""
    m = json.loads(text)
    problems = validate(m)
    if problems:
        raise ValueError("invalid manifest: " + "; ".join(problems))
    return Manifest.from_json(m)


# --------------------------------------------------------------------------- a recording's listing row

@dataclass(frozen=True, slots=True, kw_only=True)
class RecordingRow:
    """A recording's listing row: the ``recordings`` table's row (the manifest stage) and, less its paths, the
    MCP server's library row (``talkthrough_assets.read.snapshot``)."""

    filename: str
    path: str | None
    kind: str | None
    duration_ms: int
    size_bytes: int | None
    recorded_at: str | None
    tz_offset_min: int | None
    wall_clock_source: str | None
    wall_clock_confidence: str | None
    language: str | None
    segment_count: int
    frame_count: int
    unique_frame_count: int
    diarized: bool
    speaker_count: int
    has_audio: bool
    has_video: bool
    transcript_available: bool
    manifest_path: str | None
    processed_at: str | None

    def to_json(self) -> dict:
        """The row as the ``recordings`` table stores it (its columns in this order)."""
        return {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}


def recording_row(m: Manifest, manifest_path: str | None = None) -> RecordingRow:
    """The one shape of a recording's listing row, from its typed manifest."""
    media, tr, fr, wc = m.media, m.transcript, m.frames, m.wall_clock
    if wc is not None and not wc.start_utc:  # an anchor without a time is no anchor
        wc = None
    diarized = bool(tr.diarization is not None and tr.diarization.available)
    return RecordingRow(
        filename=media.filename, path=media.path, kind=media.kind,
        duration_ms=int(round(float(media.duration_s or 0) * 1000)), size_bytes=media.size_bytes,
        recorded_at=wc.start_utc if wc else None, tz_offset_min=wc.tz_offset_min if wc else None,
        wall_clock_source=wc.source if wc else None, wall_clock_confidence=wc.confidence if wc else None,
        language=tr.language, segment_count=len(tr.segments), frame_count=int(fr.count or 0),
        unique_frame_count=int(fr.unique_count or 0), diarized=diarized,
        speaker_count=len(tr.diarization.speakers) if diarized else 0, has_audio=bool(media.has_audio),
        has_video=bool(media.has_video), transcript_available=bool(tr.available), manifest_path=manifest_path,
        processed_at=m.created_at)


if __name__ == "__main__":  # python -m talkthrough_assets.model.manifest PATH: write the generated schema
    with open(sys.argv[1], "w", encoding="utf-8") as fh:
        fh.write(schema_text())

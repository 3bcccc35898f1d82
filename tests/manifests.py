"""Small published generations for reader tests: a typed manifest from a few segments and frames, and the
snapshot the read side builds from its JSON (the same path a published manifest takes); and the manifest stage's
``build`` from stored rows written out as mappings, each read as the record the store hands the stage."""

from __future__ import annotations

import json
from typing import Mapping

from talkthrough_assets.model import manifest as model
from talkthrough_assets.model.frames import FrameChange, Keyframe, OcrFrame
from talkthrough_assets.model.media import ProbeRow, WallClockRow
from talkthrough_assets.model.transcript import Segment, TranscriptMeta, Word
from talkthrough_assets.model.turns import DiarizationRow, SpeakerSegment, SpeakerStats, Turn
from talkthrough_assets.store.records import as_record

RID = "0123456789abcdef"


def manifest(segments: list[dict] = (), frames: list[dict] = (), *, wall_clock: dict | None = None,
             filename: str = "f.mka", duration_ms: int = 9000, names: dict[str, str] | None = None,
             turns: list = (), model_name: str = "test", has_video: bool | None = None) -> model.Manifest:
    """A finished generation; ``names`` (even empty) makes it diarized, its labels those of the segments and
    turns."""
    segs = [model.Segment(**s) for s in segments]
    items = [model.FrameItem(**f) for f in frames]
    video = bool(items) if has_video is None else has_video
    di = None
    if names is not None:
        labels = sorted({s.speaker for s in segs if s.speaker} | {t[2] for t in turns})
        di = model.Diarization(
            available=True, reason=None, engine="test", engine_version=None, segmentation_model=None,
            embedding_model=None, requested_num_speakers=None, detected_num_speakers=len(labels), threshold=None,
            speakers=[model.Speaker(label=lab, talk_time_ms=0, turn_count=0, first_ms=None, last_ms=None)
                      for lab in labels], turns=[tuple(t) for t in turns], speaker_names=names or None)
    return model.Manifest(
        schema=model.SCHEMA, job_id=RID, created_at="2026-03-14T10:00:00.000+00:00",
        media=model.Media(path=None, filename=filename, kind="video" if video else "audio",
                          duration_s=duration_ms / 1000, size_bytes=None, width=None, height=None, video_codec=None,
                          has_audio=True, has_video=video),
        wall_clock=model.WallClock(**wall_clock) if wall_clock else None,
        transcript=model.Transcript(available=True, reason=None, language="en", model=model_name, segments=segs,
                                    diarization=di),
        frames=model.Frames(count=len(items), unique_count=sum(f.duplicate_of is None for f in items), cap_hit=False,
                            items=items),
        caps=model.Caps(max_seconds=None, max_frames=None, scene_threshold=None, ocr="on"), tool_versions={})


def snap(*args, **kw):
    """The read side's snapshot of :func:`manifest` (through its published JSON)."""
    from talkthrough_assets.read import snapshot

    return snapshot.build(RID, json.loads(json.dumps(manifest(*args, **kw).to_json())), sig=(1, 2, 3))


# the manifest stage's inputs: the record ``stages.manifest.build_stored`` reads each one's table as
STAGE_INPUTS = {"probe": ProbeRow, "wall_clock": WallClockRow, "transcript": TranscriptMeta, "segments": Segment,
                "words": Word, "diarization": DiarizationRow, "turns": Turn, "speakers": SpeakerStats,
                "speaker_segments": SpeakerSegment, "keyframes": Keyframe, "dedup": FrameChange, "ocr": OcrFrame}


def stage_build(**kw) -> model.Manifest:
    """``stages.manifest.build`` of rows given as mappings (a list for a table's rows, one mapping for its one
    row; a record passes as it is), each read into its record by the store's own reader
    (:func:`store.records.as_record`)."""
    from talkthrough_assets.stages import manifest as manifest_stage

    def typed(record, row):
        return as_record(record, row) if isinstance(row, Mapping) else row  # a record already

    for name, record in STAGE_INPUTS.items():
        value = kw.get(name)
        if isinstance(value, (list, tuple)):
            kw[name] = [typed(record, r) for r in value]
        elif value is not None:
            kw[name] = typed(record, value)
    return manifest_stage.build(**kw)

"""manifest: assemble ``talkthrough-manifest/v1`` from stage outputs (:func:`build`, pure), publish it and the
recordings row (:func:`run`)."""

from __future__ import annotations

import json

from dataclasses import asdict, dataclass, replace
from datetime import datetime, timezone
from typing import Any, Mapping, Sequence

from talkthrough_assets.model.runs import StageRun
from talkthrough_assets import store
from talkthrough_assets.core.errors import StageError
from talkthrough_assets.stages.turns import voices
from talkthrough_assets.stages.turns.labels import label_num
from talkthrough_assets.stages.turns.speaker_names import name_candidates
from talkthrough_assets.stages.keyframes import CAP_REASON_PREFIX
from talkthrough_assets.stages.segments.transcribe import quality as transcript_quality
from talkthrough_assets.model import manifest as model
from talkthrough_assets.model.manifest import (SCHEMA, Caps, Diarization, FrameItem, Frames, Manifest, Media,
                                               Segment, Speaker, Transcript, VoiceMatch, recording_row,
                                               validate)
from talkthrough_assets.model.frames import FrameChange, Keyframe, OcrFrame
from talkthrough_assets.model.media import ProbeRow, WallClockRow
from talkthrough_assets.model.speakers import describe_match
from talkthrough_assets.model.wallclock import view as wallclock_view
from talkthrough_assets.model.transcript import Segment as TranscriptSegment, TranscriptMeta, Word
from talkthrough_assets.model.turns import DiarizationRow, Recognition, SpeakerSegment, SpeakerStats, Turn
from talkthrough_assets.stages import probe as probe_stage
from talkthrough_assets.model import search_index, search_index_docs
from talkthrough_assets.stages.runner import CheckResult, StageResult, digest, probe_row, stage_reason

CODE_VERSION = "6"  # 6: voice matches and name sources per speaker; 5: transcript.quality
NOT_TRANSCRIBED = TranscriptMeta(available=False, reason="not transcribed", language=None,
                                 language_probability=None, model=None)


def _versions() -> dict:
    from importlib.metadata import PackageNotFoundError, version

    out = {}
    for label, dist in (("talkthrough", "talkthrough"), ("faster-whisper", "faster-whisper"),
                        ("rapidocr", "rapidocr"), ("sherpa-onnx", "sherpa-onnx"), ("av", "av"),
                        ("dagster", "dagster")):
        try:
            out[label] = version(dist)
        except PackageNotFoundError:
            out[label] = None
    try:
        import av

        out["ffmpeg"] = ".".join(map(str, av.library_versions.get("libavformat", ()))) or None
    except Exception:
        out["ffmpeg"] = None
    return out


def build(*, recording_id: str, probe: ProbeRow, settings: Mapping[str, Any],
          wall_clock: WallClockRow | None = None, transcript: TranscriptMeta | None = None,
          segments: Sequence[TranscriptSegment] = (), words: Sequence[Word] = (),
          diarization: DiarizationRow | None = None, turns: Sequence[Turn] = (),
          speakers: Sequence[SpeakerStats] = (), speaker_segments: Sequence[SpeakerSegment] = (),
          keyframes: Sequence[Keyframe] = (), dedup: Sequence[FrameChange] = (), ocr: Sequence[OcrFrame] = (),
          speaker_names: dict | None = None, frames_reason: str | None = None,
          voice_matches: Mapping[str, Recognition] | None = None) -> Manifest:
    """The typed manifest of one recording from its stages' stored records (pure but for the clock and the
    installed versions). ``segments``: Whisper's; ``speaker_segments``, when the turns stage attributed them,
    stand in for them."""
    block = None
    if diarization is not None and diarization.requested:
        block = _diarization(diarization, turns, speakers, ocr, settings, speaker_names, voice_matches)
    rows = [_segment(s) for s in speaker_segments] or [_segment(s) for s in segments]
    return Manifest(
        schema=SCHEMA, job_id=recording_id, created_at=datetime.now(timezone.utc).isoformat(timespec="seconds"),
        media=_media(probe), wall_clock=wallclock_view(wall_clock),
        transcript=_transcript(transcript, rows, words, block),
        frames=_frames(probe, keyframes, dedup, ocr, frames_reason),
        caps=Caps(max_seconds=settings.get("max_seconds"), max_frames=settings.get("max_frames"),
                  scene_threshold=settings.get("scene_threshold"), ocr="on" if settings.get("ocr") else "off"),
        tool_versions=_versions(),
    )


def _media(probe: ProbeRow) -> Media:
    header = probe.header_duration_ms
    return Media(
        path=probe.path, filename=probe.filename, kind=probe.kind,
        duration_s=round(probe.duration_ms / 1000, 3), size_bytes=probe.size_bytes,
        width=probe.width, height=probe.height, video_codec=probe.video_codec,
        has_audio=probe.has_audio, has_video=probe.has_video,
        # decoded time beats header time: both, when the file ends before its header says
        header_duration_s=round(header / 1000, 3) if header else None,
        readable_note=probe_stage.readable_note(probe) if header else None)


def _segment(s: TranscriptSegment | SpeakerSegment) -> Segment:
    if isinstance(s, SpeakerSegment):
        return Segment(seq=s.seq, t0_ms=s.t0_ms, t1_ms=s.t1_ms, text=s.text, speaker=s.speaker,
                       source_seq=s.source_seq, overlap=list(s.overlap or ()) or None)
    return Segment(seq=s.seq, t0_ms=s.t0_ms, t1_ms=s.t1_ms, text=s.text)


def _transcript(meta: TranscriptMeta | None, rows: list[Segment], words: Sequence[Word],
                diarization: Diarization | None) -> Transcript:
    tr = meta or NOT_TRANSCRIBED
    return Transcript(
        available=bool(tr.available), reason=tr.reason, language=tr.language, model=tr.model, segments=rows,
        words=[(w.t0_ms, w.t1_ms, w.word) for w in words],
        # what the drop rules removed (words, by reason), kept in doubt, and the speech left without words
        quality=transcript_quality(tr), diarization=diarization)


def _diarization(row: DiarizationRow, turns: Sequence[Turn], speakers: Sequence[SpeakerStats],
                 ocr: Sequence[OcrFrame], settings: Mapping[str, Any], speaker_names: dict | None,
                 voice_matches: Mapping[str, Recognition] | None) -> Diarization:
    # OCR name candidates: hints only, never applied as names without `talkthrough name`
    cands = name_candidates(turns, ocr)
    # names a person confirmed (`talkthrough name`), then voice matches with enrolled people: hints, applied
    # as names only with the apply_voice_names setting and a score >= voices.APPLY_SIMILARITY, marked "voice"
    names = dict(speaker_names or {})
    sources = {lab: "confirmed" for lab in names}
    matched = {}
    for lab, r in (voice_matches or {}).items():
        applied = bool(settings.get("apply_voice_names") and r.applicable and lab not in names)
        if applied:
            names[lab], sources[lab] = r.person, "voice"
        vm = VoiceMatch(person=r.person, score=r.score, recordings=r.recordings, applicable=r.applicable,
                        applied=applied, hint="")
        matched[lab] = replace(vm, hint=describe_match(vm))
    ordered = dict(sorted(names.items(), key=lambda kv: label_num(kv[0])))
    return Diarization(
        available=row.available, reason=row.reason, engine=row.engine, engine_version=row.engine_version,
        segmentation_model=row.segmentation_model, embedding_model=row.embedding_model,
        requested_num_speakers=row.requested_num_speakers, detected_num_speakers=row.detected_num_speakers,
        speaker_count=row.speaker_count, threshold=row.threshold,
        speakers=[Speaker(label=s.label, talk_time_ms=s.talk_time_ms, turn_count=s.turn_count, first_ms=s.first_ms,
                          last_ms=s.last_ms, name_candidates=cands.get(s.label) or None,
                          voice_match=matched.get(s.label)) for s in speakers],
        turns=[(t.t0_ms, t.t1_ms, t.speaker) for t in turns],
        speaker_names=ordered or None, speaker_name_sources={lab: sources[lab] for lab in ordered} or None)


def _frames(probe: ProbeRow, keyframes: Sequence[Keyframe], dedup: Sequence[FrameChange],
            ocr: Sequence[OcrFrame], reason: str | None) -> Frames:
    dups = {d.ms: d.duplicate_of for d in dedup}
    texts = {o.ms: o.text for o in ocr}
    items = [FrameItem(ms=k.ms, file=k.file,  # relative to the data root
                       duplicate_of=dups.get(k.ms), ocr_text=texts.get(k.ms) or None) for k in keyframes]
    return Frames(count=len(items), unique_count=sum(1 for i in items if i.duplicate_of is None),
                  reason=reason or (None if probe.has_video else "audio-only recording: no video stream"),
                  # a cap left frames out: max_seconds (probe), or the keyframe budget (its reason says so)
                  cap_hit=bool(probe.cap_hit) or CAP_REASON_PREFIX in (reason or ""), items=items)


@dataclass(frozen=True)
class Options:
    """What the manifest stage runs with (built by ``pipeline.options`` from the settings). Its config hash covers
    ``speaker_names`` and ``apply_voice_names``; the caps it records are its upstream stages' settings (a change
    re-runs that stage, and so this one)."""

    speaker_names: dict | None
    apply_voice_names: bool
    max_seconds: int
    max_frames: int
    scene_threshold: float
    ocr: bool | None


def build_stored(rid: str, opts: Options) -> Manifest:
    """:func:`build` from the stored records of the stages upstream."""
    cfg = asdict(opts)
    return build(
        frames_reason=stage_reason(rid, "keyframes"), recording_id=rid, probe=probe_row(rid),
        wall_clock=store.read_one("wall_clock", rid, record=WallClockRow),
        transcript=store.read_one("transcripts", rid, record=TranscriptMeta),
        segments=store.read_rows("segments", rid, record=TranscriptSegment),
        words=store.read_rows("words", rid, record=Word),
        diarization=store.read_one("diarization", rid, record=DiarizationRow),
        turns=store.read_rows("turns", rid, record=Turn),
        speakers=store.read_rows("speakers", rid, record=SpeakerStats),  # the manifest adds their name candidates
        speaker_segments=store.read_rows("speaker_segments", rid, record=SpeakerSegment),
        keyframes=store.read_rows("keyframes", rid, record=Keyframe),
        dedup=store.read_rows("dedup", rid, record=FrameChange), ocr=store.read_rows("ocr", rid, record=OcrFrame),
        settings=cfg, speaker_names=cfg.get("speaker_names") or None,
        # recognition against everyone enrolled now: a diarized recording's voiceprints only
        voice_matches=voices.matches_for(rid, cfg.get("speaker_names") or None),
    )


def verify(rid: str, validated: bytes | None = None) -> CheckResult:
    """``manifest_schema_valid`` on the published bytes, read back from the data root. ``validated``: bytes the
    caller checked against the schema already (the run that published them): read back equal, they are not
    checked a second time."""
    try:
        raw = store.get_bytes(store.manifest_key(rid))
        if raw is None:
            problems = ["no published manifest (materialize `manifest`)"]
        else:
            problems = [] if validated is not None and raw == validated else validate(json.loads(raw))
    except (OSError, ValueError) as e:
        problems = [f"unreadable manifest: {e}"]
    return CheckResult("manifest_schema_valid", not problems, "; ".join(problems) if problems else SCHEMA)


def voice_check(rid: str) -> CheckResult:
    """``unnamed_speakers_matched`` on the published manifest: the labels a voice match suggests a name for
    that no one confirmed or applied (an operator sees which recordings gained likely names)."""
    open_ = [f"{lab}: {vm.hint or describe_match(vm)}"
             for lab, vm in (voices.published_matches(rid) or {}).items() if not vm.applied]
    return CheckResult("unnamed_speakers_matched", not open_,
                       "; ".join(open_) if open_ else "no unnamed speaker matches an enrolled person")


def stale(rid: str, cfg: dict, stage_run: StageRun | None, opts=None) -> bool:
    """Its StageSpec's ``stale``: with diarization on, someone enrolled, renamed or forgotten since the manifest
    matched the voices (only the manifest re-checks them)."""
    if not cfg.get("diarize"):
        return False
    try:
        return voices.hints_changed(rid, cfg.get("speaker_names") or None)
    except Exception:  # noqa: BLE001 - a damaged people partition never blocks processing
        return False


def checked(m: Manifest) -> dict:
    """``m`` as published JSON, once it fits the shipped schema; else a StageError naming what does not fit
    (nothing is published)."""
    data = m.to_json()
    problems = validate(data)
    if problems:
        more = f" (and {len(problems) - 5} more)" if len(problems) > 5 else ""
        raise StageError(f"the manifest does not fit {SCHEMA} (model/{model.SCHEMA_FILE}): "
                         + "; ".join(problems[:5]) + more)
    return data


def run(rid: str, opts: Options) -> StageResult:
    typed = build_stored(rid, opts)
    m = checked(typed)
    # never the size of the generation published now (a reader pairs a manifest with its index part by size)
    data = search_index.distinct_size(rid, store.json_bytes(m))
    # the search index of this generation: the SQL terms table and the MCP server's part,
    # both from the manifest about to be published, written before it
    part, docs = search_index.write_part(rid, typed, data)
    for source in search_index_docs.SOURCES:
        store.write_table("terms", rid, search_index_docs.term_table_rows(docs, source), part=source)
    path = store.put_bytes(store.manifest_key(rid), data)
    search_index.drop_parts(rid, keep=part)
    try:
        search_index.maybe_compact(rid)  # merged lazily: a failure here costs only speed
    except Exception:
        pass
    row = recording_row(typed, str(path))
    store.write_table("recordings", rid, [row])
    store.ensure_catalog()
    md = {"manifest": str(path), "duration_s": m["media"]["duration_s"], "segments": row.segment_count,
          "frames": row.frame_count, "unique_frames": row.unique_frame_count,
          "recorded_at": row.recorded_at or "null",
          "transcript_head": " ".join(s["text"] for s in m["transcript"]["segments"][:5])[:400]}
    stable = {k: v for k, v in m.items() if k != "created_at"}
    # what readers will get: the published bytes, read back from the data root (not the dict above)
    return StageResult(md, digest(stable), [verify(rid, validated=data), voice_check(rid)], manifest=m)

"""What a person sees of recordings without opening media or Dagster: the short summary of one recording
(what `talkthrough process` prints), the list of processed recordings, and the registered copies whose name
matches a text."""

from __future__ import annotations

from dataclasses import asdict

from talkthrough_assets import store
from talkthrough_assets.pipeline import events, sources
from talkthrough_assets.stages import runner
from talkthrough_assets.stages import probe as probe_stage
from talkthrough_assets.stages import turns as turns_stage
from talkthrough_assets.model import wallclock
from talkthrough_assets.model.manifest import RecordingRow
from talkthrough_assets.model.media import ProbeRow, WallClockRow
from talkthrough_assets.model.transcript import Segment, TranscriptMeta
from talkthrough_assets.model.turns import DiarizationRow, SpeakerSegment
from talkthrough_assets.stages.segments import stage as segments_stage
from talkthrough_assets.stages.segments import transcribe
from talkthrough_assets.model.wallclock import t_wall

PREVIEW_SEGMENTS = 15


def summary(rid: str) -> dict:
    """A short, context-friendly summary from stored outputs (no media access)."""
    rec = store.read_one("recordings", rid, record=RecordingRow)
    out: dict = {"recording_id": rid, "manifest": store.data_location(store.manifest_key(rid)) if rec else None}
    if not rec:
        return out
    wc = store.read_one("wall_clock", rid, record=WallClockRow)
    # the file ends before (or after) its header says
    note = probe_stage.readable_note(store.read_one("probe", rid, record=ProbeRow))
    if note:
        out["warning"] = note
    segs = (store.read_rows("speaker_segments", rid, record=SpeakerSegment)
            or store.read_rows("segments", rid, record=Segment))
    tr = store.read_one("transcripts", rid, record=TranscriptMeta)
    di = store.read_one("diarization", rid, record=DiarizationRow)
    out.update({
        "filename": rec.filename, "kind": rec.kind, "duration_s": rec.duration_ms / 1000,
        # the other names the same bytes were registered under
        "aliases": [n for n in sources.recording_names(rid) if n != rec.filename],
        "wall_clock": asdict(anchor) if (anchor := wallclock.view(wc)) else None,
        "transcript": {"available": rec.transcript_available, "reason": tr.reason if tr else None,
                       "language": rec.language, "segments": rec.segment_count,
                       # chunks with a stored Whisper result (derived from the chunk keys), and failed ones
                       "coverage": _coverage_text(rid),
                       "chunks_reason": runner.stage_reason(rid, "segments"),
                       **{k: v for k, v in asdict(transcribe.quality(tr)).items() if k != "uncovered"}},
        "frames": {"count": rec.frame_count, "unique": rec.unique_frame_count,
                   "dir": store.data_location(store.frames_key(rid)),
                   "reason": runner.stage_reason(rid, "keyframes"), "contact_sheet": _contact_sheet(rid)},
        # the HTML page each run writes beside the manifest (`talkthrough report` writes one anywhere)
        "report": store.data_location(store.report_key(rid)) if store.exists(store.report_key(rid)) else None,
        "diarized": rec.diarized, "speakers": rec.speaker_count,
        # which count was used and why: given with --num-speakers, or found from the audio
        "speakers_note": di.speaker_count if di and di.available else None,
        # --diarize asked for and not done (models missing, no speech ...): why, here and not only in the manifest
        "diarization_reason": (di.reason or "diarization failed") if di and di.requested
        and not di.available else None,
        # asked for, and not done for want of its models: the command did not do what it was asked
        "diarization_unavailable": turns_stage.models_were_missing(di),
        "preview": [
            {"t_ms": s.t0_ms, "t_wall": t_wall(wc, s.t0_ms), "text": s.text,
             **({"speaker": s.speaker} if getattr(s, "speaker", None) else {})}
            for s in segs[:PREVIEW_SEGMENTS]
        ],
        "more_segments": max(0, len(segs) - PREVIEW_SEGMENTS),
    })
    if rec.diarized:  # voice matches with enrolled people, as the published manifest shows them
        from talkthrough_assets.model.speakers import describe_match
        from talkthrough_assets.stages.turns import voices

        shown = voices.published_matches(rid)
        if shown:  # None: unreadable, shown as none
            out["voice_matches"] = {lab: m.hint or describe_match(m) for lab, m in shown.items()}
    return out


def _coverage_text(rid: str) -> str | None:
    """The recording's chunks with a stored Whisper result, in words (None: no chunk plan)."""
    cov = segments_stage.coverage(rid)
    return cov.text if cov else None


def _contact_sheet(rid: str) -> str | None:
    """The recording's contact sheet (every scene once, with its time), written beside its report."""
    key = store.contact_sheet_key(rid)
    return store.data_location(key) if store.exists(key) else None


def list_recordings() -> list[dict]:
    con = store.connect()
    try:
        cur = con.execute("SELECT recording, filename, kind, duration_ms, recorded_at, segment_count, frame_count, "
                          "diarized FROM recordings ORDER BY recorded_at NULLS LAST, filename")
        cols = [d[0] for d in cur.description]
        rows = [dict(zip(cols, r)) for r in cur.fetchall()]
    finally:
        con.close()
    for r in rows:  # derived from the stored chunk keys, not recorded
        cov = segments_stage.coverage(r["recording"])
        r["coverage"] = cov.text if cov else None
        r["chunks"] = f"{cov.covered}/{cov.chunks}" if cov else None
    return rows


def find_recordings(text: str) -> list[dict]:
    """Registered recordings (processed, failed or not run yet) with a copy whose file name or path contains
    ``text`` (case-insensitive): the recording id is the Dagster partition to pick for that file."""
    con = store.connect()
    try:
        ids = [r[0] for r in con.execute(
            "SELECT DISTINCT recording FROM sources WHERE contains(lower(path), lower(?)) ORDER BY recording",
            [text]).fetchall()]
    finally:
        con.close()
    out = []
    for rid in ids:
        names = sources.recording_names(rid)
        processed = store.read_one("recordings", rid) is not None
        reason = events.failure_reason(rid)
        out.append({"recording": rid, "filename": names[0] if names else None, "aliases": names[1:],
                    "state": "failed" if reason else "processed" if processed else "registered",
                    "reason": reason, "coverage": _coverage_text(rid)})
    return out

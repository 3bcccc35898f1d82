"""A recording's listing row from its ``talkthrough-manifest/v1``: the one shape the manifest stage stores in the
``recordings`` table and the MCP server's library lists."""

from __future__ import annotations

from talkthrough_assets.model.wallclock import view as wallclock_view


def recording_row(m: dict, manifest_path: str | None = None) -> dict:
    """The one shape of a recording's listing row, from its manifest: the ``recordings`` table's row (the
    manifest stage) and the MCP server's library row (``talkthrough_assets.read.snapshot``) are both this. Raises
    KeyError/TypeError/ValueError on a manifest that is not talkthrough-manifest/v1."""
    media, tr, fr = m["media"], m["transcript"], m["frames"]
    wc = wallclock_view(m.get("wall_clock")) or {}
    di = tr.get("diarization") or {}
    diarized = bool(di.get("available"))
    return {
        "filename": media["filename"], "path": media.get("path"), "kind": media.get("kind"),
        "duration_ms": int(round(float(media.get("duration_s") or 0) * 1000)), "size_bytes": media.get("size_bytes"),
        "recorded_at": wc.get("start_utc"), "tz_offset_min": wc.get("tz_offset_min"),
        "wall_clock_source": wc.get("source"), "wall_clock_confidence": wc.get("confidence"),
        "language": tr.get("language"), "segment_count": len(tr.get("segments") or []),
        "frame_count": int(fr.get("count") or 0), "unique_frame_count": int(fr.get("unique_count") or 0),
        "diarized": diarized, "speaker_count": len(di.get("speakers") or []) if diarized else 0,
        "has_audio": bool(media.get("has_audio")), "has_video": bool(media.get("has_video")),
        "transcript_available": bool(tr.get("available")), "manifest_path": manifest_path,
        "processed_at": m.get("created_at"),
    }

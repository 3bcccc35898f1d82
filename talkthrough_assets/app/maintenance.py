"""What the upkeep commands of `talkthrough` do to the data root: repair what is damaged, forget a recording
(and say first what would go), collect Whisper and OCR results no recording uses. Plain functions returning
data over :mod:`service` and the segments stage's store; the CLI prints it."""

from __future__ import annotations

from talkthrough_assets.core.errors import TalkthroughError


def repair(ref: str | None = None) -> list[dict]:
    """Re-make what is missing or damaged of one recording (id or file) or of all: one dict per recording."""
    from talkthrough_assets import store
    from talkthrough_assets.app import service
    from talkthrough_assets.core.errors import UsageError

    rid = service.resolve_recording(ref) if ref else None
    if rid is not None and not store.is_known(rid):  # as every other command says of an id nothing is stored under
        raise UsageError(f"unknown recording {rid}: nothing stored of it (`talkthrough recordings` lists them)")
    return service.repair(rid)


def forget_plan(ref: str) -> dict:
    """What `forget` would remove of a recording (id or file): its id, the names it was registered under, the
    stored keys that exist and the data root. :class:`TalkthroughError` when nothing of it is stored."""
    from talkthrough_assets import store
    from talkthrough_assets.app import service
    from talkthrough_assets.pipeline import sources

    rid = service.resolve_recording(ref)
    if not store.is_known(rid):
        raise TalkthroughError(f"unknown recording {rid}: nothing stored of it (`talkthrough recordings` lists them)")
    from talkthrough_assets.store import cache_gc

    return {"recording_id": rid, "names": sources.recording_names(rid), "keys": store.present_keys(rid),
            "root": store.data_location(""), "results": cache_gc.only_used_by(rid)}


def forget(ref: str) -> dict:
    """Remove a recording (id or file) everywhere (``service.forget``); ``store.PartitionBusy`` while it runs."""
    from talkthrough_assets.app import service

    return service.forget(service.resolve_recording(ref))


def collect_garbage(dry_run: bool = False) -> dict:
    """Remove (or with ``dry_run`` count) the Whisper chunk and OCR results no recording uses any more."""
    from talkthrough_assets.stages.segments import stage as segments

    from talkthrough_assets import store
    from talkthrough_assets.store import cache_gc

    out = cache_gc.gc(dry_run=dry_run)
    temp = store.tempfiles.sweep(remove=not dry_run)  # temp files of writers that are gone (killed runs)
    out["temp_files"] = {"removed": len(temp), "removed_bytes": sum(n for _, n in temp), "paths": [p for p, _ in temp]}
    return out

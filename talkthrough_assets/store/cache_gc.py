"""The garbage collection of the shared result caches: Whisper chunk results (``chunks/whisper/``, named by each
recording's ``chunks`` table) and OCR results (``chunks/ocr/``, named by its ``ocr_keys`` table).

A stored result is shared by every recording whose table names its key (the same samples or pixels under the same
settings are decoded once). :func:`gc` removes the results no recording names (refused while any run holds a
recording's lock); :func:`release` removes a forgotten recording's results that no other recording uses. The
``talkthrough gc`` command calls :func:`gc`.
"""

from __future__ import annotations

import time
from contextlib import ExitStack

from talkthrough_assets.store.backend import delete_file, exists, file_stamps, list_names
from talkthrough_assets.store.locks import partition_lock
from talkthrough_assets.store.paths import (CHUNKS_PREFIX, ID_RE, OCR_RESULTS_PREFIX, chunk_result_key, data_location,
                                            ocr_result_key)
from talkthrough_assets.store.tables import read_rows

GC_MIN_AGE_S = 600.0  # a result younger than this is kept by gc (a run that began meanwhile may be writing it)

# kind -> (the table naming a recording's keys, the stored results' folder, key -> stored path)
KINDS = {"whisper": ("chunks", CHUNKS_PREFIX, chunk_result_key),
         "ocr": ("ocr_keys", OCR_RESULTS_PREFIX, ocr_result_key)}


def _partitions(table: str) -> list[str]:
    return [n.split("=", 1)[1] for n in list_names(f"tables/{table}")
            if n.startswith("recording=") and ID_RE.match(n.split("=", 1)[1])]


def _known_recordings() -> list[str]:
    ids = set(_partitions("sources"))
    for table, _, _ in KINDS.values():
        ids.update(_partitions(table))
    return sorted(ids)


def used_keys(kind: str = "whisper", exclude: str | None = None) -> dict[str, int]:
    """Key -> chunk length (ms; 0 for OCR) of every result some recording names (``exclude``: but that one)."""
    table = KINDS[kind][0]
    out: dict[str, int] = {}
    for rid in _partitions(table):
        if rid == exclude:
            continue
        for r in read_rows(table, rid):
            out[r["key"]] = r.get("t1_ms", 0) - r.get("t0_ms", 0)
    return out


def stored(kind: str = "whisper") -> dict[str, tuple]:
    """Key -> :func:`store.stamp` of every stored result of that kind."""
    prefix = KINDS[kind][1]
    out = {}
    for sub in list_names(prefix):
        for name, st in file_stamps(f"{prefix}/{sub}").items():
            if name.endswith(".bin"):
                out[name[:-4]] = st
    return out


def gc(*, dry_run: bool = False, min_age_s: float = GC_MIN_AGE_S) -> dict:
    """Remove the stored Whisper chunk and OCR results no recording names. Holds every known recording's lock
    meanwhile (PartitionBusy, nothing removed, when a run holds one), and keeps results younger than
    ``min_age_s`` (a recording registered meanwhile may be writing them). Reports the disk the kept Whisper
    results take per hour of the audio they cover."""
    out: dict = {"dry_run": dry_run}
    with ExitStack() as stack:
        for rid in _known_recordings() if not dry_run else ():  # a dry run only reads: no lock file written
            stack.enter_context(partition_lock(rid, timeout_s=0.0))
        now_ns = time.time_ns()
        for kind, (_, _, path_of) in KINDS.items():
            used, have = used_keys(kind), stored(kind)
            garbage = {k: st for k, st in have.items() if k not in used and now_ns - st[2] >= min_age_s * 1e9}
            if not dry_run:
                for k in garbage:
                    delete_file(path_of(k))
            kept = {k: st for k, st in have.items() if k not in garbage}
            young = sum(1 for k in kept if k not in used)  # unused, but too new to be sure no run is writing it
            out[kind] = {"removed": len(garbage), "removed_bytes": sum(st[1] for st in garbage.values()),
                         "kept": len(kept), "kept_bytes": sum(st[1] for st in kept.values()),
                         "kept_young": young}
            if kind == "whisper":
                hours = sum(used[k] for k in kept if k in used) / 3.6e6
                out.update(out[kind], audio_hours=round(hours, 4),
                           bytes_per_audio_hour=round(out[kind]["kept_bytes"] / hours) if hours else None)
    out["min_age_s"] = min_age_s
    return out


def release(rid: str, keys: dict[str, list[str]]) -> list[str]:
    """After ``rid`` is forgotten: remove those of its stored results (``keys``: kind -> keys) no other recording
    names. The caller holds ``rid``'s lock."""
    gone = []
    for kind, ks in keys.items():
        path_of = KINDS[kind][2]
        others = used_keys(kind, exclude=rid)
        for k in dict.fromkeys(ks):
            if k not in others and exists(path_of(k)):
                delete_file(path_of(k))
                gone.append(data_location(path_of(k)))
    return gone


def only_used_by(rid: str) -> dict[str, int]:
    """Kind -> how many of ``rid``'s stored results no other recording names (what forgetting it releases)."""
    out = {}
    for kind, ks in keys_of(rid).items():
        others, path_of = used_keys(kind, exclude=rid), KINDS[kind][2]
        out[kind] = sum(1 for k in dict.fromkeys(ks) if k not in others and exists(path_of(k)))
    return out


def keys_of(rid: str) -> dict[str, list[str]]:
    """Kind -> the keys of ``rid``'s stored results (read before it is forgotten)."""
    return {kind: [r["key"] for r in read_rows(table, rid)] for kind, (table, _, _) in KINDS.items()}

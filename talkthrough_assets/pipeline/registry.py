"""Registering recordings: find media files, hash them, record their sources and add their partitions.

Shared by the CLI (through :mod:`talkthrough_assets.app.service`) and the Dagster ``register_folder`` job and drop-folder
sensor (:mod:`talkthrough_assets.defs`),
so neither imports the other. No Dagster import: ``instance`` is whatever DagsterInstance the caller
holds (only its dynamic-partition methods are used).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Iterable

from talkthrough_assets import store
from talkthrough_assets.model.media import ProbeRow
from talkthrough_assets.pipeline import sources
from talkthrough_assets.core.ids import recording_id
from talkthrough_assets.stages.probe import MEDIA_EXTS

PARTITIONS_NAME = "recordings"  # the dynamic partitions: one per recording id (sha256[:16])
RUNNER_TAG = "talkthrough/process"  # host:pid of the process that executes a run (orphaned-run checks)


def collect(paths: Iterable[str | os.PathLike], *, recursive: bool = True
            ) -> tuple[list[Path], list[tuple[Path, str]]]:
    """Expand folders (recursively unless told not to) into media files (``MEDIA_EXTS``, the one list
    the drop folder also uses); return (files, [(path, skip reason)])."""
    files, skipped = [], []
    for raw in paths:
        p = Path(raw).expanduser()
        if p.is_dir():
            for f in sorted(p.rglob("*") if recursive else p.iterdir()):
                if f.is_file() and not f.name.startswith("."):
                    (files.append(f) if f.suffix.lower() in MEDIA_EXTS
                     else skipped.append((f, f"not a media file extension ({f.suffix or 'none'})")))
        elif p.is_file():
            files.append(p)  # an explicitly named file is tried whatever its extension
        else:
            skipped.append((p, "no such file or folder"))
    return files, skipped


def ensure_partition(instance, rid: str) -> None:
    if not instance.has_dynamic_partition(PARTITIONS_NAME, rid):
        instance.add_dynamic_partitions(PARTITIONS_NAME, [rid])


def register(path: str | os.PathLike, instance) -> str:
    """Hash ``path``, record it as a source of its recording and make sure its partition exists."""
    rid = recording_id(path)
    sources.register_source(path, rid)
    ensure_partition(instance, rid)
    return rid


def register_many(paths: Iterable[str | os.PathLike], instance) -> list[str]:
    """Hash + register many files; add all new partitions in one call."""
    ids = []
    for p in paths:
        rid = recording_id(p)
        sources.register_source(p, rid)
        ids.append(rid)
    existing = set(instance.get_dynamic_partitions(PARTITIONS_NAME))
    new = [i for i in dict.fromkeys(ids) if i not in existing]
    if new:
        instance.add_dynamic_partitions(PARTITIONS_NAME, new)
    return ids


def registration_log(files: list, ids: list[str], known: set[str], root) -> str:
    """One line per file: its recording id (the partition to pick) and whether it is new or an alias
    (same bytes as a recording already registered, under its first name)."""
    lines, first = [], {}
    for f, rid in zip(files, ids):
        name = os.path.relpath(f, root) if root else str(f)
        if rid in known or rid in first:
            lines.append(f"{rid}  {name}  (alias of {first.get(rid) or sources.recording_filename(rid)})")
        else:
            first[rid] = Path(f).name
            lines.append(f"{rid}  {name}")
    return f"recording id -> file ({len(first)} new, {len(lines) - len(first)} alias(es)):\n" + "\n".join(lines)


def run_label(rids: list[str]) -> str | None:
    """What the runs list names a run over ``rids`` by (its ``talkthrough/filename`` tag): the first recording's
    file name (its id when it has none), ``NAME and N more`` for a backfill's batch; None for no recording."""
    if not rids:
        return None
    first = (sources.recording_filename(rids[0]) if store.ID_RE.fullmatch(rids[0]) else None) or rids[0]
    return first if len(rids) == 1 else f"{first} and {len(rids) - 1} more"


def known_duration_ms(rid: str, rerunning: Iterable[str] = ()) -> int | None:
    """The recording's duration as probed before (a run tags itself with it at its start); None when it is
    not probed yet, or when ``rerunning`` (the stages a run is about to run) probes it again."""
    if "probe" in rerunning:
        return None
    probed = store.read_one("probe", rid, record=ProbeRow)
    return probed.duration_ms if probed else None

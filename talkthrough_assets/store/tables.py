"""Parquet tables under ``tables/<table>/recording=<id>/<part>.parquet``: write a partition atomically
(rows checked against the table's schema), read it back, forget a recording."""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Iterable

import pyarrow as pa
import pyarrow.parquet as pq

from talkthrough_assets.store.integrity import file_problem, note_damaged
from talkthrough_assets.store.backend import delete_file, delete_tree, exists, list_names, move_file, parquet_source, write_parquet
from talkthrough_assets.store.paths import (SCHEMA_PARTITION, audio_key, check_id, contact_sheet_key, data_location, frames_key, local_path, manifest_key, partition_key, quarantine_key, report_key, settings_key, single_part, table_key, table_path)
from talkthrough_assets.store.schemas import LEGACY_TYPES, SCHEMAS, TABLES, conform, to_arrow

_schema_files_done: set[str] = set()


def ensure_schema_files() -> None:
    """One empty Parquet file per table so every view has a fixed schema even before data exists."""
    root = data_location("tables")
    if root in _schema_files_done:
        return
    for table, schema in SCHEMAS.items():
        key = table_key(table, SCHEMA_PARTITION)
        path, fs = parquet_source(key)
        try:
            same = pq.read_schema(path, filesystem=fs).equals(schema)
        except Exception:  # missing, or damaged: written anew
            same = False
        if not same:  # new or changed schema
            write_parquet(key, schema.empty_table())
    _schema_files_done.add(root)


def write_table(table: str, recording_id: str, rows: Iterable[dict], part: str = "part-0") -> Path:
    """Atomically replace one partition file of ``table`` with ``rows`` (validated against the schema:
    a column the schema lacks raises :class:`~.schemas.SchemaMismatch`)."""
    ensure_schema_files()
    write_parquet(table_key(table, recording_id, part), to_arrow(table, rows), compression="zstd")
    if part == "part-0" and single_part(table) and recording_id != SCHEMA_PARTITION:
        # the stage replaced its partition as a whole: a file it did not write would be read beside its rows
        for was, now in set_aside(stray_files(table, recording_id)):
            _say(f"moved a stray file out of {table}'s partition: {was} -> {now}")
    return table_path(table, recording_id, part)


def stray_files(table: str, recording_id: str, allowed: Iterable[str] | None = None,
                names: list[str] | None = None) -> list[str]:
    """Keys of the files in one partition that no stage writes there: in a single-part table anything but
    ``part-0.parquet``; in the others a name not in ``allowed`` (default: anything not ``*.parquet``). A
    dot-name is a writer's temp file (``store.tempfiles`` removes those whose writer is gone). ``names``: the
    partition's listing, when the caller has it."""
    check_id(recording_id)
    prefix = partition_key(table, recording_id)
    if single_part(table):
        allowed = {"part-0.parquet"}
    ok = (lambda n: n in allowed) if allowed is not None else (lambda n: n.endswith(".parquet"))
    names = list_names(prefix) if names is None else names
    return [f"{prefix}/{n}" for n in names if not n.startswith(".") and not ok(n)]


def set_aside(keys: Iterable[str]) -> list[tuple[str, str]]:
    """Move each key to the quarantine folder (``paths.quarantine_key``), nothing deleted: (was, now) for each."""
    when = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    moved = []
    for key in keys:
        try:
            moved.append((data_location(key), move_file(key, quarantine_key(key, when))))
        except FileNotFoundError:  # moved meanwhile by another writer of the partition
            continue
    return moved


def _say(line: str) -> None:
    """A warning straight to stderr (never stdout: the MCP server speaks there)."""
    try:
        sys.stderr.write(f"warning: {line}\n")
        sys.stderr.flush()
    except (OSError, ValueError):
        pass


def _partition_files(table: str, recording_id: str) -> list[str]:
    prefix = partition_key(table, recording_id)
    return [f"{prefix}/{n}" for n in list_names(prefix) if n.endswith(".parquet")]


def read_rows(table: str, recording_id: str, part: str | None = "part-0") -> list[dict]:
    """Rows of one partition (all parts when ``part`` is None); [] when nothing is stored."""
    keys = [table_key(table, recording_id, part)] if part else _partition_files(table, recording_id)
    out: list[dict] = []
    for key in keys:
        path, fs = parquet_source(key)
        try:
            out.extend(_read(path, fs, table).to_pylist())
        except FileNotFoundError:
            pass
        except Exception as e:  # a torn file or another schema: skipped with a warning naming it and the fix
            if fs is not None and isinstance(e, OSError) and not isinstance(e, ValueError):
                raise  # the object store did not answer: not damage
            note_damaged(data_location(key), file_problem(path, table) or str(e).splitlines()[0][:160])
    return out


def _read(path, fs, table: str):
    """A Parquet file of ``table`` in its schema; one with a column in an earlier version's form (its type in
    ``schemas.LEGACY_TYPES``) read as it is and conformed."""
    try:
        return pq.read_table(path, filesystem=fs, schema=SCHEMAS[table])
    except pa.ArrowNotImplementedError:
        if table not in LEGACY_TYPES:
            raise
        return conform(table, pq.read_table(path, filesystem=fs))


def read_one(table: str, recording_id: str, part: str = "part-0") -> dict | None:
    rows = read_rows(table, recording_id, part)
    return rows[0] if rows else None


def has_partition(table: str, recording_id: str) -> bool:
    return bool(_partition_files(table, recording_id))


def delete_partition(table: str, recording_id: str) -> None:
    delete_tree(partition_key(table, recording_id))


def recording_keys(recording_id: str) -> list[str]:
    """Every data-root key that holds something of one recording (folders and files): its partition of
    every table (sources/aliases and search terms included), frames, WAV, manifest, report, contact sheet and
    settings."""
    check_id(recording_id)
    return ([partition_key(t, recording_id) for t in TABLES]
            + [frames_key(recording_id), audio_key(recording_id), manifest_key(recording_id),
               report_key(recording_id), contact_sheet_key(recording_id), settings_key(recording_id)])


def recording_folders(recording_id: str) -> list[Path]:
    """This machine's folders that hold the files of one recording (where its writers leave their temp files):
    its partitions, its frames and the folders of its WAV, manifest, report and settings."""
    out: dict[str, Path] = {}
    for key in recording_keys(recording_id):
        folder = key if key.startswith(("tables/", "frames/")) else key.rpartition("/")[0]
        out.setdefault(folder, local_path(folder))
    return list(out.values())


def is_known(recording_id: str) -> bool:
    """Whether anything of this recording is stored (a table partition or a manifest)."""
    check_id(recording_id)
    return any(has_partition(t, recording_id) for t in TABLES) or exists(manifest_key(recording_id))


def present_keys(recording_id: str) -> list[str]:
    """The keys of :func:`recording_keys` that hold something now (what a forget would remove)."""
    return [k for k in recording_keys(recording_id) if exists(k) or bool(list_names(k)) or local_path(k).exists()]


def forget_recording(recording_id: str) -> list[str]:
    """Remove everything stored of one recording in the data root (and this machine's cache of it),
    the manifest first (readers stop serving it at once). Returns the locations that existed and were
    removed. The caller holds the recording's lock."""
    removed = []
    keys = recording_keys(recording_id)
    keys.sort(key=lambda k: not k.startswith("manifests/"))
    for key in keys:
        present = exists(key) or bool(list_names(key)) or local_path(key).exists()
        if key.startswith(("manifests/", "reports/", "settings/", "audio/")):
            delete_file(key)
        else:
            delete_tree(key)
        if present:
            removed.append(data_location(key))
    return removed


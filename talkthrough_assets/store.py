"""The one module that owns every path, table schema and write under the data root.

Layout under ``$TALKTHROUGH_HOME`` (default ``~/.talkthrough``)::

    tables/<table>/recording=<id>/<file>.parquet   source of truth (Hive layout)
    tables/<table>/recording=__schema__/...        empty file fixing each table's schema
    frames/<id>/<generation>/t<ms:08d>.jpg          keyframes (one generation live)
    audio/<id>.wav                                  16 kHz mono PCM cache
    manifests/<id>.json                             talkthrough-manifest/v1
    settings/<id>.json                              per-recording persisted overrides
    talkthrough.duckdb                              views over read_parquet (no data)
    dagster/                                        DAGSTER_HOME (SQLite run storage)
    models/                                         downloaded model cache

Every write is temp-file + ``os.replace`` in the same directory, so a reader sees the
previous complete file or the new complete file, never a partial one.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import tempfile
import threading
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterable, Iterator

import pyarrow as pa
import pyarrow.parquet as pq

ID_RE = re.compile(r"^[0-9a-f]{16}$")
SCHEMA_PARTITION = "__schema__"
CATALOG_VERSION = "3"


class InvalidRecordingId(ValueError):
    pass


def home() -> Path:
    return Path(os.environ.get("TALKTHROUGH_HOME") or Path.home() / ".talkthrough").expanduser().resolve()


def check_id(recording_id: str) -> str:
    if not isinstance(recording_id, str) or not ID_RE.fullmatch(recording_id):
        raise InvalidRecordingId(
            f"invalid recording id {recording_id!r}: expected 16 lowercase hex characters (sha256 prefix)"
        )
    return recording_id


# --------------------------------------------------------------------------- schemas

_S, _I, _F, _B = pa.string(), pa.int64(), pa.float64(), pa.bool_()

SCHEMAS: dict[str, pa.Schema] = {
    # every path a recording's bytes were seen under (aliases)
    "sources": pa.schema([("path", _S), ("filename", _S), ("size_bytes", _I), ("mtime", _F), ("seen_at", _S)]),
    "probe": pa.schema([
        ("path", _S), ("filename", _S), ("kind", _S), ("container", _S), ("duration_ms", _I), ("size_bytes", _I),
        ("width", _I), ("height", _I), ("fps", _F), ("video_codec", _S), ("audio_codec", _S),
        ("has_audio", _B), ("has_video", _B), ("tags_json", _S), ("file_mtime", _F),
        ("cap_hit", _B), ("max_seconds", _I), ("rotation", _I),
    ]),
    "wall_clock": pa.schema([
        ("start_utc", _S), ("tz_offset_min", _I), ("source", _S), ("confidence", _S), ("available", _B),
    ]),
    "transcripts": pa.schema([
        ("available", _B), ("reason", _S), ("language", _S), ("language_probability", _F), ("model", _S),
        ("segment_count", _I), ("word_count", _I), ("audio_ms", _I), ("elapsed_s", _F),
    ]),
    "segments": pa.schema([
        ("seq", _I), ("t0_ms", _I), ("t1_ms", _I), ("text", _S), ("avg_logprob", _F), ("no_speech_prob", _F),
    ]),
    "words": pa.schema([("seq", _I), ("idx", _I), ("t0_ms", _I), ("t1_ms", _I), ("word", _S), ("prob", _F)]),
    "diarization": pa.schema([
        ("available", _B), ("requested", _B), ("reason", _S), ("engine", _S), ("engine_version", _S),
        ("segmentation_model", _S), ("embedding_model", _S), ("requested_num_speakers", _I),
        ("detected_num_speakers", _I), ("threshold", _F), ("elapsed_s", _F),
    ]),
    "turns": pa.schema([("t0_ms", _I), ("t1_ms", _I), ("speaker", _S)]),
    "speakers": pa.schema([
        ("label", _S), ("talk_time_ms", _I), ("turn_count", _I), ("first_ms", _I), ("last_ms", _I),
        ("name_candidates_json", _S),
    ]),
    # attributed (possibly split) segments; joined at read time, whisper output untouched
    "speaker_segments": pa.schema([
        ("seq", _I), ("source_seq", _I), ("t0_ms", _I), ("t1_ms", _I), ("speaker", _S), ("text", _S),
    ]),
    "keyframes": pa.schema([
        ("ms", _I), ("file", _S), ("scene_score", _F), ("width", _I), ("height", _I), ("reason", _S),
    ]),
    "dedup": pa.schema([("ms", _I), ("dhash", _S), ("duplicate_of", _I), ("changed_json", _S)]),
    "ocr": pa.schema([("ms", _I), ("text", _S), ("boxes_json", _S), ("mean_score", _F), ("engine", _S)]),
    # search index: one row per (document, term); documents are transcript segments and OCR frames
    "terms": pa.schema([
        ("source", _S), ("ref", _I), ("t_ms", _I), ("term", _S), ("tf", _I), ("doc_len", _I),
    ]),
    "recordings": pa.schema([
        ("filename", _S), ("path", _S), ("kind", _S), ("duration_ms", _I), ("size_bytes", _I),
        ("recorded_at", _S), ("tz_offset_min", _I), ("wall_clock_source", _S), ("wall_clock_confidence", _S),
        ("language", _S), ("segment_count", _I), ("frame_count", _I), ("unique_frame_count", _I),
        ("diarized", _B), ("speaker_count", _I), ("has_audio", _B), ("has_video", _B),
        ("transcript_available", _B), ("manifest_path", _S), ("processed_at", _S),
    ]),
    # one row per stage materialization (file per stage): what config/code produced the current output
    "stage_runs": pa.schema([
        ("stage", _S), ("status", _S), ("config_hash", _S), ("code_version", _S), ("reason", _S),
        ("finished_at", _S), ("elapsed_s", _F),
    ]),
}

TABLES = tuple(SCHEMAS)


# --------------------------------------------------------------------------- paths

def tables_dir() -> Path:
    return home() / "tables"


def partition_dir(table: str, recording_id: str) -> Path:
    if table not in SCHEMAS:
        raise KeyError(f"unknown table {table!r}")
    if recording_id != SCHEMA_PARTITION:
        check_id(recording_id)
    return tables_dir() / table / f"recording={recording_id}"


def table_path(table: str, recording_id: str, part: str = "part-0") -> Path:
    return partition_dir(table, recording_id) / f"{part}.parquet"


def frames_root(recording_id: str) -> Path:
    return home() / "frames" / check_id(recording_id)


def frame_file_name(ms: int) -> str:
    return f"t{int(ms):08d}.jpg"


def audio_path(recording_id: str) -> Path:
    return home() / "audio" / f"{check_id(recording_id)}.wav"


def manifest_path(recording_id: str) -> Path:
    return home() / "manifests" / f"{check_id(recording_id)}.json"


def settings_path(recording_id: str) -> Path:
    return home() / "settings" / f"{check_id(recording_id)}.json"


def catalog_path() -> Path:
    return home() / "talkthrough.duckdb"


def dagster_home() -> Path:
    return home() / "dagster"


def models_dir() -> Path:
    return Path(os.environ.get("TALKTHROUGH_MODELS_DIR") or home() / "models")


def resolve_under_home(relative: str) -> Path:
    """Resolve a stored relative path, refusing anything that escapes the data root."""
    root = home()
    p = (root / relative).resolve()
    if root != p and root not in p.parents:
        raise PermissionError(f"path {relative!r} escapes the data root")
    return p


# --------------------------------------------------------------------------- atomic writes

def _tmp_in(directory: Path, suffix: str) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    fd, name = tempfile.mkstemp(prefix=".tmp-", suffix=suffix, dir=directory)
    os.close(fd)
    return Path(name)


@contextmanager
def atomic_path(path: Path, *, fsync: bool = False) -> Iterator[Path]:
    """The one temp-file + ``os.replace`` publish: yield a temp path in the target directory; when the
    block succeeds it replaces ``path`` (readers see the old file or the new one, never a partial one),
    otherwise it is removed. ``fsync`` flushes the bytes first (small state files: manifests, settings);
    bulk outputs skip it and rely on the filesystem ordering data before the rename (ext4's
    auto_da_alloc), since a lost Parquet file is re-made by re-running its stage."""
    tmp = _tmp_in(path.parent, path.suffix + ".part")  # never matches a reader's *.parquet glob
    try:
        yield tmp
        if fsync:
            fd = os.open(tmp, os.O_RDONLY)
            try:
                os.fsync(fd)
            finally:
                os.close(fd)
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def atomic_write_bytes(path: Path, data: bytes) -> Path:
    with atomic_path(path, fsync=True) as tmp:
        tmp.write_bytes(data)
    return path


def atomic_write_json(path: Path, obj: Any) -> Path:
    return atomic_write_bytes(path, json.dumps(obj, indent=2, ensure_ascii=False, sort_keys=False).encode())


def _table(table: str, rows: Iterable[dict]) -> pa.Table:
    schema = SCHEMAS[table]
    rows = list(rows)
    cols = {f.name: [r.get(f.name) for r in rows] for f in schema}
    return pa.table(cols, schema=schema)


def write_table(table: str, recording_id: str, rows: Iterable[dict], part: str = "part-0") -> Path:
    """Atomically replace one partition file of ``table`` with ``rows`` (validated against the schema)."""
    ensure_schema_files()
    path = table_path(table, recording_id, part)
    t = _table(table, rows)
    with atomic_path(path) as tmp:
        pq.write_table(t, tmp, compression="zstd")
    return path


def read_rows(table: str, recording_id: str, part: str | None = "part-0") -> list[dict]:
    """Rows of one partition (all parts when ``part`` is None); [] when nothing is stored."""
    d = partition_dir(table, recording_id)
    files = [d / f"{part}.parquet"] if part else sorted(d.glob("*.parquet"))
    out: list[dict] = []
    for f in files:
        if f.exists():
            out.extend(pq.read_table(f, schema=SCHEMAS[table]).to_pylist())
    return out


def read_one(table: str, recording_id: str, part: str = "part-0") -> dict | None:
    rows = read_rows(table, recording_id, part)
    return rows[0] if rows else None


def has_partition(table: str, recording_id: str) -> bool:
    d = partition_dir(table, recording_id)
    return d.exists() and any(d.glob("*.parquet"))


def delete_partition(table: str, recording_id: str) -> None:
    shutil.rmtree(partition_dir(table, recording_id), ignore_errors=True)


def read_json(path: Path, default: Any = None) -> Any:
    try:
        return json.loads(path.read_text())
    except FileNotFoundError:
        return default


# --------------------------------------------------------------------------- per-recording lock

class PartitionBusy(RuntimeError):
    pass


_held_locks: dict[str, int] = {}  # recording id -> depth (re-entrant within one process)
_held_guard = threading.Lock()


def lock_path(recording_id: str) -> Path:
    return home() / "locks" / f"{check_id(recording_id)}.lock"


@contextmanager
def partition_lock(recording_id: str, timeout_s: float = 0.0) -> Iterator[None]:
    """Exclusive writer lock for one recording across processes (flock; released by the kernel
    if the holder is killed, so a ``kill -9`` never leaves a stale lock). Re-entrant in-process."""
    import fcntl

    with _held_guard:  # stage threads of one run re-enter the lock their run already holds
        reentered = bool(_held_locks.get(recording_id))
        if reentered:
            _held_locks[recording_id] += 1
    if reentered:
        try:
            yield
        finally:
            with _held_guard:
                _held_locks[recording_id] -= 1
        return
    path = lock_path(recording_id)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    deadline = time.monotonic() + timeout_s
    try:
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    raise PartitionBusy(
                        f"recording {recording_id} is being processed by another run; try again when it finishes"
                    ) from None
                time.sleep(0.2)
        with _held_guard:
            _held_locks[recording_id] = 1
        try:
            yield
        finally:
            with _held_guard:
                _held_locks.pop(recording_id, None)
            fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)


# --------------------------------------------------------------------------- frames generations

def new_frames_generation(recording_id: str) -> Path:
    root = frames_root(recording_id)
    root.mkdir(parents=True, exist_ok=True)
    return Path(tempfile.mkdtemp(prefix=f"g{int(time.time() * 1000)}-", dir=root))


def prune_frame_generations(recording_id: str, keep: Iterable[str]) -> None:
    """Delete frame generation folders not listed in ``keep`` (relative names)."""
    root = frames_root(recording_id)
    keep = set(keep)
    if not root.exists():
        return
    for d in root.iterdir():
        if d.is_dir() and d.name not in keep:
            shutil.rmtree(d, ignore_errors=True)


# --------------------------------------------------------------------------- DuckDB catalog

_schema_files_done: set[Path] = set()


def ensure_schema_files() -> None:
    """One empty Parquet file per table so every view has a fixed schema even before data exists."""
    root = tables_dir()
    if root in _schema_files_done:
        return
    for table, schema in SCHEMAS.items():
        path = table_path(table, SCHEMA_PARTITION)
        if not path.exists() or not pq.read_schema(path).equals(schema):  # new or changed schema
            with atomic_path(path) as tmp:
                pq.write_table(schema.empty_table(), tmp)
    _schema_files_done.add(root)


def view_sql(table: str, root: Path | None = None) -> str:
    root = root or tables_dir()
    glob = (root / table / "recording=*" / "*.parquet").as_posix().replace("'", "''")
    return (
        f"CREATE OR REPLACE VIEW {table} AS SELECT * FROM read_parquet('{glob}', hive_partitioning=true, "
        f"union_by_name=true, hive_types={{'recording': VARCHAR}}) WHERE recording <> '{SCHEMA_PARTITION}'"
    )


def frames_view_sql() -> str:
    return (
        "CREATE OR REPLACE VIEW frames AS SELECT k.recording, k.ms, k.file, k.scene_score, k.width, k.height, "
        "d.dhash, d.duplicate_of, o.text AS ocr_text FROM keyframes k "
        "LEFT JOIN dedup d ON d.recording = k.recording AND d.ms = k.ms "
        "LEFT JOIN ocr o ON o.recording = k.recording AND o.ms = k.ms"
    )


def ensure_catalog() -> Path:
    """Create/refresh the DuckDB file holding only views (short-lived writer, closed at once).

    Views glob the Parquet tree at query time, so new partitions appear without rewriting
    the file; it is rewritten only when the catalog version changes.
    """
    import duckdb

    ensure_schema_files()
    path = catalog_path()
    marker = path.with_suffix(".version")
    if path.exists() and marker.exists() and marker.read_text() == CATALOG_VERSION:
        return path
    for attempt in range(50):
        try:
            con = duckdb.connect(str(path))
            break
        except duckdb.IOException:  # another process holds it; retry briefly
            time.sleep(0.1)
    else:
        raise RuntimeError(f"could not open {path} for writing: locked by another process")
    try:
        for table in SCHEMAS:
            con.execute(view_sql(table))
        con.execute(frames_view_sql())
    finally:
        con.close()
    atomic_write_bytes(marker, CATALOG_VERSION.encode())
    return path


def connect():
    """A DuckDB connection with all views, in memory: readers never take the catalog file's lock."""
    import duckdb

    ensure_schema_files()
    con = duckdb.connect(":memory:")
    for table in SCHEMAS:
        con.execute(view_sql(table))
    con.execute(frames_view_sql())
    return con

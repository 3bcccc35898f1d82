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
    locks/<id>.lock                                 per-recording flock (no TALKTHROUGH_PG_URL)
    locks/dagster-instance.lock                     held while the Dagster instance is opened (first-start race)
    state/dropdir-<folder key>/                     drop-folder sensor state (the cursor names one)

Every write is temp-file + ``os.replace`` in the same directory, so a reader sees the
previous complete file or the new complete file, never a partial one.

``TALKTHROUGH_HOME`` may also be an object-store URL (``s3://bucket/prefix``). Then the data above
(tables, frames, audio, manifests, settings) lives there, read and written through ``pyarrow.fs``
(S3 credentials, region and endpoint from the standard ``AWS_*`` variables, ``AWS_ENDPOINT_URL`` for
an S3-compatible server), and each write is one PUT (an object appears whole or not at all). What is
machine-local stays on this machine under ``TALKTHROUGH_LOCAL_HOME`` (default
``~/.talkthrough-local/<url hash>``): ``dagster/``, ``models/``, ``locks/``, ``state/``, the DuckDB catalog file,
and a cache of frames and WAVs laid out like the data root (the stages decode and OCR local files).
``home()`` is always that local directory; ``data_location()`` names the data root.
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


REMOTE_SCHEMES = ("s3://",)


def data_url() -> str:
    """``$TALKTHROUGH_HOME`` as given: a local folder (default ``~/.talkthrough``) or ``s3://bucket/prefix``."""
    return os.environ.get("TALKTHROUGH_HOME") or str(Path.home() / ".talkthrough")


def is_remote() -> bool:
    return data_url().startswith(REMOTE_SCHEMES)


def home() -> Path:
    """This machine's directory: the data root itself when it is local; for an ``s3://`` data root,
    ``$TALKTHROUGH_LOCAL_HOME`` (Dagster storage, models, locks, catalog, local frame/WAV cache)."""
    url = data_url()
    if url.startswith(REMOTE_SCHEMES):
        local = os.environ.get("TALKTHROUGH_LOCAL_HOME")
        if local:
            return Path(local).expanduser().resolve()
        import hashlib

        return (Path.home() / ".talkthrough-local" / hashlib.sha256(url.encode()).hexdigest()[:12]).resolve()
    return Path(url).expanduser().resolve()


def data_location(key: str = "") -> str:
    """Where ``key`` (a path relative to the data root) lives, as a user would name it."""
    if is_remote():
        return data_url().rstrip("/") + ("/" + key if key else "")
    return str(home() / key) if key else str(home())


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
        # segments the drop rules removed (stages.transcribe): their count, and a JSON list of
        # {t0_ms, t1_ms, reason, text}
        ("dropped_count", _I), ("dropped", _S),
    ]),
    "segments": pa.schema([
        ("seq", _I), ("t0_ms", _I), ("t1_ms", _I), ("text", _S), ("avg_logprob", _F), ("no_speech_prob", _F),
    ]),
    "words": pa.schema([("seq", _I), ("idx", _I), ("t0_ms", _I), ("t1_ms", _I), ("word", _S), ("prob", _F)]),
    "diarization": pa.schema([
        ("available", _B), ("requested", _B), ("reason", _S), ("engine", _S), ("engine_version", _S),
        ("segmentation_model", _S), ("embedding_model", _S), ("requested_num_speakers", _I),
        ("detected_num_speakers", _I), ("threshold", _F), ("elapsed_s", _F),
        # which speaker count was used and why ("found from the audio (--num-speakers auto)", "as given
        # (--num-speakers 4)", "2 of the 3 given (--num-speakers 3): <reason>")
        ("speaker_count", _S),
    ]),
    "turns": pa.schema([("t0_ms", _I), ("t1_ms", _I), ("speaker", _S)]),
    "speakers": pa.schema([
        # OCR name candidates need the ocr branch too: the manifest stage adds them (speaker hints)
        ("label", _S), ("talk_time_ms", _I), ("turn_count", _I), ("first_ms", _I), ("last_ms", _I),
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


# --------------------------------------------------------------------------- data root backend

_s3_cache: dict[tuple, Any] = {}
_s3_guard = threading.Lock()


def _remote() -> tuple[Any, str]:
    """(pyarrow S3FileSystem, "bucket/prefix") for an ``s3://`` data root, built once per settings."""
    import pyarrow.fs as pafs

    url = data_url()
    endpoint = os.environ.get("AWS_ENDPOINT_URL_S3") or os.environ.get("AWS_ENDPOINT_URL") or ""
    region = os.environ.get("AWS_REGION") or os.environ.get("AWS_DEFAULT_REGION") or "us-east-1"
    key = (url, endpoint, region, os.environ.get("AWS_ACCESS_KEY_ID"))
    with _s3_guard:
        if key not in _s3_cache:
            kw: dict[str, Any] = {"region": region}
            if endpoint:
                scheme, _, host = endpoint.partition("://")
                kw.update(endpoint_override=host.rstrip("/") if host else scheme,
                          scheme=scheme if host else "https")
            base = url[len("s3://"):].strip("/")
            if not base:
                raise ValueError(f"TALKTHROUGH_HOME={url!r}: expected s3://bucket[/prefix]")
            _s3_cache[key] = (pafs.S3FileSystem(**kw), base)
        return _s3_cache[key]


def check_key(key: str) -> str:
    """A stored path relative to the data root (``frames/<id>/<gen>/t….jpg``): no escape, no absolute."""
    parts = key.split("/")
    if not key or key.startswith("/") or "\\" in key or any(x in ("", ".", "..") for x in parts):
        raise PermissionError(f"path {key!r} escapes the data root")
    return key


def _local(key: str) -> Path:
    return home() / check_key(key)


def put_bytes(key: str, data: bytes, *, fsync: bool = True) -> str:
    """Publish ``data`` at ``key``: temp file + rename locally, one PUT on an object store."""
    if is_remote():
        fs, base = _remote()
        with fs.open_output_stream(f"{base}/{check_key(key)}") as out:
            out.write(data)
    else:
        with atomic_path(_local(key), fsync=fsync) as tmp:
            tmp.write_bytes(data)
    return data_location(key)


def get_bytes(key: str) -> bytes | None:
    """The bytes at ``key``, None when there is no such file/object."""
    if is_remote():
        fs, base = _remote()
        try:
            with fs.open_input_stream(f"{base}/{check_key(key)}") as f:
                return f.read()
        except FileNotFoundError:
            return None
    try:
        return _local(key).read_bytes()
    except (FileNotFoundError, IsADirectoryError, NotADirectoryError):
        return None


def stamp(key: str) -> tuple | None:
    """A change signature of the file at ``key`` ((inode, size, mtime_ns); inode 0 on an object
    store), None when absent."""
    if is_remote():
        import pyarrow.fs as pafs

        fs, base = _remote()
        info = fs.get_file_info(f"{base}/{check_key(key)}")
        if info.type != pafs.FileType.File:
            return None
        return (0, info.size, info.mtime_ns or 0)
    try:
        st = _local(key).stat()
    except (FileNotFoundError, NotADirectoryError):
        return None
    return (st.st_ino, st.st_size, st.st_mtime_ns)


def exists(key: str) -> bool:
    return stamp(key) is not None


def list_names(prefix: str) -> list[str]:
    """Names directly under the folder ``prefix`` (files and folders); [] when it does not exist."""
    if is_remote():
        import pyarrow.fs as pafs

        fs, base = _remote()
        sel = pafs.FileSelector(f"{base}/{check_key(prefix)}", allow_not_found=True, recursive=False)
        return sorted(i.base_name for i in fs.get_file_info(sel))
    try:
        return sorted(os.listdir(_local(prefix)))
    except (FileNotFoundError, NotADirectoryError):
        return []


def file_stamps(prefix: str) -> dict[str, tuple]:
    """Name -> :func:`stamp` of every file directly under the folder ``prefix``, from one listing
    (``os.scandir`` locally, one LIST request on an object store); {} when it does not exist."""
    if is_remote():
        import pyarrow.fs as pafs

        fs, base = _remote()
        sel = pafs.FileSelector(f"{base}/{check_key(prefix)}", allow_not_found=True, recursive=False)
        return {i.base_name: (0, i.size, i.mtime_ns or 0) for i in fs.get_file_info(sel)
                if i.type == pafs.FileType.File}
    out = {}
    try:
        with os.scandir(_local(prefix)) as it:
            for e in it:
                try:
                    if e.is_file():
                        st = e.stat()
                        out[e.name] = (st.st_ino, st.st_size, st.st_mtime_ns)
                except FileNotFoundError:  # removed while listing
                    continue
    except (FileNotFoundError, NotADirectoryError):
        pass
    return out


def delete_tree(prefix: str) -> None:
    """Remove the folder ``prefix`` from the data root (and from this machine's cache)."""
    if is_remote():
        fs, base = _remote()
        try:
            fs.delete_dir(f"{base}/{check_key(prefix)}")
        except FileNotFoundError:
            pass
    shutil.rmtree(_local(prefix), ignore_errors=True)


def publish_file(local: Path, key: str) -> str:
    """Make the finished local file ``local`` (already at ``home()/key``) visible at ``key`` in the
    data root: nothing to do locally, an upload (one PUT) to an object store."""
    if is_remote():
        fs, base = _remote()
        with open(local, "rb") as src, fs.open_output_stream(f"{base}/{check_key(key)}") as out:
            shutil.copyfileobj(src, out, 1 << 20)
        remote = stamp(key)  # the local copy is this object now: date it so local_file keeps using it
        if remote and remote[2] > local.stat().st_mtime_ns:
            os.utime(local, ns=(remote[2], remote[2]))
    return data_location(key)


def local_file(key: str, *, immutable: bool = False) -> Path:
    """A local path holding the bytes at ``key``: the file itself for a local data root; for an
    object store, this machine's cached copy, downloaded when missing or older than the object
    (``immutable``: a key whose bytes never change, e.g. a frame in its generation folder, is used
    from the cache without asking the store). Raises FileNotFoundError when there is no such file."""
    path = _local(key)
    if not is_remote():
        if not path.is_file():
            raise FileNotFoundError(str(path))
        return path
    if immutable and path.is_file():
        return path
    remote = stamp(key)
    if remote is None:
        raise FileNotFoundError(data_location(key))
    try:
        st = path.stat()
        if st.st_size == remote[1] and st.st_mtime_ns >= remote[2]:
            return path
    except FileNotFoundError:
        pass
    fs, base = _remote()
    with atomic_path(path) as tmp, fs.open_input_stream(f"{base}/{key}") as src, open(tmp, "wb") as out:
        shutil.copyfileobj(src, out, 1 << 20)
    return path


def get_json(key: str, default: Any = None) -> Any:
    data = get_bytes(key)
    return default if data is None else json.loads(data)


def put_json(key: str, obj: Any) -> str:
    return put_bytes(key, json.dumps(obj, indent=2, ensure_ascii=False, sort_keys=False).encode())


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


def partition_key(table: str, recording_id: str) -> str:
    return partition_dir(table, recording_id).relative_to(home()).as_posix()


def table_key(table: str, recording_id: str, part: str = "part-0") -> str:
    return f"{partition_key(table, recording_id)}/{part}.parquet"


def frames_key(recording_id: str) -> str:
    return f"frames/{check_id(recording_id)}"


def audio_key(recording_id: str) -> str:
    return f"audio/{check_id(recording_id)}.wav"


def manifest_key(recording_id: str) -> str:
    return f"manifests/{check_id(recording_id)}.json"


def settings_key(recording_id: str) -> str:
    return f"settings/{check_id(recording_id)}.json"


def frames_root(recording_id: str) -> Path:
    return home() / "frames" / check_id(recording_id)


def frame_file_name(ms: int) -> str:
    return f"t{int(ms):08d}.jpg"


def audio_path(recording_id: str) -> Path:
    return home() / "audio" / f"{check_id(recording_id)}.wav"


def manifest_path(recording_id: str) -> Path:
    return home() / "manifests" / f"{check_id(recording_id)}.json"


def dropdir_state_dir(folder_key: str) -> Path:
    """This machine's drop-folder sensor state for one watched folder (digest-named state files)."""
    if not re.fullmatch(r"[0-9a-f]{12}", folder_key):
        raise ValueError(f"invalid drop-folder key {folder_key!r}")
    return home() / "state" / f"dropdir-{folder_key}"


def catalog_path() -> Path:
    return home() / "talkthrough.duckdb"


def dagster_home() -> Path:
    return home() / "dagster"


def models_dir() -> Path:
    return Path(os.environ.get("TALKTHROUGH_MODELS_DIR") or home() / "models")


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


def _table(table: str, rows: Iterable[dict]) -> pa.Table:
    schema = SCHEMAS[table]
    rows = list(rows)
    cols = {f.name: [r.get(f.name) for r in rows] for f in schema}
    return pa.table(cols, schema=schema)


def write_table(table: str, recording_id: str, rows: Iterable[dict], part: str = "part-0") -> Path:
    """Atomically replace one partition file of ``table`` with ``rows`` (validated against the schema)."""
    ensure_schema_files()
    _write_parquet(table_key(table, recording_id, part), _table(table, rows), compression="zstd")
    return table_path(table, recording_id, part)


def _parquet_source(key: str) -> tuple[str, Any]:
    """(path, filesystem) for pyarrow: the local file, or the object on the store."""
    if is_remote():
        fs, base = _remote()
        return f"{base}/{check_key(key)}", fs
    return str(_local(key)), None


def _write_parquet(key: str, t: pa.Table, **kw) -> None:
    """Publish ``t`` at ``key``: temp file + rename locally, one object PUT (multipart when large) on an
    object store; either way it appears whole or not at all."""
    if is_remote():
        path, fs = _parquet_source(key)
        pq.write_table(t, path, filesystem=fs, **kw)
        return
    with atomic_path(_local(key)) as tmp:
        pq.write_table(t, tmp, **kw)


def _partition_files(table: str, recording_id: str) -> list[str]:
    prefix = partition_key(table, recording_id)
    return [f"{prefix}/{n}" for n in list_names(prefix) if n.endswith(".parquet")]


def read_rows(table: str, recording_id: str, part: str | None = "part-0") -> list[dict]:
    """Rows of one partition (all parts when ``part`` is None); [] when nothing is stored."""
    keys = [table_key(table, recording_id, part)] if part else _partition_files(table, recording_id)
    out: list[dict] = []
    for key in keys:
        path, fs = _parquet_source(key)
        try:
            out.extend(pq.read_table(path, filesystem=fs, schema=SCHEMAS[table]).to_pylist())
        except FileNotFoundError:
            pass
    return out


def read_one(table: str, recording_id: str, part: str = "part-0") -> dict | None:
    rows = read_rows(table, recording_id, part)
    return rows[0] if rows else None


def has_partition(table: str, recording_id: str) -> bool:
    return bool(_partition_files(table, recording_id))


def delete_partition(table: str, recording_id: str) -> None:
    delete_tree(partition_key(table, recording_id))


def recording_keys(recording_id: str) -> list[str]:
    """Every data-root key that holds something of one recording (folders and files): its partition of
    every table (sources/aliases and search terms included), frames, WAV, manifest and settings."""
    check_id(recording_id)
    return ([partition_key(t, recording_id) for t in TABLES]
            + [frames_key(recording_id), audio_key(recording_id), manifest_key(recording_id),
               settings_key(recording_id)])


def forget_recording(recording_id: str) -> list[str]:
    """Remove everything stored of one recording in the data root (and this machine's cache of it),
    the manifest first (readers stop serving it at once). Returns the locations that existed and were removed. The caller holds the recording's lock."""
    removed = []
    keys = recording_keys(recording_id)
    keys.sort(key=lambda k: not k.startswith("manifests/"))
    for key in keys:
        present = exists(key) or bool(list_names(key)) or _local(key).exists()
        if key.startswith(("manifests/", "settings/", "audio/")):
            if is_remote():
                fs, base = _remote()
                try:
                    fs.delete_file(f"{base}/{key}")
                except FileNotFoundError:
                    pass
            _local(key).unlink(missing_ok=True)
        else:
            delete_tree(key)
        if present:
            removed.append(data_location(key))
    return removed


# --------------------------------------------------------------------------- per-recording lock

class PartitionBusy(RuntimeError):
    pass


_held_locks: dict[str, int] = {}  # recording id -> depth (re-entrant within one process)
_held_guard = threading.Lock()


def lock_path(recording_id: str) -> Path:
    return home() / "locks" / f"{check_id(recording_id)}.lock"


@contextmanager
def partition_lock(recording_id: str, timeout_s: float = 0.0) -> Iterator[None]:
    """Exclusive writer lock for one recording across processes, re-entrant in-process: a Postgres
    advisory lock when ``TALKTHROUGH_PG_URL`` is set (every machine sharing the database sees it),
    else ``flock`` on this machine. Either is released if the holder dies (the kernel closes the file,
    Postgres the connection), so a ``kill -9`` never leaves a stale lock."""
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
    busy = PartitionBusy(f"recording {recording_id} is being processed by another run; try again when it finishes")
    deadline = time.monotonic() + timeout_s
    pg_url = os.environ.get(PG_URL_ENV)
    if not pg_url and is_remote() and not _warned_local_lock:
        _warn_local_lock()
    acquire = _pg_advisory_lock(pg_url, recording_id, deadline, busy) if pg_url else \
        _flock(recording_id, deadline, busy)
    with acquire:
        with _held_guard:
            _held_locks[recording_id] = 1
        try:
            yield
        finally:
            with _held_guard:
                _held_locks.pop(recording_id, None)


def _flock(recording_id: str, deadline: float, busy: Exception):
    return _flock_file(lock_path(recording_id), deadline, busy)


def instance_lock_path() -> Path:
    return home() / "locks" / "dagster-instance.lock"


def instance_lock(timeout_s: float = 300.0):
    """Held while a process opens the Dagster instance: its SQLite storage is created and stamped
    (alembic) on the first open of a new data root, which concurrent first starts would otherwise race
    (``table ... already exists``, a second alembic head). Opening an existing instance takes it only briefly."""
    busy = TimeoutError(f"the Dagster instance under {dagster_home()} is being created by another process "
                        f"and was not ready within {timeout_s:.0f} s (lock: {instance_lock_path()})")
    return _flock_file(instance_lock_path(), time.monotonic() + timeout_s, busy)


@contextmanager
def _flock_file(path: Path, deadline: float, busy: Exception) -> Iterator[None]:
    import fcntl

    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    raise busy from None
                time.sleep(0.2)
        try:
            yield
        finally:
            fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)


PG_URL_ENV = "TALKTHROUGH_PG_URL"
_warned_local_lock = False


def _warn_local_lock() -> None:
    global _warned_local_lock
    _warned_local_lock = True
    import logging

    logging.getLogger("talkthrough").warning(
        "TALKTHROUGH_HOME is %s but TALKTHROUGH_PG_URL is not set: the per-recording lock is this machine's "
        "flock, so other machines writing the same data root are not kept out; set TALKTHROUGH_PG_URL "
        "(shared Dagster storage and a Postgres advisory lock)", data_url())


_LOCK_NAMESPACE = 0x7A1C  # high bits of the advisory-lock key: talkthrough's own key space


@contextmanager
def _pg_advisory_lock(pg_url: str, recording_id: str, deadline: float, busy: Exception) -> Iterator[None]:
    """A Postgres session advisory lock on the recording (one dedicated connection held for the
    block): every machine sharing the Dagster database sees it, and Postgres drops it when the
    holder's connection dies, so a killed worker never leaves it behind."""
    import psycopg2

    key = (_LOCK_NAMESPACE << 48) | (int(recording_id[:12], 16))  # fits a signed bigint
    dsn = re.sub(r"^postgres(ql)?\+\w+://", "postgresql://", pg_url)  # a SQLAlchemy URL names its driver
    con = psycopg2.connect(dsn, connect_timeout=10, application_name=f"talkthrough-lock-{recording_id}")
    try:
        con.autocommit = True
        with con.cursor() as cur:
            while True:
                cur.execute("SELECT pg_try_advisory_lock(%s)", (key,))
                if cur.fetchone()[0]:
                    break
                if time.monotonic() >= deadline:
                    raise busy
                time.sleep(0.2)
            try:
                yield
            finally:
                cur.execute("SELECT pg_advisory_unlock(%s)", (key,))
    finally:
        con.close()


# --------------------------------------------------------------------------- frames generations

def new_frames_generation(recording_id: str) -> Path:
    root = frames_root(recording_id)
    root.mkdir(parents=True, exist_ok=True)
    return Path(tempfile.mkdtemp(prefix=f"g{int(time.time() * 1000)}-", dir=root))


def generation_key(gen: Path) -> str:
    """The data-root key of a frames generation folder made by ``new_frames_generation``."""
    return gen.relative_to(home()).as_posix()


def publish_frames_generation(gen: Path) -> None:
    """Make a finished generation folder's JPEGs visible in the data root (uploads on an object
    store; locally they already are). Readers find them only through the table written after."""
    if is_remote():
        prefix = generation_key(gen)
        for f in sorted(gen.iterdir()):
            if f.is_file() and f.suffix == ".jpg":
                publish_file(f, f"{prefix}/{f.name}")


def prune_frame_generations(recording_id: str, keep: Iterable[str]) -> None:
    """Delete frame generation folders not listed in ``keep`` (relative names), in the data root
    and in this machine's cache."""
    keep = set(keep)
    prefix = frames_key(recording_id)
    for name in list_names(prefix):
        if name not in keep and not name.startswith("."):
            delete_tree(f"{prefix}/{name}")
    root = frames_root(recording_id)
    if root.exists():
        for d in root.iterdir():
            if d.is_dir() and d.name not in keep:
                shutil.rmtree(d, ignore_errors=True)


# --------------------------------------------------------------------------- DuckDB catalog

_schema_files_done: set[Path] = set()


def ensure_schema_files() -> None:
    """One empty Parquet file per table so every view has a fixed schema even before data exists."""
    root = data_location("tables")
    if root in _schema_files_done:
        return
    for table, schema in SCHEMAS.items():
        key = table_key(table, SCHEMA_PARTITION)
        path, fs = _parquet_source(key)
        try:
            same = pq.read_schema(path, filesystem=fs).equals(schema)
        except FileNotFoundError:
            same = False
        if not same:  # new or changed schema
            _write_parquet(key, schema.empty_table())
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
    if is_remote():
        # DuckDB's httpfs extension is a download (not possible offline), so a catalog file cannot
        # hold views over s3://; readers use connect(), which scans the tables through pyarrow.
        return path
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
        if is_remote():
            con.register(f"_arrow_{table}", remote_dataset(table))
            con.execute(f"CREATE OR REPLACE VIEW {table} AS SELECT * FROM _arrow_{table} "
                        f"WHERE recording <> '{SCHEMA_PARTITION}'")
        else:
            con.execute(view_sql(table))
    con.execute(frames_view_sql())
    return con


def remote_dataset(table: str):
    """A pyarrow dataset over one table on the object store (Hive ``recording=`` partitions, the
    table's schema, so older files lacking a newer column read as NULL). DuckDB scans it with filter
    and projection pushdown; the file list is taken when it is built, i.e. per ``connect()``."""
    import pyarrow.dataset as pads

    fs, base = _remote()
    part = pads.partitioning(pa.schema([("recording", pa.string())]), flavor="hive")
    schema = SCHEMAS[table].append(pa.field("recording", pa.string()))
    return pads.dataset(f"{base}/tables/{table}", filesystem=fs, format="parquet", partitioning=part,
                        schema=schema)

"""The one package that owns every path, table schema and write under the data root.

Layout under ``$TALKTHROUGH_HOME`` (default ``~/.talkthrough``)::

    tables/<table>/recording=<id>/<file>.parquet   source of truth (Hive layout)
    tables/<table>/recording=__schema__/...        empty file fixing each table's schema
    frames/<id>/<generation>/t<ms:08d>.jpg          keyframes (one generation live)
    audio/<id>.wav                                  16 kHz mono PCM cache
    manifests/<id>.json                             talkthrough-manifest/v1
    reports/<id>.html, <id>.contact_sheet.jpg       the HTML report and the contact sheet, rewritten with the manifest
    settings/<id>.json                              per-recording persisted overrides
    chunks/whisper/<kk>/<key>.bin                   Whisper result of one audio chunk, content-addressed
                                                    (shared by recordings; stages/segments/chunks.py)
    chunks/ocr/<kk>/<key>.bin                       OCR result of one frame, keyed by its pixels (stages/ocr/cache.py)
    talkthrough.duckdb                              views over read_parquet (no data)
    dagster/                                        DAGSTER_HOME (SQLite run storage)
    models/                                         downloaded model cache
    locks/<id>.lock                                 per-recording flock (no TALKTHROUGH_PG_URL)
    locks/dagster-instance.lock                     held while the Dagster instance is opened (first-start race)
    locks/index-<b>.lock                            held while search index bucket <b> is merged
    locks/ui.lock                                   held by the running `talkthrough ui` (its PID and port)
    index/parts/<id>.<bytes>.<sha12>.parquet        search index part of one published manifest
    index/merged/<b>.json, <b>/<seq>-*.arrow        the parts merged per bucket (derived data)
    state/dropdir-<folder key>/                     drop-folder sensor state (the cursor names one)
    state/rejections/<id>.json                      a file `process` rejected, until its failed run is recorded
    state/runs/<pid>.<id>                           a Dagster run this machine's process <pid> is executing
    quarantine/<when>/<key>                         a stray file found where no stage writes it, moved aside

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

# Modules: paths (data root, keys, local paths), schemas (every table's columns), atomic (temp file +
# rename), s3 and backend (bytes by key, local folder or object store), tables (Parquet partitions),
# records (stored rows as typed records), locks (per-recording writer lock), frames (keyframe generations),
# catalog (DuckDB views). Callers use this package's names (``store.write_table``); the modules are the layout, not a second API.
from talkthrough_assets.store import diskfault
from talkthrough_assets.store import integrity
from talkthrough_assets.store import tempfiles
from talkthrough_assets.store.atomic import atomic_path, atomic_write_bytes
from talkthrough_assets.store.backend import (delete_file, delete_tree, exists, file_stamps, get_bytes, get_json, json_bytes, list_names, local_file, move_file, parquet_source, publish_file, put_bytes, put_json, stamp, tail_bytes, write_parquet)
from talkthrough_assets.store.catalog import (CATALOG_VERSION, connect, ensure_catalog, frames_view_sql, remote_dataset, view_sql)
from talkthrough_assets.store.frames import (generation_key, new_frames_generation, prune_frame_generations, publish_frames_generation)
from talkthrough_assets.store.locks import (PG_URL_ENV, DiskRefused, PartitionBusy, instance_lock, named_lock, partition_lock)
from talkthrough_assets.store.paths import (CHUNKS_PREFIX, DAGSTER_HOME_OWNED_MARK, INSTANCE_SETTINGS, OCR_RESULTS_PREFIX, ocr_result_key, ID_RE, REMOTE_SCHEMES, SCHEMA_PARTITION, InvalidRecordingId, audio_key, audio_path, catalog_path, check_id, check_key, chunk_result_key, contact_sheet_key, dagster_home, dagster_storage, data_location, data_url, dropdir_state_dir, frame_file_name, frames_key, frames_root, home, instance_lock_path, is_remote, local_path, lock_path, manifest_key, manifest_path, models_dir, partition_dir, partition_key, quarantine_key, rejections_dir, run_marks_dir, single_part, report_key, settings_key, table_key, table_path, tables_dir, ui_lock_path)
from talkthrough_assets.store.records import as_record
from talkthrough_assets.store.schemas import SCHEMAS, TABLES, SchemaMismatch, to_arrow
from talkthrough_assets.store.tables import (delete_partition, ensure_schema_files, forget_recording, has_partition, is_known, present_keys, read_one, read_rows, recording_folders, recording_keys, set_aside, stray_files, write_table)

__all__ = [
    "diskfault", "integrity", "tempfiles", "DiskRefused",
    "atomic_path", "atomic_write_bytes",
    "delete_file", "delete_tree", "exists", "file_stamps", "get_bytes", "get_json", "json_bytes", "list_names",
    "local_file", "move_file",
    "parquet_source", "publish_file", "put_bytes", "put_json", "stamp", "tail_bytes", "write_parquet",
    "CATALOG_VERSION", "connect", "ensure_catalog", "frames_view_sql", "remote_dataset", "view_sql",
    "generation_key", "new_frames_generation", "prune_frame_generations", "publish_frames_generation",
    "PG_URL_ENV", "PartitionBusy", "instance_lock", "named_lock", "partition_lock",
    "CHUNKS_PREFIX", "DAGSTER_HOME_OWNED_MARK", "INSTANCE_SETTINGS", "chunk_result_key", "OCR_RESULTS_PREFIX", "ocr_result_key", "ID_RE", "REMOTE_SCHEMES", "SCHEMA_PARTITION", "InvalidRecordingId", "audio_key", "audio_path", "catalog_path",
    "check_id", "check_key", "dagster_home", "dagster_storage", "data_location", "data_url", "dropdir_state_dir", "frame_file_name",
    "frames_key", "frames_root", "home", "instance_lock_path", "is_remote", "local_path", "lock_path",
    "manifest_key", "manifest_path", "models_dir", "partition_dir", "partition_key", "report_key", "contact_sheet_key", "settings_key",
    "table_key", "table_path", "tables_dir", "rejections_dir", "ui_lock_path", "quarantine_key", "run_marks_dir",
    "single_part",
    "as_record", "SCHEMAS", "TABLES", "SchemaMismatch", "to_arrow",
    "delete_partition", "ensure_schema_files", "forget_recording", "has_partition", "read_one", "read_rows",
    "recording_keys", "write_table", "is_known", "present_keys", "recording_folders", "set_aside", "stray_files",
]

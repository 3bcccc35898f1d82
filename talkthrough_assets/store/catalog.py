"""DuckDB over the Parquet tables: a catalog file of views (local data root) and in-memory connections
for readers (views, or pyarrow datasets on an object store)."""

from __future__ import annotations

import re
import time
from pathlib import Path

import pyarrow as pa

from talkthrough_assets.store.integrity import damaged_files, note_damaged, readable_files, served
from talkthrough_assets.store.atomic import atomic_write_bytes
from talkthrough_assets.store.paths import SCHEMA_PARTITION, catalog_path, is_remote, single_part, tables_dir
from talkthrough_assets.store.s3 import s3_filesystem
from talkthrough_assets.store.schemas import LEGACY_TYPES, SCHEMAS, conform, legacy_type
from talkthrough_assets.store.tables import ensure_schema_files

CATALOG_VERSION = "5"  # 5: a single-part table's view reads part-0 only (a stray file beside it is not served)

# DuckDB (2.0) opens a Parquet file more than once in one query (its footer, then its column chunks): when a stage
# republishes that partition (a new file renamed over the path) in between, the query reads the new file's bytes
# at the old file's offsets and fails with a Thrift decoding error. Each published file is whole (store.atomic),
# so the query is run again; with a partition rewritten every 50 ms, 2 % of reads failed once, none twice
# (tests/integration/test_faults.py). The same holds for a file removed between the glob and its read (a forget,
# a stage clearing its partition): "No files found" / "No such file", and the query run again sees what is left.
REPUBLISHED = re.compile(r"TProtocolException|don't know what type|Invalid data|No magic bytes|[Cc]orrupt|"
                         r"No files found|No such file")
QUERY_TRIES = 5
# pyarrow's scan of an object-store table meeting a file whose column is an earlier version's form (a JSON string
# where a list of structs is declared): DuckDB's own Parquet reader casts it, a pyarrow dataset cannot
LEGACY_CAST = re.compile(r"Unsupported cast from string to")


def view_sql(table: str, root: Path | None = None, files: list[str] | None = None) -> str:
    """The view of ``table``: every partition file (a glob read at query time), or exactly ``files`` (the
    readable ones, when some file of the table is damaged)."""
    root = root or tables_dir()
    name = "part-0.parquet" if single_part(table) else "*.parquet"
    glob = (root / table / "recording=*" / name).as_posix().replace("'", "''")
    source = f"'{glob}'" if files is None else "[" + ", ".join("'" + f.replace("'", "''") + "'" for f in files) + "]"
    return (
        f"CREATE OR REPLACE VIEW {table} AS SELECT * FROM read_parquet({source}, hive_partitioning=true, "
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
    """A DuckDB connection with all views, in memory: readers never take the catalog file's lock. A damaged
    Parquet file (torn, or of another schema) is left out of its view with a one-line warning
    (``integrity.skipped()``), so one bad partition never takes down the reads of every recording."""
    import duckdb

    try:
        ensure_schema_files()
    except OSError:  # a read-only data root: the views read what is there
        pass
    con = duckdb.connect(":memory:")
    for table in SCHEMAS:
        if is_remote():
            _remote_view(con, table)
        else:
            _local_view(con, table, deep=False)
    con.execute(frames_view_sql())
    return Connection(con)


def _local_view(con, table: str, *, deep: bool) -> bool:
    """(Re)create ``table``'s view over its readable files (``deep``: every page read to tell); True when a
    file was left out."""
    damaged = damaged_files(table, deep=deep)
    for path, problem in damaged.items():
        note_damaged(path, problem)
    con.execute(view_sql(table, files=readable_files(table, damaged) if damaged else None))
    return bool(damaged)


class Connection:
    """A reader's DuckDB connection (:func:`connect`): ``execute`` runs a query again, up to :data:`QUERY_TRIES`
    times, when it failed because a Parquet file it read was republished under it (:data:`REPUBLISHED`). When it
    still fails so, a file is damaged inside (its footer reads, a data page does not): every view is made again
    over the files whose pages all read, and the query runs once more (one warning line names each file left
    out). Every other attribute is the DuckDB connection's."""

    def __init__(self, con):
        self._con = con
        self._deep_checked = False
        self._legacy_split = False

    def execute(self, query, parameters=None):
        import duckdb

        for attempt in range(QUERY_TRIES + 1):
            try:
                return self._con.execute(query) if parameters is None else self._con.execute(query, parameters)
            except duckdb.Error as e:
                if LEGACY_CAST.search(str(e)) and is_remote() and not self._legacy_split:
                    self._split_legacy()
                    continue
                if not REPUBLISHED.search(str(e)) or attempt == QUERY_TRIES:
                    raise
                if attempt == QUERY_TRIES - 1:
                    if self._deep_checked or is_remote() or not self._leave_out_damaged():
                        raise
                    continue
                time.sleep(0.01 * (attempt + 1))

    def _leave_out_damaged(self) -> bool:
        self._deep_checked = True
        found = False
        for table in SCHEMAS:
            found |= _local_view(self._con, table, deep=True)
        if found:
            self._con.execute(frames_view_sql())
        return found

    def _split_legacy(self) -> None:
        """Remake the object-store views of the tables with an earlier version's column forms, their files of that
        form read apart and conformed (only once a query met one: telling them apart reads every footer)."""
        self._legacy_split = True
        for table in LEGACY_TYPES:
            _remote_view(self._con, table, split_legacy=True)

    def __getattr__(self, name):
        return getattr(self._con, name)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self._con.close()


def _remote_view(con, table: str, *, split_legacy: bool = False) -> None:
    """(Re)create ``table``'s view over the object store. ``split_legacy``: its files holding a column in an earlier
    version's form (``schemas.LEGACY_TYPES``) are read whole, conformed and served beside the dataset of the rest."""
    files = _remote_files(table)
    old: list[str] = []
    if split_legacy:
        fs, _ = s3_filesystem()
        legacy = {f: _legacy_file(fs, table, f) for f in files}
        old, files = [f for f in files if legacy[f]], [f for f in files if not legacy[f]]
    con.register(f"_arrow_{table}", remote_dataset(table, files))
    source = f"SELECT * FROM _arrow_{table}"
    if old:
        con.register(f"_legacy_{table}", _conformed(table, old))
        source += f" UNION ALL BY NAME SELECT * FROM _legacy_{table}"
    con.execute(f"CREATE OR REPLACE VIEW {table} AS SELECT * FROM ({source}) WHERE recording <> '{SCHEMA_PARTITION}'")


def _remote_files(table: str) -> list[str]:
    """The files a view of ``table`` serves (a stray file beside part-0 is not), from one listing."""
    import pyarrow.fs as pafs

    fs, base = s3_filesystem()
    infos = fs.get_file_info(pafs.FileSelector(f"{base}/tables/{table}", recursive=True, allow_not_found=True))
    return sorted(i.path for i in infos if i.type == pafs.FileType.File and served(table, i.base_name))


def _legacy_file(fs, table: str, path: str) -> bool:
    import pyarrow.parquet as pq

    schema = pq.read_schema(path, filesystem=fs)
    return any(legacy_type(table, f.name, f.type) for f in schema)


def _conformed(table: str, files: list[str]) -> pa.Table:
    """Files of ``table`` in an earlier version's form, each read and conformed to the table's schema, with their
    Hive ``recording`` column."""
    import pyarrow.parquet as pq

    fs, _ = s3_filesystem()
    parts = []
    for path in files:
        data = conform(table, pq.read_table(path, filesystem=fs))
        recording = next(p.split("=", 1)[1] for p in path.split("/") if p.startswith("recording="))
        parts.append(data.append_column("recording", pa.array([recording] * data.num_rows, pa.string())))
    return pa.concat_tables(parts)


def remote_dataset(table: str, files: list[str] | None = None):
    """A pyarrow dataset over one table on the object store (Hive ``recording=`` partitions, the
    table's schema, so older files lacking a newer column read as NULL): every file it serves, or ``files``.
    DuckDB scans it with filter and projection pushdown; the file list is taken when it is built, i.e. per
    ``connect()``."""
    import pyarrow.dataset as pads

    fs, base = s3_filesystem()
    part = pads.partitioning(pa.schema([("recording", pa.string())]), flavor="hive")
    schema = SCHEMAS[table].append(pa.field("recording", pa.string()))
    return pads.dataset(_remote_files(table) if files is None else files, filesystem=fs, format="parquet",
                        partitioning=part, partition_base_dir=f"{base}/tables/{table}", schema=schema)

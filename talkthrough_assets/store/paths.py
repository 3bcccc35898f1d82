"""Where everything lives: the data root (local folder or ``s3://``), this machine's directory, and the
key/path of every table partition, frame, WAV, manifest, settings file, lock and state folder."""

from __future__ import annotations

import hashlib
import re
from pathlib import Path

from talkthrough_assets.core import config
from talkthrough_assets.core.errors import TalkthroughError
from talkthrough_assets.store.schemas import SCHEMAS

ID_RE = re.compile(r"^[0-9a-f]{16}$")
SCHEMA_PARTITION = "__schema__"
REMOTE_SCHEMES = ("s3://",)


class InvalidRecordingId(TalkthroughError, ValueError):
    pass


def data_url() -> str:
    """``$TALKTHROUGH_HOME`` as given: a local folder (default ``~/.talkthrough``) or ``s3://bucket/prefix``."""
    return config.get("TALKTHROUGH_HOME") or str(Path.home() / ".talkthrough")


def is_remote() -> bool:
    return data_url().startswith(REMOTE_SCHEMES)


def home() -> Path:
    """This machine's directory: the data root itself when it is local; for an ``s3://`` data root,
    ``$TALKTHROUGH_LOCAL_HOME`` (Dagster storage, models, locks, catalog, local frame/WAV cache)."""
    url = data_url()
    if url.startswith(REMOTE_SCHEMES):
        local = config.get("TALKTHROUGH_LOCAL_HOME")
        if local:
            return Path(local).expanduser().resolve()
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


def check_key(key: str) -> str:
    """A stored path relative to the data root (``frames/<id>/<gen>/t….jpg``): no escape, no absolute."""
    parts = key.split("/")
    if not key or key.startswith("/") or "\\" in key or any(x in ("", ".", "..") for x in parts):
        raise PermissionError(f"path {key!r} escapes the data root")
    return key


def local_path(key: str) -> Path:
    """``key`` under this machine's directory (the data root itself, or the local cache of a remote one)."""
    return home() / check_key(key)


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


# Tables whose partition holds one file per writer (stage_runs: one per stage; terms: one per search source);
# every other table's partition holds exactly part-0.parquet, written whole by its stage.
MULTI_PART_TABLES = ("stage_runs", "terms")


def single_part(table: str) -> bool:
    return table not in MULTI_PART_TABLES


QUARANTINE_PREFIX = "quarantine"


def quarantine_key(key: str, when: str) -> str:
    """Where a file found in a place no stage writes it (a stray file in a table partition) is moved aside:
    ``quarantine/<when>/<its key>``, outside every folder a reader or a stage lists."""
    if not re.fullmatch(r"[0-9TZ-]+", when):
        raise ValueError(f"invalid quarantine stamp {when!r}")
    return f"{QUARANTINE_PREFIX}/{when}/{check_key(key)}"


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


def report_key(recording_id: str) -> str:
    """The recording's HTML report (talkthrough_assets.read.report), rewritten with each published manifest."""
    return f"reports/{check_id(recording_id)}.html"


def contact_sheet_key(recording_id: str) -> str:
    """The recording's contact sheet (talkthrough_assets.read.contact_sheet), beside its report and rewritten with it."""
    return f"reports/{check_id(recording_id)}.contact_sheet.jpg"


def settings_key(recording_id: str) -> str:
    return f"settings/{check_id(recording_id)}.json"


CHUNKS_PREFIX = "chunks/whisper"


def chunk_result_key(key: str) -> str:
    """Where the stored Whisper result of the chunk with content key ``key`` (sha256 hex) lives."""
    if not re.fullmatch(r"[0-9a-f]{64}", key):
        raise ValueError(f"not a chunk key: {key!r}")
    return f"{CHUNKS_PREFIX}/{key[:2]}/{key}.bin"


OCR_RESULTS_PREFIX = "chunks/ocr"


def ocr_result_key(key: str) -> str:
    """Where the stored OCR result of a frame with content key ``key`` (sha256 hex of its pixels) lives."""
    if not re.fullmatch(r"[0-9a-f]{64}", key):
        raise ValueError(f"not an OCR result key: {key!r}")
    return f"{OCR_RESULTS_PREFIX}/{key[:2]}/{key}.bin"


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


def dagster_storage() -> Path:
    """The DAGSTER_HOME this process uses: the variable when set (an operator's, or the one a command exported
    for Dagster), else the data root's :func:`dagster_home`."""
    return Path(config.get("DAGSTER_HOME") or dagster_home())


# The Dagster instance settings Talkthrough ships (run queue limits, run monitoring), read as package data: an
# installed wheel has no checkout around it. The repo's top-level dagster.yaml is a link to this file.
INSTANCE_SETTINGS = ("talkthrough_assets.defs", "dagster.yaml")
# In a DAGSTER_HOME Talkthrough made: its dagster.yaml is Talkthrough's to rewrite (an operator's never is)
DAGSTER_HOME_OWNED_MARK = ".talkthrough-owned"


def models_dir() -> Path:
    return Path(config.get("TALKTHROUGH_MODELS_DIR") or home() / "models")


def lock_path(recording_id: str) -> Path:
    return home() / "locks" / f"{check_id(recording_id)}.lock"


def instance_lock_path() -> Path:
    return home() / "locks" / "dagster-instance.lock"


def ui_lock_path() -> Path:
    """Held by the running `talkthrough ui` of this data root; holds its PID and port."""
    return home() / "locks" / "ui.lock"


def run_marks_dir() -> Path:
    """One empty file per Dagster run a process of this machine is executing (``<pid>.<recording>``), removed
    when the run returns: one left behind names a killed process whose run may still read STARTED."""
    return home() / "state" / "runs"


def rejections_dir() -> Path:
    """Files `talkthrough process` rejected before any run, waiting to be recorded as failed runs."""
    return home() / "state" / "rejections"

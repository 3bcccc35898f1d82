"""The object-store backend of an ``s3://`` data root: one ``pyarrow.fs.S3FileSystem`` per settings (S3
credentials, region and endpoint from the standard ``AWS_*`` variables, ``AWS_ENDPOINT_URL`` for an
S3-compatible server). Each write is one PUT: an object appears whole or not at all."""

from __future__ import annotations

import threading
from typing import Any

from talkthrough_assets.core import config
from talkthrough_assets.store.paths import check_key, data_url

_s3_cache: dict[tuple, Any] = {}
_s3_guard = threading.Lock()


def s3_filesystem() -> tuple[Any, str]:
    """(pyarrow S3FileSystem, "bucket/prefix") for an ``s3://`` data root, built once per settings."""
    import pyarrow.fs as pafs

    url = data_url()
    endpoint = config.get("AWS_ENDPOINT_URL_S3") or config.get("AWS_ENDPOINT_URL") or ""
    region = config.get("AWS_REGION") or config.get("AWS_DEFAULT_REGION") or "us-east-1"
    key = (url, endpoint, region, config.get("AWS_ACCESS_KEY_ID"))
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


def object_path(key: str) -> tuple[Any, str]:
    """(filesystem, "bucket/prefix/<key>") of a data-root key on the object store."""
    fs, base = s3_filesystem()
    return fs, f"{base}/{check_key(key)}"


def s3_put(key: str, data: bytes) -> None:
    fs, path = object_path(key)
    with fs.open_output_stream(path) as out:
        out.write(data)


def s3_get(key: str) -> bytes | None:
    fs, path = object_path(key)
    try:
        with fs.open_input_stream(path) as f:
            return f.read()
    except FileNotFoundError:
        return None


def s3_stamp(key: str) -> tuple | None:
    import pyarrow.fs as pafs

    fs, path = object_path(key)
    info = fs.get_file_info(path)
    if info.type != pafs.FileType.File:
        return None
    return (0, info.size, info.mtime_ns or 0)


def s3_listing(prefix: str) -> list:
    """The ``FileInfo`` of everything directly under the folder ``prefix`` (one LIST request)."""
    import pyarrow.fs as pafs

    fs, path = object_path(prefix)
    return fs.get_file_info(pafs.FileSelector(path, allow_not_found=True, recursive=False))


def s3_is_file(info) -> bool:
    import pyarrow.fs as pafs

    return info.type == pafs.FileType.File


def s3_delete_dir(prefix: str) -> None:
    fs, path = object_path(prefix)
    try:
        fs.delete_dir(path)
    except FileNotFoundError:
        pass


def s3_delete_file(key: str) -> None:
    fs, path = object_path(key)
    try:
        fs.delete_file(path)
    except FileNotFoundError:
        pass

"""Bytes under the data root by key (``frames/<id>/<gen>/t….jpg``, ``manifests/<id>.json`` …): a local folder
(temp file + rename) or an object store (:mod:`.s3`, one PUT per write), the same calls either way."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any

from talkthrough_assets.store.s3 import (object_path, s3_delete_dir, s3_delete_file, s3_get, s3_is_file, s3_listing, s3_put, s3_stamp)
from talkthrough_assets.store.atomic import atomic_path
from talkthrough_assets.store.paths import check_key, data_location, is_remote, local_path


def put_bytes(key: str, data: bytes, *, fsync: bool = True) -> str:
    """Publish ``data`` at ``key``: temp file + rename locally, one PUT on an object store."""
    if is_remote():
        s3_put(key, data)
    else:
        with atomic_path(local_path(key), fsync=fsync) as tmp:
            tmp.write_bytes(data)
    return data_location(key)


def get_bytes(key: str) -> bytes | None:
    """The bytes at ``key``, None when there is no such file/object."""
    if is_remote():
        return s3_get(key)
    try:
        return local_path(key).read_bytes()
    except (FileNotFoundError, IsADirectoryError, NotADirectoryError):
        return None


def tail_bytes(key: str, n: int) -> bytes:
    """The last ``n`` bytes of the file at ``key`` (b"" when there is none): one ranged read on an object store."""
    if is_remote():
        fs, path = object_path(key)
        try:
            with fs.open_input_file(path) as f:
                size = f.size()
                f.seek(max(0, size - n))
                return f.read()
        except FileNotFoundError:
            return b""
    try:
        with open(local_path(key), "rb") as f:
            size = f.seek(0, 2)
            f.seek(max(0, size - n))
            return f.read()
    except (FileNotFoundError, IsADirectoryError, NotADirectoryError):
        return b""


def stamp(key: str) -> tuple | None:
    """A change signature of the file at ``key`` ((inode, size, mtime_ns); inode 0 on an object
    store), None when absent."""
    if is_remote():
        return s3_stamp(key)
    try:
        st = local_path(key).stat()
    except (FileNotFoundError, NotADirectoryError):
        return None
    return (st.st_ino, st.st_size, st.st_mtime_ns)


def exists(key: str) -> bool:
    return stamp(key) is not None


def list_names(prefix: str) -> list[str]:
    """Names directly under the folder ``prefix`` (files and folders); [] when it does not exist."""
    if is_remote():
        return sorted(i.base_name for i in s3_listing(prefix))
    try:
        return sorted(os.listdir(local_path(prefix)))
    except (FileNotFoundError, NotADirectoryError):
        return []


def file_stamps(prefix: str) -> dict[str, tuple]:
    """Name -> :func:`stamp` of every file directly under the folder ``prefix``, from one listing
    (``os.scandir`` locally, one LIST request on an object store); {} when it does not exist."""
    if is_remote():
        return {i.base_name: (0, i.size, i.mtime_ns or 0) for i in s3_listing(prefix) if s3_is_file(i)}
    out = {}
    try:
        with os.scandir(local_path(prefix)) as it:
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
        s3_delete_dir(prefix)
    shutil.rmtree(local_path(prefix), ignore_errors=True)


def delete_file(key: str) -> None:
    """Remove the file ``key`` from the data root (and from this machine's cache)."""
    if is_remote():
        s3_delete_file(key)
    local_path(key).unlink(missing_ok=True)


def move_file(key: str, dest: str) -> str:
    """Move the file (or folder, locally) at ``key`` to ``dest``, both under the data root; returns where it is
    now. An object store copies the object, then deletes it (this machine's cached copy goes too)."""
    if is_remote():
        data = s3_get(key)
        if data is not None:
            s3_put(dest, data)
            s3_delete_file(key)
        local_path(key).unlink(missing_ok=True)
    else:
        target = local_path(dest)
        target.parent.mkdir(parents=True, exist_ok=True)
        os.replace(local_path(key), target)
    return data_location(dest)


def publish_file(local: Path, key: str) -> str:
    """Make the finished local file ``local`` (already at ``home()/key``) visible at ``key`` in the
    data root: nothing to do locally, an upload (one PUT) to an object store."""
    if is_remote():
        fs, path = object_path(key)
        with open(local, "rb") as src, fs.open_output_stream(path) as out:
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
    path = local_path(key)
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
    fs, obj = object_path(key)
    with atomic_path(path) as tmp, fs.open_input_stream(obj) as src, open(tmp, "wb") as out:
        shutil.copyfileobj(src, out, 1 << 20)
    return path


def get_json(key: str, default: Any = None) -> Any:
    data = get_bytes(key)
    return default if data is None else json.loads(data)


def json_bytes(obj: Any) -> bytes:
    """The bytes :func:`put_json` publishes for ``obj``."""
    return json.dumps(obj, indent=2, ensure_ascii=False, sort_keys=False).encode()


def put_json(key: str, obj: Any) -> str:
    return put_bytes(key, json_bytes(obj))


def parquet_source(key: str) -> tuple[str, Any]:
    """(path, filesystem) for pyarrow: the local file, or the object on the store."""
    if is_remote():
        fs, path = object_path(key)
        return path, fs
    return str(local_path(key)), None


def write_parquet(key: str, t, **kw) -> None:
    """Publish the Arrow table ``t`` at ``key``: temp file + rename locally, one object PUT (multipart when
    large) on an object store; either way it appears whole or not at all."""
    import pyarrow.parquet as pq

    if is_remote():
        path, fs = parquet_source(key)
        pq.write_table(t, path, filesystem=fs, **kw)
        return
    with atomic_path(local_path(key)) as tmp:
        pq.write_table(t, tmp, **kw)

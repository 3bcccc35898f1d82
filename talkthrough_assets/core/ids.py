"""Recording ids: the first 16 hex characters of a file's sha256, which is also its Dagster
partition key. The one place that hashes recordings (CLI, pipeline, drop folder, MCP server).

Hashes are remembered per process by the file's full identity: path, device, inode, size, mtime
AND ctime. mtime can be set back by anyone (``touch -d``, ``os.utime``), but every write or
``utime`` bumps ctime, which no unprivileged call can reset; a replaced file has a new inode. The
key comes from ``fstat`` of the descriptor being hashed, before and after, so a file written to
while it was read is hashed but not remembered.
"""

from __future__ import annotations

import hashlib
import os
import threading
from pathlib import Path

ID_LEN = 16

_cache: dict[tuple, str] = {}
_lock = threading.Lock()


def _key(path: Path, st: os.stat_result) -> tuple:
    return (str(path), st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)


def sha256_of(path: str | os.PathLike) -> str:
    """The file's sha256 (hex), read once per process for unchanged bytes."""
    path = Path(path).absolute()
    key = _key(path, path.stat())
    with _lock:
        if key in _cache:
            return _cache[key]
    h = hashlib.sha256()
    with open(path, "rb") as f:
        before = os.fstat(f.fileno())
        while chunk := f.read(1 << 20):
            h.update(chunk)
        after = os.fstat(f.fileno())
    digest = h.hexdigest()
    if _key(path, before) == _key(path, after):  # not written to while hashing
        with _lock:
            _cache[_key(path, after)] = digest
    return digest


def identity(f, path: str | os.PathLike) -> tuple:
    """The cache key of the file open as ``f`` (from ``fstat`` of its descriptor, not the path)."""
    return _key(Path(path).absolute(), os.fstat(f.fileno()))


def sha256_of_open(f, path: str | os.PathLike) -> str:
    """The sha256 of the file already open as ``f`` (binary, seekable), remembered by the identity of
    that descriptor, so the bytes hashed are the bytes a caller then reads through ``f``, whatever is
    renamed over ``path`` meanwhile. ``f`` is left at offset 0."""
    key = identity(f, path)
    with _lock:
        digest = _cache.get(key)
    if digest is None:
        f.seek(0)
        h = hashlib.sha256()
        while chunk := f.read(1 << 20):
            h.update(chunk)
        digest = h.hexdigest()
        if identity(f, path) == key:  # not written to while hashing
            with _lock:
                _cache[key] = digest
    f.seek(0)
    return digest


def recording_id(path: str | os.PathLike) -> str:
    return sha256_of(path)[:ID_LEN]


__all__ = ["ID_LEN", "identity", "recording_id", "sha256_of", "sha256_of_open"]

"""A full or read-only disk, said in one line: ``disk full at <path>: <n> MB free, <m> MB needed`` or
``read-only data root: <path>``. Recognizes the errno (ENOSPC, EDQUOT, EROFS) and SQLite's own words for it
(Dagster's run storage: "database or disk is full", "disk I/O error", "attempt to write a readonly database"),
also when the error is wrapped (SQLAlchemy, Dagster) as a cause or context. SQLite's words name no file: the
only SQLite storage is Dagster's, so its folder is the path said (on a disk of its own, the data root's free
space is no answer)."""

from __future__ import annotations

import errno
import os
import shutil
from pathlib import Path

from talkthrough_assets.store.paths import dagster_storage

FULL_ERRNOS = {errno.ENOSPC, errno.EDQUOT}
_SQLITE_WORDS = ("database or disk is full", "disk i/o error", "readonly database")
_FULL_WORDS = ("database or disk is full", "no space left on device", "disk i/o error")
_RO_WORDS = ("read-only file system", "attempt to write a readonly database", "readonly database")
DAGSTER_RUN_BYTES = 2_000_000  # one run's rows in Dagster's SQLite storage (events, materializations)


def kind(e: BaseException | None) -> str | None:
    """"full", "read-only" or None, for ``e`` or any exception it was raised from."""
    seen = set()
    while e is not None and id(e) not in seen:
        seen.add(id(e))
        if isinstance(e, OSError) and e.errno in FULL_ERRNOS:
            return "full"
        if isinstance(e, OSError) and e.errno == errno.EROFS:
            return "read-only"
        text = str(e).lower()
        if any(w in text for w in _RO_WORDS):
            return "read-only"
        if any(w in text for w in _FULL_WORDS):
            return "full"
        e = e.__cause__ or e.__context__
    return None


def _sqlite(e: BaseException | None) -> bool:
    """Whether ``e`` (or an exception it was raised from) is SQLite's, in its words (no file named)."""
    seen = set()
    while e is not None and id(e) not in seen:
        seen.add(id(e))
        if any(w in str(e).lower() for w in _SQLITE_WORDS):
            return True
        e = e.__cause__ or e.__context__
    return False


def _filename(e: BaseException | None) -> str | None:
    seen = set()
    while e is not None and id(e) not in seen:
        seen.add(id(e))
        if isinstance(e, OSError) and e.filename:
            return str(e.filename)
        e = e.__cause__ or e.__context__
    return None


def free_bytes(path: str | os.PathLike) -> int | None:
    """Free bytes on the filesystem holding ``path`` (its nearest existing folder)."""
    p = Path(path)
    while not p.exists() and p != p.parent:
        p = p.parent
    try:
        return shutil.disk_usage(p).free
    except OSError:
        return None


def mount_point(path: str | os.PathLike) -> Path:
    p = Path(path).resolve()
    while not p.exists() and p != p.parent:
        p = p.parent
    while not os.path.ismount(p) and p != p.parent:
        p = p.parent
    return p


def reason(e: BaseException, where: str | os.PathLike, need_bytes: int | None = None) -> str | None:
    """The one-line reason for a disk fault ``e`` (None when it is none); ``where``: the folder written to
    (the data root, the model cache ...) when the error names no file and is not SQLite's (Dagster's storage:
    :func:`~talkthrough_assets.store.paths.dagster_storage`, and one run's rows there as the need);
    ``need_bytes``: what the run needs there (the preflight's estimate)."""
    k = kind(e)
    if k is None:
        return None
    dagster = not _filename(e) and _sqlite(e)
    path = _filename(e) or str(dagster_storage() if dagster else where)
    if k == "read-only":
        return f"read-only Dagster storage: {path}" if dagster else f"read-only data root: {path}"
    free = free_bytes(path)
    need = max(1, round((DAGSTER_RUN_BYTES if dagster else need_bytes or 0) / 1e6))
    return f"disk full at {path}: {0 if free is None else free / 1e6:.0f} MB free, {need} MB needed"


"""The one temp-file + ``os.replace`` publish for local files."""

from __future__ import annotations

import os
import tempfile
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

from talkthrough_assets.store.tempfiles import writer_prefix


# The mode a plain open() gives a new file under this process's umask: mkstemp makes 0600 files, which made every
# export and data-root file private whatever the umask. Read once (os.umask both reads and sets it).
_UMASK = os.umask(0o022)
os.umask(_UMASK)
FILE_MODE = 0o666 & ~_UMASK


def _tmp_in(directory: Path, suffix: str) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    # named by host and pid: a writer killed before its rename leaves a file store.tempfiles can tell is orphaned
    fd, name = tempfile.mkstemp(prefix=writer_prefix(), suffix=suffix, dir=directory)
    try:
        os.fchmod(fd, FILE_MODE)
    finally:
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

"""Temp files a killed writer left behind. Every publish writes ``.tmp-<host>.<pid>-<random><suffix>.part``
beside its target (:mod:`.atomic`) and renames it; a writer killed meanwhile leaves it there (a WAV's can be
tens of MB). :func:`sweep` removes those whose writer is gone: a process of this host whose pid no longer runs,
or runs a process started after the file was last written (the pid was reused). A file of another host (a data
root on a shared disk) or with an older name that names no writer is removed only once it has not been written
for :data:`UNNAMED_AGE_S`. A live writer's file is never touched.
"""

from __future__ import annotations

import hashlib
import os
import re
import socket
import time
from pathlib import Path
from typing import Iterable

import psutil

from talkthrough_assets.store.paths import ID_RE, home, run_marks_dir

PREFIX = ".tmp-"
_NAMED = re.compile(r"^\.tmp-([0-9a-f]{8})\.(\d+)-")
UNNAMED_AGE_S = 24 * 3600.0
SKIP = ("dagster",)  # Dagster's own storage: its files are its own


def _host() -> str:
    return hashlib.sha256(socket.gethostname().encode()).hexdigest()[:8]


def writer_prefix() -> str:
    """The temp-name prefix of this process's writes: host and pid, so a sweep can tell whether its writer is gone."""
    return f"{PREFIX}{_host()}.{os.getpid()}-"


def started_at(pid: int) -> float | None:
    """When process ``pid`` of this host started (epoch seconds); None when it is not running (or a zombie);
    0.0 when it runs but its start cannot be read (then its files count as its own)."""
    try:
        proc = psutil.Process(pid)
        if proc.status() in (psutil.STATUS_ZOMBIE, psutil.STATUS_DEAD):
            return None
        return proc.create_time()
    except (psutil.NoSuchProcess, psutil.ZombieProcess):
        return None
    except (psutil.AccessDenied, OSError):
        return 0.0


def orphaned(name: str, mtime: float, now: float | None = None) -> bool:
    """Whether the temp file ``name``, last written at ``mtime``, has no live writer."""
    if not name.startswith(PREFIX):
        return False
    m = _NAMED.match(name)
    if m and m.group(1) == _host():
        pid = int(m.group(2))
        if pid == os.getpid():
            return False
        started = started_at(pid)
        # the clock ticks of a start time round to 10 ms: a second of slack keeps a live writer's file
        return started is None or mtime < started - 1.0
    return (now or time.time()) - mtime > UNNAMED_AGE_S


def sweep(folders: Iterable[Path] | None = None, *, remove: bool = True) -> list[tuple[str, int]]:
    """(path, bytes) of every orphaned temp file in ``folders`` (each with what is under it; default: all of
    this machine's directory but Dagster's storage), removed unless ``remove`` is False."""
    roots = list(folders) if folders is not None else [home()]
    now = time.time()
    out = []
    for root in roots:
        for dirpath, dirnames, filenames in os.walk(root):
            if dirpath == str(root) and folders is None:
                dirnames[:] = [d for d in dirnames if d not in SKIP]
            for n in filenames:
                if not n.startswith(PREFIX):
                    continue
                p = os.path.join(dirpath, n)
                try:
                    st = os.stat(p)
                    if not orphaned(n, st.st_mtime, now):
                        continue
                    if remove:
                        os.unlink(p)
                except OSError:  # renamed into place (or removed) meanwhile, or a read-only data root
                    continue
                out.append((p, st.st_size))
    return out


def dead_run_marks() -> list[Path]:
    """The run marks (``paths.run_marks_dir``: ``<pid>.<recording>``, one per Dagster run a process of this host
    executes) whose process is gone, or whose pid now runs a process started after the mark: a listing when
    there is none."""
    out = []
    try:
        entries = list(os.scandir(run_marks_dir()))
    except (FileNotFoundError, NotADirectoryError):
        return []
    for e in entries:
        pid, _, rid = e.name.partition(".")
        if not pid.isdigit() or not ID_RE.fullmatch(rid) or int(pid) == os.getpid():
            continue
        try:
            mtime = e.stat().st_mtime
        except FileNotFoundError:
            continue
        started = started_at(int(pid))
        if started is None or mtime < started - 1.0:
            out.append(Path(e.path))
    return out


__all__ = ["PREFIX", "UNNAMED_AGE_S", "dead_run_marks", "orphaned", "started_at", "sweep", "writer_prefix"]

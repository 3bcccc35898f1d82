"""Exclusive writer lock per recording (a Postgres advisory lock with ``TALKTHROUGH_PG_URL``, else
``flock`` on this machine) and the lock held while the Dagster instance is first created (the same two kinds)."""

from __future__ import annotations

import os
import re
import threading
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

from talkthrough_assets.core import config
from talkthrough_assets.core.errors import TalkthroughError
from talkthrough_assets.store.diskfault import reason as disk_reason
from talkthrough_assets.store.paths import dagster_home, data_url, home, instance_lock_path, is_remote, lock_path

PG_URL_ENV = "TALKTHROUGH_PG_URL"


class PartitionBusy(TalkthroughError, RuntimeError):
    pass


class DiskRefused(PartitionBusy):
    """A lock file that cannot be written: ``read-only data root: <path>`` or ``disk full at <path>: ...``."""


_held_locks: dict[str, int] = {}  # recording ids this process holds (re-entrant within one process)
_held_guard = threading.Lock()
_warned_local_lock = False


@contextmanager
def partition_lock(recording_id: str, timeout_s: float = 0.0) -> Iterator[None]:
    """Exclusive writer lock for one recording across processes, re-entrant in-process: a Postgres
    advisory lock when ``TALKTHROUGH_PG_URL`` is set (every machine sharing the database sees it),
    else ``flock`` on this machine. Either is released if the holder dies (the kernel closes the file,
    Postgres the connection), so a ``kill -9`` never leaves a stale lock."""
    with _held_guard:  # stage threads of one run re-enter the lock their run already holds
        reentered = recording_id in _held_locks
    if reentered:
        # held by the outer holder until it lets go; leaving changes nothing: a run's generator closed late
        # (garbage-collected during the next process of the same recording) once took the next holder's
        # mark away, and that run then waited on its own lock file for STAGE_LOCK_WAIT_S
        yield
        return
    busy = PartitionBusy(f"recording {recording_id} is being processed by another run; try again when it finishes")
    deadline = time.monotonic() + timeout_s
    pg_url = config.get(PG_URL_ENV)
    if not pg_url and is_remote() and not _warned_local_lock:
        _warn_local_lock()
    key = (_LOCK_NAMESPACE << 48) | (int(recording_id[:12], 16))  # fits a signed bigint
    acquire = _pg_advisory_lock(pg_url, key, f"talkthrough-lock-{recording_id}", deadline, busy) if pg_url else \
        _flock_file(lock_path(recording_id), deadline, busy)
    with acquire:
        with _held_guard:
            _held_locks[recording_id] = 1
        try:
            yield
        finally:
            with _held_guard:
                _held_locks.pop(recording_id, None)


def instance_lock(timeout_s: float = 300.0):
    """Held while a process opens the Dagster instance: its storage is created and stamped (alembic) on the
    first open of a new data root or database, which concurrent first starts would otherwise race (``table ...
    already exists``, a second alembic head): a ``flock`` for SQLite on this machine, a Postgres advisory lock
    when ``TALKTHROUGH_PG_URL`` is set (machines starting at once). Opening an existing instance takes it only
    briefly."""
    deadline = time.monotonic() + timeout_s
    pg_url = config.get(PG_URL_ENV)
    if pg_url:  # storage shared by machines: their first starts race on the same tables
        busy = TimeoutError(f"the Dagster storage in Postgres is being created by another process and was not "
                            f"ready within {timeout_s:.0f} s")
        return _pg_advisory_lock(pg_url, _INSTANCE_KEY, "talkthrough-instance-lock", deadline, busy)
    busy = TimeoutError(f"the Dagster instance under {dagster_home()} is being created by another process "
                        f"and was not ready within {timeout_s:.0f} s (lock: {instance_lock_path()})")
    return _flock_file(instance_lock_path(), deadline, busy)


def named_lock(name: str, timeout_s: float, busy: Exception):
    """Exclusive ``flock`` on ``locks/<name>.lock`` on this machine, waiting at most ``timeout_s``, else
    ``busy`` (e.g. one merger per search index bucket)."""
    return _flock_file(home() / "locks" / f"{name}.lock", time.monotonic() + timeout_s, busy)


@contextmanager
def _flock_file(path: Path, deadline: float, busy: Exception) -> Iterator[None]:
    import fcntl

    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    except OSError as e:  # a read-only or full data root: said in one line, as a refusal
        why = disk_reason(e, home())
        if why is None:
            raise
        raise DiskRefused(why) from None
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


def _warn_local_lock() -> None:
    global _warned_local_lock
    _warned_local_lock = True
    import logging

    logging.getLogger("talkthrough").warning(
        "TALKTHROUGH_HOME is %s but TALKTHROUGH_PG_URL is not set: the per-recording lock is this machine's "
        "flock, so other machines writing the same data root are not kept out; set TALKTHROUGH_PG_URL "
        "(shared Dagster storage and a Postgres advisory lock)", data_url())


_LOCK_NAMESPACE = 0x7A1C  # high bits of the advisory-lock key: talkthrough's own key space
_INSTANCE_KEY = 0x7A1D << 48  # the one key of the instance lock, outside every recording's


@contextmanager
def _pg_advisory_lock(pg_url: str, key: int, name: str, deadline: float, busy: Exception) -> Iterator[None]:
    """A Postgres session advisory lock on ``key`` (one dedicated connection, named ``name``, held for the
    block): every machine sharing the Dagster database sees it, and Postgres drops it when the
    holder's connection dies, so a killed worker never leaves it behind."""
    import psycopg2

    dsn = re.sub(r"^postgres(ql)?\+\w+://", "postgresql://", pg_url)  # a SQLAlchemy URL names its driver
    con = psycopg2.connect(dsn, connect_timeout=10, application_name=name)
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

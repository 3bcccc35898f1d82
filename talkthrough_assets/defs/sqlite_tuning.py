"""Make Dagster's SQLite run/event storage cheap per event.

Dagster opens a fresh SQLite connection and commits for every event (~50 per run). With the
default rollback journal each commit fsyncs (~14 ms on the build machines), which made run
bookkeeping cost more than the stages themselves on short recordings. WAL + synchronous=NORMAL
fsyncs only at checkpoints: a process crash loses nothing; an OS crash or power cut may lose
the last few event-log rows, never the Parquet outputs (those are written atomically on their own).

WAL alone still paid an fsync per event: when the last connection to a database closes, SQLite checkpoints the
log into the database and deletes it, and Dagster's connection for each event is the only one. So while a run
executes in this process (:func:`holding`), the first connection to each database file also opens an idle one of
ours (:func:`_hold`): Dagster's is then never the last, and each log is checkpointed every
:data:`CHECKPOINT_PAGES` pages instead, and cut back to that size, so that it stays small on a small disk (an
8-MB one of its own is tested). When the run ends they are let go, one checkpoint each: outside a run no file
is held open (a data root can be remounted read-only under a process that stays). At most :data:`HELD_MAX`
files are held; an idle connection holds no lock that blocks another process.
"""

from __future__ import annotations

import atexit
import sqlite3
import threading
from collections import OrderedDict
from contextlib import contextmanager
from typing import Callable

from sqlalchemy import event
from sqlalchemy.engine import Engine

_installed = False
CHECKPOINT_PAGES = 64  # ~256 KB of log: a checkpoint (one fsync) every few dozen events
HELD_MAX = 8  # database files held open at once: runs.db, the event log's index, schedules and a few runs' shards
_held: OrderedDict[str, sqlite3.Connection] = OrderedDict()
_held_lock = threading.Lock()
_holding = 0  # runs executing in this process now
_generation = 0  # one more each time a first run of this process starts holding
_on_release: list[Callable[[], None]] = []  # what else lets go of a database when the runs end (sqlite_storage)


def _tune(dbapi_conn, _record) -> None:
    if isinstance(dbapi_conn, sqlite3.Connection):
        cur = dbapi_conn.cursor()
        cur.execute("PRAGMA journal_mode=WAL")
        cur.execute("PRAGMA synchronous=NORMAL")
        cur.execute(f"PRAGMA wal_autocheckpoint={CHECKPOINT_PAGES}")
        cur.execute(f"PRAGMA journal_size_limit={CHECKPOINT_PAGES * 4096}")
        cur.close()
        _hold(dbapi_conn)


def _main_file(conn: sqlite3.Connection) -> str:
    """The file of ``conn``'s main database ('' in memory)."""
    for _seq, name, path in conn.execute("PRAGMA database_list").fetchall():
        if name == "main":
            return path or ""
    return ""


def _hold(conn: sqlite3.Connection) -> None:
    """Keep one idle connection of ours open to ``conn``'s database file (the least recently used one beyond
    :data:`HELD_MAX` closed), so that closing Dagster's connection never checkpoints the log."""
    path = _main_file(conn)
    if not path:
        return
    with _held_lock:
        if not _holding:
            return
        if path in _held:
            _held.move_to_end(path)
            return
        try:
            holder = sqlite3.connect(path, check_same_thread=False, timeout=30)
            holder.execute("SELECT count(*) FROM sqlite_master").fetchall()  # opens the file and its WAL index
        except sqlite3.Error:  # not held: each close checkpoints, as without this
            return
        _held[path] = holder
        while len(_held) > HELD_MAX:
            _close(_held.popitem(last=False)[1])


def held() -> list[str]:
    """The database files held open now (least recently used first)."""
    with _held_lock:
        return list(_held)


@contextmanager
def holding():
    """Hold the databases Dagster opens within (a run's execution), and let them go after, once no other run of
    this process holds them."""
    global _holding, _generation
    with _held_lock:
        _holding += 1
        _generation += _holding == 1
    try:
        yield
    finally:
        with _held_lock:
            _holding -= 1
            last = not _holding
        if last:
            release()


def active() -> int:
    """0 when no run executes in this process, else the number of the stretch of runs now executing (a value seen
    during one run and again later means no run ended in between)."""
    with _held_lock:
        return _generation if _holding else 0


def on_release(fn: Callable[[], None]) -> None:
    """Call ``fn`` whenever the runs of this process let their databases go (before the held connections close)."""
    _on_release.append(fn)


def release() -> None:
    """Close every held connection (their logs checkpointed by the last close, as SQLite does), after what
    :func:`on_release` added."""
    for fn in list(_on_release):
        fn()
    with _held_lock:
        while _held:
            _close(_held.popitem()[1])


def _close(conn: sqlite3.Connection) -> None:
    try:
        conn.close()
    except sqlite3.Error:  # no room to checkpoint (a full disk): the log stays, read by the next connection
        pass


def install() -> None:
    global _installed
    if not _installed:
        event.listen(Engine, "connect", _tune)
        atexit.register(release)  # a run cut short: the CLI ends without the interpreter's teardown, after these
        _installed = True

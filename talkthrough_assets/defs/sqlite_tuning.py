"""Make Dagster's SQLite run/event storage cheap per event.

Dagster opens a fresh SQLite connection and commits for every event (~50 per run). With the
default rollback journal each commit fsyncs (~14 ms on the build machines), which made run
bookkeeping cost more than the stages themselves on short recordings. WAL + synchronous=NORMAL
fsyncs only at checkpoints: a process crash loses nothing; an OS crash or power cut may lose
the last few event-log rows, never the Parquet outputs (those are written atomically on their own).
"""

from __future__ import annotations

import sqlite3

from sqlalchemy import event
from sqlalchemy.engine import Engine

_installed = False


def _tune(dbapi_conn, _record) -> None:
    if isinstance(dbapi_conn, sqlite3.Connection):
        cur = dbapi_conn.cursor()
        cur.execute("PRAGMA journal_mode=WAL")
        cur.execute("PRAGMA synchronous=NORMAL")
        cur.close()


def install() -> None:
    global _installed
    if not _installed:
        event.listen(Engine, "connect", _tune)
        _installed = True

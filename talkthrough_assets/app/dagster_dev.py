"""`dagster dev` as `talkthrough ui` runs it: ``python -m talkthrough_assets.app.dagster_dev dagster dev ARGS...``.

The same command and the same processes (webserver, daemon, code server), each started through this module so
that three costs on the path from a UI backfill to its first running recording are cut:

- **The backfill loop.** The daemon looks for new backfills every :data:`BACKFILL_LOOP_S` seconds instead of
  Dagster's 30 (``dagster._daemon.controller.DEFAULT_DAEMON_INTERVAL_SECONDS``, hard-coded, read by the
  backfill loop each time it sleeps; no instance setting), so a backfill waited 0-30 s before its first run
  was even created. The loop's iteration is a query of the backfills table when none is in progress.
- **A run's planned events.** Creating a batch run records a planned materialization per stage and recording
  (9 x 12 for a batch of 12), each in two SQLite transactions of its own (the run's shard and the index),
  2-3 s on a loaded 2-core machine before the run is even queued. The daemon writes them as Dagster's batch
  (``DAGSTER_EVENT_BATCH_SIZE``), and a batch goes to SQLite in one transaction per shard.
- **The run worker's start.** The code server starts each run in a fresh ``spawn`` process, which imports
  Dagster and the definitions again (2-3 s) before the run starts. Here it forks runs from a forkserver that
  has both imported already, started with the code server; a forkserver is single-threaded, so the fork is
  as safe as a spawn (Python 3.14 makes it the default on Linux).

Each child of `dagster dev` (``python -m dagster._daemon run``, ``python -m dagster code-server start`` and
the ``python -m dagster api grpc`` it starts) is started as ``python -m talkthrough_assets.app.dagster_dev``
followed by its own module and arguments, so process listings and `talkthrough ui`'s checks still see which
it is. All three steps reach into Dagster internals (there is no public API for any of them):
tests/e2e/test_ui_backfill.py times a backfill's first run, and tests/unit/test_dagster_dev.py checks the
batched write against Dagster's own, to catch an upgrade that breaks them.
"""

from __future__ import annotations

import os
import sys
import threading
from contextlib import contextmanager

BACKFILL_LOOP_S = 2
# more than any batch run's planned events (9 stages and their checks, per recording, per run)
EVENT_BATCH_SIZE = 10_000
DEFINITIONS = "talkthrough_assets.definitions"


def _redirect(open_subprocess):
    """``open_subprocess`` starting Dagster's own Python children through this module."""

    def open_here(cmd, **kwargs):
        if len(cmd) > 2 and cmd[1] == "-m" and cmd[2] in ("dagster", "dagster._daemon"):
            cmd = [cmd[0], "-m", __spec__.name, *cmd[2:]]
        return open_subprocess(cmd, **kwargs)

    return open_here


def _start_children_here() -> None:
    import dagster._cli.dev as dev
    import dagster._grpc.server as server

    dev.open_ipc_subprocess = _redirect(dev.open_ipc_subprocess)
    server.open_ipc_subprocess = _redirect(server.open_ipc_subprocess)


@contextmanager
def _shard_transactions(storage):
    """While inside: every connection ``storage`` opens to one of its SQLite shards is one connection per shard,
    in one transaction, committed at the end (rolled back on an error); the storage's lock held throughout."""
    from sqlalchemy.pool import NullPool

    from dagster._core.storage.sql import create_engine
    from dagster._core.storage.sqlite import SQLITE_BUSY_TIMEOUT_SECONDS

    open_: dict[str, tuple] = {}

    @contextmanager
    def shared(shard):
        if shard not in open_:
            engine = create_engine(storage.conn_string_for_shard(shard), poolclass=NullPool,
                                   connect_args={"timeout": SQLITE_BUSY_TIMEOUT_SECONDS})
            if shard not in storage._initialized_dbs:
                storage._initdb(engine)
                storage._initialized_dbs.add(shard)
            conn = engine.connect()
            open_[shard] = (engine, conn, conn.begin())
        yield open_[shard][1]

    with storage._db_lock:
        storage._connect = shared
        try:
            yield
            for _engine, _conn, txn in open_.values():
                txn.commit()
        finally:
            del storage._connect
            for engine, conn, txn in open_.values():
                if txn.is_active:
                    txn.rollback()
                conn.close()
                engine.dispose()


def _batch_sqlite_events() -> None:
    """Dagster's event batches (a run's planned events) stored in one transaction per SQLite shard."""
    from dagster._core.storage.event_log.sqlite.sqlite_event_log import SqliteEventLogStorage

    def store_event_batch(self, events):
        with _shard_transactions(self):
            for event in events:
                self.store_event(event)

    SqliteEventLogStorage.store_event_batch = store_event_batch
    os.environ.setdefault("DAGSTER_EVENT_BATCH_SIZE", str(EVENT_BATCH_SIZE))


def _fork_runs() -> None:
    """The code server starts runs from a forkserver that has Dagster and the definitions imported."""
    import multiprocessing
    from multiprocessing import forkserver

    from dagster._grpc import server

    if "forkserver" not in multiprocessing.get_all_start_methods():
        return  # not on this platform: Dagster's spawn
    ctx = multiprocessing.get_context("forkserver")
    ctx.set_forkserver_preload(["dagster._grpc.impl", DEFINITIONS])
    init = server.DagsterApiServer.__init__

    def init_forking(self, *args, **kwargs):
        init(self, *args, **kwargs)
        self._mp_ctx = ctx

    server.DagsterApiServer.__init__ = init_forking
    # started beside the server's own start, so the first run does not wait for its imports
    threading.Thread(target=forkserver.ensure_running, daemon=True, name="forkserver-start").start()


def _daemon(argv: list[str]) -> None:
    from dagster._daemon import controller
    from dagster._daemon.cli import main

    # also the legacy auto-materialize interval when none is configured; Talkthrough has no automation
    controller.DEFAULT_DAEMON_INTERVAL_SECONDS = BACKFILL_LOOP_S
    _batch_sqlite_events()
    sys.argv = ["dagster-daemon", *argv]
    main()


def _dagster(argv: list[str]) -> None:
    from dagster._cli import main

    _start_children_here()
    if argv[:2] == ["api", "grpc"]:
        _fork_runs()
    sys.argv = ["dagster", *argv]
    main()


if __name__ == "__main__":
    if sys.argv[1:2] == ["dagster._daemon"]:
        _daemon(sys.argv[2:])
    elif sys.argv[1:2] == ["dagster"]:
        _dagster(sys.argv[2:])
    else:
        sys.exit(f"usage: python -m {__spec__.name} dagster dev ARGS... | dagster._daemon run ARGS...")

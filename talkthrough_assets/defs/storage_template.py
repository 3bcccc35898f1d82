"""A new data root's Dagster SQLite storage written from a shipped template instead of created by Dagster.

Dagster creates its SQLite storage on the first open of a DAGSTER_HOME: SQLAlchemy's ``create_all`` and an alembic
stamp for each database, then its data migrations (~0.25 s of CPU beside the models' load, every new data root);
and again the same ``create_all`` and stamp for every run's own event-log database, while the run is created. The
template (``dagster_storage.json``, package data) holds each of those databases as SQL text (sqlite3's
``iterdump``: the same tables, indexes, alembic revision and completed data migrations as Dagster writes), for the
one Dagster version it was made with: :func:`restore` writes it in a few milliseconds, and Dagster, finding its
databases at the head revision, only checks them. Any other Dagster version, or an instance that is not the
data root's own SQLite one, gets Dagster's own creation, as before. After a Dagster upgrade, make it again:

    python -m talkthrough_assets.defs.storage_template talkthrough_assets/defs/dagster_storage.json

This module is the only one that knows the file layout of Dagster's SQLite storage (no public name for it);
tests/integration/test_run_fixed_cost.py compares what it writes with what Dagster writes, on the installed
Dagster.
"""

from __future__ import annotations

import importlib.resources
import json
import os
import sqlite3
import sys
import tempfile
import uuid
from functools import lru_cache
from pathlib import Path

# Dagster's SQLite storage under DAGSTER_HOME (dagster._core.storage.sqlite_storage): database -> file
FILES = {"runs": "history/runs.db", "event_log_index": "history/runs/index.db",
         "schedules": "schedules/schedules.db"}
RUN_SHARD = "history/runs/{run_id}.db"  # one run's event log (SqliteEventLogStorage.path_for_shard)
TEMPLATE = ("talkthrough_assets.defs", "dagster_storage.json")


def dagster_version() -> str:
    from dagster import __version__

    return __version__


@lru_cache(maxsize=1)
def _template() -> dict | None:
    try:
        return json.loads((importlib.resources.files(TEMPLATE[0]) / TEMPLATE[1]).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def usable() -> dict | None:
    """The template's databases when it was made with the installed Dagster, else None."""
    t = _template()
    return t["databases"] if t and t.get("dagster") == dagster_version() else None


def _write(sql: str, path: Path) -> None:
    """A database from its SQL text at ``path``, whole or not at all (written beside it, then renamed)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    os.close(fd)
    try:
        with sqlite3.connect(tmp) as conn:
            conn.executescript(sql)
            conn.execute("PRAGMA journal_mode=WAL")  # as Dagster leaves its own databases
        conn.close()
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def restore(home: Path) -> bool:
    """Write the storage of a new DAGSTER_HOME ``home`` from the template (the caller holds the instance lock);
    False, writing nothing, when the template does not fit the installed Dagster or a database is there already."""
    dbs = usable()
    if dbs is None or any((home / rel).exists() for rel in FILES.values()):
        return False
    for name, rel in FILES.items():
        _write(dbs[name], home / rel)
    return True


def prepare_run(inst) -> str | None:
    """A new run id whose empty event log is written from the template now (Dagster would create it, with its
    alembic stamp, on the run's first event, while the run is created), when ``inst`` keeps one SQLite database
    per run and the template fits; else None (Dagster makes the id and the database, as before)."""
    from dagster._core.storage.event_log import SqliteEventLogStorage

    storage = inst.event_log_storage
    dbs = usable()
    if not isinstance(storage, SqliteEventLogStorage) or dbs is None:
        return None
    run_id = str(uuid.uuid4())  # as Dagster makes one (dagster._core.utils.make_new_run_id)
    _write(dbs["run_shard"], Path(storage.path_for_shard(run_id)))
    return run_id


def _dump(path: Path) -> str:
    with sqlite3.connect(path) as conn:
        return "\n".join(conn.iterdump())


def build() -> dict:
    """The template of the installed Dagster: a new instance created by Dagster itself in a temporary folder,
    and one run's event log, dumped as SQL."""
    from dagster import DagsterInstance

    with tempfile.TemporaryDirectory(prefix="tt-dagster-template-") as tmp:
        home = Path(tmp)
        (home / "dagster.yaml").write_text("telemetry:\n  enabled: false\n")
        with DagsterInstance.from_config(str(home)) as inst:
            inst.get_runs(limit=1)
            inst.all_logs("0" * 8 + "-0000-0000-0000-" + "0" * 12)  # creates that run's event-log database
            inst.run_storage.dispose()
        dbs = {name: _dump(home / rel) for name, rel in FILES.items()}
        dbs["run_shard"] = _dump(home / RUN_SHARD.format(run_id="0" * 8 + "-0000-0000-0000-" + "0" * 12))
    return {"dagster": dagster_version(), "databases": dbs}


if __name__ == "__main__":  # pragma: no cover - the maintainer's command after a Dagster upgrade
    Path(sys.argv[1]).write_text(json.dumps(build(), indent=1) + "\n", encoding="utf-8")

"""The Dagster instance every `talkthrough` command and the UI open: DAGSTER_HOME under the data root with the
repo's dagster.yaml (SQLite storage), plus Postgres storage when ``TALKTHROUGH_PG_URL`` is set; created by one
process at a time on a new data root."""

from __future__ import annotations

import os
import threading
from concurrent.futures import Future
from pathlib import Path

from talkthrough_assets.core import config
from talkthrough_assets.pipeline import registry
from talkthrough_assets import store

_REPO_ROOT = Path(__file__).resolve().parents[2]

PG_URL_ENV = store.PG_URL_ENV
# Appended to the repo's dagster.yaml when TALKTHROUGH_PG_URL is set. The URL is read from the environment
# when an instance loads (webserver, daemon and CLI alike), so a password never lands in DAGSTER_HOME.
POSTGRES_STORAGE_YAML = f"""
# Added by talkthrough because {PG_URL_ENV} is set: runs, event log and schedules live in Postgres.
storage:
  postgres:
    postgres_url:
      env: {PG_URL_ENV}
"""


def instance_yaml() -> str:
    """The dagster.yaml this process uses: the repo's (SQLite storage under DAGSTER_HOME, the run queue
    limits), plus Postgres storage (run, event log, schedule) when ``TALKTHROUGH_PG_URL`` is set."""
    src = _REPO_ROOT / "dagster.yaml"
    text = src.read_text() if src.exists() else ""
    if config.get(PG_URL_ENV):
        text += POSTGRES_STORAGE_YAML
    return text


def _pin_pg_driver() -> None:
    """A plain ``postgresql://`` (or ``postgres://``) URL gets the psycopg2 driver, the one dagster-postgres
    installs and is tested with: SQLAlchemy 2.1 would otherwise pick psycopg 3, which is not installed.
    Rewritten in this process's environment, so the webserver, daemon and run workers it starts inherit it."""
    url = config.get(PG_URL_ENV) or ""
    for scheme in ("postgresql://", "postgres://"):
        if url.startswith(scheme):  # process-level set-up: the children this process starts inherit it
            os.environ[PG_URL_ENV] = "postgresql+psycopg2://" + url[len(scheme):]


def ensure_dagster_home() -> Path:
    """Point DAGSTER_HOME at the data root and install the instance YAML there (SQLite storage by
    default; Postgres when TALKTHROUGH_PG_URL is set). Written only when it changed."""
    _pin_pg_driver()
    # process-level set-up of Dagster (not a Talkthrough setting): an explicit DAGSTER_HOME wins, and the
    # one chosen is exported for Dagster itself and the processes it starts
    home = Path(os.environ.get("DAGSTER_HOME") or store.dagster_home())
    home.mkdir(parents=True, exist_ok=True)
    os.environ["DAGSTER_HOME"] = str(home)
    reserve(home)
    target = home / "dagster.yaml"
    text = instance_yaml().encode()
    if not target.exists() or target.read_bytes() != text:
        store.atomic_write_bytes(target, text)  # a concurrent reader never sees half a file
    return home


RESERVE_NAME = ".talkthrough-reserve"
RESERVE_BYTES = 1 << 20


def reserve(home: Path) -> None:
    """A 1-MB ballast file beside Dagster's storage: when that disk fills up, removing it leaves room to record
    the run's end (:func:`release_reserve`), so a run never stays STARTED. Made again once there is room."""
    path = home / RESERVE_NAME
    try:
        if not path.exists():
            with store.atomic_path(path) as tmp:
                tmp.write_bytes(b"\0" * RESERVE_BYTES)
    except OSError:  # a full or read-only disk: no ballast now
        pass


def current_home() -> Path:
    """The DAGSTER_HOME this process uses (an explicit one wins over the data root's)."""
    return Path(os.environ.get("DAGSTER_HOME") or store.dagster_home())


def release_reserve() -> bool:
    """Remove the ballast file (a full disk under Dagster's storage); True when there was one."""
    path = current_home() / RESERVE_NAME
    try:
        path.unlink()
        return True
    except OSError:
        return False


def instance_soon() -> Future:
    """:func:`instance` (and the job definitions) opened in a background thread: Dagster's import and, on a new
    data root, its storage creation (~2-4 s of Python on a 2-core machine) overlap what the caller does
    meanwhile (the CLI: loading Whisper, whose native load leaves the interpreter free). The future's
    ``result()`` is the instance, or raises what opening it raised."""
    fut: Future = Future()

    def open_it() -> None:
        try:
            inst = instance()
            from talkthrough_assets import definitions  # noqa: F401  (the job the run executes: imported here, off the main thread)

            fut.set_result(inst)
        except BaseException as e:  # handed to whoever waits on the future
            fut.set_exception(e)

    threading.Thread(target=open_it, daemon=True, name="dagster-instance").start()
    return fut


def instance():
    from dagster import DagsterInstance

    from talkthrough_assets.defs import sqlite_tuning

    if config.get(PG_URL_ENV):
        try:
            import dagster_postgres  # noqa: F401
        except ImportError:
            raise RuntimeError(f"{PG_URL_ENV} is set but dagster-postgres is not installed: "
                               "pip install -c constraints.txt -e '.[postgres]'") from None
    sqlite_tuning.install()  # a no-op on Postgres connections
    ensure_dagster_home()
    # opening the instance creates and stamps its storage on a new data root: one process at a time
    with store.instance_lock():
        inst = DagsterInstance.get()
        inst.get_runs(limit=1)  # run storage (and its indexes) in place before the lock is let go
        inst.get_dynamic_partitions(registry.PARTITIONS_NAME)  # event log / partition storage too
    return inst

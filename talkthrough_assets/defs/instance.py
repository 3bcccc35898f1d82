"""The Dagster instance every `talkthrough` command and the UI open: DAGSTER_HOME under the data root with the
shipped dagster.yaml (package data; SQLite storage), plus Postgres storage when ``TALKTHROUGH_PG_URL`` is set;
created by one process at a time on a new data root. An operator's own DAGSTER_HOME (its dagster.yaml) is used
as it is and never rewritten: what it lacks that Talkthrough relies on is said in one line."""

from __future__ import annotations

import hashlib
import importlib.resources
import os
import shutil
import sys
import threading
from concurrent.futures import Future
from pathlib import Path
from typing import Callable

from talkthrough_assets.core import config
from talkthrough_assets.pipeline import registry
from talkthrough_assets import store

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


def shipped_yaml() -> str:
    """The instance settings shipped inside the package (importlib.resources: a wheel has no checkout)."""
    package, name = store.INSTANCE_SETTINGS
    return (importlib.resources.files(package) / name).read_text(encoding="utf-8")


def instance_yaml() -> str:
    """The dagster.yaml Talkthrough writes into a DAGSTER_HOME it owns: the shipped one (SQLite storage under
    DAGSTER_HOME, the run queue limits), plus Postgres storage (run, event log, schedule) when
    ``TALKTHROUGH_PG_URL`` is set."""
    text = shipped_yaml()
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


def owns(home: Path) -> bool:
    """Whether Talkthrough may (re)write ``home/dagster.yaml``: the data root's own DAGSTER_HOME, one that
    Talkthrough made (its mark), or one without a dagster.yaml yet. An operator's file is never touched."""
    if (home / store.DAGSTER_HOME_OWNED_MARK).exists() or not (home / "dagster.yaml").exists():
        return True
    try:
        return home.resolve() == store.dagster_home().resolve()
    except OSError:
        return False


def ensure_dagster_home() -> Path:
    """Point DAGSTER_HOME at the data root and install the instance YAML there (SQLite storage by
    default; Postgres when TALKTHROUGH_PG_URL is set), written only when it changed. An explicitly set
    DAGSTER_HOME with an operator's dagster.yaml is used as it is (:func:`check_operator_yaml`)."""
    _pin_pg_driver()
    # process-level set-up of Dagster (not a Talkthrough setting): an explicit DAGSTER_HOME wins, and the
    # one chosen is exported for Dagster itself and the processes it starts
    home = store.dagster_storage()
    home.mkdir(parents=True, exist_ok=True)
    os.environ["DAGSTER_HOME"] = str(home)
    reserve(home)
    target = home / "dagster.yaml"
    if not owns(home):
        check_operator_yaml(target)
        return home
    mark = home / store.DAGSTER_HOME_OWNED_MARK
    if not mark.exists():
        store.atomic_write_bytes(mark, b"dagster.yaml here is written by talkthrough; remove this file to keep your own\n")
    text = instance_yaml().encode()
    if not target.exists() or target.read_bytes() != text:
        store.atomic_write_bytes(target, text)  # a concurrent reader never sees half a file
    return home


# What Talkthrough relies on in an instance, each as (what it is, a test on the parsed dagster.yaml)
def _partition_limit(cfg: dict) -> bool:
    runs = ((cfg.get("concurrency") or {}).get("runs") or {})
    legacy = (((cfg.get("run_coordinator") or {}).get("config")) or {})
    limits = (runs.get("tag_concurrency_limits") or []) + (legacy.get("tag_concurrency_limits") or [])
    return any(isinstance(lim, dict) and lim.get("key") == "dagster/partition" and lim.get("limit") == 1
               and isinstance(lim.get("value"), dict) and lim["value"].get("applyLimitPerUniqueValue")
               for lim in limits)


RELIED_ON = (
    ("one run per recording at a time (concurrency.runs.tag_concurrency_limits on dagster/partition, limit 1)",
     _partition_limit),
    ("run monitoring (run_monitoring.enabled)", lambda cfg: bool((cfg.get("run_monitoring") or {}).get("enabled"))),
)
_said: set[str] = set()


def missing_settings(text: str) -> list[str]:
    """What an operator's dagster.yaml lacks of :data:`RELIED_ON` (an unreadable file lacks all of it)."""
    import yaml  # Dagster's own dependency, which reads the same file

    try:
        cfg = yaml.safe_load(text) or {}
    except yaml.YAMLError:
        cfg = {}
    cfg = cfg if isinstance(cfg, dict) else {}
    return [what for what, test in RELIED_ON if not test(cfg)]


def check_operator_yaml(target: Path) -> None:
    """Say once per process, in one line on stderr, what an operator's dagster.yaml lacks; never rewrite it."""
    try:
        text = target.read_text(encoding="utf-8")
    except OSError:
        return
    key = hashlib.sha256(text.encode()).hexdigest()
    if key in _said:
        return
    _said.add(key)
    lacking = missing_settings(text)
    if lacking:
        print(f"talkthrough: {target} is yours and left as it is; it lacks {'; '.join(lacking)} "
              f"(see docs/operations.md#your-own-dagster_home)", file=sys.stderr)


RESERVE_NAME = ".talkthrough-reserve"
RESERVE_BYTES = 1 << 20


def reserve(home: Path) -> None:
    """A 1-MB ballast file beside Dagster's storage: when that disk fills up, removing it leaves room to record
    the run's end (:func:`release_reserve`), so a run never stays STARTED. Made again once there is room."""
    path = home / RESERVE_NAME
    try:
        # only where it leaves as much free: the room a released ballast gave to record a run's end stays free
        if not path.exists() and shutil.disk_usage(home).free >= 2 * RESERVE_BYTES:
            with store.atomic_path(path) as tmp:
                tmp.write_bytes(b"\0" * RESERVE_BYTES)
    except OSError:  # a full or read-only disk: no ballast now
        pass


def current_home() -> Path:
    """The DAGSTER_HOME this process uses (an explicit one wins over the data root's)."""
    return store.dagster_storage()


def release_reserve() -> bool:
    """Remove the ballast file (a full disk under Dagster's storage); True when there was one."""
    path = current_home() / RESERVE_NAME
    try:
        path.unlink()
        return True
    except OSError:
        return False


def instance_soon(then: Callable[[object], object] | None = None) -> Future:
    """:func:`instance` (and the job definitions) opened in a background thread: Dagster's import and, on a new
    data root, its storage creation (~2-4 s of Python on a 2-core machine) overlap what the caller does
    meanwhile (the CLI: loading Whisper, whose native load leaves the interpreter free); ``then(instance)`` runs
    there too, before the instance is handed over (what the run needs of the storage first). The future's
    ``result()`` is the instance, or raises what opening it (or ``then``) raised."""
    fut: Future = Future()

    def open_it() -> None:
        try:
            inst = instance()
            from talkthrough_assets import definitions  # noqa: F401  (the job the run executes: imported here, off the main thread)

            if then is not None:
                then(inst)
            fut.set_result(inst)
        except BaseException as e:  # handed to whoever waits on the future
            fut.set_exception(e)

    threading.Thread(target=open_it, daemon=True, name="dagster-instance").start()
    return fut


def instance():
    from dagster import DagsterInstance

    from talkthrough_assets.defs import sqlite_tuning, storage_template

    if config.get(PG_URL_ENV):
        try:
            import dagster_postgres  # noqa: F401
        except ImportError:
            raise RuntimeError(f"{PG_URL_ENV} is set but dagster-postgres is not installed: "
                               "pip install 'talkthrough[postgres]'") from None
    sqlite_tuning.install()  # a no-op on Postgres connections
    home = ensure_dagster_home()
    # opening the instance creates and stamps its storage on a new data root: one process at a time
    with store.instance_lock():
        if owns(home) and not config.get(PG_URL_ENV):  # the shipped SQLite settings: written from the template
            storage_template.restore(home)
        inst = DagsterInstance.get()
        inst.get_runs(limit=1)  # run storage (and its indexes) in place before the lock is let go
        inst.get_dynamic_partitions(registry.PARTITIONS_NAME)  # event log / partition storage too
    return inst

"""Past one machine through Dagster's Celery executor (dagster-celery): with ``TALKTHROUGH_CELERY_BROKER`` set,
the one step of a ``process_recording`` run (every stage of one recording) is a Celery task on that broker,
taken by whichever ``talkthrough worker`` process is free, on any machine that shares the Postgres storage
(``TALKTHROUGH_PG_URL``) and the data root (``s3://``). Unset, the step runs in the run's own process (the
in-process executor), as on one machine. Runs launched by the UI's daemon (backfills, the drop-folder sensor)
take this route; ``talkthrough process`` always runs in its own process.

The Celery settings are what keeps a recording when a worker dies mid-way (``kill -9``, a lost machine): a task
is acknowledged only once it has ended (``task_acks_late``), so the broker hands it to another worker as soon as
the dead one's connection closes (RabbitMQ does that at once; Redis only after its visibility timeout). The run
itself lives in the run worker the daemon launched, which waits for the task's result and so never stays
STARTED for a dead worker. A worker takes one task at a time (``worker_prefetch_multiplier`` 1, one thread), so
a busy worker never holds a queued recording back from an idle one.
"""

from __future__ import annotations

import os
import socket

from talkthrough_assets.core import config
from talkthrough_assets.core.errors import TalkthroughError
from talkthrough_assets.pipeline import registry

BROKER_ENV = "TALKTHROUGH_CELERY_BROKER"
WORKER_TAG = "talkthrough/worker"  # the Celery worker that executed (or last executed) the run's stages
QUEUE = "dagster"  # dagster-celery's default queue, which its executor sends every step to

# Passed to the Celery app on both sides: the run worker that sends a recording's task and the worker that takes it
CELERY_SETTINGS = {
    "task_acks_late": True,  # acknowledged once done: a task whose worker died goes back to the queue
    "task_reject_on_worker_lost": True,  # the same when a pool child dies under the worker
    "worker_prefetch_multiplier": 1,  # a worker reserves no second recording while it processes one
    "broker_connection_retry_on_startup": True,  # a worker started before the broker waits for it
}


class CeleryRouteError(TalkthroughError, RuntimeError):
    """The Celery route is asked for but cannot be used here; the message says what is missing."""


_worker_name: str | None = None  # set in a `talkthrough worker` process: the stages there run for another process's run


def enabled() -> bool:
    return bool(config.get(BROKER_ENV))


def _require_dagster_celery() -> None:
    try:
        import dagster_celery  # noqa: F401
    except ImportError:
        raise CeleryRouteError(f"{BROKER_ENV} is set but dagster-celery is not installed: "
                               "pip install 'talkthrough[celery]'") from None


def executor():
    """The executor of ``process_recording``: Dagster's in-process one, or dagster-celery's ``celery_executor``
    on the broker ``TALKTHROUGH_CELERY_BROKER`` names (read from the environment where the run executes, so the
    URL and its password never land in run config)."""
    import dagster as dg

    if not enabled():
        return dg.in_process_executor
    _require_dagster_celery()
    from dagster_celery import celery_executor

    return celery_executor.configured(
        {"broker": {"env": BROKER_ENV}, "backend": "rpc://", "config_source": dict(CELERY_SETTINGS)},
        name="talkthrough_celery")


def runner_tags() -> dict[str, str]:
    """Which process executes the stages, for the run's tags. In a run's own process that is the process whose
    death makes the run an orphan (:data:`registry.RUNNER_TAG`); in a Celery worker it is only who did the work
    (:data:`WORKER_TAG`): the run belongs to the run worker waiting for the task, and a dead Celery worker's task
    is taken by another, so that worker's death must not mark the run failed."""
    if _worker_name is not None:
        return {WORKER_TAG: _worker_name}
    return {registry.RUNNER_TAG: f"{socket.gethostname()}:{os.getpid()}"}


def worker_app(broker: str):
    """The Celery app a worker serves: dagster-celery's app and its step task (``execute_plan``) on ``broker``,
    with :data:`CELERY_SETTINGS`."""
    _require_dagster_celery()
    from dagster_celery.executor import CeleryExecutor
    from dagster_celery.make_app import make_app
    from dagster_celery.tasks import create_task

    app = make_app(CeleryExecutor.for_cli(broker=broker, backend="rpc://",
                                          config_source=dict(CELERY_SETTINGS)).app_args())
    create_task(app)
    return app


def worker_argv(name: str, loglevel: str = "INFO") -> list[str]:
    """Celery worker options: one recording at a time in a thread of this one process (a ``kill -9`` of it
    leaves no pool child still running the stages), on dagster-celery's queue."""
    return ["worker", "--queues", QUEUE, "--pool", "threads", "--concurrency", "1", "--hostname", name,
            "--loglevel", loglevel, "--without-gossip", "--without-mingle"]


def set_worker_name(name: str) -> None:
    """Mark this process as a Celery worker named ``name`` (:func:`runner_tags`)."""
    global _worker_name
    _worker_name = name


__all__ = ["BROKER_ENV", "CELERY_SETTINGS", "CeleryRouteError", "QUEUE", "WORKER_TAG", "enabled", "executor",
           "runner_tags", "set_worker_name", "worker_app", "worker_argv"]
